"""Round-trip time between two sites when the instance gives none: a measured pair, else the distance rule.

1. Measured: both sites name a place (`city`) and the table models/network/wan_latency.json has
   a measured RTT for that exact pair of names (e.g. "London | Tokyo", "UK South | Japan East"):
   the figure is used as it is (the median if the table lists the pair more than once). Else,
   the measured pairs whose ends lie in the same two metro areas as the sites' places (a cloud
   region lends its figures to the city whose metro area holds its data centres: "UK South" to
   London, "Australia East" to Sydney; models/network/places.json `metro`): their median. A site
   in London and one in Sydney get "UK South | Australia East", 247 ms.
2. Distance rule: light in fibre over the cable route, there and back, plus the RTT two
   points of one metro area already have (switching, last mile, the end hosts):

       rtt_ms = overhead_ms + 2 * d_km * route_factor / v_fibre_km_s * 1000

   with d_km the great-circle distance between the sites' coordinates (haversine,
   planner.sites.places.great_circle_km), route_factor = 1.5 (cable routes are longer than the
   great circle: `typical_routing_overhead_factor`), v_fibre = 200,000 km/s (c / 1.5, the
   refractive index of silica fibre: `speed_of_light_fiber_km_s`), both from the table's
   PHYSICAL_CONSTANTS, and overhead_ms = 5 ms, the table's RTT within one metro area
   (LATENCY_TIERS_MS `same_metro`): 5 ms + 15 ms per 1,000 km. scripts/rtt_rule_error.py prints
   the rule's error on every measured pair of the table (none of which it uses).

Nothing is fitted per pair. The source of every RTT is reported with it (`rtt_source`).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from planner.sites.places import fibre_constants, great_circle_km, measured_by_metros, measured_rtts, places


@dataclass(frozen=True)
class RttEstimate:
    rtt_ms: float
    source: str          # "measured: London | Tokyo" or "distance rule: 9559 km great circle; 5 ms + ..."


def distance_rule_rtt_ms(distance_km: float) -> float:
    """rtt_ms = overhead_ms + 2 * distance_km * route_factor / fibre_km_per_s * 1000 (module docstring)."""
    k = fibre_constants()
    return k.overhead_ms + 2.0 * distance_km * k.route_factor / k.fibre_km_per_s * 1000.0


def distance_rule_source(distance_km: float) -> str:
    k = fibre_constants()
    return (f"distance rule: {distance_km:.0f} km great circle; {k.overhead_ms:g} ms + 2 x km x {k.route_factor:g} "
            f"/ {k.fibre_km_per_s:.0f} km/s")


def measured_rtt(place_a: str | None, place_b: str | None) -> RttEstimate | None:
    """The measured RTT of the pair of place names (exact, else the median over the same two metro
    areas), or None if the table has none."""
    if place_a is None or place_b is None or place_a == place_b:
        return None
    found = measured_rtts().get(frozenset((place_a, place_b)))
    if found is not None:
        return RttEstimate(found.rtt_ms, f"measured: {found.pair}")
    table = places()
    metros = frozenset((table[place_a].metro, table[place_b].metro))
    alike = measured_by_metros().get(metros, []) if None not in metros and len(metros) == 2 else []
    if not alike:
        return None
    named = ", ".join(f.pair for f in alike[:3]) + (", ..." if len(alike) > 3 else "")
    median = "" if len(alike) == 1 else f"; the median of {len(alike)} pairs"
    return RttEstimate(statistics.median(f.rtt_ms for f in alike),
                       f"measured: {named} (the same metro areas{median})")


def estimate_rtt(place_a: str | None, coords_a: tuple[float, float], place_b: str | None,
                 coords_b: tuple[float, float]) -> RttEstimate:
    """RTT between two sites: the measured pair of their places when there is one, else the distance
    rule on their coordinates ((lat, lon) in degrees)."""
    found = measured_rtt(place_a, place_b)
    if found is not None:
        return found
    km = great_circle_km(*coords_a, *coords_b)
    return RttEstimate(distance_rule_rtt_ms(km), distance_rule_source(km))
