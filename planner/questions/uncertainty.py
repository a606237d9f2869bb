"""How sure is the verdict? `dtplan feasible --monte-carlo N`.

The cost model leans on inputs known only within intervals: the scaling-law fit
(Besiroglu et al. 2024 give standard errors for E, A, alpha, beta), the model FLOP
utilisation of real runs, the compression-quality scenario. models/assumptions/
uncertainty/published.json gives each a distribution, the published interval its draws must stay
inside (a draw outside is redrawn: we sample only inside published intervals) and the
source of both.

For each of N draws (point i's draws depend only on the seed and i, as in every sweep)
the instance is solved for the fastest plan with the duration limit lifted
(`planner.questions.sweep`, command "reach"): its days to the target, and whether they
fit the instance's limit (the fastest plan under the limit exists exactly when the fastest
plan without it fits, every other limit staying in force). The answer:

- p = reachable draws / N, with its 95% Wilson score interval
  (p + z^2/2N -/+ z sqrt(p(1-p)/N + z^2/4N^2)) / (1 + z^2/N), z = 1.96;
- percentiles of the days over the draws that have a plan at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from planner.questions.sweep import Distribution, SweepResult, SweepSpec, run_sweep
from planner.questions.uncertainty_inputs import (UNCERTAINTY_FILE, UncertainInput, default_uncertainty,  # noqa: F401
                                                  load_uncertainty)
from planner.schema.errors import InputError, Problem

PERCENTILES = (5, 25, 50, 75, 95)
Z95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (see the module docstring)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    denom = 1 + z * z / n
    return max(0.0, (centre - spread) / denom), min(1.0, (centre + spread) / denom)


@dataclass
class ReachResult:
    """The probability that the target is reachable within the limits, and the days it takes."""

    samples: int
    reachable: int
    failed: int                                  # draws that raised (their rows say why)
    limit_days: float | None
    days_percentiles: dict[int, float]           # over the draws with a plan
    inputs: list[UncertainInput]
    sweep: SweepResult
    seed: int = 0
    base_days: float | None = None               # the instance as given (no draw): fastest plan's days
    base_reachable: bool = False                 # and whether they fit the limit
    notes: list[str] = field(default_factory=list)

    @property
    def probability(self) -> float:
        return self.reachable / self.samples if self.samples else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.reachable, self.samples)

    def to_dict(self) -> dict[str, Any]:
        return {"samples": self.samples, "seed": self.seed, "reachable": self.reachable,
                "probability": self.probability, "probability_95": list(self.interval), "failed": self.failed,
                "limit_days": self.limit_days, "as_given": {"days": self.base_days, "reachable": self.base_reachable},
                "days_percentiles": {f"p{q}": v for q, v in self.days_percentiles.items()},
                "inputs": [i.to_dict() for i in self.inputs], "notes": self.notes}

    def to_frame(self):
        """One row per draw (pandas DataFrame): the drawn inputs, reachable, days, limit, plan."""
        return self.sweep.to_frame()


def reach(raw: dict, samples: int, seed: int = 0, uncertainty: str | Path | None = None,
          source: str = "<instance>", workers: int | None = None, scheduler: Any = None,
          output: str | Path | None = None,
          progress: Callable[[int, int], None] | None = None) -> ReachResult:
    """Monte Carlo over the uncertain inputs: see the module docstring."""
    inputs = load_uncertainty(uncertainty)
    spec = SweepSpec(raw, source, vary={i.field: i.distribution for i in inputs}, samples=samples, seed=seed,
                     command="reach")
    result = run_sweep(spec, workers=workers, scheduler=scheduler, output=output, progress=progress)
    from planner.questions.sweep import Point, run_point
    base = run_point(spec.payload(), Point(-1, {}, "as-given"))
    rows = result.rows
    days = np.array([r["days"] for r in rows if r.get("days") is not None], dtype=float)
    pct = {q: float(v) for q, v in zip(PERCENTILES, np.percentile(days, PERCENTILES))} if len(days) else {}
    limit = rows[0]["limit_days"] if rows and rows[0].get("limit_days") is not None else None
    notes = ["draws only inside the published intervals of models/assumptions/uncertainty/published.json "
             "(independent; correlations between the scaling-law parameters ignored)"]
    no_plan = sum(1 for r in rows if r["status"] == "unreachable" and r.get("days") is None)
    if no_plan:
        notes.append(f"{no_plan} draws have no plan at all (a limit other than the duration binds)")
    return ReachResult(samples=len(rows), reachable=sum(1 for r in rows if r.get("reachable")),
                       failed=len(result.errors), limit_days=limit, days_percentiles=pct, inputs=inputs,
                       sweep=result, seed=seed, base_days=base.get("days"), base_reachable=bool(base.get("reachable")),
                       notes=notes)
