"""Sites and the links between them (`network.sites`, `network.links`).

A site is a place where nodes sit: a city of the shipped table (models/network/places.json:
every city of >= 100,000 inhabitants and the cloud regions of the measured RTT table, e.g.
"Frankfurt", "UK South", "us-east-1") or explicit coordinates. A link joins two sites with an
upload and a download bandwidth and, optionally, a round-trip time; a missing RTT is estimated
(planner.sites.rtt: a measured city pair, else the distance rule) and the estimate says which.

Empty lists (the default) mean today's uniform network: every node reaches every other over
`network.wan`, groups over `network.regional`, stages over `network.pipeline`.

The table of places (`planner.sites.places`, ~3 ms of CPU at import) is imported by the checks
that read it, when an instance has sites: an instance without sites never loads it (docs/speed.md,
"Start-up time").
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from pydantic import Field, ValidationError, model_validator

from planner.schema.errors import Problem
from planner.schema.limits import MAX_MBPS, MAX_RTT_MS
from planner.schema.strict import (Num, StrictModel, Text, close_matches, did_you_mean, fmt, problems_from, raise_problems,
                                   show)

# A site giving both a city and coordinates must lie this close to the city's centre: farther,
# the city's measured RTTs would not be the site's.
MAX_KM_FROM_CITY = 300.0
METRO_RADIUS_KM = 50.0          # how far from its city's centre a site named by the city may lie
LIGHT_KM_PER_S = 299_792.458    # speed of light in vacuum (exact, SI definition of the metre)


def _city_message(city: str) -> str:
    from planner.sites.places import places
    near = [repr(n) for n in close_matches(city, places(), n=3)]
    listed = near[0] if len(near) == 1 else ", ".join(near[:-1]) + f" or {near[-1]}" if near else ""
    hint = f" (did you mean {listed}?)" if near else ""
    return (f"unknown city or region {city!r}{hint}; the table (models/network/places.json) holds every city "
            f"of at least 100,000 inhabitants and the cloud regions of the measured RTTs (e.g. 'Frankfurt', "
            f"'UK South', 'us-east-1'); or give lat and lon instead")


class Site(StrictModel):
    """A place where nodes sit: a city of the table, or coordinates (or both, within 300 km)."""

    name: Text = Field(description="Unique name of the site, used by links and fleet pools (required).")
    city: Text | None = Field(None, description="A city or cloud region of models/network/places.json "
                                                "(e.g. 'Frankfurt', 'UK South'). Default None: give lat and lon.")
    lat: Num(ge=-90, le=90) | None = Field(None, description="Latitude, degrees north, [-90, 90]. Default: the city's.")
    lon: Num(ge=-180, le=180) | None = Field(None, description="Longitude, degrees east, [-180, 180]. Default: the city's.")
    lan_mbps: Num(gt=0, cap=MAX_MBPS) | None = Field(
        None, description="Bandwidth between nodes inside the site, Mbit/s. Default None: network.regional.mbps.")
    lan_rtt_ms: Num(ge=0, cap=MAX_RTT_MS) | None = Field(
        None, description="Round-trip time inside the site, ms. Default None: network.regional.rtt_ms.")

    @model_validator(mode="after")
    def _place(self) -> "Site":
        from planner.sites.places import great_circle_km, places
        problems = []
        if not self.name.strip():
            problems.append(Problem("name", f"must be a non-empty name, got {show(self.name)}"))
        if self.city is not None and self.city not in places():
            problems.append(Problem("city", _city_message(self.city)))
        if (self.lat is None) != (self.lon is None):
            missing = "lon" if self.lon is None else "lat"
            problems.append(Problem(missing, "required with " + ("lat" if missing == "lon" else "lon")
                                    + " (give both coordinates, or a city)"))
        elif self.lat is None and self.city is None:
            problems.append(Problem("city", "required field missing (give a city, or lat and lon)"))
        elif self.lat is not None and self.city in places():
            c = places()[self.city]
            km = great_circle_km(self.lat, self.lon, c.lat, c.lon)
            if km > MAX_KM_FROM_CITY:
                problems.append(Problem("lat", f"({fmt(self.lat)}, {fmt(self.lon)}) lies {km:,.0f} km from "
                                               f"{self.city} ({c.lat:g}, {c.lon:g}); a site with both a city and "
                                               f"coordinates must lie within {MAX_KM_FROM_CITY:g} km of the city "
                                               "(or drop one of them)"))
        if problems:
            raise_problems(problems)
        return self

    @property
    def coordinates(self) -> tuple[float, float]:
        """(lat, lon) in degrees: the given ones, else the city's."""
        if self.lat is not None and self.lon is not None:
            return self.lat, self.lon
        from planner.sites.places import places
        c = places()[self.city]
        return c.lat, c.lon


class SiteLink(StrictModel):
    """A link between two sites: Mbit/s each way and a round-trip time (estimated when missing)."""

    a: Text = Field(description="Name of one site (required).")
    b: Text = Field(description="Name of the other site (required), not a (network.links checks both names).")
    up_mbps: Num(gt=0, cap=MAX_MBPS) = Field(description="Bandwidth from a to b, Mbit/s (required).")
    down_mbps: Num(gt=0, cap=MAX_MBPS) | None = Field(
        None, description="Bandwidth from b to a, Mbit/s. Default None: the same as up_mbps.")
    rtt_ms: Num(ge=0, cap=MAX_RTT_MS) | None = Field(
        None, description="Round-trip time, ms; at least what light in vacuum takes between the sites (less 50 km "
                          "at each end). Default None: estimated (a measured city pair, else the distance rule; "
                          "`dtplan sites` shows which).")

    @model_validator(mode="after")
    def _ends(self) -> "SiteLink":
        if self.down_mbps is None:
            object.__setattr__(self, "down_mbps", self.up_mbps)      # resolve in place (frozen model)
        return self


def site_problems(site_names: Sequence[Any], link_ends: Sequence[tuple[Any, Any]]) -> list[Problem]:
    """Cross references of network.sites and network.links (paths relative to `network`): unique
    site names, links between two known and distinct sites, one link per unordered pair. Takes the
    names as given (raw JSON values, or the parsed models' names), so it runs even when some
    other field of a site or link is wrong and every problem is reported at once."""
    problems: list[Problem] = []
    first: dict[str, int] = {}
    for i, name in enumerate(site_names):
        if not isinstance(name, str):
            continue                                     # reported by the field itself
        if name in first:
            problems.append(Problem(f"sites[{i}].name", f"duplicate site name {name!r} "
                                                        f"(also sites[{first[name]}].name)"))
        first.setdefault(name, i)
    pairs: dict[frozenset[str], int] = {}
    for i, (a, b) in enumerate(link_ends):
        for end, name in (("a", a), ("b", b)):
            if isinstance(name, str) and name not in first:
                problems.append(Problem(f"links[{i}].{end}", unknown_site_message(name, list(first))))
        if not (isinstance(a, str) and isinstance(b, str)):
            continue
        if a == b:
            problems.append(Problem(f"links[{i}].b", f"must differ from a (a link joins two sites), got {a!r} twice"))
            continue
        pair = frozenset((a, b))
        if pair in pairs:
            problems.append(Problem(f"links[{i}]", f"a second link between {a!r} and {b!r} "
                                                   f"(also links[{pairs[pair]}]); give one link per pair of "
                                                   "sites, with up_mbps and down_mbps for the two directions"))
        pairs.setdefault(pair, i)
    return problems


def _raw_names(data: Any) -> tuple[list[Any], list[tuple[Any, Any]]]:
    """Site names and link ends of raw `network` data (anything not an object counts as no name)."""
    def field(row: Any, key: str) -> Any:
        return row.get(key) if isinstance(row, dict) else getattr(row, key, None)
    sites = data.get("sites") if isinstance(data, dict) else None
    links = data.get("links") if isinstance(data, dict) else None
    names = [field(s, "name") for s in sites] if isinstance(sites, list) else []
    ends = [(field(l, "a"), field(l, "b")) for l in links] if isinstance(links, list) else []
    return names, ends


def with_site_references(model: type, data: Any, handler: Callable[[Any], Any]) -> Any:
    """The body of Network's wrap validator (`model` = Network): validate the fields (`handler`), then
    check the cross references of sites and links; when a field is wrong too, report both together."""
    try:
        network = handler(data)
    except ValidationError as exc:
        if not isinstance(data, dict):
            raise                                        # not an object: nothing to cross-check
        problems = [Problem("" if p.path == "<root>" else p.path, p.message) for p in problems_from(exc, model)]
        raise_problems(problems + site_problems(*_raw_names(data)))
    problems = site_problems([s.name for s in network.sites], [(l.a, l.b) for l in network.links])
    if problems:
        raise_problems(problems)
    problems = rtt_bound_problems(network.sites, network.links)
    if problems:
        raise_problems(problems)
    return network


def min_rtt_ms(distance_km: float) -> float:
    """The least RTT two sites `distance_km` apart can have: light in vacuum there and back over the
    great circle, less METRO_RADIUS_KM at each end (a site named by its city may lie anywhere in the
    metro area, not at the centre the table gives):

        min_rtt_ms = 2 * max(0, d - 2 * METRO_RADIUS_KM) / c * 1000,  c = 299,792.458 km/s

    No link beats it (fibre is 1.5 times slower; microwave and hollow-core links come close to c)."""
    return 2.0 * max(0.0, distance_km - 2 * METRO_RADIUS_KM) / LIGHT_KM_PER_S * 1000.0


def rtt_bound_problems(sites: Sequence[Site], links: Sequence[SiteLink]) -> list[Problem]:
    """Given RTTs below what light allows between the two sites (min_rtt_ms): a unit slip (seconds
    for milliseconds) or sites placed wrong; paths relative to `network`."""
    where = {s.name: s.coordinates for s in sites}
    problems = []
    for i, link in enumerate(links):
        if link.rtt_ms is None:
            continue
        from planner.sites.places import great_circle_km      # a given RTT: the table is needed (module docstring)
        km = great_circle_km(*where[link.a], *where[link.b])
        least = min_rtt_ms(km)
        if link.rtt_ms < least:
            problems.append(Problem(f"links[{i}].rtt_ms", f"must be at least {least:.3g} ms for sites {km:,.0f} km "
                                                           f"apart ({link.a!r}, {link.b!r}: light in vacuum there and "
                                                           f"back, {METRO_RADIUS_KM:g} km of metro area allowed at each "
                                                           f"end), got {fmt(link.rtt_ms)} (milliseconds, not seconds)"))
    return problems


def unknown_site_message(name: Any, known: list[str]) -> str:
    """"unknown site 'tokio' (sites: ...; did you mean 'tokyo'?)"."""
    if not known:
        return f"unknown site {show(name)} (network.sites is empty: list the sites first)"
    listed = ", ".join(repr(k) for k in known[:12]) + (", ..." if len(known) > 12 else "")
    near = close_matches(name, known, n=1) if isinstance(name, str) else []
    hint = f"; did you mean {near[0]!r}?" if near else ""
    return f"unknown site {show(name)} (sites: {listed}{hint})"


def ignored_wan_rtt(instance: Any) -> str | None:
    """The warning for a `network.wan.rtt_ms` the input gives but the model does not use, else None.

    With sites and a fleet of pools every sync's RTT is its route's (planner/fleet/network.py,
    SiteNetwork.links: the slowest route's RTT among the plan's sites, or the site's LAN RTT on one
    site); `network.wan` then only caps each node's bandwidth (up_mbps, down_mbps). Not an error:
    the web page's network profiles and sweeps set all three `network.wan` fields at once."""
    net = instance.network
    if not net.sites or not instance.fleet.is_mixed or "rtt_ms" not in net.wan.model_fields_set:
        return None
    return (f"network.wan.rtt_ms ({fmt(net.wan.rtt_ms)} ms) is ignored: with network.sites and fleet.pools each "
            "sync takes the RTT of its route (network.links[i].rtt_ms, or the estimate for the two sites; "
            "lan_rtt_ms on one site); network.wan sets only the bandwidth of each node's access link")


def pool_site_problems(fleet, network) -> list[Problem]:
    """fleet.pools[i].site against network.sites: known when sites are given, required then, and
    only meaningful with sites."""
    if fleet is None or network is None or not fleet.is_mixed:
        return []
    names = [s.name for s in network.sites]
    problems = []
    for i, pool in enumerate(fleet.pools):
        path = f"fleet.pools[{i}].site"
        if pool.site is None and names:
            problems.append(Problem(path, "required when network.sites are given: the name of the pool's site "
                                          f"(one of {', '.join(repr(n) for n in names[:8])}"
                                          + (", ...)" if len(names) > 8 else ")")))
        elif pool.site is not None and not names:
            problems.append(Problem(path, f"names site {pool.site!r}, but network.sites is empty (give the sites "
                                          "and the links between them, or drop the site)"))
        elif pool.site is not None and pool.site not in names:
            problems.append(Problem(path, f"unknown site {pool.site!r}{did_you_mean(pool.site, names)}; "
                                          f"network.sites: {', '.join(names[:8])}" + (", ..." if len(names) > 8 else "")))
    return problems
