"""The reference simulator: which dtplan plan each of its calls is (`conformance`), and its searches answered by the planner (`search`).

Layer: search (docs/architecture.md): it answers the reference simulator's searches with the
planner's solvers, so it may import the layers up to search; only the interfaces and tests import
it.
"""
