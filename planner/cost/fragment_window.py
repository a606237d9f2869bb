"""Overlap of a streaming fragment's sync with the backward pass that produces it (dtplan profile,
switch `fragment_backward_overlap`; docs/physics.md section 4).

Streaming DiLoCo (Douillard et al. 2025, arXiv 2501.18512) syncs the model in p fragments, one every
H / p inner steps; a fragment's outer gradient is needed tau inner steps after its sync starts
(`physics.streaming_outer_s`). Without this term the sync of a fragment starts when the step that
produces it has ended, so it may hide behind tau inner steps only:
    stall = max(0, t_frag - tau t_step).
With it, the fragment is sent bucket by bucket as the backward pass of that step finalises its
parameters (the same release dtplan's `dp_overlap` assumes for a blocking sync: PyTorch DDP's
gradient buckets, Li et al. 2020, arXiv 2006.15704; with an element-wise inner optimizer each
bucket's outer gradient is final once its part of the backward pass ran), so the window grows by
that backward pass, w = backward_share x the last micro-batch's compute (2/3 of a flat replica's
step):
    stall = max(0, t_frag - tau t_step - w).
This is how the simulator of the paper's compute utilisation on its first author's site releases a
fragment (arthurdouillard.com/diloco: buckets released from the end of the forward pass through the
backward pass, deadline tau + 1 steps after the step starts, i.e. a window of (tau + 2/3) t_step).

The window does not depend on H or on the node count, so the outer step per inner step stays
non-increasing in H and non-decreasing in n (docs/planner.md, what the exact search needs).
"""

from __future__ import annotations

import numpy as np

from planner.cost.assumptions import Assumptions


def fragment_backward_window_s(a: Assumptions, last_micro_batch_compute_s):
    """Extra time a fragment's sync may hide behind: w = backward_share x the compute of the last
    micro-batch of the step that produces the fragment (0 unless `fragment_backward_overlap`).

    Example: a flat replica with a 1.5 s step and backward_share 2/3 gives w = 1.0 s."""
    if not a.fragment_backward_overlap:
        return 0.0
    return a.backward_share * np.asarray(last_micro_batch_compute_s, dtype=float)
