"""The expert all-to-all of the compute model (planner/cost/compute/experts.py) and the planner's chunk
count of an interleaved pipeline (physics.chunk_choices, modes._pipeline), against hand calculations and
a brute force over fixed chunk counts."""

import pytest

from planner.cost import physics
from planner.cost.assumptions import load_profile
from planner.cost.compute.experts import ExpertFabric, all_to_all_bytes, all_to_all_s, with_all_to_all_s
from planner.cost.compute.shape import preset_shape
from planner.evaluate import evaluate
from planner.schema.instance import parse_instance
from planner.schema.plan import parse_plan

H800 = "NVIDIA H800 SXM5 80GB"
DSV3 = preset_shape("deepseek-v3")     # hidden 7,168, top-8 of 256, 58 MoE layers
PER_COPY = 4096 * 7168 * 58            # values per remote copy of a 4,096-token micro-batch, all MoE layers


def test_all_to_all_inside_one_server_by_hand():
    # E = 8 GPUs of one server: 8 copies x 7/8 leave the GPU over NVLink, none over the NIC; 2 bytes x 4 transfers
    f = ExpertFabric(expert_parallel=8, gpus_per_server=8, intra_gb_per_s=450, scale_out_gb_per_s=50)
    nvlink, nic = all_to_all_bytes(DSV3, 4096, f)
    assert (nvlink, nic) == (pytest.approx(8 * 7 / 8 * PER_COPY * 8), 0.0)
    assert all_to_all_s(DSV3, 4096, f) == pytest.approx(8 * 7 / 8 * PER_COPY * 8 / 450e9)


def test_node_limited_all_to_all_across_servers_by_hand():
    # EP64 over 8 servers, at most 4 servers per token, fp8 dispatch (1 byte) and bf16 combine: the NIC carries
    # 4 x 7/8 copies of 2 x 1 + 2 x 2 = 6 bytes per value: 35.76 GB, 0.715 s at 50 GB/s
    f = ExpertFabric(64, 8, 200, 50, node_limit=4, dispatch_bytes=1.0)
    nvlink, nic = all_to_all_bytes(DSV3, 4096, f)
    assert nic == pytest.approx(3.5 * PER_COPY * 6) and nic == pytest.approx(35.76e9, rel=1e-3)
    assert nvlink == pytest.approx(8 * 63 / 64 * PER_COPY * 6)
    assert all_to_all_s(DSV3, 4096, f) == pytest.approx(max(nic / 50e9, nvlink / 200e9))
    unlimited = ExpertFabric(64, 8, 200, 50, dispatch_bytes=1.0)
    assert all_to_all_bytes(DSV3, 4096, unlimited)[1] == pytest.approx(8 * 7 / 8 * PER_COPY * 6)
    assert all_to_all_bytes(DSV3, 4096, ExpertFabric(1, 8, 200, 50)) == (0.0, 0.0)     # no expert parallelism


def test_overlap_hides_the_all_to_all_up_to_the_slowed_compute():
    f = ExpertFabric(64, 8, 200, 50, overlap=True, communication_sms=20)
    assert with_all_to_all_s(1.0, 0.5, f, 132) == pytest.approx(132 / 112)                  # hidden
    assert with_all_to_all_s(1.0, 2.0, f, 132) == pytest.approx(2.0)                        # exposed remainder
    assert with_all_to_all_s(1.0, 0.5, ExpertFabric(64, 8, 200, 50), 132) == pytest.approx(1.5)   # no overlap


def test_a_moe_shape_preset_takes_u_from_the_compute_model():
    a = load_profile("dtplan").replace(model_shape="deepseek-v3", expert_parallel_degree=64.0)
    moe = physics.resolve_mfu(a, H800, explicit=False, moe=True, model=(671e9, 37e9, 7168))
    row = physics.compute_model_mfu(a, H800, 671e9, 37e9, 7168)
    assert moe.mfu_fp8 == row["fp8"] and moe.mfu_fp8 != 0.1421
    assert physics.compute_model_precisions(a, H800, moe=True) == ("fp16", "fp8")
    # without a MoE preset the table's MoE figure stays
    assert physics.resolve_mfu(a.replace(model_shape=""), H800, explicit=False, moe=True,
                               model=(671e9, 37e9, 7168)).mfu_fp8 == 0.1421
    # the exposed all-to-all lowers u
    exposed = physics.compute_model_mfu(a.replace(scale_out_gb_per_s=5.0), H800, 671e9, 37e9, 7168)
    assert exposed["fp8"] < row["fp8"]


def _pipeline_instance(constants):
    return parse_instance({
        "model": {"params": 7e9}, "training": {"tokens": 1e11, "local_batch_tokens": 4_000_000},
        "fleet": {"hardware": "8xH100-SXM", "nodes": 16},
        "network": {"wan": {"up_mbps": 1000, "down_mbps": 1000, "rtt_ms": 20},
                    "pipeline": {"mbps": 200_000, "rtt_ms": 0.5}},
        "assumptions": {"profile": "dtplan", "constants": {"pipeline_schedule": "interleaved", **constants}}})


@pytest.mark.parametrize("stages,micro_batches", [(4, 8), (8, 16), (2, 64), (16, 32)])
def test_the_planners_chunk_count_is_the_fastest_allowed_fixed_one(stages, micro_batches):
    """Brute force: the step of each fixed v the layers allow (v <= L / S, L = P / (12 h^2)); the planner's
    choice (pipeline_chunks 0) gives the least of them and names its v."""
    plan = parse_plan({"mode": "pp_group", "nodes": 16, "stages": stages, "micro_batches": micro_batches,
                       "precision": "fp16", "activation_compression": 1})
    chosen = evaluate(_pipeline_instance({}), plan).values
    h = 0.03 * 7e9 ** 0.5
    layers = 7e9 / (12 * h * h)
    fixed = {v: evaluate(_pipeline_instance({"pipeline_chunks": v}), plan).values["t_step_s"]
             for v in (1.0, 2.0, 4.0, 8.0) if v == 1.0 or v <= layers / stages}
    best = min(fixed, key=lambda v: (fixed[v], v))
    assert chosen["t_step_s"] == pytest.approx(fixed[best], rel=1e-12)
    assert chosen["pipeline_chunks"] == best


def test_the_reference_profile_names_no_chunk_count():
    inst = parse_instance({"model": {"params": 7e9}, "training": {"tokens": 1e11},
                           "fleet": {"hardware": "8xH100-SXM", "nodes": 16},
                           "network": {"wan": {"up_mbps": 1000, "down_mbps": 1000, "rtt_ms": 20}}})
    plan = parse_plan({"mode": "pp_group", "nodes": 16, "stages": 4, "micro_batches": 8, "precision": "fp16",
                       "activation_compression": 1})
    assert "pipeline_chunks" not in evaluate(inst, plan).values


def test_reserving_every_sm_for_communication_is_refused_by_name(tmp_path):
    import json
    from click.testing import CliRunner
    from planner.cli import main
    raw = {"model": {"params": 671e9, "active_params": 37e9, "moe_layers": 58, "hidden_size": 7168},
           "training": {"tokens": 1e12}, "fleet": {"hardware": "8xH100-SXM", "nodes": 16},
           "network": {"wan": {"up_mbps": 1000, "down_mbps": 1000, "rtt_ms": 20}},
           "assumptions": {"profile": "dtplan", "constants": {"model_shape": "deepseek-v3", "expert_a2a_overlap": True,
                                                             "communication_sms": 132}}}
    path = tmp_path / "i.json"
    path.write_text(json.dumps(raw))
    result = CliRunner().invoke(main, ["solve", str(path)])
    assert result.exit_code == 2 and "communication_sms" in result.output and "Traceback" not in result.output
