"""`dtplan serve`: an interactive page over the Python API (docs/web.md).

- `fields.py`: every input of an instance and of a plan as the page shows it (label, unit, kind);
  `tests/test_web_api.py` checks that it covers every field of the instance schema.
- `views.py`: results (`Evaluation`, `SolveResult`, `Feasibility`, comparisons, curves) as the
  JSON the page draws, with the tables `dtplan evaluate` prints (planner/present/render.py).
- `answers.py`: the questions the page asks, on `planner.api`: evaluate (in the request),
  solve, feasible, compare and the curve of days against one input (in a job).
- `jobs.py`: jobs in worker processes (forked from a warm fork server, `warm.py`), with
  progress, a time limit and cancellation; the server never waits on a solve.
- `app.py`: the Starlette application (`create_app`) and `serve` (uvicorn).
- `static/`: the page itself: plain HTML, CSS and JavaScript (util, forms, results, charts drawn
  as SVG, app), no build step.

Layer: interfaces (docs/architecture.md): may import every layer below; no lower layer imports the
web app.
"""
