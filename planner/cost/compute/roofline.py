"""Operation times on an accelerator: a roofline with a GEMM efficiency curve (docs/physics.md, 1b).

Each accelerator's figures are in models/accelerators/compute/ID.json, every one with its source:
dense peak per precision (the catalog's), HBM bandwidth (datasheet), the number of streaming
multiprocessors (or compute units), the Maximum Achievable Matmul FLOPS (MAMF) of a large GEMM per
precision as a fraction of the peak (Bekman, ml-engineering, compute/accelerator/README.md, "Maximum
Achievable Matmul FLOPS comparison table": a brute-force search of GEMM shapes with torch.matmul,
mean of 100 iterations), and the flash-attention kernels' fraction of the peak (FlashAttention-2/3).

    GEMM  m x k by k x n:  t = max(2 m n k / (F e_mm w(m, n)), b (m k + k n + m n) / BW)
        e_mm the MAMF efficiency; w(m, n) the wave-quantization efficiency: the output is cut in
        tiles of 128 x 256 (tiles = ceil(m / 128) ceil(n / 256)) run in waves of one tile per SM,
        w = tiles / (ceil(tiles / SMs) SMs) (NVIDIA, "Matrix Multiplication Background User's Guide",
        docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication, sections
        "Tile quantization" and "Wave quantization", whose example tile is 256 x 128);
        b bytes per input value (2 for bf16, 1 for fp8; the output written in bf16).
    A GEMM whose forward shape (m, n, k) a chip lists among its measured GEMMs (`gemm_benchmarks`, per
        precision: a named microbenchmark of those very shapes, e.g. DeepGEMM's FP8 table of DeepSeek-V3's
        GEMMs on H800) runs at the measured FLOP/s instead: t = max(2 m n k / F_meas, memory), its
        input- and weight-gradient GEMMs at the same rate (ASSUMED where the table has forward GEMMs only).
    attention:  t = FLOP / (F_bf16 e_att), forward and backward with their own e_att.
    elementwise:  t = bytes / BW.

A whole training step reaches less than its kernels at microbenchmark speed (FP8 casts and scaling, the
optimizer step, kernel launches, a full node's clocks). Where a vendor publishes a single-node training
benchmark of a dense model with no tensor, pipeline or context parallelism, its measured throughput
over the compute model's prediction for it is the chip's `training_efficiency` at that precision
(models/accelerators/compute: Megatron-Bridge's Llama 3 8B rows on one DGX H100 and one DGX B200, runs
that are not on docs/validation.md); u is multiplied by it (1 where a chip has none).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache

from planner.cost.assumptions import MODELS_DIR
from planner.cost.compute.ops import ACTIVATION_BYTES, Attention, Gemm, Memory

CHIPS_DIR = MODELS_DIR / "accelerators" / "compute"
TILE_M, TILE_N = 128, 256          # NVIDIA matrix-multiplication guide: example CTA tile 256 x 128
INPUT_BYTES = {"fp16": 2.0, "fp8": 1.0, "fp4": 0.5}


@dataclass(frozen=True)
class Chip:
    """The compute figures of one accelerator (models/accelerators/compute/ID.json)."""

    id: str
    peak_tflops: dict[str, float]
    hbm_tb_s: float
    sms: int
    matmul_efficiency: dict[str, float]
    attention_forward_efficiency: float
    attention_backward_efficiency: float
    training_efficiency: dict[str, float]
    gemm_benchmarks: dict[str, dict[tuple[float, float, float], float]] = None   # precision -> (m, n, k) -> TFLOP/s


@lru_cache(maxsize=None)
def chips() -> dict[str, Chip]:
    """Every accelerator with compute figures, by each of its names (the hardware's `accelerator`)."""
    out = {}
    for path in sorted(CHIPS_DIR.glob("*.json")):
        d = json.loads(path.read_text())
        chip = Chip(id=path.stem, peak_tflops={k: float(v) for k, v in d["peak_tflops"].items()},
                    hbm_tb_s=float(d["hbm_tb_s"]), sms=int(d["sms"]),
                    matmul_efficiency={k: float(v) for k, v in d["matmul_efficiency"].items()},
                    attention_forward_efficiency=float(d["attention_efficiency"]["forward"]),
                    attention_backward_efficiency=float(d["attention_efficiency"]["backward"]),
                    training_efficiency={k: float(v) for k, v in d.get("training_efficiency", {}).items()},
                    gemm_benchmarks=_benchmarks(d.get("gemm_benchmarks", {})))
        for name in d["names"]:
            out[name] = chip
    return out


def _benchmarks(table: dict) -> dict[str, dict[tuple[float, float, float], float]]:
    """{precision: {(m, n, k): TFLOP/s}} from a chip file's `gemm_benchmarks` (rows of m, n, k, tflops)."""
    return {p: {(float(r["m"]), float(r["n"]), float(r["k"])): float(r["tflops"]) for r in rows}
            for p, rows in table.get("rows", {}).items()}


def chip_for(accelerator: str) -> Chip | None:
    return chips().get(accelerator)


def wave_efficiency(m: float, n: float, sms: int) -> float:
    """w(m, n) = tiles / (ceil(tiles / SMs) SMs), tiles = ceil(m / 128) ceil(n / 256)."""
    tiles = math.ceil(m / TILE_M) * math.ceil(n / TILE_N)
    return tiles / (math.ceil(tiles / sms) * sms)


def gemm_time_s(g: Gemm, chip: Chip, precision: str) -> float:
    """Roofline time of `g.count` GEMMs of m x k by k x n (see the module docstring)."""
    measured = (chip.gemm_benchmarks or {}).get(precision, {}).get(g.forward) if g.forward else None
    if measured:
        compute = 2.0 * g.m * g.n * g.k / (measured * 1e12)
    else:
        peak = chip.peak_tflops[precision] * 1e12 * chip.matmul_efficiency[precision]
        compute = 2.0 * g.m * g.n * g.k / (peak * wave_efficiency(g.m, g.n, chip.sms))
    b = INPUT_BYTES[precision]
    memory = (b * (g.m * g.k + g.k * g.n) + ACTIVATION_BYTES * g.m * g.n) / (chip.hbm_tb_s * 1e12)
    return max(compute, memory) * g.count


def attention_time_s(a: Attention, chip: Chip) -> float:
    """Flash attention in bf16 at its forward or backward fraction of the bf16 peak."""
    e = chip.attention_backward_efficiency if a.backward else chip.attention_forward_efficiency
    return a.flops / (chip.peak_tflops["fp16"] * 1e12 * e)


def memory_time_s(mem: Memory, chip: Chip) -> float:
    return mem.bytes / (chip.hbm_tb_s * 1e12)
