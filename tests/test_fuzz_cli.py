"""Property-based test of the command line on malformed and extreme instances (issue 10).

Shipped instances are mutated (wrong types, huge / negative / NaN / infinite numbers, deep
nesting, unusual Unicode, missing keys and sections) and run through validate, evaluate,
solve, feasible and compare. Every run must end with exit 2 naming the field, or a
verdict (0 / 1; 3 when the time limit came first), and never with a traceback, a hang
(every search runs under --time-limit) or the internal-error exit code 4. A plan that
solve returns must be scored as meeting every limit by evaluate (a consistent verdict).

Issue 23: fleets of pools (pools, sites, links, chosen regions, sync rules edited: solve,
feasible and compare under --json) and sweep specs (grids, draws, sample counts, seeds and
questions, valid and broken; a finished sweep reruns computing nothing) are fuzzed the same way.
"""

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from planner.cli import main
from tests.test_sites_fuzz import FIELDS, edit_rows, fuzz_settings, instance_file

REPO = Path(__file__).resolve().parents[1]
INSTANCES = ["baseline-1e25", "solve-1e24-64xh100", "moe-600B-a100", "pp-group-480B-h100"]
SHIPPED = {name: json.loads((REPO / "instances" / f"{name}.json").read_text()) for name in INSTANCES}
PLANS = {name: REPO / "instances" / f"{name}.plan.json" for name in INSTANCES
         if (REPO / "instances" / f"{name}.plan.json").exists()}
DEEP = "__dtplan_fuzz_deep__"
TIME_LIMIT = "1"


def leaf_paths(data, prefix=()):
    """Every key path of a JSON object (sections and leaves), as tuples."""
    paths = []
    if isinstance(data, dict):
        for key, value in data.items():
            paths.append(prefix + (key,))
            paths += leaf_paths(value, prefix + (key,))
    return paths


# Paths a mutation may touch: those of the shipped files, and fields they leave to defaults.
EXTRA_PATHS = [("search", "compression"), ("search", "group_sizes"), ("search", "min_nodes"),
               ("search", "max_stages"), ("search", "params"), ("limits", "budget_usd"), ("limits", "max_nodes"),
               ("fleet", "goodput"), ("fleet", "price_usd_per_accelerator"), ("training", "local_batch_tokens"),
               ("network", "regional", "mbps"), ("assumptions", "constants", "mfu_per_hfu"),
               ("assumptions", "constants", "replica_beta_exponent"), ("model", "hidden_size"), ("name",)]

numbers = st.sampled_from([0, -1, -1e308, 1e308, 10**30, 1e30, 2**63, 1e-308, 0.5, 1.5, 3, 64, 10**7, 10**7 + 1,
                           float("nan"), float("inf"), -float("inf")])
wrong_types = st.sampled_from(["72", "", "growth", True, False, None, [], {}, [1, 2], {"a": 1}, [None]])
texts = st.sampled_from(["\ud800", "caf\u00e9 \U0001F680", "\u202eevil", "x" * 20000, "\x00", "16xGH200\ud83d"])
long_lists = st.sampled_from([[float(i) for i in range(1, 2000)], list(range(2, 5000)), [1.0] * 65, []])
deep = st.just(DEEP)
values = st.one_of(numbers, wrong_types, texts, long_lists, deep)


@st.composite
def mutated(draw):
    name = draw(st.sampled_from(INSTANCES))
    data = copy.deepcopy(SHIPPED[name])
    paths = leaf_paths(data) + EXTRA_PATHS
    edits = draw(st.lists(st.tuples(st.sampled_from(paths), st.one_of(values, st.just("__delete__"))),
                          min_size=1, max_size=3))
    touched = []
    for path, value in edits:
        node = data
        for key in path[:-1]:
            if not isinstance(node, dict):
                break
            node = node.setdefault(key, {})
        if not isinstance(node, dict):
            continue
        if value == "__delete__":
            node.pop(path[-1], None)
        else:
            node[path[-1]] = value
        touched.append(path)
    depth = draw(st.sampled_from([40, 3000]))
    text = json.dumps(data).replace(json.dumps(DEEP), "[" * depth + "]" * depth)
    return name, text, touched


def invoke(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    assert result.exit_code in (0, 1, 2, 3), (args, result.exit_code, output[-2000:])
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def assert_field_named(result, touched):
    """Exit 2 names a field (a JSON path of the instance, the file, or the flag)."""
    stderr = result.stderr
    named = ["<file>", "<root>", "--"] + [path[0] for path in touched]
    assert any(name in stderr for name in named), (touched, stderr)


@settings(max_examples=25, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated())
def test_mutated_instances_exit_2_naming_the_field_or_give_a_verdict(tmp_path_factory, case):
    name, text, touched = case
    path = tmp_path_factory.mktemp("fuzz") / "instance.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    validated = invoke("validate", path)
    commands = [("solve", path, "--time-limit", TIME_LIMIT, "--json"),
                ("feasible", path, "--time-limit", TIME_LIMIT),
                ("compare", path, "--hardware", "16xH100-SXM,7xB200", "--time-limit", TIME_LIMIT)]
    if name in PLANS:
        commands.append(("evaluate", path, PLANS[name]))
    for args in commands:
        result = invoke(*args)
        if validated.exit_code == 2:          # an invalid file is invalid for every command
            assert result.exit_code == 2, (args, result.output)
        if result.exit_code == 2:
            assert_field_named(result, touched)
        elif args[0] == "solve" and result.exit_code == 0:
            plan = json.loads(result.stdout)["plan"]
            plan_path = path.with_name("plan.json")
            plan_path.write_text(json.dumps(plan))
            scored = invoke("evaluate", path, plan_path)
            assert scored.exit_code == 0, scored.output          # the plan returned meets every limit
    if validated.exit_code == 2:
        assert_field_named(validated, touched)


@pytest.mark.parametrize("text, code, message", [
    ('{"name": ' + "[" * 3000 + "]" * 3000 + "}", 2, "nested too deeply"),
    (json.dumps({**SHIPPED["baseline-1e25"], "fleet": {"hardware": "16xGH200", "nodes": float("nan")}}), 2,
     "fleet.nodes: must be an integer >= 1, got nan"),
    (json.dumps({**SHIPPED["baseline-1e25"], "name": "\ud800"}), 2, "name: must be valid Unicode text"),
    (json.dumps({**SHIPPED["baseline-1e25"], "fleet": {"hardware": "16xGH200", "nodes": 10**30}}), 2,
     "fleet.nodes: must be at most 10000000"),
])
def test_real_exit_codes_of_a_few_malformed_files(tmp_path, text, code, message):
    path = tmp_path / "i.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    for command in ("validate", "solve", "feasible"):
        proc = subprocess.run([sys.executable, "-m", "planner.cli", command, str(path)], capture_output=True,
                              text=True, timeout=120, cwd=REPO)
        assert proc.returncode == code, (command, proc.stderr)
        assert message in proc.stderr and "Traceback" not in proc.stderr


# -- fleets of pools, sites and links (issue 23 item 6) ------------------------------------------------

POOL_INSTANCES = ["mixed-a100-h100", "mixed-six-sites", "mixed-regions-chosen", "mixed-governance-cities"]
POOL_SHIPPED = {name: json.loads((REPO / "instances" / f"{name}.json").read_text()) for name in POOL_INSTANCES}
INLINE = json.loads((REPO / "models" / "hardware" / "16xGH200.json").read_text())
POOL_FIELDS = ["name", "hardware", "count", "site", "price_usd_per_accelerator", "colour"]
SITE_FIELDS, LINK_FIELDS = FIELDS["sites"], FIELDS["links"]
pool_values = st.one_of(numbers, wrong_types, texts, st.sampled_from([1, 2, 5, 8, "16xH100-SXM", INLINE]), st.sampled_from(
    ["LON", "NYC", "FRA", "nowhere", "16xH100-SXM", "7xB200", "9xFoo", INLINE, {**INLINE, "accelerators_per_node": 0},
     {k: v for k, v in INLINE.items() if k != "peak_tflops_per_accelerator"}, "h100", "a100"]))


@st.composite
def mutated_pools(draw):
    """A shipped fleet of pools with one to three edits to its pools, sites, links, regions or rule."""
    name = draw(st.sampled_from(POOL_INSTANCES))
    data = copy.deepcopy(POOL_SHIPPED[name])
    fleet, network = data["fleet"], data["network"]
    for _ in range(draw(st.sampled_from([1, 1, 2, 3]))):
        where = draw(st.sampled_from(["pools", "sites", "links", "regions", "sync_rule"]))
        if where == "regions":
            network["regions"] = draw(st.sampled_from(["chosen", "geography", "none", 1, None, [["LON"]]]))
            continue
        if where == "sync_rule":
            fleet["sync_rule"] = draw(st.sampled_from(["straggler", "proportional", "auto", "fastest", 0]))
            continue
        rows = fleet["pools"] if where == "pools" else network.setdefault(where, [])
        fields = {"pools": POOL_FIELDS, "sites": SITE_FIELDS, "links": LINK_FIELDS}[where]
        edit_rows(draw, rows, fields, pool_values, ("set", "set", "delete", "duplicate", "drop", "replace"))
    return json.dumps(data)


@fuzz_settings(20)
@given(mutated_pools())
def test_mutated_pool_fleets_exit_2_naming_the_field_or_give_a_verdict(tmp_path_factory, text):
    touched, path = [("fleet",), ("network",)], instance_file(tmp_path_factory, "pools", text)
    validated = invoke("validate", path)
    for command in ("solve", "feasible", "compare"):
        result = invoke(command, path, "--time-limit", TIME_LIMIT, "--json")
        event(f"{command} exit {result.exit_code}")
        if validated.exit_code == 2:
            assert result.exit_code == 2, (command, result.output)
        if result.exit_code == 2:
            assert_field_named(result, touched)
    if validated.exit_code == 2:
        assert_field_named(validated, touched)


# -- sweep specs -----------------------------------------------------------------------------------

SWEEP_FIELDS = ["fleet.nodes", "network.wan.up_mbps", "network.wan.up_mbps+network.wan.down_mbps", "limits.max_days",
                "assumptions.mfu", "fleet.hardware", "search.compression", "fleet.nodez", "fleet.nodes.x", "Fleet nodes",
                "", "network", "model.params", "fleet.pools", "network.sites"]
GRID_VALUES = ["36,72", "1e308", "nan", "-1", "0", "[1,16]", "16xH100-SXM,7xB200", "x", "", ",", "1e999", "[[1]]"]
DISTRIBUTIONS = ["uniform(0.3,0.5)", "uniform(0.5,0.3)", "normal(1,0)", "lognormal(1e308,1)", "choice(36,72)",
                 "triangular(1,2,3)", "uniform(nan,1)", "uniform(", "bogus(1)", "uniform(1e308,1e308)"]


@st.composite
def sweep_specs(draw):
    """Command-line arguments of a sweep: grids and draws of known and broken fields, values and
    distributions, sample counts, seeds and questions."""
    if draw(st.booleans()):                     # a valid spec: the sweep answers (and reruns from its output)
        args = ["--grid", draw(st.sampled_from(["fleet.nodes=36,72", "network.wan.up_mbps=10,1000",
                                                  "limits.max_days=30,365", "search.compression=[1,16],[100]"]))]
        if draw(st.booleans()):
            args += ["--vary", draw(st.sampled_from(["assumptions.mfu=uniform(0.3,0.5)", "fleet.nodes=choice(36,72)"])),
                     "--monte-carlo", "2", "--seed", draw(st.sampled_from(["0", "7", str(2**40)]))]
        return args + draw(st.sampled_from([[], ["--command", "feasible"], ["--objective", "max_compute"],
                                            ["--objective", "min_cost"]]))
    args = []
    for _ in range(draw(st.integers(0, 2))):
        args += ["--grid", f"{draw(st.sampled_from(SWEEP_FIELDS))}={draw(st.sampled_from(GRID_VALUES))}"]
    for _ in range(draw(st.integers(0, 1))):
        args += ["--vary", f"{draw(st.sampled_from(SWEEP_FIELDS))}={draw(st.sampled_from(DISTRIBUTIONS))}"]
    if draw(st.booleans()):
        args += ["--monte-carlo", draw(st.sampled_from(["2", "0", "-1", "1e9", "x"]))]
    if draw(st.booleans()):
        args += ["--seed", draw(st.sampled_from(["0", "-1", str(2**70), "x"]))]
    args += draw(st.sampled_from([[], ["--command", "feasible"], ["--objective", "max_compute"],
                                  ["--command", "evaluate"], ["--solver", "nope"]]))
    return args


@fuzz_settings(20)
@given(sweep_specs())
def test_sweep_specs_exit_2_naming_the_option_or_field_or_answer(tmp_path_factory, args):
    out = tmp_path_factory.mktemp("sweep") / "rows.csv"
    result = invoke("sweep", REPO / "instances" / "baseline-1e25.json", *args, "--workers", "1",
                    "--time-limit", TIME_LIMIT, "-o", out)
    event(f"sweep exit {result.exit_code}")
    if result.exit_code == 2:
        named = ["--", "<file>"] + [a.split("=")[0].split(".")[0] for a in args if "=" in a and a.split("=")[0]]
        assert any(n in result.stderr for n in named), (args, result.stderr)
    elif result.exit_code == 0:
        again = invoke("sweep", REPO / "instances" / "baseline-1e25.json", *args, "--workers", "1",
                       "--time-limit", TIME_LIMIT, "-o", out)
        assert again.exit_code == 0 and "(0 computed" in again.stderr, again.stderr    # a finished sweep reruns
