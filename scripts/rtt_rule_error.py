"""How far the RTT estimates of planner/sites/rtt.py fall from the measured RTTs of the shipped table.

    python scripts/rtt_rule_error.py

1. The distance rule (5 ms + 15 ms per 1,000 km of great circle) on every measured pair of
   models/network/wan_latency.json. The rule uses none of these figures (its constants are the
   table's physical constants and its same-metro RTT), so every pair is held out. Printed by
   distance band, with and without the 5 ms overhead.
2. Metro-area lending held out: each measured pair whose two metro areas have other measured
   pairs is predicted from those others alone (leave one out) and compared with the distance
   rule on the same pairs.
"""

from __future__ import annotations

import statistics

from planner.sites.places import fibre_constants, great_circle_km, measured_by_metros, measured_rtts, places
from planner.sites.rtt import distance_rule_rtt_ms

BANDS_KM = [(0, 500), (500, 2000), (2000, 6000), (6000, 25000)]


def rule_rows() -> list[tuple[str, float, float, float]]:
    """(pair, km, measured ms, distance rule ms) for every measured pair."""
    table, rows = places(), []
    for pair, found in measured_rtts().items():
        a, b = (table[name] for name in sorted(pair))
        km = great_circle_km(a.lat, a.lon, b.lat, b.lon)
        rows.append((found.pair, km, found.rtt_ms, distance_rule_rtt_ms(km)))
    return sorted(rows, key=lambda r: r[1])


def summary(errors_ms: list[float], measured_ms: list[float]) -> str:
    absolute = [abs(e) for e in errors_ms]
    relative = [abs(e) / m for e, m in zip(errors_ms, measured_ms)]
    return (f"median error {statistics.median(errors_ms):+6.1f} ms, median |error| {statistics.median(absolute):5.1f} ms "
            f"({100 * statistics.median(relative):4.1f}%), worst {max(absolute):5.1f} ms")


def markdown_rows() -> list[str]:
    """The rows of docs/sites.md's error table: band, pairs, median error, median |error|, worst."""
    rows, out = rule_rows(), []
    for low, high in BANDS_KM + [(0, 1e9)]:
        band = [r for r in rows if low <= r[1] < high]
        errors = [r[3] - r[2] for r in band]
        relative = statistics.median(abs(e) / r[2] for e, r in zip(errors, band))
        label = "all" if high == 1e9 else f"{low:,}-{high:,} km"
        out.append(f"| {label} | {len(band)} | {statistics.median(errors):+.1f} ms | "
                   f"{statistics.median(abs(e) for e in errors):.1f} ms ({100 * relative:.1f}%) | "
                   f"{max(abs(e) for e in errors):.1f} ms |")
    return out


def leave_one_out() -> list[tuple[str, float, float, float]]:
    """(pair, measured, predicted from the other pairs of its metro areas, distance rule)."""
    table, rows = places(), []
    for metros, found in measured_by_metros().items():
        for i, held in enumerate(found):
            others = [f.rtt_ms for j, f in enumerate(found) if j != i]
            if not others:
                continue
            a, b = (table[name.strip()] for name in held.pair.split("|"))
            rule = distance_rule_rtt_ms(great_circle_km(a.lat, a.lon, b.lat, b.lon))
            rows.append((held.pair, held.rtt_ms, statistics.median(others), rule))
    return rows


def main() -> None:
    k = fibre_constants()
    rows = rule_rows()
    print(f"Distance rule: {k.overhead_ms:g} ms + 2 x km x {k.route_factor:g} / {k.fibre_km_per_s:.0f} km/s, "
          f"on {len(rows)} measured pairs (none used by the rule)")
    for low, high in BANDS_KM + [(0, 1e9)]:
        band = [r for r in rows if low <= r[1] < high]
        label = "all" if high == 1e9 else f"{low}-{high} km"
        errors = [r[3] - r[2] for r in band]
        bare = [r[3] - k.overhead_ms - r[2] for r in band]
        print(f"  {label:>14} ({len(band):3} pairs): {summary(errors, [r[2] for r in band])}")
        print(f"  {'':>14}   without the {k.overhead_ms:g} ms: {summary(bare, [r[2] for r in band])}")
    worst = sorted(rows, key=lambda r: -abs(r[3] - r[2]))[:5]
    print("  largest misses: " + "; ".join(f"{p} {m:.0f} ms measured, {e:.0f} ms by the rule" for p, _, m, e in worst))
    held = leave_one_out()
    print(f"\nMetro-area lending, leave one out ({len(held)} pairs whose metro areas have another measured pair):")
    print(f"  lent figure:   {summary([p - m for _, m, p, _ in held], [m for _, m, _, _ in held])}")
    print(f"  distance rule: {summary([r - m for _, m, _, r in held], [m for _, m, _, _ in held])}")
    print("\nThe table of docs/sites.md:")
    print("\n".join(markdown_rows()))


if __name__ == "__main__":
    main()
