"""`dtplan sites`, `dtplan validate` on bad site/link input, and the drawing of the site graph."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.present.plots import UnknownPlotFormat
from planner.present.site_plot import central_meridian, convex_hull, draw_site_graph, link_label, positions, shifted
from planner.schema.instance import parse_instance
from planner.sites import regional_groups, site_graph

BASE = {"name": "sites", "model": {"params": 7e9}, "fleet": {"hardware": "16xH100-SXM", "nodes": 8}}
SHIPPED = Path(__file__).resolve().parents[1] / "instances" / "sites-seven-cities.json"
WORLD = json.loads(SHIPPED.read_text())          # seven sites, eight links, tier 1000 Mb/s / 30 ms
SITES, LINKS = WORLD["network"]["sites"], WORLD["network"]["links"]


def run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert "Traceback" not in result.output + (result.stderr or "")
    return result


def write(tmp_path, data, name="instance.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_sites_json():
    result = run("sites", SHIPPED, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [s["name"] for s in data["sites"]] == [s["name"] for s in SITES]
    assert data["sites"][2]["lan_mbps"] == 40000 and data["sites"][2]["lan_source"] == "given"
    assert data["sites"][0]["lan_mbps"] == 1000 and data["sites"][0]["lan_source"] == "network.regional"
    by_pair = {(l["a"], l["b"]): l for l in data["links"]}
    assert by_pair["lon", "fra"]["rtt_ms"] == 20 and by_pair["lon", "fra"]["rtt_source"] == "measured: London | Frankfurt"
    assert by_pair["par", "fra"]["rtt_source"] == "given"
    assert by_pair["lon", "nyc"]["down_mbps"] == 400
    assert by_pair["ash", "tok"] == {**by_pair["ash", "tok"], "rtt_ms": 152,
                                     "rtt_source": "measured: us-east-1 | ap-northeast-1 (the same metro areas)"}
    assert by_pair["tok", "lab"]["rtt_source"].startswith("distance rule: 5321 km")
    # 1000 Mb/s and 30 ms: London, Paris, Frankfurt (11-20 ms, >= 5000 Mb/s); New York - Ashburn (13 ms)
    assert data["groups"] == [["fra", "lon", "par"], ["ash", "nyc"], ["lab"], ["tok"]]
    assert data["regional_tier"] == {"min_mbps": 1000, "max_rtt_ms": 30, "source": "network.regional"}


def test_sites_text_and_the_tier_from_set(tmp_path):
    path = write(tmp_path, WORLD)
    result = run("sites", path)
    assert result.exit_code == 0
    assert "measured: London | Frankfurt" in result.output and "fra, lon, par" in result.output
    # a looser tier (400 Mb/s, 100 ms) joins New York to London (75 ms, 400 Mb/s back)
    loose = json.loads(run("sites", path, "--json", "--set", "network.regional.mbps=400",
                           "--set", "network.regional.rtt_ms=100").stdout)
    assert ["fra", "lon", "nyc", "par"] in loose["groups"]


def test_sites_without_sites(tmp_path):
    result = run("sites", write(tmp_path, BASE))
    assert result.exit_code == 0 and "No sites: the uniform network" in result.output
    assert json.loads(run("sites", write(tmp_path, BASE), "--json").stdout)["groups"] == []


def test_a_disconnected_graph_exits_2_naming_network_links(tmp_path):
    data = {**WORLD, "network": {**WORLD["network"], "links": LINKS[:5]}}
    result = run("sites", write(tmp_path, data), "--json")
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["problems"][0]["path"] == "network.links"
    assert "disconnected: 3 parts" in error["problems"][0]["message"]
    # the nearest pair between Europe-America and the Singapore lab: Frankfurt (10,265 km; Paris 10,730)
    assert "e.g. between 'fra' and 'lab'" in error["problems"][0]["message"]


@pytest.mark.parametrize("change, path, message", [
    ({"links": LINKS + [{"a": "lon", "b": "tokio", "up_mbps": 10}]}, "network.links[8].b",
     "unknown site 'tokio' (sites: 'lon', 'fra', 'par', 'nyc', 'ash', 'tok', 'lab'; did you mean 'tok'?)"),
    ({"links": [{**LINKS[0], "up_mbps": -8}] + LINKS[1:]}, "network.links[0].up_mbps", "must be a number > 0, got -8"),
    ({"sites": SITES + [{"name": "x", "city": "Tokio"}]}, "network.sites[7].city",
     "unknown city or region 'Tokio' (did you mean 'Tokyo', 'Tokai' or 'Tokoza'?)"),
    ({"sites": SITES + [{"name": "lon", "city": "Paris"}]}, "network.sites[7].name", "duplicate site name 'lon'"),
    ({"sites": SITES + [{"name": "x", "lat": -91, "lon": 0}]}, "network.sites[7].lat", "must be a number in [-90, 90]"),
    ({"sites": SITES + [{"name": "x", "lat": 0, "lon": 190}]}, "network.sites[7].lon", "must be a number in [-180, 180]"),
])
@pytest.mark.parametrize("command", ["validate", "sites"])
def test_bad_input_exits_2_with_the_field(tmp_path, command, change, path, message):
    data = {**WORLD, "network": {**WORLD["network"], **change}}
    result = run(command, write(tmp_path, data), "--json")
    assert result.exit_code == 2, result.output
    problems = json.loads(result.stdout)["error"]["problems"]
    assert any(p["path"] == path and p["message"].startswith(message) for p in problems), problems
    plain = run(command, write(tmp_path, data))
    assert plain.exit_code == 2 and f"{path}: {message}" in plain.stderr


def test_plot_suffix_checked_before_anything(tmp_path):
    result = run("sites", write(tmp_path, WORLD), "--plot", tmp_path / "graph.pdf")
    assert result.exit_code == 2 and "--plot" in result.stderr and ".pdf" in result.stderr
    assert not (tmp_path / "graph.pdf").exists()


@pytest.mark.parametrize("suffix", [".svg", ".png"])
def test_sites_plot_written(tmp_path, suffix):
    out = tmp_path / f"graph{suffix}"
    result = run("sites", write(tmp_path, WORLD), "--plot", out, "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["plot"] == str(out)
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG") if suffix == ".png" else b"<svg" in data


# -- the drawing -----------------------------------------------------------------------------------


def _texts(svg: str) -> list[str]:
    """The text of every <text> element of an SVG file."""
    root = ElementTree.fromstring(svg)
    return [" ".join("".join(t.itertext()).split()) for t in root.iter("{http://www.w3.org/2000/svg}text")]


def test_svg_names_every_site_and_group_and_labels_links(tmp_path):
    graph = site_graph(parse_instance(WORLD).network)
    groups = regional_groups(graph, 1000, 30)
    path = draw_site_graph(graph, groups, tmp_path / "g.svg", title=WORLD["name"])
    texts = _texts(path.read_text())
    for site in graph.nodes:
        assert site in texts, site
    assert "group 1: fra, lon, par" in texts and "group 2: ash, nyc" in texts
    assert "10000 Mb/s" in texts and "20 ms (m)" in texts           # London - Frankfurt, measured
    assert "1000/400 Mb/s" in texts                                 # London -> New York 1000, back 400
    assert "~84.8 ms" in texts                                      # Tokyo - lab: distance rule
    assert "11 ms" in texts                                         # Paris - Frankfurt, given


def test_unknown_plot_suffix(tmp_path):
    graph = site_graph(parse_instance(WORLD).network)
    with pytest.raises(UnknownPlotFormat):
        draw_site_graph(graph, [], tmp_path / "g.jpg")
    assert not (tmp_path / "g.jpg").exists()


def test_link_labels():
    assert link_label({"up_mbps": 1000.0, "down_mbps": 1000.0, "rtt_ms": 20.0, "rtt_source": "given"}) == "1000 Mb/s\n20 ms"
    assert link_label({"up_mbps": 100.0, "down_mbps": 50.0, "rtt_ms": 31.2, "rtt_source": "distance rule: x"}) \
        == "100/50 Mb/s\n~31.2 ms"


def test_map_centre_keeps_links_off_the_edge():
    # Tokyo - Los Angeles crosses the Pacific: a map centred on 0 would cut it, one on the Pacific not
    net = parse_instance({**BASE, "network": {"sites": [{"name": "t", "city": "Tokyo"}, {"name": "l", "city": "Los Angeles"}],
                                              "links": [{"a": "t", "b": "l", "up_mbps": 100}]}}).network
    graph = site_graph(net)
    centre = central_meridian(graph)
    pos = positions(graph, centre)
    assert abs(pos["t"][0] - pos["l"][0]) < 180
    assert shifted(139.6917, centre) == pytest.approx(pos["t"][0])
    assert shifted(190.0, 0.0) == pytest.approx(-170.0)


def test_crowded_sites_are_nudged_apart_and_others_stay_put():
    graph = site_graph(parse_instance(WORLD).network)
    pos = positions(graph, 0.0)
    span = max(p[0] for p in pos.values()) - min(p[0] for p in pos.values())
    names = list(pos)
    gaps = [((pos[u][0] - pos[v][0]) ** 2 + (pos[u][1] - pos[v][1]) ** 2) ** 0.5
            for i, u in enumerate(names) for v in names[i + 1:]]
    assert min(gaps) >= 0.08 * span * 0.95
    assert pos["tok"] == pytest.approx((139.6917, 35.6895), abs=1e-3)     # far from every other site


def test_convex_hull():
    square = [(0, 0), (1, 0), (1, 1), (0, 1), (0.5, 0.5)]
    assert convex_hull(square) == [(0, 0), (1, 0), (1, 1), (0, 1)]
    assert convex_hull([(2, 3)]) == [(2, 3)]


def test_sites_routes_by_hand():
    data = json.loads(run("sites", SHIPPED, "--routes", "--json").stdout)["routes"]
    at = {name: i for i, name in enumerate(data["sites"])}

    def route(a, b):
        return data["mbps"][at[a]][at[b]], data["rtt_ms"][at[a]][at[b]]

    # widest London -> Tokyo: via Frankfurt (10000) and the lab (500) then 1000 to Tokyo: 500 Mb/s;
    # least RTT: via New York (75) and Ashburn (13) then 152 to Tokyo: 240 ms
    assert route("lon", "tok") == (500, 240)
    # New York -> London: the direct link carries 400 back; Ashburn's 10000 then the same link
    assert route("nyc", "lon") == (400, 75) and route("ash", "lon") == (400, 88)
    assert route("par", "par") == (40000, 30)                 # the diagonal: the site's own LAN
    text = run("sites", SHIPPED, "--routes").output
    assert "500 / 240" in text and "40,000 / 30" in text


def test_site_graph_png_bytes_for_reports():
    from planner.present.site_plot import site_graph_png
    graph = site_graph(parse_instance(WORLD).network)
    data = site_graph_png(graph, regional_groups(graph, 1000, 30), title="seven")
    assert data.startswith(b"\x89PNG") and len(data) > 10_000


def test_a_large_graph_leaves_labels_out_and_says_so(tmp_path):
    sites = [{"name": f"site{i}", "lat": -50 + (i * 7) % 100, "lon": -170 + (i * 13) % 340} for i in range(120)]
    links = [{"a": f"site{i}", "b": f"site{(i + 1) % 120}", "up_mbps": 100} for i in range(120)]
    graph = site_graph(parse_instance({**BASE, "network": {"sites": sites, "links": links}}).network)
    texts = _texts(draw_site_graph(graph, regional_groups(graph, 1000, 30), tmp_path / "big.svg").read_text())
    caption = next(t for t in texts if "unlabelled" in t)
    assert caption == ("120 links, unlabelled beyond 40 (dtplan sites --json lists them); 120 sites, unnamed beyond "
                       "100; the first 20 of 120 groups drawn")
    assert not any(t.startswith("site") for t in texts) and not any("Mb/s" in t for t in texts)
