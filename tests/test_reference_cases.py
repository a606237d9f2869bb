"""Every evaluation case of the reference simulator, reproduced to 1e-9 relative.

The expected numbers are the reference implementation's outputs
(../shared/conformance/reference_cases.json); `planner.reference.conformance` only states which
dtplan plan each reference call is.
"""

import pytest

from planner.reference.conformance import SEARCH_FUNCTIONS, check_case
from planner.reference.search import answer
from tests.conftest import MISSING_REFERENCE, load_reference_cases

EVALUATION_CASES = [c for c in load_reference_cases() if c["function"] not in SEARCH_FUNCTIONS]
# The search cases (planner.reference.search), all 84 (about 17 s together).
SEARCH_CASES = [c for c in load_reference_cases() if c["function"] in SEARCH_FUNCTIONS]


@pytest.mark.skipif(not EVALUATION_CASES, reason=MISSING_REFERENCE)
@pytest.mark.parametrize("case", EVALUATION_CASES, ids=[c["id"] for c in EVALUATION_CASES])
def test_reference_case(case):
    result = check_case(case)
    assert result.status == "passed", "\n".join(result.mismatches)
    assert result.compared >= 1


def test_every_reference_function_is_covered(reference_cases):
    functions = {c["function"] for c in reference_cases} - set(SEARCH_FUNCTIONS)
    assert functions >= {"compute_scenario", "compute_hierarchical_scenario", "compute_pp_diloco_scenario",
                         "compute_moe_ep_scenario", "simulate_diloco", "straggler_factor", "chinchilla_efficiency"}


@pytest.mark.skipif(not SEARCH_CASES, reason=MISSING_REFERENCE)
@pytest.mark.parametrize("case", SEARCH_CASES, ids=[c["id"] for c in SEARCH_CASES])
def test_reference_search_case(case):
    """dtplan's planner answers the reference's search at least as well, with a feasible plan."""
    outcome = answer(case)
    assert outcome.status == "passed", "; ".join(outcome.problems) or f"dtplan {outcome.dtplan}, reference {outcome.reference}"
    if outcome.reference is not None:
        assert outcome.dtplan is not None and outcome.improvement >= -1e-12


def test_reference_searches_cover_every_function(reference_cases):
    counts = {fn: sum(c["function"] == fn for c in SEARCH_CASES) for fn in SEARCH_FUNCTIONS}
    assert counts["find_nodes_for_target"] == 67 and counts["sweep_model_sizes"] == 3
    assert counts["find_optimal_config_for_target"] == 14
