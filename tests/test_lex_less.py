"""bnb._lex_less: strict lexicographic order of tuples of arrays, against Python's own tuple order."""

import itertools

import numpy as np

from planner.solvers.bnb import _lex_less


def test_every_tuple_of_three_small_keys_against_python_tuples():
    values = (0, 1, 2)
    rows = list(itertools.product(values, repeat=3))
    pairs = list(itertools.product(rows, rows))           # 729 pairs: every tie and order of each key
    a = tuple(np.array([p[0][k] for p in pairs], dtype=np.int64) for k in range(3))
    b = tuple(np.array([p[1][k] for p in pairs], dtype=np.int64) for k in range(3))
    got = _lex_less(a, b)
    assert got.dtype == bool and got.shape == (len(pairs),)
    assert got.tolist() == [x < y for x, y in pairs]


def test_one_and_two_keys_floats_and_scalars_against_python_tuples():
    rng = np.random.default_rng(27)
    for keys in (1, 2, 4):
        a = tuple(rng.integers(0, 3, 200).astype(float) for _ in range(keys))
        b = tuple(rng.integers(0, 3, 200).astype(float) for _ in range(keys))
        expected = [tuple(x[i] for x in a) < tuple(y[i] for y in b) for i in range(200)]
        assert _lex_less(a, b).tolist() == expected
        scalar_b = tuple(y[7] for y in b)                 # an incumbent's keys, broadcast over a batch
        assert _lex_less(a, scalar_b).tolist() == [tuple(x[i] for x in a) < tuple(scalar_b) for i in range(200)]


def test_an_empty_batch_is_an_empty_boolean_array():
    empty = np.zeros(0, dtype=np.int64)
    got = _lex_less((empty, empty, empty), (empty, empty, empty))
    assert got.dtype == bool and got.shape == (0,)
    got = _lex_less((empty, empty), (np.int64(3), np.int64(1)))
    assert got.dtype == bool and got.shape == (0,)
