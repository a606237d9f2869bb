"""Timings of the site graph: validation, graph (with RTT estimates), route table, groups, slowest links.

    nice python scripts/bench_sites.py [--repeat 5]

Random site graphs over cities of models/network/places.json (seeded; beyond its cities, sites
at random coordinates): each site linked to its 4
nearest others and, with probability 0.05, to any other (so far links exist too), bandwidths drawn
from {100, 1000, 10000} Mb/s each way, RTTs estimated (measured pair or distance rule). For n
sites it prints the median time of: parse_instance (the schema's checks), site_graph, route_table
(every pair's widest and least-RTT route), regional_groups at 1000 Mb/s / 30 ms, slowest_link
of one 5-site group once the table exists, and draw_site_graph to a PNG (once). Report `uptime`'s
load with the figures.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

from planner.present.site_plot import draw_site_graph
from planner.schema.instance import parse_instance
from planner.sites import regional_groups, site_graph, slowest_link
from planner.sites.places import great_circle_km, places
from planner.sites.routes import route_table


def instance_data(n: int, seed: int) -> dict:
    rng = random.Random(seed)
    table = places()
    names = sorted(k for k, p in table.items() if p.kind == "city")
    cities = rng.sample(names, min(n, len(names)))
    sites = [{"name": f"s{i}", "city": c} for i, c in enumerate(cities)]
    sites += [{"name": f"s{i}", "lat": round(rng.uniform(-50, 60), 3), "lon": round(rng.uniform(-170, 170), 3)}
              for i in range(len(cities), n)]
    coords = [(table[s["city"]].lat, table[s["city"]].lon) if "city" in s else (s["lat"], s["lon"]) for s in sites]
    pairs = set()
    for i, here in enumerate(coords):
        near = sorted(range(n), key=lambda j: great_circle_km(*here, *coords[j]))
        pairs.update(frozenset((i, j)) for j in near[1:5])
        pairs.update(frozenset((i, j)) for j in range(i + 1, n) if rng.random() < 0.05)
    links = [{"a": f"s{i}", "b": f"s{j}", "up_mbps": rng.choice([100, 1000, 10000]),
              "down_mbps": rng.choice([100, 1000, 10000])} for i, j in sorted(tuple(sorted(p)) for p in pairs)]
    return {"model": {"params": 7e9}, "fleet": {"hardware": "16xH100-SXM", "nodes": 8},
            "network": {"regional": {"mbps": 1000, "rtt_ms": 30}, "sites": sites, "links": links}}


def timed(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sites", type=int, nargs="+", default=[6, 20, 100, 300, 1000])
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; median of {args.repeat} runs")
    print(f"{'sites':>6} {'links':>6} {'parse':>9} {'graph':>9} {'routes':>9} {'groups':>9} {'#groups':>8} "
          f"{'slowest 5':>10} {'draw PNG':>9}")
    for n in args.sites:
        data = instance_data(n, seed=n)
        t_parse, inst = timed(lambda: parse_instance(data), args.repeat)
        t_graph, graph = timed(lambda: site_graph(inst.network), args.repeat)
        t_routes, _ = timed(lambda: route_table(site_graph(inst.network)), args.repeat)
        t_routes -= t_graph
        t_groups, groups = timed(lambda: regional_groups(graph, 1000, 30), args.repeat)
        route_table(graph)
        group = random.Random(n).sample(list(graph.nodes), min(5, n))
        t_slow, _ = timed(lambda: slowest_link(graph, group), max(args.repeat, 100))
        with tempfile.TemporaryDirectory() as folder:
            t_draw, _ = timed(lambda: draw_site_graph(graph, groups, Path(folder) / "sites.png"), 1)
        print(f"{n:>6} {len(data['network']['links']):>6} {t_parse:>8.4f}s {t_graph:>8.4f}s {max(t_routes, 0):>8.4f}s "
              f"{t_groups:>8.4f}s {len(groups):>8} {t_slow * 1e6:>8.1f}us {t_draw:>8.2f}s")


if __name__ == "__main__":
    main()
