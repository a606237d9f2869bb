"""Screenshots of `dtplan serve` for docs/web.md: docs/web-1280.png (a desktop window, the whole
page after Optimise, Is it feasible?, Compare hardware and a curve of days against bandwidth) and
docs/web-390.png (a phone's width, the top of the page after Optimise).

Starts the real server, drives Debian's chromium through Playwright (as tests/test_web_page.py
does) on the page's default example (instances/baseline-1e25.json and its plan).

    python scripts/web_screenshots.py [--out docs]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from scripts.bench_web import start_server  # noqa: E402

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def shoot(browser, url: str, width: int, height: int | None, path: Path, everything: bool) -> None:
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(url)
    page.wait_for_selector("#days")
    page.click("#optimise")
    page.wait_for_selector("#optimum-status", timeout=120_000)
    if everything:
        page.click("#feasible")
        page.wait_for_selector("#feasible-verdict", timeout=120_000)
        page.click("#compare")
        page.wait_for_selector("#ranking", timeout=120_000)
        page.click("#curve-draw")
        page.wait_for_selector("#curve-chart svg", timeout=120_000)
    # a window as tall as what is shown, so that the sticky header sits at the top of the picture
    full = page.evaluate("document.documentElement.scrollHeight")
    page.set_viewport_size({"width": width, "height": height or full})
    page.evaluate("window.scrollTo(0, 0)")
    page.wait_for_timeout(400)         # charts redraw at the new size
    page.wait_for_selector("#notice", state="hidden", timeout=10_000)
    page.screenshot(path=str(path))
    page.close()
    print(f"wrote {path} ({width} x {height or full} px)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs")
    args = parser.parse_args()
    browser_path = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)),
                        None)
    if browser_path is None:
        raise SystemExit("no chromium on this machine (apt-get install chromium)")
    from playwright.sync_api import sync_playwright
    proc, url = start_server()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=browser_path, args=FLAGS)
            url += f"?token={proc.token}"
            shoot(browser, url, 1280, None, args.out / "web-1280.png", everything=True)
            shoot(browser, url, 390, 2600, args.out / "web-390.png", everything=False)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(20)


if __name__ == "__main__":
    main()
