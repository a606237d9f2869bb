"""Sites, links and the site graph (issue 12): schema checks, RTT estimates, routes and regional groups.

Expected values come from hand calculations, the shipped tables (measured RTTs, city distances
measured independently of the coordinates) and brute force over every simple path / every subset
of sites on small random graphs.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics

import networkx as nx
import pytest

from planner.schema.errors import InputError
from planner.schema.instance import parse_instance
from planner.sites import (check_connected, distance_rule_rtt_ms, link_mbps, path_mbps, path_rtt_ms, regional_groups,
                           site_graph, slowest_link)
from planner.sites.places import great_circle_km, latency_table, measured_rtts, places
from planner.sites.rtt import RttEstimate, measured_rtt

BASE = {"model": {"params": 7e9}, "fleet": {"hardware": "16xH100-SXM", "nodes": 8}}


def network(sites, links=(), **rest):
    return parse_instance({**BASE, "network": {"sites": list(sites), "links": list(links), **rest}}).network


def problems(net: dict) -> list[str]:
    with pytest.raises(InputError) as err:
        parse_instance({**BASE, "network": net})
    return [str(p) for p in err.value.problems]


# -- the tables ------------------------------------------------------------------------------------


def test_coordinates_agree_with_the_independent_city_distance_table():
    """CITY_DISTANCES_KM (wan_latency.json) was compiled apart from the GeoNames coordinates."""
    table = latency_table()["CITY_DISTANCES_KM"]
    errors = []
    for pair, km in table.items():
        a, b = (places()[name.strip()] for name in pair.split("|"))
        errors.append(abs(great_circle_km(a.lat, a.lon, b.lat, b.lon) / km - 1))
    assert len(errors) == 21
    assert statistics.median(errors) < 0.002
    assert max(errors) < 0.04            # Sao Paulo | Cape Town: the table says 6,135 km, GeoNames 6,345 km


def test_every_name_of_the_measured_pairs_is_a_place():
    names = {n for pair in measured_rtts() for n in pair}
    assert names <= set(places())
    assert len(measured_rtts()) == 181


def test_haversine_by_hand():
    # a quarter of a meridian: pi/2 * R
    assert great_circle_km(0, 0, 90, 0) == pytest.approx(math.pi / 2 * 6371.0088)
    # antipodes on the equator: pi * R
    assert great_circle_km(0, 0, 0, 180) == pytest.approx(math.pi * 6371.0088)


def test_distance_rule_is_5_ms_plus_15_ms_per_1000_km():
    # 5 ms (the table's same-metro RTT) + 2 (round trip) x 1000 km x 1.5 (route) / 200,000 km/s = 20 ms
    assert distance_rule_rtt_ms(1000.0) == pytest.approx(20.0)
    assert distance_rule_rtt_ms(0.0) == 5.0


def test_distance_rule_error_on_the_measured_pairs():
    """Every measured pair is held out (the rule's constants are physical ones and the same-metro RTT):
    median |error| 7.8 ms, 12.4% of the measured RTT (scripts/rtt_rule_error.py prints the bands)."""
    errors, relative = [], []
    for pair, found in measured_rtts().items():
        a, b = (places()[name] for name in pair)
        error = distance_rule_rtt_ms(great_circle_km(a.lat, a.lon, b.lat, b.lon)) - found.rtt_ms
        errors.append(abs(error))
        relative.append(abs(error) / found.rtt_ms)
    assert statistics.median(errors) == pytest.approx(7.8, abs=0.05)
    assert statistics.median(relative) == pytest.approx(0.124, abs=0.0005)


def test_measured_pairs_exact_then_by_metro_area():
    assert measured_rtt("Tokyo", "London") == RttEstimate(243.0, "measured: London | Tokyo")
    # no London | Sydney figure; UK South (London) | Australia East (Sydney) is
    assert measured_rtt("London", "Sydney") == RttEstimate(
        247.0, "measured: UK South | Australia East (the same metro areas)")
    # East US is placed at Richmond but does not lie in its metro area: it lends nothing
    assert measured_rtt("Richmond", "London") is None
    assert measured_rtt("Paris", "Paris") is None


# -- schema --------------------------------------------------------------------------------------


def test_empty_sites_and_links_are_the_default():
    net = parse_instance(BASE).network
    assert net.sites == [] and net.links == []


def test_a_site_by_city_takes_the_city_coordinates_and_down_defaults_to_up():
    net = network([{"name": "fra", "city": "Frankfurt"}, {"name": "x", "lat": 10, "lon": 20}],
                  [{"a": "fra", "b": "x", "up_mbps": 300}])
    assert net.sites[0].coordinates == (places()["Frankfurt"].lat, places()["Frankfurt"].lon)
    assert net.sites[1].coordinates == (10.0, 20.0)
    assert net.links[0].down_mbps == 300.0


@pytest.mark.parametrize("net, expected", [
    ({"sites": [{"name": "tokyo", "city": "Tokio"}]},
     "network.sites[0].city: unknown city or region 'Tokio' (did you mean 'Tokyo', 'Tokai' or 'Tokoza'?)"),
    ({"sites": [{"name": "a", "lat": 91, "lon": 0}]}, "network.sites[0].lat: must be a number in [-90, 90], got 91"),
    ({"sites": [{"name": "a", "lat": 0, "lon": -180.5}]},
     "network.sites[0].lon: must be a number in [-180, 180], got -180.5"),
    ({"sites": [{"name": "a", "lat": 3}]}, "network.sites[0].lon: required with lat"),
    ({"sites": [{"name": "a"}]}, "network.sites[0].city: required field missing (give a city, or lat and lon)"),
    ({"sites": [{"name": " ", "city": "Paris"}]}, "network.sites[0].name: must be a non-empty name"),
    ({"sites": [{"name": "a", "city": "Osaka", "lat": 40.7, "lon": -74}]}, "network.sites[0].lat: (40.7, -74) lies"),
    ({"sites": [{"name": "a", "city": "Paris"}, {"name": "a", "city": "Rome"}]},
     "network.sites[1].name: duplicate site name 'a' (also sites[0].name)"),
    ({"sites": [{"name": "tokyo", "city": "Tokyo"}, {"name": "osaka", "city": "Osaka"}],
      "links": [{"a": "osaka", "b": "tokio", "up_mbps": 100}]},
     "network.links[0].b: unknown site 'tokio' (sites: 'tokyo', 'osaka'; did you mean 'tokyo'?)"),
    ({"sites": [{"name": "a", "city": "Paris"}, {"name": "b", "city": "Rome"}],
      "links": [{"a": "a", "b": "b", "up_mbps": -8}]}, "network.links[0].up_mbps: must be a number > 0, got -8"),
    ({"sites": [{"name": "a", "city": "Paris"}, {"name": "b", "city": "Rome"}],
      "links": [{"a": "a", "b": "b", "up_mbps": 8, "down_mbps": 0}]},
     "network.links[0].down_mbps: must be a number > 0, got 0"),
    ({"sites": [{"name": "a", "city": "Paris"}, {"name": "b", "city": "Rome"}],
      "links": [{"a": "a", "b": "b", "up_mbps": 8, "rtt_ms": -1}]},
     "network.links[0].rtt_ms: must be a number >= 0, got -1"),
    ({"sites": [{"name": "a", "city": "Paris"}], "links": [{"a": "a", "b": "a", "up_mbps": 8}]},
     "network.links[0].b: must differ from a"),
    ({"sites": [{"name": "a", "city": "Paris"}, {"name": "b", "city": "Rome"}],
      "links": [{"a": "a", "b": "b", "up_mbps": 8}, {"a": "b", "b": "a", "up_mbps": 9}]},
     "network.links[1]: a second link between 'b' and 'a' (also links[0])"),
    ({"links": [{"a": "x", "b": "y", "up_mbps": 8}]}, "network.links[0].a: unknown site 'x' (network.sites is empty"),
])
def test_bad_sites_and_links_name_the_field(net, expected):
    found = problems(net)
    assert any(p.startswith(expected) for p in found), found


def test_field_errors_and_cross_references_are_reported_together():
    found = problems({"sites": [{"name": "a", "city": "Tokio"}, {"name": "a", "lat": 91, "lon": 0}],
                      "links": [{"a": "a", "b": "b", "up_mbps": -8}]})
    assert [p.split(":")[0] for p in found] == ["network.sites[0].city", "network.sites[1].lat",
                                                "network.links[0].up_mbps", "network.sites[1].name",
                                                "network.links[0].b"]


# -- the graph -----------------------------------------------------------------------------------


def test_rtt_given_measured_or_by_the_distance_rule():
    net = network([{"name": "lon", "city": "London"}, {"name": "tok", "city": "Tokyo"},
                   {"name": "x", "lat": 0, "lon": 0}, {"name": "y", "lat": 0, "lon": 10},
                   {"name": "fra", "city": "Frankfurt"}],
                  [{"a": "tok", "b": "lon", "up_mbps": 100},
                   {"a": "x", "b": "y", "up_mbps": 100},
                   {"a": "lon", "b": "fra", "up_mbps": 100, "rtt_ms": 7.5},
                   {"a": "fra", "b": "x", "up_mbps": 100}])
    g = site_graph(net)
    assert (g.edges["lon", "tok"]["rtt_ms"], g.edges["lon", "tok"]["rtt_source"]) == (243.0, "measured: London | Tokyo")
    assert (g.edges["lon", "fra"]["rtt_ms"], g.edges["lon", "fra"]["rtt_source"]) == (7.5, "given")
    # 10 degrees of the equator: 10/360 * 2 pi R = 1111.95 km -> 5 + x 1.5 / 200000 km/s x 2 = 21.68 ms
    km = 10 / 360 * 2 * math.pi * 6371.0088
    assert g.edges["x", "y"]["rtt_ms"] == pytest.approx(5 + 2 * km * 1.5 / 200000 * 1000)
    assert g.edges["x", "y"]["rtt_source"].startswith("distance rule: 1112 km")
    # Frankfurt - (0, 0): no measured pair (one side has no city)
    assert g.edges["fra", "x"]["rtt_source"].startswith("distance rule")


def test_node_attributes_and_lan_default():
    net = network([{"name": "a", "city": "Paris", "lan_mbps": 40000}, {"name": "b", "lat": 1, "lon": 2}],
                  regional={"mbps": 5000, "rtt_ms": 2})
    g = site_graph(net)
    assert g.nodes["a"] == {"city": "Paris", "lat": places()["Paris"].lat, "lon": places()["Paris"].lon,
                            "lan_mbps": 40000.0, "lan_rtt_ms": 2.0, "lan_source": "given"}
    assert g.nodes["b"]["lan_mbps"] == 5000.0 and g.nodes["b"]["lan_source"] == "network.regional"


def _chain():
    """a -> b 100 up / 10 down, 5 ms; b - c 50 / 50, 7 ms; a - c 20 / 20, 30 ms."""
    sites = [{"name": n, "lat": 0, "lon": i} for i, n in enumerate("abc")]
    links = [{"a": "a", "b": "b", "up_mbps": 100, "down_mbps": 10, "rtt_ms": 5},
             {"a": "c", "b": "b", "up_mbps": 50, "rtt_ms": 7},
             {"a": "a", "b": "c", "up_mbps": 20, "rtt_ms": 30}]
    return site_graph(network(sites, links, regional={"mbps": 1000, "rtt_ms": 1}))


def test_paths_by_hand():
    g = _chain()
    assert link_mbps(g, "a", "b") == 100 and link_mbps(g, "b", "a") == 10
    assert path_mbps(g, "a", "c") == 50          # a -> b (100) -> c (50) beats the direct 20
    assert path_mbps(g, "c", "a") == 20          # c -> b -> a is 10, the direct link 20
    assert path_rtt_ms(g, "a", "c") == 12        # 5 + 7 < 30
    assert path_mbps(g, "a", "a") == 1000 and path_rtt_ms(g, "b", "b") == 1
    # b -> a: direct 10 Mb/s, via c min(50, 20) = 20: the narrowest pair is 20 Mb/s; a-c takes 12 ms
    assert path_mbps(g, "b", "a") == 20
    assert slowest_link(g, ["a", "b", "c"]) == (20.0, 12.0)
    assert slowest_link(g, ["b"]) == (1000.0, 1.0)


def test_regional_groups_are_cliques_not_components():
    g = _chain()
    # at >= 50 Mb/s both ways only b-c qualifies; a is a group of one
    assert regional_groups(g, 50, 100) == [frozenset("bc"), frozenset("a")]
    # >= 10 Mb/s, <= 7 ms: a-b (5) and b-c (7) qualify, a-c needs 12 ms: two overlapping groups
    assert regional_groups(g, 10, 7) == [frozenset("ab"), frozenset("bc")]
    assert regional_groups(g, 10, 12) == [frozenset("abc")]


def test_unreachable_sites():
    g = site_graph(network([{"name": "a", "city": "Paris"}, {"name": "b", "city": "Rome"}]))
    assert path_mbps(g, "a", "b") == 0.0 and path_rtt_ms(g, "a", "b") == math.inf
    with pytest.raises(InputError) as err:
        check_connected(g)
    assert str(err.value.problems[0]).startswith("network.links: the site graph is disconnected: 2 parts")


def test_slowest_link_without_a_route_and_the_connectivity_of_a_subset():
    net = network([{"name": n, "city": c} for n, c in (("a", "Paris"), ("b", "Rome"), ("c", "Madrid"))],
                  [{"a": "a", "b": "b", "up_mbps": 100, "rtt_ms": 9}])
    g = site_graph(net)
    assert slowest_link(g, ["a", "b", "c"]) == (0.0, math.inf)
    check_connected(g, sites=["a", "b"])
    with pytest.raises(InputError, match="2 parts"):
        check_connected(g, sites=["b", "c"])
    with pytest.raises(KeyError, match="unknown site 'd'"):
        check_connected(g, sites=["a", "d"])
    with pytest.raises(KeyError, match="unknown site 'd'"):
        path_mbps(g, "a", "d")


def test_the_route_table_follows_changes_to_the_graph():
    g = _chain()
    assert path_mbps(g, "a", "c") == 50
    g.edges["b", "c"]["up_mbps"] = g.edges["b", "c"]["down_mbps"] = 15    # a -> c direct (20) now wider
    assert path_mbps(g, "a", "c") == 20
    g.edges["a", "c"]["rtt_ms"] = 1
    assert path_rtt_ms(g, "a", "c") == 1


def test_connected_graphs_pass_the_check():
    check_connected(_chain())
    check_connected(site_graph(network([{"name": "a", "city": "Paris"}])))
    check_connected(site_graph(parse_instance(BASE).network))


def _random_graph(seed: int, n: int = 6) -> nx.Graph:
    rng = random.Random(seed)
    sites = [{"name": f"s{i}", "lat": rng.uniform(45, 48), "lon": rng.uniform(5, 8)} for i in range(n)]   # <= 420 km apart
    links = [{"a": f"s{i}", "b": f"s{j}", "up_mbps": rng.choice([10, 50, 100, 400, 1000]),
              "down_mbps": rng.choice([10, 50, 100, 400, 1000]), "rtt_ms": rng.choice([3, 5, 10, 20, 40])}
             for i, j in itertools.combinations(range(n), 2) if rng.random() < 0.45]
    return site_graph(network(sites, links))


def _routes(g, a, b):
    return list(nx.all_simple_paths(g, a, b))


@pytest.mark.parametrize("seed", range(40))
def test_paths_agree_with_brute_force_over_every_simple_route(seed):
    g = _random_graph(seed)
    for a, b in itertools.permutations(g.nodes, 2):
        routes = _routes(g, a, b)
        widest = max((min(link_mbps(g, u, v) for u, v in zip(r, r[1:])) for r in routes), default=0.0)
        shortest = min((sum(g.edges[u, v]["rtt_ms"] for u, v in zip(r, r[1:])) for r in routes), default=math.inf)
        assert path_mbps(g, a, b) == widest
        assert path_rtt_ms(g, a, b) == pytest.approx(shortest)


@pytest.mark.parametrize("seed", range(40))
def test_regional_groups_agree_with_brute_force_over_every_subset(seed):
    g = _random_graph(seed)
    min_mbps, max_rtt = random.Random(seed).choice([(10, 20), (50, 15), (100, 40), (400, 10)])

    def meets(a, b):
        return any(all(min(g.edges[u, v]["up_mbps"], g.edges[u, v]["down_mbps"]) >= min_mbps for u, v in zip(r, r[1:]))
                   and sum(g.edges[u, v]["rtt_ms"] for u, v in zip(r, r[1:])) <= max_rtt for r in _routes(g, a, b))

    ok = [frozenset(s) for k in range(1, len(g) + 1) for s in itertools.combinations(g.nodes, k)
          if all(meets(a, b) for a, b in itertools.combinations(s, 2))]
    maximal = {s for s in ok if not any(s < t for t in ok)}
    groups = regional_groups(g, min_mbps, max_rtt)
    assert set(groups) == maximal and len(groups) == len(maximal)


def test_the_json_schema_describes_sites_and_links():
    from planner.schema.instance import instance_json_schema
    defs = instance_json_schema()["$defs"]
    assert {"sites", "links"} <= set(defs["Network"]["properties"])
    assert list(defs["Site"]["properties"]) == ["name", "city", "lat", "lon", "lan_mbps", "lan_rtt_ms"]
    assert list(defs["SiteLink"]["properties"]) == ["a", "b", "up_mbps", "down_mbps", "rtt_ms"]
    assert defs["Site"]["properties"]["lat"]["anyOf"][0] == {"maximum": 90, "minimum": -90, "type": "number"}
    assert all(p.get("description") for d in ("Site", "SiteLink") for p in defs[d]["properties"].values())


def test_the_error_table_of_docs_sites_md_is_what_the_script_computes():
    import importlib.util
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("rtt_rule_error", root / "scripts" / "rtt_rule_error.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    doc = (root / "docs" / "sites.md").read_text()
    rows = module.markdown_rows()
    assert len(rows) == 5 and rows[-1].startswith("| all | 181 |")
    for row in rows:
        assert row in doc, row


def test_a_given_rtt_below_what_light_allows_is_refused():
    # London - Tokyo: 9,559 km great circle; light needs 2 x (9559 - 100) km / 299,792.458 km/s = 63.1 ms
    found = problems({"sites": [{"name": "l", "city": "London"}, {"name": "t", "city": "Tokyo"}],
                      "links": [{"a": "l", "b": "t", "up_mbps": 100, "rtt_ms": 0.243}]})
    assert found == ["network.links[0].rtt_ms: must be at least 63.1 ms for sites 9,559 km apart ('l', 't': light "
                     "in vacuum there and back, 50 km of metro area allowed at each end), got 0.243 (milliseconds, "
                     "not seconds)"]
    # 100 km apart at most within two metro areas: any RTT will do
    network([{"name": "a", "lat": 0, "lon": 0}, {"name": "b", "lat": 0, "lon": 0.5}],
            [{"a": "a", "b": "b", "up_mbps": 100, "rtt_ms": 0}])


def test_every_measured_pair_respects_the_light_bound():
    from planner.schema.sites import min_rtt_ms
    for pair, found in measured_rtts().items():
        a, b = (places()[name] for name in pair)
        assert found.rtt_ms >= min_rtt_ms(great_circle_km(a.lat, a.lon, b.lat, b.lon)), found.pair
