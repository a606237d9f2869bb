"""Write the stored answers of the threshold questions (issue 15) to instances/thresholds/.

The questions are the MIRI report's countermeasure scenarios (Simulation_Notes.md scenario 5;
evasion_calculator.py print_countermeasure_ccc_threshold, print_countermeasure_memory_threshold,
print_collateral_damage) asked with `dtplan thresholds` on the report's instances of
instances/miri/. For each question this script runs `dtplan thresholds INSTANCE ARGS --json` and
writes instances/thresholds/<name>.expected.json: the question (instance path relative to
instances/, arguments, what it asks), the exit code and the JSON answer. tests/test_threshold_instances.py
re-answers every stored question and compares; only this script writes the files.

    .venv/bin/python scripts/make_thresholds_expected.py [--check]

It prints the wall time of each answer. `--check` writes nothing and reports answers that differ.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

OUT = ROOT / "instances" / "thresholds"
CCC = "miri/countermeasure-ccc-threshold-1.json"      # 10^24 FLOP, flat DiLoCo 16x, 100 Mb/s, 1.5 years
MEM = "miri/countermeasure-memory-512gb.json"
BW = "miri/countermeasure-bandwidth-cap-10mbps.json"   # 10^25 FLOP, 240B, 72 nodes
FP8 = "miri/1e27-fp8-h100.json"                        # 10^27 FLOP, flat DiLoCo in FP8, 16x, 100 Mb/s, 1.5 years
A100 = ["--accelerator", "A100-80GB", "--fit-model"]

QUESTIONS = [
    *[(f"ccc-{t}-a100", CCC, ["--compute", str(t), *A100],
       f"The report's lowered-CCC table: A100 80GB nodes under a {t} H100-equivalent threshold, model fitted "
       "to the node (16 bytes/param); fewest nodes for 10^24 FLOP in 1.5 years and their cost; who is caught.")
      for t in (16, 8, 4, 2, 1)],
    *[(f"1e27-fp8-ccc-{t}-h100", FP8, ["--compute", str(t), "--accelerator", "H100-SXM", "--fit-model"],
       f"The report's lowered-CCC H100 FP8 configurations: H100 nodes under a {t} H100-equivalent threshold, "
       "model fitted to the node (14 bytes/param in FP8); fewest nodes for 10^27 FLOP in 1.5 years and their cost.")
      for t in (16, 8, 4, 2, 1)],
    *[(f"memory-{m}-a100", MEM, ["--compute", "16", "--memory", str(m), *A100],
       f"The report's memory-threshold table: A100 80GB nodes under 16 H100-eq and {m} GB; fewest nodes for "
       "10^24 FLOP and cost; who is caught.") for m in (2048, 1024, 512, 256)],
    ("stop-compute-within-5-nodes", CCC, ["--compute", "16", *A100, "--stop", "compute", "--within-nodes", "5"],
     "How low must the compute threshold go before 5 nodes (the report's current-threshold answer) no longer "
     "reach 10^24 FLOP?"),
    ("stop-compute-and-memory-within-5-nodes", CCC,
     ["--compute", "16", "--memory", "4000", *A100, "--stop", "compute", "--stop", "memory", "--within-nodes", "5"],
     "The same with compute and memory thresholds lowered together (16 H100-eq and 4,000 GB scaled by one factor)."),
    ("stop-compute-within-3m-usd", CCC, ["--compute", "16", *A100, "--stop", "compute", "--within-budget", "3000000"],
     "How low must the compute threshold go before $3M no longer buys 10^24 FLOP (the report: cost is nearly "
     "constant, so a threshold barely moves it)?"),
    ("stop-wan-cap-within-72-nodes", BW,
     ["--compute", "16", "--accelerator", "A100-80GB", "--wan-cap", "100", "--wan-mbps", "100", "--rtt-ms", "100",
      "--stop", "wan", "--within-nodes", "72"],
     "The report's bandwidth-cap countermeasure: how low must a per-node WAN cap go before 72 nodes of 50x A100 "
     "no longer reach 10^25 FLOP with the 240B model?"),
]


def answer(instance: str, args: list[str]) -> tuple[int, dict]:
    from click.testing import CliRunner
    from planner.cli import main
    r = CliRunner().invoke(main, ["thresholds", str(ROOT / "instances" / instance), *args, "--json"])
    if r.exit_code not in (0, 1) or r.exception is not None and not isinstance(r.exception, SystemExit):
        raise RuntimeError(f"dtplan thresholds {instance} {' '.join(args)}: exit {r.exit_code}\n{r.output}")
    return r.exit_code, json.loads(r.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; report answers that differ")
    opts = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    differ = 0
    for name, instance, args, asks in QUESTIONS:
        t0 = time.perf_counter()
        code, out = answer(instance, args)
        wall = time.perf_counter() - t0
        stored = {"name": name, "asks": asks, "instance": instance, "args": args, "exit_code": code, "answer": out}
        path = OUT / f"{name}.expected.json"
        first = out["answers"][0]
        line = (f"{name:42s} {wall:6.2f} s  node {first['node']['count']:>3}  nodes {first['nodes']}  "
                f"caught {sum(1 for c in out['collateral'] if c['caught_by'])}")
        if out["stop_points"]:
            line += f"  stop: {out['stop_points'][0]['summary']}"
        print(line)
        if opts.check:
            if not path.exists() or json.loads(path.read_text()) != json.loads(json.dumps(stored)):
                differ += 1
                print(f"  differs from {path}")
        else:
            path.write_text(json.dumps(stored, indent=1) + "\n")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
