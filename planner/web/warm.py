"""Imported by the fork server of `planner.web.jobs` (and by nothing else): everything a job needs
is imported and its caches filled once, here, so that each job's process, forked from it, starts
warm. Importing this module answers a small question (the page's start instance, evaluated and
solved): a side effect wanted only there.

`planner.cli` is imported too: a job's process started under the `dtplan` console script first
re-imports that script (multiprocessing's handling of the main module), which imports it.
"""

import planner.cli  # noqa: F401 - see above
from planner.present import plots, render  # noqa: F401 - the views draw with them
from planner.web import answers, jobs  # noqa: F401 - jobs: run_job, the target of every job process
from planner.web.fields import DEFAULT_INSTANCE, default_plan


def warm() -> None:
    """Evaluate and solve the start instance: presets, profiles and lazily imported modules loaded.
    A failure here only makes jobs slower (they load what they need), so it is not raised: an
    exception would stop the fork server, and every job with it."""
    try:
        answers.evaluate_answer(DEFAULT_INSTANCE, default_plan(DEFAULT_INSTANCE["fleet"]["nodes"]))
        answers.solve_job({"instance": DEFAULT_INSTANCE, "time_limit_s": 30}, lambda *a, **k: None)
    except Exception:  # noqa: BLE001
        pass


warm()
