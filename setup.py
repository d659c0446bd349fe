"""Maps the top-level ``integrations/`` folder into the distribution as ``causal_middleware.integrations``.

pyproject.toml cannot express a package-dir mapping whose sub-packages are discovered
automatically, so this shim computes the package list; all other metadata lives in pyproject.toml.
"""

from setuptools import find_packages, setup

core = ["causal_middleware"] + [f"causal_middleware.{p}" for p in find_packages("causal_middleware")]
adapters = ["causal_middleware.integrations"] + [
    f"causal_middleware.integrations.{p}" for p in find_packages("integrations")
]

setup(
    packages=core + adapters,
    package_dir={"causal_middleware": "causal_middleware", "causal_middleware.integrations": "integrations"},
)
