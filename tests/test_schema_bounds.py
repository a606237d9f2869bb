"""Number fields state their bounds to the JSON schema only (planner.schema.strict.JsonBounds).

The JSON schema of a `Num`/`Int` field must be what pydantic writes for the same bounds given as
annotated_types constraints (the schema before issue 27 item 1's start-up work), and validation
must still reject every value outside the bounds with dtplan's message (the field's own check),
and accept the bounds themselves where they are inclusive.
"""

from __future__ import annotations

from typing import Annotated

import annotated_types as at
import pytest
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from planner.schema.strict import Int, Num

# (keyword arguments of Num / Int, the annotated_types constraints pydantic would be given:
# gt, ge, and le or else the magnitude cap)
NUMBER_CASES = [
    (dict(gt=0, cap=1e12), [at.Gt(0), at.Le(1e12)]),
    (dict(ge=0, le=1, cap=1e12), [at.Ge(0), at.Le(1)]),
    (dict(ge=-90, le=90), [at.Ge(-90), at.Le(90)]),
    (dict(cap=1e6), [at.Le(1e6)]),
]
INTEGER_CASES = [
    (dict(ge=1, cap=10_000_000), [at.Ge(1), at.Le(10_000_000)]),
    (dict(ge=0, le=64), [at.Ge(0), at.Le(64)]),
]


def field_schema(annotation) -> dict:
    model = create_model("M", __config__=ConfigDict(strict=True), x=(annotation, ...))
    return model.model_json_schema()["properties"]["x"]


@pytest.mark.parametrize("kwargs, constraints", NUMBER_CASES)
def test_number_json_schema_is_pydantics_for_the_same_bounds(kwargs, constraints):
    assert field_schema(Num(**kwargs)) == field_schema(Annotated[float, *constraints])
    optional = field_schema(Num(**kwargs) | None)
    assert optional == field_schema(Annotated[float, *constraints] | None)


@pytest.mark.parametrize("kwargs, constraints", INTEGER_CASES)
def test_integer_json_schema_is_pydantics_for_the_same_bounds(kwargs, constraints):
    assert field_schema(Int(**kwargs)) == field_schema(Annotated[int, *constraints])


def validate(annotation, value):
    class M(BaseModel):
        model_config = ConfigDict(strict=True)
        x: annotation

    return M.model_validate({"x": value}).x


def test_values_outside_the_bounds_are_still_rejected_with_dtplans_message():
    positive = Num(gt=0, cap=1e12)
    for bad, words in ((0.0, "must be a number > 0"), (-1.0, "must be a number > 0"),
                       (2e12, "must be at most 1e12")):
        with pytest.raises(ValidationError) as err:
            validate(positive, bad)
        assert words in str(err.value)
    assert validate(positive, 1e12) == 1e12 and validate(positive, 5e-324) == 5e-324
    unit = Num(ge=0, le=1)
    assert validate(unit, 0) == 0.0 and validate(unit, 1) == 1.0
    for bad in (-1e-9, 1.000001):
        with pytest.raises(ValidationError, match=r"must be a number in \[0, 1\]"):
            validate(unit, bad)
    nodes = Int(ge=1, le=64)
    assert validate(nodes, 1) == 1 and validate(nodes, 64) == 64
    for bad in (0, 65):
        with pytest.raises(ValidationError, match=r"must be an integer in 1\.\.64"):
            validate(nodes, bad)
