"""The reference simulator: which dtplan plan each of its calls is (`conformance`), and its searches answered by the planner (`search`)."""
