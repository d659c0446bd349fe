"""Maps this folder to the importable package ``benchmarks`` (metadata lives in pyproject.toml)."""

from setuptools import find_packages, setup

setup(
    packages=["benchmarks"] + [f"benchmarks.{p}" for p in find_packages(".")],
    package_dir={"benchmarks": "."},
)
