"""Editing raw instance dicts in tests (the JSON a user writes, before validation)."""

import copy


def with_fields(raw: dict, **fields) -> dict:
    """A deep copy of `raw` with fields set by path, sections joined by '__':
    with_fields(raw, fleet__goodput=0.5, limits__max_days=30)."""
    data = copy.deepcopy(raw)
    for path, value in fields.items():
        node = data
        keys = path.split("__")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = value
    return data
