"""`Setting.replace` against `dataclasses.replace` (the call it stands for): the same type, the same field
values (the same objects), the same instance `__dict__` in the same order, equal and frozen, on random
changes of random settings; an unknown name raises TypeError as there."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from planner.cost.assumptions import Assumptions
from planner.cost.setting import Setting
from planner.reference import conformance
from tests.conftest import load_reference_cases


def _settings():
    """Settings of the reference cases (every profile) and one with every field off its default."""
    out = []
    for case in load_reference_cases()[::40]:
        if "node" in case.get("resolved_inputs", {}):
            out.append(conformance._setting(case, 7e10, h100_equivalents=1.5)[0])
    out.append(Setting(params=1e9, active_params=5e8, moe_layers=3, hidden_size=2048.0, local_batch_tokens=1024.0,
                       peak_flops={"fp8": 1e15}, memory_bytes=8e10, accelerators_per_node=4,
                       price_usd_per_accelerator=3.0, h100_equivalents=2.0, wan_up_bps=1.0, wan_down_bps=2.0,
                       wan_rtt_s=3.0, regional_bps=4.0, regional_rtt_s=5.0, pipeline_bps=6.0, pipeline_rtt_s=7.0,
                       window_s=8.0, goodput=0.5, target_flop=1e24, target_kind="c_quality", max_nodes=9,
                       budget_usd=10.0, assumptions=Assumptions(mfu=0.3)))
    return out


def _random_changes(rng, names):
    values = (0.0, -0.0, 1.5, math.nan, math.inf, None, 3, "c_quality", np.float64(2.0), Assumptions())
    picked = rng.choice(len(names), size=rng.integers(0, len(names) + 1), replace=False)
    return {names[i]: values[rng.integers(len(values))] for i in picked}


def _same(x: Setting, y: Setting) -> bool:
    return (type(x) is type(y) and list(x.__dict__) == list(y.__dict__)
            and all(x.__dict__[k] is y.__dict__[k] for k in x.__dict__))


def test_replace_is_dataclasses_replace():
    """On 3,000 random changes (none, some, every field; values of odd types, signed zeros, NaN), the same
    Setting as `dataclasses.replace` builds: the same objects in the same `__dict__` order, frozen, and
    the original left as it was. The invariants the fast path relies on are checked too."""
    assert not hasattr(Setting, "__post_init__") and all(f.init for f in dataclasses.fields(Setting))
    assert Setting.__dataclass_params__.frozen
    names = [f.name for f in dataclasses.fields(Setting)]
    rng = np.random.default_rng(2716)
    settings = _settings()
    for n in range(3000):
        s = settings[n % len(settings)]
        before = dict(s.__dict__)
        changes = _random_changes(rng, names)
        got, want = s.replace(**changes), dataclasses.replace(s, **changes)
        assert _same(got, want), changes
        assert got is not s and list(s.__dict__) == list(before) and all(s.__dict__[k] is v for k, v in before.items())
        with pytest.raises(dataclasses.FrozenInstanceError):
            got.params = 1.0


def test_replace_refuses_what_dataclasses_replace_refuses():
    s = _settings()[-1]
    with pytest.raises(TypeError) as fast:
        s.replace(params=2.0, no_such_field=1.0)
    with pytest.raises(TypeError) as slow:
        dataclasses.replace(s, params=2.0, no_such_field=1.0)
    assert "no_such_field" in str(fast.value) and "no_such_field" in str(slow.value)


def test_a_subclass_goes_through_its_own_init():
    """A subclass's `__init__` may do more (here `__post_init__`): `replace` is `dataclasses.replace` there."""
    @dataclasses.dataclass(frozen=True)
    class Marked(Setting):
        def __post_init__(self):
            object.__setattr__(self, "marked", True)

    s = Marked(**{f.name: getattr(_settings()[-1], f.name) for f in dataclasses.fields(Setting)})
    got = s.replace(params=3.0)
    assert type(got) is Marked and got.marked and got.params == 3.0
