"""Imported by the fork server of `planner.web.jobs` (and by nothing else): everything a job needs
is imported and its caches filled once, here, so that each job's process, forked from it, starts
warm. Importing this module answers a small question (the page's start instance, evaluated and
solved): a side effect wanted only there.
"""

from planner.present import plots, render  # noqa: F401 - the views draw with them
from planner.web import answers, jobs  # noqa: F401 - jobs: run_job, the target of every job process
from planner.web.fields import DEFAULT_INSTANCE, default_plan


def warm() -> None:
    """Evaluate and solve the start instance: presets, profiles and lazily imported modules loaded."""
    answers.evaluate_answer(DEFAULT_INSTANCE, default_plan(DEFAULT_INSTANCE["fleet"]["nodes"]))
    answers.solve_job({"instance": DEFAULT_INSTANCE, "time_limit_s": 30}, lambda *a, **k: None)


warm()
