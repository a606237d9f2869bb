"""dtplan's Python API, notebook style: run it whole (`.venv/bin/python scripts/example_api.py`)
or cell by cell (# %% markers, as in VS Code or Jupytext). docs/api.md explains each call."""

# %% Load an instance, changing fields by their dotted JSON paths
from pathlib import Path

import planner

ROOT = Path(__file__).resolve().parents[1]
inst = planner.load_instance(ROOT / "instances/miri/baseline-1e25.json",
                             overrides={"network.wan.up_mbps": 30, "network.wan.down_mbps": 30})
print(inst.name, inst.network.wan)

# %% Solve: the optimal plan, proven (gap 0), as a dataclass and as a one-row DataFrame
result = planner.solve(inst)
print(result.status, result.plan.mode, "H =", result.plan.inner_steps,
      f"{result.objective_value / 86400:,.1f} days")
print(result.to_frame()[["status", "time_to_target_days", "cost_usd", "mode", "inner_steps"]])

# %% Evaluate a fixed plan (a dict, a Plan or a plan file)
report_plan = {"mode": "flat", "nodes": 72, "precision": "fp16", "inner_steps": 128, "compression": 16,
               "streaming": True}
e = planner.evaluate(inst, report_plan)
print(f"the report's plan: {e.values['time_to_target_s'] / 86400:,.1f} days, bottleneck {e.bottleneck}")

# %% Feasible: the verdict and, when infeasible, the smallest single fixes
f = planner.feasible(ROOT / "instances/miri/1e27-flat-a100.json")
print(f.to_frame()[["change", "status", "time_to_target_days", "nodes"]])

# %% Compare hardware presets on the same workload
table = planner.compare(inst, ["16xGH200", "16xH100-SXM", "48xA100-80GB"])
print(table.to_frame()[["rank", "hardware", "time_to_target_days", "nodes", "cost_usd"]])

# %% Sweep: a grid over two fields (linked fields take one value), one row per point
sweep = planner.sweep(inst, grid={"network.wan.up_mbps+network.wan.down_mbps": [10, 100, 1000],
                                  "search.compression": [[16], [100]]}, workers=1)
print(sweep.to_frame()[["network.wan.up_mbps+network.wan.down_mbps", "search.compression", "status",
                        "time_to_target_days", "inner_steps"]])

# %% Monte Carlo: draws from distributions, reproducible from the seed
mc = planner.sweep(inst, vary={"assumptions.mfu": "uniform(0.35, 0.46)"}, samples=8, seed=1, workers=1)
print(mc.to_frame()["time_to_target_days"].describe()[["mean", "min", "max"]])

# %% How sure is the verdict? Probability of reaching the target over the published uncertainty
reach = planner.feasible_monte_carlo(ROOT / "instances/miri/1e27-flat-a100.json", samples=8, seed=0, workers=1)
low, high = reach.interval
print(f"P(reachable) = {reach.probability:.0%} (95% interval {low:.0%}-{high:.0%}), "
      f"median {reach.days_percentiles[50]:,.0f} days")

# %% Bad input: one exception type, the CLI's JSON paths and messages
try:
    planner.solve(inst, overrides={"fleet.node": 10})
except planner.InputError as err:
    print("InputError:", err)
