"""Strict field types for the input schemas, and pydantic errors turned into `Problem`s.

The schemas (catalog, instance, plan) build their fields from the factories here:
`Num`, `Int`, `Bool`, `Choice`, `List`. Each checks the raw JSON value itself, so the
message says what was expected and what was given (`must be an integer >= 1, got -4`)
and nothing is coerced silently: a string is never a number, a boolean is never a
number, and an integer field takes a float only when it is whole (72.0, 1e4).

A validator reports problems with `fail` / `raise_problems`; their paths are relative
to the field or model being validated, and `problems_from` prefixes the JSON location.
"""

from __future__ import annotations

import json
import math
import os
import types
from pathlib import Path
from typing import Annotated, Any, Callable, Iterable, Literal, NoReturn, Sequence, Union, get_args, get_origin

import annotated_types as at
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError
from pydantic_core import PydanticCustomError

from planner.schema.errors import InputError, Problem
from planner.schema.limits import MAX_INTEGER, MAX_LIST, MAX_NUMBER, MAX_TEXT


class StrictModel(BaseModel):
    """Base of every input schema: unknown keys rejected, instances immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def made_by(make: Callable[[], Any]) -> Callable[[], Any]:
    """`make` as a plain function of no arguments, for `Field(default_factory=...)`.

    pydantic reads a default factory's signature when it builds the model (does it take the
    validated data?): for a builtin such as `list` or `dict` that means parsing its text
    signature with `tokenize`, for a model class building the class's whole signature, about
    5 ms of CPU at import for the schema's 13 factories (docs/speed.md, "Start-up time"). A plain
    function of no arguments answers at once; the default it makes is the same.
    """
    def factory() -> Any:
        return make()
    factory.__qualname__ = factory.__name__ = f"made_by_{getattr(make, '__name__', 'factory')}"
    return factory


# -- reporting ----------------------------------------------------------------------


def raise_problems(problems: Sequence[Problem]) -> NoReturn:
    """Raise from inside a validator; `Problem.path` is relative to what it validates."""
    summary = "; ".join(str(p) if p.path else p.message for p in problems)
    raise PydanticCustomError("dtplan", "{summary}", {"summary": summary, "problems": tuple(problems)})


def fail(message: str, path: str = "") -> NoReturn:
    raise_problems([Problem(path, message)])


def join_path(loc: Iterable[str | int], rel: str = "") -> str:
    """('search', 'compression', 3) -> 'search.compression[3]'; `rel` is appended."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    if rel:
        text = text + rel if rel.startswith("[") or not text else f"{text}.{rel}"
    return text or "<root>"


def show(value: Any) -> str:
    """A given value as the user wrote it (JSON spelling, strings quoted), shortened."""
    if isinstance(value, bool) or value is None:
        text = json.dumps(value)
    elif isinstance(value, (int, float)):
        text = fmt(value)
    elif isinstance(value, str):
        text = repr(value)
    else:
        text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def fmt(x: float) -> str:
    """A number for a message: 64, 0.5, 547.875, 1e6, 7.2e10 (large whole floats in e-notation)."""
    if isinstance(x, int) or not math.isfinite(x):
        return str(x)
    if x.is_integer() and abs(x) >= 1e6:
        mantissa, exponent = f"{x:.15e}".split("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
    text = repr(x)
    return text[:-2] if text.endswith(".0") else text


def close_matches(word: str, choices: Iterable[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """Choices resembling `word` (case-insensitive), best first: substrings, then difflib.

    difflib is imported here, on bad input only: a valid instance never needs it, and its
    import is part of every command's start-up otherwise (docs/speed.md, "Start-up time")."""
    import difflib

    choices = list(choices)
    by_lower = {c.lower(): c for c in choices}
    w = str(word).lower()
    fuzzy = [by_lower[m] for m in difflib.get_close_matches(w, list(by_lower), n=n, cutoff=cutoff)]
    inside = [c for c in choices if len(c) >= 3 and len(w) >= 3 and (w in c.lower() or c.lower() in w)]
    return list(dict.fromkeys(inside + fuzzy))[:n]


def closest_first(word: str, choices: Iterable[str]) -> list[str]:
    """All choices, those resembling `word` first (for 'known: ...' lists)."""
    choices = sorted(choices)
    near = close_matches(word, choices, n=len(choices), cutoff=0.4)
    return near + [c for c in choices if c not in near]


def did_you_mean(word: Any, choices: Iterable[str]) -> str:
    """' (did you mean 'x'?)' or ''."""
    if not isinstance(word, str):
        return ""
    near = close_matches(word, choices, n=1)
    return f" (did you mean {near[0]!r}?)" if near else ""


# -- value checks (return an error message, or None when the value is fine) ----------


def _got(value: Any) -> str:
    text = f"got {show(value)}"
    if isinstance(value, str):
        try:
            float(value)
            text += " (a string: write numbers without quotes)"
        except ValueError:
            pass
    return text


def _describe(noun: str, gt: float | None, ge: float | None, le: float | None, integer: bool) -> str:
    low = gt if gt is not None else ge
    if low is not None and le is not None:
        if integer:
            return f"{noun} in {fmt(low)}..{fmt(le)}"
        return f"{noun} in {'(' if gt is not None else '['}{fmt(low)}, {fmt(le)}]"
    if gt is not None:
        return f"{noun} > {fmt(gt)}"
    if ge is not None:
        return f"{noun} >= {fmt(ge)}"
    return f"{noun} <= {fmt(le)}" if le is not None else noun


def _in_range(x: float, gt: float | None, ge: float | None, le: float | None) -> bool:
    return (gt is None or x > gt) and (ge is None or x >= ge) and (le is None or x <= le)


def _cap_error(value: Any, cap: float | None, hint: str) -> str | None:
    """The message for a number beyond dtplan's magnitude bound `cap` (planner.schema.limits)."""
    if cap is None or abs(value) <= cap:
        return None
    return (f"must be at most {fmt(cap)}{' in magnitude' if value < 0 else ''}{hint} (dtplan's bound: beyond "
            f"it the cost model cannot compute), got {show(value)}")


def number_error(value: Any, gt=None, ge=None, le=None, hint: str = "", cap: float | None = None) -> str | None:
    """None if `value` is a finite JSON number within the bounds (and |value| <= cap), else the message
    (the bounds described only then: a valid value, every field of every valid instance and plan, builds
    no text)."""
    if not _is_number_within(value, gt, ge, le):
        return f"must be {_describe('a number', gt, ge, le, integer=False)}{hint}, {_got(value)}"
    return _cap_error(value, cap, hint)


def _is_number_within(value: Any, gt, ge, le) -> bool:
    """Whether `value` is a finite JSON number (int or float, not bool) within the bounds."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value) and _in_range(value, gt, ge, le)
    except OverflowError:
        return False


def integer_error(value: Any, gt=None, ge=None, le=None, hint: str = "", cap: float | None = None) -> str | None:
    """None if `value` is a whole JSON number (72 or 72.0, not 72.5) within the bounds."""
    if isinstance(value, float) and math.isfinite(value) and not value.is_integer():
        got = f"got {show(value)} (not a whole number)"
    elif _is_number_within(value, gt, ge, le):
        return _cap_error(value, cap, hint)
    else:
        got = _got(value)
    return f"must be {_describe('an integer', gt, ge, le, integer=True)}{hint}, {got}"


def choice_error(value: Any, choices: Sequence[str]) -> str | None:
    if isinstance(value, str) and value in choices:
        return None
    listed = ", ".join(repr(c) for c in choices)
    return f"must be one of {listed}; got {show(value)}{did_you_mean(value, choices)}"


# -- field types -------------------------------------------------------------------


class JsonBounds:
    """The bounds of a number field as its JSON schema states them (exclusiveMinimum, minimum,
    maximum: what pydantic writes for annotated_types' Gt, Ge and Le), not checked a second time.

    The field's own check (`number_error`, `integer_error`) enforces the bounds first, with
    dtplan's messages, so pydantic's constraint schema for them never rejected anything; building
    it cost ~5 ms of CPU at every start (the schema's ~110 number fields; docs/speed.md, "Start-up
    time"). pydantic calls `__get_pydantic_json_schema__` of an `Annotated` item only when it
    writes a JSON schema (`dtplan schema`, the web page's form).
    """

    __slots__ = ("gt", "ge", "le")

    def __init__(self, gt: float | None, ge: float | None, le: float | None) -> None:
        self.gt, self.ge, self.le = gt, ge, le

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> dict[str, Any]:
        schema = handler(core_schema)
        for key, bound in (("exclusiveMinimum", self.gt), ("minimum", self.ge), ("maximum", self.le)):
            if bound is not None:
                schema[key] = bound
        return schema


def Num(*, gt: float | None = None, ge: float | None = None, le: float | None = None, hint: str = "",
        cap: float = MAX_NUMBER):
    """A float field: a finite JSON number (not a string, not a boolean) within the bounds, and
    at most `cap` in magnitude (planner.schema.limits: what the cost model can compute)."""
    def check(value: Any) -> float:
        message = number_error(value, gt, ge, le, hint, cap)
        if message:
            fail(message)
        return float(value)
    return Annotated[float, JsonBounds(gt, ge, le if le is not None else cap), BeforeValidator(check)]


def Int(*, ge: int | None = None, le: int | None = None, hint: str = "", cap: int = MAX_INTEGER):
    """An int field: a whole JSON number (72, 72.0 or 1e4; not 72.5, not "72") within bounds,
    and at most `cap` (planner.schema.limits)."""
    def check(value: Any) -> int:
        message = integer_error(value, None, ge, le, hint, cap)
        if message:
            fail(message)
        return int(value)
    return Annotated[int, JsonBounds(None, ge, le if le is not None else cap), BeforeValidator(check)]


def text_error(value: Any) -> str | None:
    """None if `value` is a string of valid Unicode (no unpaired surrogate) of at most MAX_TEXT characters."""
    if not isinstance(value, str):
        return f"must be a string, got {show(value)}"
    if len(value) > MAX_TEXT:
        return f"must be at most {MAX_TEXT:,} characters, got {len(value):,}"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"must be valid Unicode text: character {exc.start + 1} is an unpaired surrogate "
                f"({value[exc.start]!a})")
    return None


def _check_text(value: Any) -> str:
    message = text_error(value)
    if message:
        fail(message)
    return value


Text = Annotated[str, BeforeValidator(_check_text)]


def _check_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        fail(f"must be true or false, got {show(value)}")
    return value


Bool = Annotated[bool, BeforeValidator(_check_bool)]


def Choice(*choices: str, dynamic: Callable[[], Sequence[str]] | None = None):
    """A string field taking one of `choices` (or of `dynamic()`, read when validating)."""
    def check(value: Any) -> str:
        message = choice_error(value, dynamic() if dynamic else choices)
        if message:
            fail(message)
        return value
    return Annotated[str if dynamic else Literal[choices], BeforeValidator(check)]


def List(item: Any, *, nonempty: bool = True, max_len: int = MAX_LIST):
    """A JSON list of `item`s, non-empty unless told otherwise, of at most `max_len` values
    (each value of a search list multiplies the work); item errors get `[i]` paths."""
    def check(value: Any) -> list:
        if not isinstance(value, list):
            fail(f"must be a list, got {show(value)}")
        if nonempty and not value:
            fail("must be a non-empty list, got []")
        if len(value) > max_len:
            fail(f"must hold at most {max_len} values (dtplan's bound: each value multiplies the search), "
                 f"got {len(value):,}")
        return value
    return Annotated[list[item], BeforeValidator(check), at.MaxLen(max_len)]


# -- pydantic errors -> problems ---------------------------------------------------


def problems_from(exc: ValidationError, root: type[BaseModel] | None = None) -> list[Problem]:
    """Every error of `exc` as a Problem with a JSON path; `root` is the validated model."""
    problems: list[Problem] = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        if err["type"] == "dtplan":
            problems += [Problem(join_path(loc, p.path), p.message) for p in err["ctx"]["problems"]]
        else:
            problems.append(Problem(join_path(loc), _message(err, root)))
    return problems


def _message(err: dict, root: type[BaseModel] | None) -> str:
    kind, given = err["type"], err.get("input")
    if kind == "missing":
        return "required field missing"
    if kind == "extra_forbidden":
        return _unknown_field(tuple(err["loc"]), root)
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"must be an object, got {show(given)}"
    if kind == "string_type":
        return f"must be a string, got {show(given)}"
    if kind == "list_type":
        return f"must be a list, got {show(given)}"
    if kind == "bool_type":
        return f"must be true or false, got {show(given)}"
    text = err["msg"]
    return f"{text[:1].lower()}{text[1:]}, got {show(given)}"


def _unknown_field(loc: tuple, root: type[BaseModel] | None) -> str:
    key = str(loc[-1])
    model = _model_at(root, loc[:-1]) if root else None
    if model is None:
        return "unknown field"
    here = join_path(loc[:-1]) if loc[:-1] else ""
    elsewhere = [p for p in field_paths(root) if p.rpartition(".")[2] == key and p.rpartition(".")[0] != here]
    near = close_matches(key, model.model_fields, n=1)
    if elsewhere:
        where = " or ".join(repr(p) for p in elsewhere[:2])
        return f"unknown field here; {key!r} belongs at {where}" + (f" (or did you mean {near[0]!r}?)" if near else "")
    if near:
        return f"unknown field (did you mean {near[0]!r}?)"
    return f"unknown field; allowed: {', '.join(model.model_fields)}"


def unwrap(tp: Any) -> Any:
    """Annotated[X, ...] -> X; Optional[X] -> X; a union -> its model member, if any."""
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            tp = get_args(tp)[0]
            continue
        if origin in (Union, types.UnionType):
            members = [a for a in get_args(tp) if a is not type(None)]
            models = [a for a in members if is_model(unwrap(a))]
            if len(members) == 1 or models:
                tp = members[0] if len(members) == 1 else models[0]
                continue
        return tp


def is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _model_at(root: type[BaseModel], loc: tuple) -> type[BaseModel] | None:
    """The model class validating the object at `loc` (None if not a model)."""
    tp: Any = root
    for part in loc:
        tp = unwrap(tp)
        if is_model(tp) and isinstance(part, str):
            field = tp.model_fields.get(part)
            if field is None:
                return None
            tp = field.annotation
        elif get_origin(tp) in (list, dict) and get_args(tp):
            tp = get_args(tp)[-1]
        else:
            return None
    tp = unwrap(tp)
    return tp if is_model(tp) else None


def field_paths(model: type[BaseModel], prefix: str = "", depth: int = 0) -> list[str]:
    """Dotted paths of every field of `model` and of the models nested in it."""
    paths: list[str] = []
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        paths.append(path)
        inner = unwrap(field.annotation)
        if is_model(inner) and depth < 5:
            paths += field_paths(inner, f"{path}.", depth + 1)
    return paths


# -- files ------------------------------------------------------------------------


MAX_INPUT_MB = 64              # input files read at most (issue 23): ~9x the largest instance at the schema's
                               # site bounds (1,000 sites, 10^5 links of short names: ~7 MB of JSON)
MAX_INPUT_ENV = "DTPLAN_MAX_INPUT_MB"


def max_input_bytes() -> int:
    """The cap on an input file's size: $DTPLAN_MAX_INPUT_MB megabytes (10^6 bytes), else MAX_INPUT_MB;
    InputError naming the variable when it is not a number > 0."""
    text = os.environ.get(MAX_INPUT_ENV)
    if text is None or not text.strip():
        return MAX_INPUT_MB * 10**6
    try:
        mb = float(text)
    except ValueError:
        mb = math.nan
    if not (0 < mb <= 1e9):
        raise InputError([Problem(MAX_INPUT_ENV, f"must be a number of megabytes > 0 (at most 1e9), got {text!r}")])
    return int(mb * 10**6)


def read_input_text(path: str | Path) -> str:
    """The UTF-8 text of an input file, refused (InputError naming the file) when it is larger than
    `max_input_bytes()`: checked on the size before reading, and by reading at most one byte past the
    cap (a pipe or a device has no size)."""
    path = Path(path)
    source = str(path)
    cap = max_input_bytes()
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            data = fh.read(cap + 1) if size <= cap else b""
    except FileNotFoundError:
        raise InputError([Problem("<file>", f"file not found: {path}")], source) from None
    except OSError as exc:
        raise InputError([Problem("<file>", f"cannot read the file: {exc.strerror or exc}")], source) from None
    if size > cap or len(data) > cap:
        shown = f" ({size / 1e6:,.1f} MB)" if size > cap else ""
        raise InputError([Problem("<file>", f"{path} is larger than dtplan's cap on input files, {cap / 1e6:,.6g} MB"
                                            f"{shown}; an instance needs far less. To read it, set "
                                            f"{MAX_INPUT_ENV}=<megabytes>")], source)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError([Problem("<file>", "not a UTF-8 text file")], source) from None


def read_json(path: str | Path) -> tuple[Any, list[Problem]]:
    """The parsed JSON of `path` and any duplicate-key problems; InputError if unreadable or over the
    input cap (`read_input_text`)."""
    path = Path(path)
    source = str(path)
    text = read_input_text(path)
    problems: list[Problem] = []

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                problems.append(Problem("<file>", f"duplicate key {key!r} in one object (only the last value would count)"))
            seen[key] = value
        return seen

    try:
        data = json.loads(text, object_pairs_hook=no_duplicates)
    except json.JSONDecodeError as exc:
        message = f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        raise InputError([Problem("<file>", message)], source) from None
    except RecursionError:
        raise InputError([Problem("<file>", "not readable: the JSON is nested too deeply")], source) from None
    except ValueError as exc:        # e.g. an integer of more than 4,300 digits
        raise InputError([Problem("<file>", f"not readable: {exc}")], source) from None
    if nesting(data) > MAX_DEPTH:
        raise InputError([Problem("<file>", NESTING_MESSAGE)], source)
    return data, problems


MAX_DEPTH = 32          # an instance nests at most ~5 levels (assumptions.constants.table.row)


NESTING_MESSAGE = f"nested more than {MAX_DEPTH} levels deep (an input file needs at most about 5)"


def nesting(data: Any) -> int:
    """How deeply lists and objects nest in `data` (0 for a number or a string), without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            node = list(node.values())
        if isinstance(node, list):
            deepest = max(deepest, level)
            if level <= MAX_DEPTH:
                stack.extend((child, level + 1) for child in node)
    return deepest


def load_file(path: str | Path, parse: Callable[[Any, str], Any]) -> Any:
    """`parse(data, source)` on the JSON of `path`, with file-level problems added in."""
    data, problems = read_json(path)
    try:
        result = parse(data, str(path))
    except InputError as exc:
        problems = problems + exc.problems
    if problems:
        raise InputError(problems, str(path))
    return result
