"""Random small instances with regions chosen by the planner (network.regions = "chosen"), for
the comparison of the planner with its exhaustive oracle over every set partition of the sites
(tests/test_regions.py, scripts/check_regions_oracle.py).

Each draw is a `planner.fleet.samples.random_instance` (1 to 3 pools, 1 to 4 nodes each, group
sizes 2 and 3, pipelines of up to 4 stages) always on 2 to 6 sites, with the planner choosing the
regions; most sites get a LAN of their own faster than the regional tier (10 to 100 Gb/s, 0.05 to
3 ms), so that splitting sites into smaller regions buys faster regional links and merging them
buys room for whole groups (docs/fleet.md section 3); half of the draws search only the modes
with groups (hierarchical, PP-group), and two in five must use every node. The objective is min_time or max_compute
and there is no budget and the straggler sync rule (what chosen regions support).
"""

from __future__ import annotations

import numpy as np

from planner.fleet.samples import _add_sites, random_instance


def random_region_instance(rng: np.random.Generator, max_count: int = 4) -> dict:
    """One random instance (raw JSON data) with network.regions = "chosen"."""
    data = random_instance(rng, max_count)
    if not data["network"].get("sites"):
        _add_sites(rng, data)
    data["network"]["regions"] = "chosen"
    for site in data["network"]["sites"]:
        if rng.random() < 0.7:
            site["lan_mbps"] = float(10 ** rng.uniform(4, 5))
            site["lan_rtt_ms"] = float(rng.uniform(0.05, 3))
    data["limits"].pop("budget_usd", None)
    data["fleet"].pop("sync_rule", None)              # the straggler rule (what chosen regions support)
    data["objective"] = str(rng.choice(["min_time", "max_compute"]))
    if rng.random() < 0.5:                            # plans with groups: where regions matter
        data["search"]["modes"] = ["hierarchical", "pp_group"]
    if rng.random() < 0.4:                            # every node: every pool, hence several sites
        data["limits"].pop("max_nodes", None)
        data["search"]["min_nodes"] = sum(p["count"] for p in data["fleet"]["pools"])
    return data
