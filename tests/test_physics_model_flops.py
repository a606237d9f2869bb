"""Model FLOPs per token on a run's own MFU basis (planner/cost/model_flops.py; issue 14): the
counts worked by hand from the runs' own definitions, and the validation comparing on them."""

import pytest

from planner.cost.model_flops import MFU_BASES, attention_flops_per_token, model_flops_per_token
from tests.test_published import validate_published

# INTELLECT-1's llama3 '10B' (PrimeIntellect-ai/prime): width 4,096, 42 layers, 32 heads of 128, 8 KV heads,
# FFN 14,336, vocabulary 128,256 untied; its MFU counts the parameters without the token embedding.
I1_LAYER = 2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096      # q, o; k, v; SwiGLU; two norms
I1_PARAMS = 42 * I1_LAYER + 4096 + 4096 * 128256                              # + final norm + output head


def test_intellect1_parameter_count_by_hand():
    assert I1_LAYER == 218_112_000
    assert I1_PARAMS == 9_686_044_672


def test_six_p_is_dtplans_basis():
    assert model_flops_per_token(1e10) == 6e10
    assert model_flops_per_token(1e10, "6p", layers=None) == 6e10   # no architecture needed


def test_attention_basis_by_hand():
    """PaLM appendix B, 6 N + 12 L H Q T, the full T x T matrix: 6 x 9,686,044,672 = 58,116,268,032 plus
    12 x 42 x 4,096 x 8,192 = 16,911,433,728, so 75,027,701,760 FLOP per token, 1.2505 times 6 x 1e10."""
    full = model_flops_per_token(I1_PARAMS, "6p_attention", 42, 4096, 8192)
    assert full == 75_027_701_760
    assert full / 6e10 == pytest.approx(1.2505, abs=1e-4)
    assert attention_flops_per_token(42, 4096, 8192) == 16_911_433_728


def test_causal_basis_halves_the_attention_term():
    """The causal mask's skipped half not counted: 58,116,268,032 + 8,455,716,864."""
    assert model_flops_per_token(I1_PARAMS, "6p_attention_causal", 42, 4096, 8192) == 66_571_984_896


def test_palm_reported_mfu_from_its_definition():
    """PaLM 540B: N = 540.35e9, L = 118, H Q = 48 x 256, T = 2,048; 238.3K tokens/s on 6,144 chips of
    275 TFLOP/s: 3.2777e12 FLOP per token, 46.23% MFU (reported 46.2%); on 6 N alone 45.73%."""
    flops = model_flops_per_token(540.35e9, "6p_attention", 118, 48 * 256, 2048)
    assert flops == pytest.approx(3.2777348e12, rel=1e-7)
    assert 238300 * flops / (6144 * 275e12) == pytest.approx(0.4623, abs=1e-4)
    assert 238300 * 6 * 540.35e9 / (6144 * 275e12) == pytest.approx(0.4573, abs=1e-4)


@pytest.mark.parametrize("missing", ["layers", "attention_width", "seq_len"])
def test_attention_basis_names_a_missing_input(missing):
    args = {"layers": 42, "attention_width": 4096, "seq_len": 8192, missing: None}
    with pytest.raises(ValueError, match=missing):
        model_flops_per_token(1e10, "6p_attention", **args)
    with pytest.raises(ValueError, match=missing):
        model_flops_per_token(1e10, "6p_attention", **{**args, missing: 0})


def test_unknown_basis_and_bad_params_are_refused():
    with pytest.raises(ValueError, match="6p_attention"):
        model_flops_per_token(1e10, "6nd")
    with pytest.raises(ValueError, match="params"):
        model_flops_per_token(0.0)
    assert MFU_BASES == ("6p", "6p_attention", "6p_attention_causal")


def test_intellect1_mfu_is_compared_on_the_runs_basis():
    """Under dtplan the MFU row counts the run's 7.5028e10 FLOP per token over 112 H100 at 990 TFLOP/s:
    outer step 2,803.55 s (tests/test_validation_dtplan.py), 14 x 100 x 1,048,576 tokens per outer step,
    so 0.3543 against the reported 0.362; the reference column keeps 6 P_act (0.286)."""
    dt = validate_published.validate_run("intellect-1", with_solve=False, profile="dtplan")
    tokens_per_s = 14 * 100 * 1048576 / dt["predicted"]["outer_time_s"]
    assert dt["predicted"]["hardware_mfu"] == pytest.approx(75_027_701_760 * tokens_per_s / (112 * 990e12), rel=1e-9)
    assert dt["predicted"]["hardware_mfu"] == pytest.approx(0.3543, abs=5e-4)
    ref = validate_published.validate_run("intellect-1", with_solve=False)
    assert ref["predicted"]["hardware_mfu"] == pytest.approx(
        6e10 * ref["predicted"]["tokens_per_s"] / (112 * 990e12), rel=1e-9)


def test_palm_mfu_on_its_basis_with_the_profile_default():
    """No TPU v4 entry (it was fitted on PaLM) and no TPU v4 compute figures: u = 0.40 on the 6 P basis,
    so PaLM's tokens/s are 0.40 / 0.4573 of the reported (the reported 46.2% MFU restated on 6 P is 0.4573),
    less the cross-pod sync; PaLM's MFU row counts 6 N + 12 L H Q T."""
    dt = validate_published.validate_run("palm-540b", with_solve=False, profile="dtplan")
    tps = dt["predicted"]["tokens_per_s"]
    assert dt["predicted"]["hardware_mfu"] == pytest.approx(3.2777348e12 * tps / (6144 * 275e12), rel=1e-6)
    assert tps == pytest.approx(0.40 * 6144 * 275e12 / (6 * 540.35e9), rel=0.01)


def test_a_basis_without_its_count_or_source_is_refused():
    """A reported file's [dtplan.mfu_basis] must name its FLOP count, the parameters it counts and its source."""
    with pytest.raises(ValueError, match=r"\[dtplan.mfu_basis\] params, source: missing"):
        validate_published.mfu_flops_per_token(None, {"flops": "6p_attention"})
    assert validate_published.mfu_flops_per_token(None, {"flops": "6p", "params": 1e10, "source": "x"}) == 6e10
