"""Sweep fields: dotted JSON paths of the instance schema, checked, set and parsed from the command line."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from planner.schema.errors import InputError, Problem
from planner.schema.instance import Instance, parse_instance
from planner.schema.strict import field_paths, is_model, unwrap


def _leaf(path: str) -> tuple[Any, str | None]:
    """(the annotation of the field at `path`, None) or (None, what is wrong with the path)."""
    tp: Any = Instance
    parts = path.split(".")
    for i, part in enumerate(parts):
        inner = unwrap(tp)
        if is_model(inner):
            if part not in inner.model_fields:
                prefix = ".".join(parts[:i])
                known = [p for p in field_paths(Instance) if p.startswith(prefix + ".")] if prefix \
                    else list(Instance.model_fields)
                from planner.schema.strict import did_you_mean
                return None, f"unknown field {part!r}{did_you_mean('.'.join(parts[:i + 1]), known)}"
            tp = inner.model_fields[part].annotation
        elif path.startswith("assumptions.constants.") and i == 2 and len(parts) == 3:
            from planner.cost.assumptions import SETTABLE_FIELDS
            from planner.schema.strict import did_you_mean
            if part not in SETTABLE_FIELDS or part == "profile":
                return None, f"unknown assumption constant{did_you_mean(part, SETTABLE_FIELDS)}"
            from planner.cost.assumptions import Assumptions
            return type(getattr(Assumptions(), part)), None
        else:
            return None, f"{'.'.join(parts[:i])} has no sub-fields"
    return tp, None


def check_field(path: str) -> Problem | None:
    """A Problem naming `path` if it is not a field of the instance schema a sweep can set.

    `a+b` (linked fields) sets every listed field to the same value (e.g.
    `network.wan.up_mbps+network.wan.down_mbps`); a section (`network.wan`) takes an object."""
    if not isinstance(path, str) or not re.fullmatch(
            r"[a-z_][a-z0-9_]*(\.[a-z_0-9][A-Za-z0-9_]*)*(\+[a-z_][a-z0-9_]*(\.[a-z_0-9][A-Za-z0-9_]*)*)*", path):
        return Problem(str(path), "not a dotted field path (e.g. network.wan.up_mbps; a+b for linked fields)")
    for part in path.split("+"):
        _, problem = _leaf(part)
        if problem:
            return Problem(path, problem if "+" not in path else f"{part}: {problem}")
    return None


def is_integer_field(path: str) -> bool:
    """Whether the schema wants a whole number at `path` (Monte Carlo draws are then rounded)."""
    return any(unwrap(_leaf(p)[0]) is int for p in path.split("+"))


def set_field(raw: dict, path: str, value: Any) -> None:
    """Set `path` (or each of linked `a+b`) in raw instance data in place, creating sections."""
    for one in path.split("+"):
        node = raw
        keys = one.split(".")
        for k in keys[:-1]:
            nxt = node.get(k)
            if not isinstance(nxt, dict):
                nxt = node[k] = {}
            node = nxt
        node[keys[-1]] = copy.deepcopy(value)


def with_fields(raw: dict, inputs: dict[str, Any]) -> dict:
    data = copy.deepcopy(raw)
    for path, value in inputs.items():
        set_field(data, path, value)
    return data


def value_problems(raw: dict, path: str, value: Any, what: str) -> list[Problem]:
    """The schema's problems with `value` at `path` alone (other fields as in `raw`)."""
    try:
        parse_instance(with_fields(raw, {path: value}))
    except InputError as err:
        parts = path.split("+")
        return [Problem(path, f"{what} {json.dumps(value)}: " + (f"{p.path}: " if p.path != path else "") + p.message)
                for p in err.problems
                if any(p.path == q or p.path.startswith((q + ".", q + "[")) for q in parts)]
    return []


def parse_value(text: str) -> Any:
    """A value as written on the command line: JSON (100, 1e3, true, "x") or else a string."""
    text = text.strip()
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_grid(spec: str) -> tuple[str, list[Any]]:
    """'FIELD=v1,v2,...' -> (FIELD, [values]); InputError naming --grid when malformed."""
    path, sep, values = spec.partition("=")
    if not sep or not path.strip() or not values.strip():
        raise InputError([Problem("--grid", f"must be FIELD=v1,v2,..., got {spec!r}")])
    return path.strip(), [parse_value(v) for v in _split_args(values)]


def _split_args(text: str) -> list[str]:
    """Split on commas outside brackets and quotes."""
    out, depth, quote, cur = [], 0, None, ""
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        cur += ch
    out.append(cur)
    return [s.strip() for s in out if s.strip()]
