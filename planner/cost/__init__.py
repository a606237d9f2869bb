"""The cost model: the time, compute, memory, cost and quality of a batch of plans on one setting.

Each module is one part of it, formula by formula (docs/cost_model.md, docs/physics.md, docs/quality.md):
`setting` (the inputs a plan is scored on), `modes` (the step and sync time of each mode), `timing`,
`straggler`, `memory`, `score` (the figures of a plan and its limits), `run` (the window view), `quality`
and `quality_fit` (the fraction of the compute that counts), `envelope` (the evidence each quality term
rests on), `exchange` (the exchange through object storage), `compute/` (the per-layer compute model),
`physics` (the dtplan profile's terms), `assumptions` (the constants, with their sources).

Layer: cost (docs/architecture.md): may import the schema and other cost modules only; `assumptions`
sits in the schema layer (the schema checks input against its constants).
"""
