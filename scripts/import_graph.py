"""The import graph of planner/ and its layers (issue 26 items 1 and 5).

Every module of planner/ is read with `ast`; every `import` and `from ... import` statement counts,
at module level and inside functions, except those under `if TYPE_CHECKING:` (annotations only,
never run). `from planner.x import y` is an import of the module `planner.x.y` when that module
exists, else of `planner.x`. Importing a module also runs its packages' `__init__`; those edges are
not drawn (an `__init__` is the package's door, not a dependency of its modules).

`LAYERS` places each module on a layer, lowest first; a module may import only from its own layer
or a lower one. The first matching prefix decides (the longest prefixes are listed first within a
layer). tests/test_imports.py fails on any circle, on any import that climbs a layer and on any
import of a private name (`_x`) from another package; docs/architecture.md holds the diagram this
script draws (`--write` rewrites it, `--check` fails when it is not current).

    .venv/bin/python scripts/import_graph.py [--write | --check | --report]
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "planner"
DOC = ROOT / "docs" / "architecture.md"

# Lowest first: (layer name, what it holds, module prefixes). A prefix names a module or a package
# (every module below it); the longest matching prefix decides, so a module may sit on another layer
# than its package (planner.fleet.evaluate, planner.cost.assumptions). Every module must match one.
LAYERS: list[tuple[str, str, tuple[str, ...]]] = [
    ("schema", "what a user gives and the tables it is checked against: instance, plan, catalog, sites, "
               "limits, constants, places; files written whole",
     ("planner.schema", "planner.presets_dir", "planner.files", "planner.cost.assumptions", "planner.sites.places")),
    ("cost", "the cost model: one plan's step time, sync time, memory, quality, run cost",
     ("planner.cost",)),
    ("setting", "where the nodes are: sites and their latencies, pools of nodes, fleets of pools",
     ("planner.setting", "planner.sites", "planner.fleet", "planner.sync.rules", "planner.sync.straggler.rule",
      "planner.sync.proportional.rule", "planner.sync.proportional.placement")),
    ("evaluate", "one plan on a setting, checked against the limits (a fleet: pool by pool)",
     ("planner.homogeneous", "planner.fleet.evaluate", "planner.evaluate",
      "planner.frames")),
    ("space", "the decision space: the candidate values of each decision and their bounds",
     ("planner.space",)),
    ("objectives", "what is minimised or maximised, and the bounds it gives the search",
     ("planner.objectives",)),
    ("search", "the solvers: branch and bound, exhaustive, the MIP and its backends, the pool solvers",
     ("planner.solvers", "planner.mip", "planner.sync",
      "planner.solve", "planner.reference", "planner.robust", "planner.robust_oracle", "planner.robust_pools")),
    ("questions", "questions asked of the solvers: feasible, compare, sweep, thresholds, robust",
     ("planner.questions",)),
    ("present", "text, JSON, plots and reports of the answers",
     ("planner.present", "planner.fleet.present")),
    ("interfaces", "the command line, the web page, the Python API",
     ("planner.cli", "planner.web", "planner.api", "planner")),
]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    """Every module of planner/ by dotted name."""
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _matches(module: str, prefix: str) -> bool:
    """The module is the prefix or below it; the prefix "planner" names the package's `__init__` only."""
    return module == prefix or (prefix != "planner" and module.startswith(prefix + "."))


def layer_of(module: str) -> int:
    """The index in LAYERS of the module's layer (the longest matching prefix decides)."""
    best, best_len = None, -1
    for i, (_, _, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if _matches(module, prefix) and len(prefix) > best_len:
                best, best_len = i, len(prefix)
    if best is None:
        raise KeyError(f"{module}: no layer in scripts/import_graph.py LAYERS")
    return best


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _statements(tree: ast.AST):
    """Every import statement not under `if TYPE_CHECKING:`."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def imports(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, str, int]]:
    """(imported module, imported name or '', line) for every planner import of module `name`."""
    out = []
    for node in _statements(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, "", node.lineno) for a in node.names if a.name.split(".")[0] == "planner"]
            continue
        out += _resolved(name, path, node, known)
    return out


def graph() -> nx.DiGraph:
    """Module -> imported module, each edge with the list of (line, name) that make it."""
    known = modules()
    g = nx.DiGraph()
    g.add_nodes_from(known)
    for name, path in known.items():
        for target, imported, line in imports(name, path, known):
            if target == name:
                continue
            if target not in known:
                raise KeyError(f"{path}:{line}: imports {target}, not a module of planner/")
            g.add_edge(name, target)
            g.edges[name, target].setdefault("at", []).append((line, imported))
    return g


def circles(g: nx.DiGraph) -> list[list[str]]:
    """The strongly connected components of more than one module, each sorted."""
    return sorted(sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1)


def upward(g: nx.DiGraph) -> list[str]:
    """Every import from a module to a module of a higher layer."""
    out = []
    for a, b in sorted(g.edges):
        if layer_of(b) > layer_of(a):
            lines = ", ".join(str(line) for line, _ in g.edges[a, b]["at"])
            out.append(f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]}) at line {lines}")
    return out


def _package(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def private_imports(g: nx.DiGraph) -> list[tuple[str, str, list[str]]]:
    """(importer, imported module, names) for every `from x import _y` where x is in another package
    than the importer."""
    known = modules()
    out = []
    for a, b in sorted(g.edges):
        names = sorted({n for _, n in g.edges[a, b]["at"] if n.startswith("_")})
        if names and _package(a, known[a]) != _package(b, known[b]):
            out.append((a, b, names))
    return out


NAMEDTUPLE_API = {"_replace", "_asdict", "_fields", "_field_defaults", "_make"}   # public despite the underscore


def _bindings(name: str, path: Path, known: dict[str, Path]) -> dict[str, str]:
    """Local name -> the planner module it names, or the module it was imported from (a class or function
    imported by name), for every import of module `name` (`imports`' resolution)."""
    out = {}
    for node in _statements(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update({a.asname: a.name for a in node.names if a.asname and a.name in known})
            continue
        for (target, _, _), alias in zip(_resolved(name, path, node, known), node.names):
            out[alias.asname or alias.name] = target
    return out


def _resolved(name: str, path: Path, node: ast.ImportFrom, known: dict[str, Path]) -> list[tuple[str, str, int]]:
    """`imports` of one `from ... import` statement, one entry per name (non-planner sources: none)."""
    is_package = path.name == "__init__.py"
    if node.level:
        base = name.split(".") if is_package else name.split(".")[:-1]
        base = base[:len(base) - node.level + 1]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    if source.split(".")[0] != "planner":
        return []
    return [(f"{source}.{a.name}", "", node.lineno) if f"{source}.{a.name}" in known else (source, a.name, node.lineno)
            for a in node.names]


def private_attributes() -> list[tuple[str, str, str, int]]:
    """(module, imported module, attribute, line) for every `x._y` in a module where x is a module of
    another package it imported (`from planner.solvers import bnb`: `bnb._seeds`) or a name it imported
    from one (`from planner.space import DecisionSpace`: `DecisionSpace._memo`). Dunders and the named
    tuple's API (`_replace`, ...) are public; an attribute of an object the module did not import by
    name (an instance passed in) is not seen."""
    known = modules()
    out = []
    for name, path in known.items():
        bound = _bindings(name, path, known)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound):
                continue
            attr, target = node.attr, bound[node.value.id]
            if not attr.startswith("_") or attr.startswith("__") or attr in NAMEDTUPLE_API:
                continue
            if _package(name, path) != _package(target, known[target]):
                out.append((name, target, attr, node.lineno))
    return sorted(set(out))


def diagram(g: nx.DiGraph) -> str:
    """The layers as a table (lowest first: what each holds, its modules) and a mermaid flowchart with
    one arrow per pair of layers one imports from the other (an arrow points to the layer imported)."""
    by_layer: dict[int, list[str]] = {}
    for m in sorted(g.nodes):
        by_layer.setdefault(layer_of(m), []).append(m)
    lines = ["| layer | holds | modules |", "|---|---|---|"]
    for i, (name, holds, _) in enumerate(LAYERS):
        lines.append(f"| {i + 1}. {name} | {holds} | " + ", ".join(f"`{m}`" for m in by_layer.get(i, [])) + " |")
    lines += ["", "```mermaid", "flowchart BT"]
    lines += [f"  {name}[\"{i + 1}. {name}: {len(by_layer.get(i, []))} modules\"]" for i, (name, _, _) in enumerate(LAYERS)]
    pairs = sorted({(layer_of(a), layer_of(b)) for a, b in g.edges if layer_of(a) != layer_of(b)})
    lines += [f"  {LAYERS[a][0]} --> {LAYERS[b][0]}" for a, b in pairs]
    lines.append("```")
    return "\n".join(lines) + "\n"


BEGIN, END = "<!-- import diagram: scripts/import_graph.py --write -->\n", "<!-- end of import diagram -->\n"


def page_with_diagram(page: str, g: nx.DiGraph) -> str:
    head, _, rest = page.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return head + BEGIN + diagram(g) + END + tail


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help="rewrite the diagram in docs/architecture.md")
    group.add_argument("--check", action="store_true", help="fail when the diagram in docs/architecture.md is not current")
    opts = parser.parse_args()
    g = graph()
    if opts.write or opts.check:
        page = DOC.read_text()
        new = page_with_diagram(page, g)
        if opts.check:
            print("current" if new == page else f"{DOC} is not current: run scripts/import_graph.py --write")
            return 0 if new == page else 1
        DOC.write_text(new)
        return 0
    for c in circles(g):
        print(f"circle of {len(c)}: {' '.join(c)}")
    for u in upward(g):
        print("upward:", u)
    for a, b, names in private_imports(g):
        print(f"private: {a} imports {', '.join(names)} from {b}")
    for a, b, attr, line in private_attributes():
        print(f"private attribute: {a} reads {b}.{attr} at line {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
