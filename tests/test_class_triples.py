"""The pp_group classes' (row, compression, streaming) triples (`planner.space._class_triples`, issue 27
item 5) are those of the listing before: np.flatnonzero of the rows' streaming mask broadcast over the
compressions, divided into row, compression and streaming."""

from __future__ import annotations

import numpy as np
import pytest

from planner.space import _class_triples


@pytest.mark.parametrize("seed", range(30))
def test_triples_are_the_flat_indices_divided(seed):
    rng = np.random.default_rng(seed)
    rows, streams, count = int(rng.integers(0, 300)), int(rng.integers(1, 3)), int(rng.integers(1, 12))
    keep = rng.random((rows, streams)) < rng.choice([0.0, 0.1, 0.5, 1.0])
    per_row = count * streams
    at = np.flatnonzero(np.broadcast_to(keep[:, None, :], (rows, count, streams)))
    kept, p, c, j = _class_triples(keep, count)
    assert np.array_equal(kept[p], at // per_row)
    assert np.array_equal(c, at % per_row // streams)
    assert np.array_equal(j, at % streams)
    assert np.array_equal(kept, np.flatnonzero(keep.any(axis=1)))
