"""Package list for setuptools (the rest of the build configuration is in pyproject.toml).

pyproject.toml cannot both let setuptools find the packages under planner/ and add
more by name, so the list is built here: every package found under planner/, plus
`planner.models` and `planner.instances`, which pyproject.toml maps to the top-level
models/ folder of presets and instances/ folder of examples (installed as package data).
"""

from setuptools import find_packages, setup

setup(packages=find_packages(include=["planner", "planner.*"]) + ["planner.models", "planner.instances"])
