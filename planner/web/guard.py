"""What keeps `dtplan serve` safe from other web sites (docs/web.md, "Protections"): the checks
Jupyter's server makes, as one ASGI middleware in front of the application.

A page on another site can make the user's browser send requests to a local server: by
rebinding its own domain name to 127.0.0.1 (DNS rebinding: the request then carries
`Host: evil.example`) or by a cross-site form or `fetch` (CSRF: a `text/plain` POST needs no
permission from the server). Every request is checked, in this order:

1. Host: the name in the `Host` header must be localhost, 127.0.0.1, [::1], the address the
   server is bound to, or a name given with `--allow-host`; when bound to every interface
   (0.0.0.0 or ::) any IP address is accepted too (a rebinding page's requests carry its domain
   name, never an address). The port must be the server's. Else 403.
2. Cross-site writes: a POST or DELETE whose `Origin` is not the server's own (scheme and
   Host), or that a browser marks `Sec-Fetch-Site: cross-site`, is refused (403); a POST whose
   content type is not `application/json` is refused (415). A browser sends a JSON POST or a
   DELETE to another origin only after asking the server (CORS preflight), which this server
   never grants.
3. Token: every /api route and the page itself need the server's token (`secrets.token_urlsafe`,
   printed in the address `serve` shows). It is accepted as `?token=` (opening the page with it
   stores it in an HttpOnly, SameSite=Strict cookie, so the page's own requests carry it), as
   the cookie, or as the header `X-Dtplan-Token`. Without it: 403. `serve --no-token` turns the
   check off (then anyone who can reach the port can run jobs).

The page's static files (/static/...) need no token: they are the same for everyone. The body
size is capped by Starlette's own limit (`Starlette(max_body_size=...)`, planner/web/app.py): a
declared `Content-Length` over the cap is refused (413) before any byte is read, and a body
without one is counted as it streams and refused at the cap.

Each browser is also given a client cookie (a random id) that `planner.web.jobs` uses to share
the job slots fairly between clients (`client_key`).

Starlette's TrustedHostMiddleware is not used: it answers 400 rather than 403, ignores the port,
and cannot accept "any IP address" for a server bound to every interface.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
import secrets
from http.cookies import SimpleCookie
from urllib.parse import parse_qs

LOCAL_NAMES = ("localhost", "127.0.0.1", "[::1]")
WILDCARDS = ("0.0.0.0", "::", "")
TOKEN_HEADER = "x-dtplan-token"
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[^\s:\[\]/@]+)(?::(\d{1,5}))?")


def new_token() -> str:
    """A random token of 32 bytes (43 URL-safe characters), as Jupyter's server makes its own."""
    return secrets.token_urlsafe(32)


def host_name(host: str) -> str:
    """The bound address as a Host header names it: IPv6 addresses in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


class Guard:
    """The checks of the module docstring. `token` None: no token needed (`serve --no-token`);
    `port` None: any port accepted (an app not yet bound, e.g. in tests); `bound`: the address
    the server listens on; `allowed_hosts`: more names accepted in the Host header."""

    def __init__(self, app, token: str | None, port: int | None, bound: str = "127.0.0.1",
                 allowed_hosts: tuple[str, ...] = ()):
        self.app = app
        self.token = token
        self.port = port
        self.any_ip = bound in WILDCARDS
        self.names = {n.lower() for n in (*LOCAL_NAMES, host_name(bound), *map(host_name, allowed_hosts))}
        # cookie names carry a digest of the token: several servers on one machine (cookies are
        # kept per host, not per port) each find their own
        suffix = hashlib.sha256((token or "no-token").encode()).hexdigest()[:10]
        self.token_cookie = f"dtplan-token-{suffix}"
        self.client_cookie = f"dtplan-client-{suffix}"

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        refusal = self.refusal(scope, headers)
        if refusal is not None:
            status, message = refusal
            return await _send_json(send, status, {"error": message})
        scope.setdefault("state", {})["client_key"] = self.client_key(scope, headers)
        if scope["method"] == "GET" and scope["path"] == "/":
            return await self.app(scope, receive, self._with_cookies(send, headers, scope))
        return await self.app(scope, receive, send)

    # -- the checks ------------------------------------------------------------------------------

    def refusal(self, scope, headers: dict[str, str]) -> tuple[int, str] | None:
        """(status, message) of the first check the request fails, or None."""
        host = headers.get("host", "")
        match = _HOST.fullmatch(host)
        if match is None:
            return 403, f"Host: {host!r} is not an address of this server"
        name, port = match.group(1).lower(), int(match.group(2) or 80)
        if name not in self.names and not (self.any_ip and _is_ip(name)):
            return 403, (f"Host: {name!r} is not an address of this server (allowed: "
                         f"{', '.join(sorted(self.names))}; more with `dtplan serve --allow-host NAME`)")
        if self.port is not None and port != self.port:
            return 403, f"Host: port {port} is not this server's port ({self.port})"
        method = scope["method"]
        if method in WRITE_METHODS:
            origin = headers.get("origin")
            own = f"{scope.get('scheme', 'http')}://{host}".lower()
            if origin is not None and origin.lower() != own:
                return 403, f"Origin: {origin[:100]!r} is not this server's ({own}): cross-site requests are refused"
            if headers.get("sec-fetch-site") == "cross-site":
                return 403, "Sec-Fetch-Site: cross-site requests are refused"
            if method == "POST":
                media = headers.get("content-type", "").split(";")[0].strip().lower()
                if media != "application/json":
                    return 415, f"Content-Type: must be application/json, got {media or 'none'!r}"
        path = scope["path"]
        if self.token is not None and (path == "/" or path == "/api" or path.startswith("/api/")):
            if not self._has_token(scope, headers):
                return 403, ("no token: open the address `dtplan serve` printed (http://HOST:PORT/?token=...), "
                             "or send the header X-Dtplan-Token")
        return None

    def _has_token(self, scope, headers: dict[str, str]) -> bool:
        offered = [headers.get(TOKEN_HEADER), self._cookie(headers, self.token_cookie)]
        offered += parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [])
        return any(t is not None and secrets.compare_digest(t.encode(), self.token.encode()) for t in offered)

    @staticmethod
    def _cookie(headers: dict[str, str], name: str) -> str | None:
        jar = SimpleCookie()
        try:
            jar.load(headers.get("cookie", ""))
        except Exception:  # noqa: BLE001 - a malformed Cookie header is no cookie
            return None
        return jar[name].value if name in jar else None

    def client_key(self, scope, headers: dict[str, str]) -> str:
        """Who a job belongs to, for the slots per client: the browser's client cookie, else the
        remote address (scripts, and a browser before it loaded the page)."""
        cookie = self._cookie(headers, self.client_cookie)
        if cookie:
            return f"cookie:{cookie[:64]}"
        client = scope.get("client") or ("?", 0)
        return f"address:{client[0]}"

    def _with_cookies(self, send, headers: dict[str, str], scope):
        """The page's response, with the token cookie (when the token came in the address) and the
        client cookie (when the browser has none)."""
        cookies = []
        if self.token is not None and self._cookie(headers, self.token_cookie) != self.token:
            cookies.append(f"{self.token_cookie}={self.token}")
        if not self._cookie(headers, self.client_cookie):
            cookies.append(f"{self.client_cookie}={secrets.token_urlsafe(12)}")

        async def sending(message):
            if message["type"] == "http.response.start" and message.get("status") == 200:
                message = {**message, "headers": [*message.get("headers", []), *(
                    (b"set-cookie", f"{c}; Path=/; HttpOnly; SameSite=Strict".encode()) for c in cookies)]}
            await send(message)
        return sending


async def _send_json(send, status: int, data: dict) -> None:
    body = json.dumps(data).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
