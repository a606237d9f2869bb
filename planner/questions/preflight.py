"""Every problem `dtplan solve` would reject an instance for, found at once: `dtplan validate`.

`preflight(raw, source)` returns the Instance (None when the schema rejects it) and every
problem, without searching:

1. the schema's (`parse_instance`: types, ranges, cross-field rules);
2. when the schema rejects the instance, the checks its later stage would have run had the
   fields been valid, run on the sections that are valid on their own: the pools' sites against
   `network.sites`, and the sites holding pools joined by links (`check_connected`), so that a
   bad count and an unknown site and a disconnected site graph are reported together;
3. when the schema accepts it, the checks the solve path runs before it searches, each on its
   own: candidate model sizes against the objective (`size_set_problems`), the sites holding
   pools joined by links (planner.fleet.network.check_pool_sites_connected), and then the solve
   itself with its deadline already passed (so it stops before searching): the first InputError
   it raises (the exact planner's pool limit, region partitions, the proportional rule's limits,
   constants without a search bound) is added.

A problem found twice (the same path and message) is listed once.
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

from planner.schema.errors import InputError, Problem


def preflight(raw: Any, source: str = "<instance>") -> tuple[Any, list[Problem]]:
    from planner.schema.instance import parse_instance
    try:
        instance = parse_instance(raw, source)
    except InputError as err:
        return None, _unique(list(err.problems) + _section_problems(raw))
    return instance, _unique(_solve_problems(instance))


def _unique(problems: list[Problem]) -> list[Problem]:
    seen, out = set(), []
    for p in problems:
        if (p.path, p.message) not in seen:
            seen.add((p.path, p.message))
            out.append(p)
    return out


def _section_problems(raw: Any) -> list[Problem]:
    """Pool sites and site-graph connectivity, from the network section (when it is valid alone)
    and the pools' `site` strings (whatever else in them is wrong)."""
    from planner.schema.sites import pool_site_problems
    from planner.schema.instance import Network
    fleet = raw.get("fleet") if isinstance(raw, dict) else None
    pools = fleet.get("pools") if isinstance(fleet, dict) else None
    if not isinstance(pools, list) or not isinstance(raw.get("network"), dict):
        return []
    network = _valid_alone(Network, raw["network"])
    if network is None:          # e.g. a link to an unknown site: the links between known sites
        names = {s.get("name") for s in raw["network"].get("sites") or [] if isinstance(s, dict)}
        links = [x for x in raw["network"].get("links") or []
                 if isinstance(x, dict) and x.get("a") in names and x.get("b") in names]
        network = _valid_alone(Network, {**raw["network"], "links": links})
    if network is None:          # its own problems are the schema's, reported already
        return []
    sites = [p.get("site") if isinstance(p, dict) and isinstance(p.get("site"), str) else None for p in pools]
    shape = SimpleNamespace(is_mixed=True, pools=[SimpleNamespace(site=s) for s in sites])
    problems = pool_site_problems(shape, network)
    names = {s.name for s in network.sites}
    held = sorted({s for s in sites if s in names})
    if len(held) > 1:
        from planner.fleet.network import SiteNetwork
        from planner.sites.graph import check_connected
        try:
            check_connected(SiteNetwork(network).graph, "network.links", held)
        except InputError as err:
            problems += err.problems
    return problems


def _valid_alone(model, data):
    try:
        return model.model_validate(data)
    except Exception:            # InputError or pydantic's ValidationError: the schema reported it
        return None


def _solve_problems(instance) -> list[Problem]:
    from planner.schema.instance import size_set_problems
    from planner.solve import solve
    problems = list(size_set_problems(instance, instance.objective))
    if instance.fleet.is_mixed and instance.network.sites:
        from planner.fleet.network import SiteNetwork, check_pool_sites_connected
        try:
            check_pool_sites_connected(SiteNetwork(instance.network), instance.fleet)
        except InputError as err:
            problems += err.problems
    try:                           # the solve path's own checks, stopped before its search (its first)
        solve(instance, deadline=time.perf_counter())
    except InputError as err:
        problems += err.problems
    return problems
