"""planner.cost.chinchilla computes chi and C' once per distinct argument (issue 27 item 1).

A cached value must be the very float a fresh computation gives (==, not approx): these tests
compute the fresh value without the caches (the bare Newton iteration with the constants read
here from the assumptions), then ask the module twice (a miss, then a hit) in a different order,
among other arguments, and under assumptions that differ in one constant (a key that left a
constant out would hand back the other set's value).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from planner.cost import chinchilla
from planner.cost.assumptions import Assumptions

# Every constant chi and C' read; each is changed alone below. The high factor below 1 (the
# bracket [1e10, h C] then caps chi at h), as above 1 the min(1, .) hides it.
CONSTANT_CHANGES = {"chinchilla_e": 1.69, "chinchilla_a": 406.4, "chinchilla_alpha": 0.34, "chinchilla_b": 410.7,
                    "chinchilla_beta": 0.28, "tokens_per_param": 20.0, "overtrain_target": 4.0,
                    "chi_search_low_flop": 1e21, "chi_search_high_factor": 0.5}


def clear_caches() -> None:
    chinchilla._chi_cached.cache_clear()
    chinchilla._equivalent_cached.cache_clear()


def random_arguments(rng: np.random.Generator, count: int):
    """(N, D, C, m): scalars and multipliers as a number, a 1-element array or a batch."""
    out = []
    for i in range(count):
        params, tokens = 10 ** rng.uniform(8, 12), 10 ** rng.uniform(9, 14)
        compute = 6.0 * params * tokens * 10 ** rng.uniform(-1.0, 1.0)     # C' near C: chi below and at 1
        shape = [(), (1,), (int(rng.integers(2, 60)),), (3, 4)][i % 4]
        m = float(1 + rng.uniform(0, 0.03)) if shape == () else 1 + rng.uniform(0, 0.03, size=shape)
        out.append((params, tokens, compute, m))
    return out


def constants_of(a: Assumptions) -> tuple[float, ...]:
    """(E, A, alpha, B, beta, r = tokens per parameter x overtraining target), read here from `a`."""
    return (a.chinchilla_e, a.chinchilla_a, a.chinchilla_alpha, a.chinchilla_b, a.chinchilla_beta,
            a.tokens_per_param * a.overtrain_target)


def fresh_chi(args, a: Assumptions):
    """chi computed without any cache: min(1, clip(C'(m L(N, D)), 1e10, 10 C) / C), the same
    operations in the same order as planner.cost.chinchilla, with C' from the bare Newton iteration."""
    params, tokens, compute, m = args
    n, d = np.asarray(params, dtype=float), np.asarray(tokens, dtype=float)
    loss = a.chinchilla_e + a.chinchilla_a * n ** (-a.chinchilla_alpha) + a.chinchilla_b * d ** (-a.chinchilla_beta)
    target = np.where((n > 0) & (d > 0), loss, np.inf) * np.asarray(m, dtype=float)
    c_eff = chinchilla._equivalent_optimal_compute(np.asarray(target, dtype=float), *constants_of(a))
    c = np.asarray(compute, dtype=float)
    return np.minimum(1.0, np.clip(c_eff, a.chi_search_low_flop, a.chi_search_high_factor * c) / c)


def test_cached_chi_equals_fresh_on_random_arguments():
    rng = np.random.default_rng(27)
    a = Assumptions()
    cases = random_arguments(rng, 200)
    fresh = [fresh_chi(args, a) for args in cases]
    clear_caches()
    for args, value in zip(cases, fresh):      # fill the caches in order, then read them back in another order
        assert np.array_equal(chinchilla.chi(*args[:3], a, args[3]), value)
    for i in rng.permutation(len(cases)):
        again = chinchilla.chi(*cases[i][:3], a, cases[i][3])
        assert type(again) is type(fresh[i]) and np.shape(again) == np.shape(fresh[i])
        assert np.array_equal(again, fresh[i])
    assert chinchilla._chi_cached.cache_info().hits >= 50       # the scalar cases were read from the cache
    assert chinchilla._equivalent_cached.cache_info().hits >= 100


def test_cached_equivalent_compute_equals_the_newton_iteration():
    rng = np.random.default_rng(28)
    a = Assumptions()
    constants = constants_of(a)
    batches = [rng.uniform(1.5, 4.0, size=int(n)) for n in rng.integers(1, 80, size=60)]
    batches += [np.array([1.0, a.chinchilla_e, np.inf, np.nan, 1.82]), np.array([]), np.float64(2.1), 3.0]
    clear_caches()
    for losses in batches + batches[::-1]:       # the second pass is served from the cache
        expected = chinchilla._equivalent_optimal_compute(np.asarray(losses, dtype=float), *constants)
        got = chinchilla.equivalent_optimal_compute(losses, a)
        assert type(got) is type(expected) and got.shape == expected.shape
        assert np.array_equal(got, expected, equal_nan=True)
    assert chinchilla._equivalent_cached.cache_info().hits >= len(batches)


def test_large_batches_bypass_the_cache_with_the_same_values():
    a = Assumptions()
    losses = np.linspace(1.9, 3.0, chinchilla._CACHED_MAX_SIZE + 1)
    clear_caches()
    whole = chinchilla.equivalent_optimal_compute(losses, a)
    assert chinchilla._equivalent_cached.cache_info().currsize == 0
    assert np.array_equal(whole, chinchilla._equivalent_optimal_compute(losses, *constants_of(a)))


@pytest.mark.parametrize("name", sorted(CONSTANT_CHANGES))
def test_the_cache_tells_apart_assumptions_that_differ_in_one_constant(name):
    base = Assumptions()
    changed = dataclasses.replace(base, **{name: CONSTANT_CHANGES[name]})
    rng = np.random.default_rng(29)
    for args in random_arguments(rng, 40):
        fresh = fresh_chi(args, changed)
        clear_caches()
        chinchilla.chi(*args[:3], base, args[3])        # the base set's value is now cached
        assert np.array_equal(chinchilla.chi(*args[:3], changed, args[3]), fresh)
        loss = chinchilla.chinchilla_loss(args[0], args[1], changed) * args[3]
        fresh_c = chinchilla._equivalent_optimal_compute(np.asarray(loss, dtype=float), *constants_of(changed))
        clear_caches()
        chinchilla.equivalent_optimal_compute(loss, base)
        assert np.array_equal(chinchilla.equivalent_optimal_compute(loss, changed), fresh_c)


def test_a_caller_changing_its_array_does_not_change_the_cache():
    a = Assumptions()
    losses = np.array([2.0, 2.5, 3.0])
    clear_caches()
    first = chinchilla.equivalent_optimal_compute(losses, a)
    kept = first.copy()
    first[:] = -1.0
    assert np.array_equal(chinchilla.equivalent_optimal_compute(losses, a), kept)
    multipliers = np.array([1.0, 1.1])
    chi_first = chinchilla.chi(20e9, 4e11, 1e24, a, multipliers)
    kept_chi = chi_first.copy()
    chi_first[:] = 7.0
    assert np.array_equal(chinchilla.chi(20e9, 4e11, 1e24, a, multipliers), kept_chi)


def test_cached_compute_solves_its_defining_equation():
    """C' is the compute whose compute-optimal model (N* = sqrt(C' / 6r), D* = r N*) reaches the
    loss asked for: L(N*, D*) = loss, checked on the cached values (a hit) to 1e-12 relative."""
    a = Assumptions()
    losses = np.array([1.9, 2.0, 2.2, 2.6, 3.4])
    clear_caches()
    chinchilla.equivalent_optimal_compute(losses, a)
    cached = chinchilla.equivalent_optimal_compute(losses, a)
    assert chinchilla._equivalent_cached.cache_info().hits == 1
    r = a.tokens_per_param * a.overtrain_target
    n_opt = np.sqrt(cached / (6.0 * r))
    reached = a.chinchilla_e + a.chinchilla_a * n_opt ** -a.chinchilla_alpha \
        + a.chinchilla_b * (r * n_opt) ** -a.chinchilla_beta
    assert np.allclose(reached, losses, rtol=1e-12, atol=0.0)


def term_by_term_newton(losses: np.ndarray, e, a_coef, a_exp, b, b_exp, r) -> np.ndarray:
    """C' by the Newton iteration in u = ln N* written term by term (each term its own numpy calls,
    as before the two terms shared an array): A e^(-alpha u) + B r^(-beta) e^(-beta u) = loss - E."""
    excess = losses - e
    ok = (excess > 0) & np.isfinite(excess)
    k = np.where(ok, excess, 1.0)
    b_coef = b * r ** (-b_exp)
    u = np.maximum(np.log(a_coef / k) / a_exp, np.log(b_coef / k) / b_exp)
    for _ in range(chinchilla._NEWTON_ITERATIONS):
        term_a = a_coef * np.exp(-a_exp * u)
        term_b = b_coef * np.exp(-b_exp * u)
        step = (term_a + term_b - k) / (a_exp * term_a + b_exp * term_b)
        u = u + step
        if np.all(np.abs(step) <= 1e-15 * np.maximum(1.0, np.abs(u))):
            break
    n_opt = np.exp(u)
    return np.where(ok, 6.0 * r * n_opt * n_opt, np.where(excess > 0, 0.0, np.inf))


@pytest.mark.parametrize("name", [None, "chinchilla_alpha", "chinchilla_beta", "chinchilla_b", "tokens_per_param"])
def test_the_two_term_rows_give_the_term_by_term_iteration_bit_for_bit(name):
    """The iteration with both terms in one array equals the term-by-term one in every bit, for
    every array size from 0 to 1100 (numpy's vector loops take lengths in blocks: every remainder
    is met), 0-d and 2-d shapes, and losses of every kind: at and below E, just above it, the
    solve's range, far above it, infinite, nan."""
    a = Assumptions() if name is None else dataclasses.replace(Assumptions(), **{name: CONSTANT_CHANGES[name]})
    constants = constants_of(a)
    rng = np.random.default_rng(30)
    e = a.chinchilla_e
    special = np.array([e, np.nextafter(e, 0), np.nextafter(e, 9), e + 1e-12, 0.0, -1.0, np.inf, np.nan, 1e300])
    sizes = list(range(0, 70)) + [127, 128, 129, 255, 256, 257, 511, 700, 1023, 1024, 1100]
    for size in sizes:
        losses = np.concatenate([rng.uniform(1.85, 4.0, size), special])[rng.permutation(size + len(special))][:size]
        losses = np.where(rng.random(size) < 0.1, 10 ** rng.uniform(-6, 3, size) + e, losses)
        got = chinchilla._equivalent_optimal_compute(losses, *constants)
        want = term_by_term_newton(losses, *constants)
        assert got.shape == want.shape and np.array_equal(got.view(np.uint64), want.view(np.uint64)), size
    for losses in (np.float64(2.1), np.array(e), rng.uniform(1.9, 3.0, (3, 7)), special.reshape(3, 3)):
        losses = np.asarray(losses, dtype=float)
        got = chinchilla._equivalent_optimal_compute(losses, *constants)
        want = term_by_term_newton(losses, *constants)
        assert got.shape == want.shape and np.array_equal(got.view(np.uint64), want.view(np.uint64))


def _random_one_loss_cases(rng: np.random.Generator, count: int):
    """(loss, E, A, alpha, B, beta, r): the profiles' constants scaled at random (some ints, zeros and
    negatives among them), losses from just above E to far above it, with NaN, inf, E itself and below."""
    base = (1.8172, 482.01, 0.3478, 2085.43, 0.3658, 25.6)
    edge = (np.nan, np.inf, -np.inf, 0.0)
    out = []
    for i in range(count):
        e, a, alpha, b, beta, r = (x * float(rng.uniform(0.5, 2.0)) for x in base)
        if i % 50 == 0:
            a, b = float(round(a)), float(round(b))
        if i % 97 == 0:
            alpha = 0.0                    # a Python division by zero: the array path's inf / NaN
        if i % 89 == 0:
            b = -b
        if i % 83 == 0:
            beta = int(rng.integers(1, 3))     # an int exponent (an int row in the array path)
        excess = 10 ** rng.uniform(-14, 3) * (1 if i % 13 else -1)
        loss = e + excess if i % 31 else edge[(i // 31) % 4]
        if i % 37 == 0:
            loss = e
        out.append((loss, e, a, alpha, b, beta, r))
    return out


def test_newton_one_is_the_array_newton_bit_for_bit():
    """`_newton_one` (one excess loss in Python floats, numpy's exp and log) gives the double `_newton` gives
    on the one-element array, or None exactly where a Python division would raise; and C' of one loss is
    the same bits with the scalar path on and off (off: the array path of every earlier version), on
    10,000 random losses and constants (edge values included). Mutations caught: math.exp for np.exp,
    the step's sum grouped as A_term + (B_term - k), np.maximum's NaN dropped (Python's max(u_a, u_b)).
    (Python's max in the stopping test is not caught, and changes nothing: a NaN u comes with a NaN step.)"""
    rng = np.random.default_rng(27)
    answered = 0
    with np.errstate(all="ignore"):
        for loss, e, a, alpha, b, beta, r in _random_one_loss_cases(rng, 10_000):
            excess = np.array([loss]) - e
            k = float(np.where((excess > 0) & np.isfinite(excess), excess, 1.0)[0])
            b_coef = b * r ** (-beta)
            one = chinchilla._newton_one(k, a, alpha, b_coef, beta)
            many = chinchilla._newton(np.array([k]), a, alpha, b_coef, beta)
            if one is None:
                assert alpha == 0 or beta == 0 or not np.all(np.isfinite(many)) or not k
                continue
            answered += 1
            assert one.dtype == many.dtype and one.shape == many.shape and one.tobytes() == many.tobytes(), \
                (loss, e, a, alpha, b, beta, r)
            for shape in ((), (1,), (1, 1)):
                losses = np.full(shape, loss)
                got = chinchilla._equivalent_optimal_compute(losses, e, a, alpha, b, beta, r)
                with pytest.MonkeyPatch.context() as m:
                    m.setattr(chinchilla, "_newton_one", lambda *args: None)
                    want = chinchilla._equivalent_optimal_compute(losses, e, a, alpha, b, beta, r)
                assert got.shape == want.shape and got.tobytes() == want.tobytes()
    assert answered > 9_500
