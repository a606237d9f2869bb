"""Every input the page shows: the instance's fields and the plan's, each with its label, its
unit and the kind of control that edits it, grouped in sections; and the inputs a curve of
days can be drawn against.

The instance schema (planner/schema/instance.py) is the authority: the page sends the raw
values it is given (a number the user typed, or the text itself when it is not a number) and
shows the schema's problems next to the field they name, so a value is never checked twice
in two ways. Each field's help text is the schema's own description (`descriptions`), and
`tests/test_web_api.py` checks that `INSTANCE_FIELDS` covers every field of the schema.

Kinds: `number`, `integer` (typed as text, sent as a JSON number when it reads as one),
`text`, `choice` (a fixed list, or presets named by `presets`: hardware, models, profiles,
search), `bool`, `list` (comma-separated values, sent as a JSON list), `json` (an object
typed as JSON), `constants` (assumption constants, one per row), `days` (a number of days or
the word 'growth'), `table` (a list of objects, one row each: sites, links). An empty control
means the field is absent (the schema's default). A schema field this list does not name gets
a control of the kind its type suggests (`page_fields`), so the page never lacks an input.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

from planner.objectives import KEYS


@dataclass(frozen=True)
class Field:
    """One input: its dotted JSON path, label, unit and control."""

    path: str
    label: str
    unit: str = ""
    kind: str = "number"
    choices: tuple = ()
    presets: str = ""          # the preset list that fills a choice: hardware | models | profiles | search
    section: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


SECTIONS = (("question", "Question"), ("model", "Model"), ("training", "Training"), ("fleet", "Fleet"),
            ("hardware", "Custom hardware (per accelerator)"), ("network", "Network"), ("limits", "Limits"),
            ("assumptions", "Assumptions"), ("search", "Search space"))

_PARAMS = "parameters (raw count, e.g. 7e9)"


def _fields(section: str, *fields: Field) -> list[Field]:
    return [Field(**{**asdict(f), "section": section}) for f in fields]


INSTANCE_FIELDS: tuple[Field, ...] = tuple(
    _fields("question",
            Field("name", "name", kind="text"),
            Field("description", "description", kind="text"),
            Field("objective", "objective", kind="choice", choices=KEYS))
    + _fields("model",
              Field("model.preset", "model preset", kind="choice", presets="models"),
              Field("model.params", "total parameters P", _PARAMS),
              Field("model.active_params", "active parameters (MoE)", _PARAMS),
              Field("model.moe_layers", "MoE layers", "layers", kind="integer"),
              Field("model.hidden_size", "hidden size h", "dimensions"))
    + _fields("training",
              Field("training.tokens", "training tokens D", "tokens"),
              Field("training.target_flop", "target compute", "FLOP"),
              Field("training.target_kind", "target counts", kind="choice", choices=("c_local", "c_quality")),
              Field("training.local_batch_tokens", "batch per replica", "tokens per inner step", kind="integer"))
    + _fields("fleet",
              Field("fleet.hardware", "hardware", kind="choice", presets="hardware"),
              Field("fleet.nodes", "nodes available", "nodes", kind="integer"),
              Field("fleet.price_usd_per_accelerator", "price override", "USD per accelerator"),
              Field("fleet.goodput", "goodput", "fraction of wall-clock, (0, 1]"),
              Field("fleet.pools", "pools (a mixed fleet)", "one row per pool: hardware, count, price, site; "
                    "instead of hardware and nodes (docs/fleet.md)", kind="table"),
              Field("fleet.sync_rule", "sync rule (pools)", "straggler: the fast wait; proportional: they run "
                    "more inner steps; auto: the better", kind="choice", choices=("straggler", "proportional", "auto")))
    + _fields("hardware",
              Field("fleet.hardware.id", "id", kind="text"),
              Field("fleet.hardware.name", "name", kind="text"),
              Field("fleet.hardware.accelerator", "accelerator", kind="text"),
              Field("fleet.hardware.accelerators_per_node", "accelerators per node", "accelerators", kind="integer"),
              Field("fleet.hardware.peak_tflops_per_accelerator.fp16", "peak fp16", "TFLOP/s per accelerator"),
              Field("fleet.hardware.peak_tflops_per_accelerator.fp8", "peak fp8", "TFLOP/s per accelerator"),
              Field("fleet.hardware.peak_tflops_per_accelerator.fp4", "peak fp4", "TFLOP/s per accelerator"),
              Field("fleet.hardware.hbm_gb_per_accelerator", "memory", "GB per accelerator"),
              Field("fleet.hardware.price_usd_per_accelerator", "price", "USD per accelerator"),
              Field("fleet.hardware.notes", "notes", kind="text"),
              Field("fleet.hardware.sources", "sources", "field: citation", kind="json"))
    + _fields("network",
              Field("network.wan.up_mbps", "WAN upload", "Mb/s per node"),
              Field("network.wan.down_mbps", "WAN download", "Mb/s per node"),
              Field("network.wan.rtt_ms", "WAN round trip", "ms"),
              Field("network.regional.mbps", "regional bandwidth", "Mb/s"),
              Field("network.regional.rtt_ms", "regional round trip", "ms"),
              Field("network.pipeline.mbps", "pipeline link bandwidth", "Mb/s"),
              Field("network.pipeline.rtt_ms", "pipeline link round trip", "ms"),
              Field("network.sites", "sites", "one row per site: a city or region, or lat and lon", kind="table"),
              Field("network.links", "links between sites", "Mb/s each way, ms; a missing RTT is estimated",
                    kind="table"),
              Field("network.regions", "regions", "geography: the tier's groups; chosen: the planner picks them, "
                    "whole groups per region (docs/fleet.md)", kind="choice", choices=("geography", "chosen")))
    + _fields("limits",
              Field("limits.max_days", "longest run", "days, or 'growth'", kind="days"),
              Field("limits.growth_x_per_year.hardware", "hardware growth", "x per year"),
              Field("limits.growth_x_per_year.software", "software growth", "x per year"),
              Field("limits.growth_x_per_year.investment", "investment growth", "x per year"),
              Field("limits.budget_usd", "budget", "USD"),
              Field("limits.max_nodes", "node cap", "nodes", kind="integer"))
    + _fields("assumptions",
              Field("assumptions.profile", "assumption profile", kind="choice", presets="profiles"),
              Field("assumptions.scenario", "quality scenario", kind="choice",
                    choices=("optimistic", "expected", "conservative")),
              Field("assumptions.straggler", "straggler strategy", kind="choice",
                    choices=("synchronous", "relay", "threshold", "backup", "none")),
              Field("assumptions.error_feedback", "error feedback", kind="bool"),
              Field("assumptions.mfu", "MFU", "fraction of peak, (0, 1]"),
              Field("assumptions.constants", "constants", "as the profile names them", kind="constants"))
    + _fields("search",
              Field("search.preset", "search preset", kind="choice", presets="search"),
              Field("search.modes", "modes", "list", kind="list"),
              Field("search.min_nodes", "fewest nodes", "nodes", kind="integer"),
              Field("search.max_stages", "most pipeline stages S", "stages", kind="integer"),
              Field("search.group_sizes", "group sizes k", "list of nodes per group", kind="list"),
              Field("search.max_inner_steps", "largest H", "inner steps", kind="integer"),
              Field("search.max_regional_rounds", "largest R", "regional rounds", kind="integer"),
              Field("search.compression", "compression ratios Cr", "list, x", kind="list"),
              Field("search.precisions", "precisions", "list", kind="list"),
              Field("search.max_micro_batches", "most micro-batches M", "micro-batches", kind="integer"),
              Field("search.activation_compression", "activation compression Ca", "list, x", kind="list"),
              Field("search.streaming", "streaming", "list of true/false", kind="list"),
              Field("search.expert_parallel", "expert parallelism", "list", kind="list"),
              Field("search.params", "candidate model sizes", "list of parameters", kind="list"))
)

# The plan's fields; `modes` says in which modes a field means something (the page hides the others).
_ALL = ("flat", "hierarchical", "pp_group", "pipeline_wan")
_SYNCED = ("flat", "hierarchical", "pp_group")
_PIPES = ("pp_group", "pipeline_wan")
PLAN_FIELDS: tuple[tuple[Field, tuple[str, ...]], ...] = (
    (Field("mode", "mode", kind="choice", choices=_ALL), _ALL),
    (Field("nodes", "nodes used N", "nodes", kind="integer"), _ALL),
    (Field("precision", "precision", kind="choice", choices=("fp16", "fp8", "fp4")), _ALL),
    (Field("inner_steps", "inner steps H", "steps between syncs", kind="integer"), _SYNCED),
    (Field("compression", "compression Cr", "x, pseudo-gradients"), _SYNCED),
    (Field("streaming", "streaming overlap", kind="bool"), _SYNCED),
    (Field("group_size", "group size k", "nodes per group", kind="integer"), ("hierarchical",)),
    (Field("regional_rounds", "regional rounds R", "rounds per global sync", kind="integer"), ("hierarchical",)),
    (Field("stages", "pipeline stages S", "stages", kind="integer"), _PIPES),
    (Field("micro_batches", "micro-batches M", "micro-batches", kind="integer"), _PIPES),
    (Field("activation_compression", "activation compression Ca", "x"), _PIPES),
    (Field("expert_parallel", "expert parallelism (MoE)", kind="choice", choices=("none", "regional", "global")),
     _ALL),
    (Field("pipeline_schedule", "pipeline schedule (dtplan)", kind="choice",
           choices=("gpipe", "1f1b", "interleaved", "zero_bubble", "dualpipe")), _PIPES),
    (Field("zero_shards", "ZeRO-3 shards Z (dtplan)", "nodes per replica", kind="integer"), ("flat", "hierarchical")),
    (Field("description", "description", kind="text"), _ALL),
    (Field("pool_nodes", "nodes per pool", "pool name: nodes used, for a fleet of pools", kind="json"), _ALL),
    (Field("regions", "regions", "lists of sites, with network.regions = chosen", kind="json"), _ALL),
    (Field("sync_rule", "sync rule (pools)", kind="choice", choices=("straggler", "proportional")),
     ("flat", "hierarchical")),
)

# The instance the page starts with when it has no example to offer (an installed wheel): the
# MIRI report's 10^25 FLOP baseline, as instances/baseline-1e25.json states it.
DEFAULT_INSTANCE = {"name": "10^25 FLOP baseline", "model": {"preset": "dense-144B"}, "training": {"tokens": 12e12},
                    "fleet": {"hardware": "16xGH200", "nodes": 72}}


# A plan for an instance loaded without one: the reference calculator's baseline choices on the
# whole fleet (flat streaming DiLoCo, fp16, H = 128, 16x compression).
def default_plan(nodes: int) -> dict[str, Any]:
    return {"mode": "flat", "nodes": nodes, "precision": "fp16", "inner_steps": 128, "compression": 16,
            "streaming": True}


def baseline_plan(instance) -> dict[str, Any]:
    """The plan the page starts an instance on when it has none: `default_plan` on the whole fleet;
    for a fleet of pools, every node of every pool (`pool_nodes`: each pool's count, by the
    pool's label as plans name it, `Fleet.pool_labels`)."""
    fleet = instance.fleet
    plan = default_plan(fleet.nodes)
    if fleet.is_mixed:
        plan["pool_nodes"] = {label: pool.count for label, pool in zip(fleet.pool_labels(), fleet.pools)}
    return plan


@dataclass(frozen=True)
class Curve:
    """An input the curve of days can be drawn against.

    `optimal_path`: the instance field set to x for the fastest plan (a sweep's grid);
    `optimal_list`: whether that field takes a list ([x]); `plan_path`: the plan field set to x
    for the user's plan (None: the instance field, as for the fastest plan); `optimal_note`:
    what the fastest plan's point means when the field only bounds the search."""

    key: str
    label: str
    unit: str
    optimal_path: str
    plan_path: str | None
    integer: bool
    log: bool
    optimal_list: bool = False
    optimal_note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


CURVES = (
    Curve("bandwidth", "WAN bandwidth (up = down)", "Mb/s", "network.wan.up_mbps+network.wan.down_mbps", None,
          integer=False, log=True),
    Curve("nodes", "nodes", "nodes", "fleet.nodes", "nodes", integer=True, log=True,
          optimal_note="fastest plan on a fleet of x nodes (it may use fewer)"),
    Curve("inner_steps", "inner steps H", "steps", "search.max_inner_steps", "inner_steps", integer=True, log=True,
          optimal_note="fastest plan with H <= x"),
    Curve("compression", "compression Cr", "x", "search.compression", "compression", integer=False, log=True,
          optimal_list=True),
)
CURVE_BY_KEY = {c.key: c for c in CURVES}


@lru_cache(maxsize=1)
def descriptions() -> dict[str, str]:
    """Each field's description as the instance schema states it, by dotted path."""
    return {path: text for path, text, _ in schema_fields()}


def _schema():
    from planner.schema.instance import instance_json_schema
    schema = instance_json_schema()
    defs = schema.get("$defs", {})

    def refs(node: dict) -> list[dict]:
        found = [node] + list(node.get("anyOf", [])) + list(node.get("allOf", []))
        return [defs[r["$ref"].split("/")[-1]] for r in found if "$ref" in r]
    return schema, refs


@lru_cache(maxsize=1)
def schema_nodes() -> dict[str, dict]:
    """Every field of the instance schema (the inline hardware's included) by dotted path: its
    JSON Schema node, and `sections`: the objects it holds (their own fields are listed too)."""
    schema, refs = _schema()
    out: dict[str, dict] = {}

    def walk(props: dict, prefix: str) -> None:
        for name, node in props.items():
            subs = refs(node)
            out[prefix + name] = {"node": node, "sections": subs}
            for sub in subs:
                walk(sub.get("properties", {}), prefix + name + ".")

    walk(schema.get("properties", {}), "")
    return out


def schema_fields() -> tuple[tuple[str, str, bool], ...]:
    """(dotted path, description, whether it is an object with free keys) of every schema field."""
    return tuple((path, (x["node"].get("description") or "").strip(),
                  x["node"].get("type") == "object" and not x["sections"]) for path, x in schema_nodes().items())


def table_columns(path: str) -> list[dict[str, str]]:
    """The columns of a list of objects (`network.sites`): each property of its items, with the
    schema's description."""
    _, refs = _schema()
    node = schema_nodes()[path]["node"]
    items = node.get("items") or next((n.get("items") for n in node.get("anyOf", []) if n.get("items")), {})
    return [{"name": name, "help": (prop.get("description") or "").strip()}
            for item in refs(items) for name, prop in item.get("properties", {}).items()]


def _guess(path: str, node: dict) -> Field:
    """A control for a schema field the page does not list (a field added since): its kind from
    the schema's type, its label the field's name, in the section of its first part."""
    kinds = [n for n in node.get("anyOf", [node]) if n.get("type") != "null"]
    types = {n.get("type") for n in kinds}
    if any(n.get("type") == "array" and "$ref" in (n.get("items") or {}) for n in kinds):
        kind = "table"
    elif "array" in types:
        kind = "list"
    elif "object" in types:
        kind = "json"
    elif types <= {"number", "integer"} and types:
        kind = "integer" if types == {"integer"} else "number"
    elif types == {"boolean"}:
        kind = "bool"
    else:
        kind = "text"
    top = path.split(".")[0]
    section = top if top in {s for s, _ in SECTIONS} else "question"
    return Field(path, path.split(".")[-1].replace("_", " "), "", kind, section=section)


def page_fields() -> list[dict[str, Any]]:
    """What the page shows: `INSTANCE_FIELDS`, then a control for every schema field they do not
    cover (so that every input of the instance can be set), each with the schema's help and, for a
    table, its columns."""
    nodes = schema_nodes()
    listed = {f.path for f in INSTANCE_FIELDS}
    fields = list(INSTANCE_FIELDS)
    for path, x in nodes.items():
        covered = path in listed or any(p.startswith(path + ".") for p in listed) or x["sections"] \
            or any(path.startswith(p + ".") for p in listed)
        if not covered:
            fields.append(_guess(path, x["node"]))
    help_text = descriptions()
    return [{**f.to_dict(), "help": help_text.get(f.path, ""),
             **({"columns": table_columns(f.path)} if f.kind == "table" else {})} for f in fields]
