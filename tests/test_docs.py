"""What the README and the docs claim holds (issue 10 item 12)."""

import re
import subprocess
from pathlib import Path

from planner.cost.duration import SECONDS_PER_DAY
from planner.evaluate import evaluate
from planner.schema.instance import load_instance
from planner.schema.plan import load_plan

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def _shell_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, flags=re.S)


def test_readme_commands_write_no_file_into_the_checkout():
    for block in _shell_blocks(README):
        for flag, path in re.findall(r"(?<!\S)(--report|--plot|--write-model|--out|--output|-o)[ =](\S+)", block):
            assert path.startswith("/tmp/"), f"README: {flag} {path} would write into the checkout"


def test_readme_baseline_sentence_gives_the_figures_the_command_prints():
    e = evaluate(load_instance(REPO / "instances/baseline-1e25.json"), load_plan(REPO / "instances/baseline-1e25.plan.json"))
    v, s = e.values, e.setting
    assert s.target_kind == "c_local" and not e.feasible
    sentence = " ".join(README[README.index("Under the published calculator's assumptions this plan"):][:600].split())
    assert f"C_local target of {s.target:.3e}".replace("e+", "e") in sentence
    assert f"{s.window_s / SECONDS_PER_DAY:,.1f}-day limit" in sentence
    assert f"{v['tokens'] / 1e12:,.2f}T tokens" in sentence
    assert f"eta = {v['eta']:.2f}" in sentence
    assert f"C_local = {v['c_local']:.2e}".replace("e+", "e") in sentence
    assert f"{v['time_to_target_s'] / SECONDS_PER_DAY:,.1f} days" in sentence
    assert v["c_local"] < s.target


def test_nothing_cites_specs_that_are_not_in_the_repository():
    tracked = subprocess.check_output(["git", "ls-files"], cwd=REPO, text=True).split()
    cited = []
    for name in tracked:
        path = REPO / name
        if name.endswith((".py", ".md", ".json", ".toml", ".txt")) and path.is_file() and name != "tests/test_docs.py":
            text = path.read_text(errors="replace")
            cited += [f"{name}: {m}" for m in re.findall(r"COST_MODEL\.md|(?<!docs/)PLANNER\.md|FORMULATION_NOTES|"
                                                          r"shared/spec", text)]
    assert cited == []


def test_cost_model_doc_has_a_section_per_cost_module_naming_real_functions():
    import importlib
    doc = (REPO / "docs" / "cost_model.md").read_text()
    stems = sorted(p.stem for p in (REPO / "planner" / "cost").glob("*.py") if p.stem != "__init__")
    headings = re.findall(r"^## .*$", doc, flags=re.M)
    for stem in stems:
        assert any(f"`{stem}.py`" in h for h in headings), f"no section for planner/cost/{stem}.py"
    places = [importlib.import_module(f"planner.cost.{stem}") for stem in stems]
    places.append(importlib.import_module("planner.present.plots"))
    not_code = {"dtplan", "cost_usd", "t_step_s", "fleet.goodput", "assumptions.constants"}
    named = {n for n in re.findall(r"`([A-Za-z_][A-Za-z_0-9.]*)`", doc) if not n.endswith(".py")} - not_code
    unknown = [n for n in sorted(named)
               if not n.startswith("planner.") and not any(hasattr(m, n.split(".")[0]) for m in places)]
    assert unknown == []
    assert len(named) > 40
