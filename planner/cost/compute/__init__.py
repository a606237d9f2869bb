"""A compute model per transformer layer (issue 25 item 1; docs/physics.md, section 1b).

The achieved model FLOP utilisation u of a node is an output here, not a table entry:

    u = 6 P_act / (peak x sum over operations of t_op per token)

where the operations of one token through the model (forward and backward) are listed from the
model's shape (`shape.ModelShape`: layers, width, heads and KV heads, FFN width, vocabulary,
sequence length, experts) by `ops.token_ops`, and each operation's time on an accelerator comes
from a roofline with a GEMM efficiency curve (`roofline.op_time_s`) whose figures are the
accelerator's named microbenchmarks (models/accelerators/compute/*.json). Pipeline bubbles,
tensor-parallel collectives, data-parallel syncs and recomputation stay terms of
planner/cost/physics.py and modes.py, which scale this u down.

Modules: shape (model shapes and their defaults), ops (FLOPs and bytes of each operation),
roofline (accelerator figures and operation times), utilisation (u of a node).

Layer: cost (docs/architecture.md): may import the schema and other cost modules only.
"""
