"""`dtplan presets` (hardware, models, assumption profiles, constants) and `dtplan schema`
(the instance JSON Schema, as pydantic writes it)."""

from __future__ import annotations

import click

from planner.cli.common import echo_json, json_option


def presets_data() -> dict:
    """Every preset the instance can name: hardware and model ids with their figures, the
    assumption profiles, and each settable constant with its value in every profile."""
    from planner.cli.evaluate import hardware_rows
    from planner.cost.assumptions import SETTABLE_FIELDS, TABLE_FIELDS, load_profile, profile_names
    from planner.schema.catalog import llm_ids, load_llm
    models = []
    for mid in llm_ids():
        m = load_llm(mid)
        models.append({"id": mid, "name": m.name, "params": m.params, "active_params": m.active_params,
                       "moe_layers": m.moe_layers, "hidden_size": m.hidden_size})
    profiles = {name: load_profile(name) for name in profile_names()}
    constants = []
    for key in SETTABLE_FIELDS:
        values = {}
        for name, a in profiles.items():
            value = getattr(a, key)
            values[name] = {str(k): list(v) for k, v in value.items()} if key in TABLE_FIELDS else value
        constants.append({"name": key, "values": values})
    return {"hardware": hardware_rows(), "models": models, "profiles": list(profiles), "constants": constants}


@click.command()
@json_option("Write every preset as one JSON object to standard output.")
def presets(as_json: bool) -> None:
    """List the presets: hardware, models, assumption profiles and their constants."""
    from rich.table import Table

    from planner.present.render import make_console, print_table
    data = presets_data()
    if as_json:
        echo_json(data)
        return
    console = make_console()
    hw = Table("id", "node", "precisions", "peak fp16 PFLOP/s", "HBM GB", "$ per node",
               title="Hardware (fleet.hardware)", title_justify="left")
    for row in data["hardware"]:
        hw.add_row(row["id"], row["name"], ",".join(row["precisions"]), f"{row['node_peak_fp16_pflops']:.3f}",
                   f"{row['node_hbm_gb']:,.0f}", f"{row['node_price_usd']:,.0f}")
    print_table(hw, console)
    models = Table("id", "name", "params", "active", "MoE layers", title="Models (model.preset)", title_justify="left")
    for m in data["models"]:
        models.add_row(m["id"], m["name"], f"{m['params']:.4g}",
                       "-" if m["active_params"] is None else f"{m['active_params']:.4g}",
                       "-" if m["moe_layers"] is None else str(m["moe_layers"]))
    print_table(models, console)
    constants = Table("constant", *data["profiles"],
                      title="Assumption profiles (assumptions.profile) and constants (assumptions.constants)",
                      title_justify="left")
    for c in data["constants"]:
        cells = []
        for name in data["profiles"]:
            value = c["values"][name]
            cells.append(f"{len(value)} rows" if isinstance(value, dict) else (f"{value:g}" if isinstance(value, float)
                                                                              else str(value)))
        constants.add_row(c["name"], *cells)
    print_table(constants, console)


@click.command()
def schema() -> None:
    """Print the JSON Schema of an instance file (pydantic's, with every field's description)."""
    from planner.schema.instance import instance_json_schema
    echo_json(instance_json_schema())
