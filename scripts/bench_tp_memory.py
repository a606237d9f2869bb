#!/usr/bin/env python3
"""Solve CPU of the shipped instances under dtplan with the tensor-parallel degree free and the memory per
accelerator on, against the profile as it is (issue 25 items 2 and 6; docs/physics.md section 2b).

Usage: scripts/bench_tp_memory.py [--repeats 3] [--root DIR] [--t-fixed]

Each single-fleet instance of instances/ (fleets of pools refuse `search_tensor_parallel`) is solved with
its own objective under assumptions.profile = dtplan, once with `activation_memory` off ("off", whatever the
profile's default), once with T free alone (search_tensor_parallel,
tensor_parallel 0, activations off: "tp") and once with T free and activation_memory and activation_recompute
= fit ("on"), in turn, `repeats` times; CPU seconds by time.process_time (the process's own CPU, so the load
from other processes moves it less than the wall clock). --root scores with the planner of another
worktree (e.g. /work/main, for the "off" figure before a change). Prints the load average at the start
and the end, the median CPU per instance both ways and the ratio; last line
`on_over_off_median=... on_over_off_max=...`. --t-fixed: "on" is the activations alone, T as the instance has it
(the dtplan profile with `activation_memory` on, against it off, docs/physics.md section 3).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FREE_T = {"search_tensor_parallel": True, "tensor_parallel": 0.0}
OFF = {"activation_memory": False}      # the profile without its activations, whatever its default
TP = {**OFF, **FREE_T}
ON = {**FREE_T, "activation_memory": True, "activation_recompute": "fit"}


def instances() -> list[Path]:
    """The shipped single-fleet instances (no pools, no plan or expected files)."""
    out = []
    for path in sorted((ROOT / "instances").glob("*.json")):
        if path.name.endswith((".plan.json", ".expected.json")) or path.name == "index.json":
            continue
        raw = json.loads(path.read_text())
        if "pools" in raw.get("fleet", {}) or "training" not in raw:     # pools; a fleet with no run to plan
            continue
        out.append(path)
    return out


def with_profile(raw: dict, constants: dict) -> dict:
    a = raw.get("assumptions", {})
    return {**raw, "assumptions": {**a, "profile": "dtplan", "constants": {**a.get("constants", {}), **constants}}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--root", type=Path, default=ROOT, help="the worktree whose planner scores (default: this one; "
                   "run it with that worktree's own Python, whose editable install finds its planner first)")
    p.add_argument("--beyond-evidence", action="store_true",
                   help="evidence_envelope off (most shipped instances are infeasible under dtplan inside it)")
    p.add_argument("--t-fixed", action="store_true", help="'on' without search_tensor_parallel: the activations alone")
    args = p.parse_args(argv)
    on_constants = {k: v for k, v in ON.items() if k not in FREE_T} if args.t_fixed else ON
    sys.path.insert(0, str(args.root))
    from planner.schema.instance import parse_instance
    from planner.solve import solve

    def cpu(raw: dict) -> tuple[float, str]:
        inst = parse_instance(raw)
        t0 = time.process_time()
        r = solve(inst, inst.objective)
        return time.process_time() - t0, r.status

    import planner
    print(f"planner: {Path(planner.__file__).parent}; on = {on_constants}; "
          f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    ratios = []
    for path in instances():
        raw = json.loads(path.read_text())
        if args.beyond_evidence:
            raw = with_profile(raw, {"evidence_envelope": False})
        off, tp, on = [], [], []
        for _ in range(args.repeats):
            t_off, s_off = cpu(with_profile(raw, OFF))
            t_tp, _ = cpu(with_profile(raw, TP))
            t_on, s_on = cpu(with_profile(raw, on_constants))
            off.append(t_off)
            tp.append(t_tp)
            on.append(t_on)
        ratio = float(np.median(on) / np.median(off))
        ratios.append(ratio)
        print(f"{path.stem}: off {np.median(off):.3f} s ({s_off}), tp {np.median(tp):.3f} s "
              f"({np.median(tp) / np.median(off):.2f}x), on {np.median(on):.3f} s CPU ({ratio:.2f}x; {s_on})")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"on_over_off_median={np.median(ratios):.2f} on_over_off_max={max(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
