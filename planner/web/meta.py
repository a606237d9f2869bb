"""What the page needs to build itself (`GET /api/meta`): the fields and their help, the presets
(hardware, models, assumption profiles with their constants, search presets, network profiles),
the inputs a curve can be drawn against, the objectives and the example instances."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

NETWORK_PROFILES = Path(__file__).parent / "network_profiles.json"


def network_profiles() -> dict[str, Any]:
    """The WAN presets of network_profiles.json (with their source)."""
    return json.loads(NETWORK_PROFILES.read_text())


def meta(examples: list[str]) -> dict[str, Any]:
    from planner.cli.info import presets_data
    from planner.objectives import KEYS
    from planner.present.report import dtplan_version
    from planner.schema.instance import search_preset_names
    from planner.web.fields import CURVES, DEFAULT_INSTANCE, PLAN_FIELDS, SECTIONS, default_plan, page_fields
    return {
        "version": dtplan_version(),
        "sections": [{"id": s, "title": t} for s, t in SECTIONS],
        "fields": page_fields(),
        "plan_fields": [{**f.to_dict(), "modes": list(modes)} for f, modes in PLAN_FIELDS],
        "default_plan": default_plan(1),
        "default_instance": DEFAULT_INSTANCE,
        "presets": {**presets_data(), "search": search_preset_names()},
        "network_profiles": network_profiles(),
        "curves": [c.to_dict() for c in CURVES],
        "objectives": list(KEYS),
        "examples": examples,
    }
