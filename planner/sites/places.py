"""The shipped network tables: places a site may name, measured round-trip times, physical constants.

- models/network/places.json: cities (GeoNames, every city of >= 100,000 inhabitants) and the
  cloud regions of the measured pairs, each with WGS 84 coordinates (scripts/build_places.py).
- models/network/wan_latency.json: measured RTTs between cities and cloud regions (Azure P50,
  AWS CloudPing, Verizon, Epsilon), bandwidth tiers and the physical constants of fibre; its
  "source" field says where each figure comes from.

This module reads JSON only and imports nothing of `planner` but the presets folder, so the
schema (planner/schema/sites.py) can check city names without an import cycle.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from planner.presets_dir import bundled_models_dir

NETWORK_DIR = bundled_models_dir() / "network"
PLACES_FILE = NETWORK_DIR / "places.json"
LATENCY_FILE = NETWORK_DIR / "wan_latency.json"
EARTH_RADIUS_KM = 6371.0088     # IUGG mean Earth radius R1 (Moritz, "Geodetic Reference System 1980")


@dataclass(frozen=True)
class Place:
    """A city or cloud region of the shipped table."""

    name: str
    lat: float
    lon: float
    country: str
    kind: str                       # "city", "area", "Azure region", "AWS region"
    city: str | None = None         # for a region: the city it is placed at
    metro: str | None = None        # the city whose metro area holds it (a city: itself; None if unknown)
    note: str = ""


@dataclass(frozen=True)
class MeasuredRtt:
    """The measured RTT of one unordered pair of places: the median of every figure the table gives."""

    rtt_ms: float
    pair: str                       # as the table writes it, e.g. "London | Tokyo"
    count: int                      # how many figures the table has for this pair


@lru_cache(maxsize=1)
def places() -> dict[str, Place]:
    """Every place of models/network/places.json by name."""
    rows = json.loads(PLACES_FILE.read_text(encoding="utf-8"))["places"]
    return {name: Place(name, row["lat"], row["lon"], row["country"], row["kind"], row.get("city"),
                        name if row["kind"] == "city" else row.get("metro"), row.get("note", ""))
            for name, row in rows.items()}


@lru_cache(maxsize=1)
def latency_table() -> dict[str, Any]:
    """models/network/wan_latency.json as parsed JSON."""
    return json.loads(LATENCY_FILE.read_text(encoding="utf-8"))


def _pair_figures(node: Any, found: list[tuple[str, float]]) -> None:
    """Every "A | B": ms entry anywhere in the table (the *_pairs objects of each latency tier)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if "|" in key and isinstance(value, (int, float)) and not isinstance(value, bool):
                found.append((key, float(value)))
            else:
                _pair_figures(value, found)


@lru_cache(maxsize=1)
def measured_rtts() -> dict[frozenset[str], MeasuredRtt]:
    """Measured RTTs by unordered pair of place names. A pair listed more than once (in two tiers,
    or as A | B and B | A) gets the median of its figures; the table's copies agree today."""
    figures: dict[frozenset[str], list[tuple[str, float]]] = {}
    found: list[tuple[str, float]] = []
    for key, value in latency_table().items():
        if key.startswith("LATENCY_") and key != "LATENCY_TIERS_MS":
            _pair_figures(value, found)
    for key, ms in found:
        a, b = (part.strip() for part in key.split("|"))
        figures.setdefault(frozenset((a, b)), []).append((key, ms))
    return {pair: MeasuredRtt(statistics.median(ms for _, ms in rows), rows[0][0], len(rows))
            for pair, rows in figures.items()}


@lru_cache(maxsize=1)
def measured_by_metros() -> dict[frozenset[str], list[MeasuredRtt]]:
    """The measured pairs by the unordered pair of their ends' metro areas (pairs with both ends in
    known and distinct metro areas only): {London, Tokyo} -> [London | Tokyo, UK South | Japan East, ...]."""
    by_metros: dict[frozenset[str], list[MeasuredRtt]] = {}
    table = places()
    for pair, found in measured_rtts().items():
        metros = frozenset(table[name].metro for name in pair)
        if None not in metros and len(metros) == 2:
            by_metros.setdefault(metros, []).append(found)
    return by_metros


@dataclass(frozen=True)
class FibreConstants:
    """The distance rule's constants, from wan_latency.json PHYSICAL_CONSTANTS."""

    fibre_km_per_s: float           # speed of light in fibre, ~2/3 c (refractive index ~1.5)
    route_factor: float             # cable route length / great-circle distance
    overhead_ms: float              # RTT at zero distance: the table's same-metro tier (LATENCY_TIERS_MS)


@lru_cache(maxsize=1)
def fibre_constants() -> FibreConstants:
    c = latency_table()["PHYSICAL_CONSTANTS"]
    return FibreConstants(float(c["speed_of_light_fiber_km_s"]), float(c["typical_routing_overhead_factor"]),
                          float(latency_table()["LATENCY_TIERS_MS"]["same_metro"]))


def great_circle_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance on a sphere of radius R = 6371.0088 km (haversine formula):

        d = 2 R asin( sqrt( sin^2((phi2 - phi1)/2) + cos phi1 cos phi2 sin^2((lambda2 - lambda1)/2) ) )

    phi latitude, lambda longitude in radians. Within ~0.5% of the ellipsoidal distance.
    """
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(h)))
