"""The shipped simulation domains, in the order they were written: ``finance`` (the default, the
pipeline was developed on it), ``healthcare_admin`` (the second domain), ``it_helpdesk`` and
``ecommerce`` (held out; see docs/context.md for what was measured before and after any change)."""

from __future__ import annotations

import importlib

from benchmarks.context.simulation.domain import Domain

DEFAULT_DOMAIN = "finance"
_MODULES = {
    "finance": "finance",
    "healthcare_admin": "healthcare_admin",
    "it_helpdesk": "it_helpdesk",
    "ecommerce": "ecommerce",
}


def domain_names() -> list[str]:
    """Names of the shipped domains: the default, the second domain, then the held-out ones."""
    return list(_MODULES)


def get_domain(name: str) -> Domain:
    if name not in _MODULES:
        raise KeyError(f"unknown domain {name!r}; shipped domains: {', '.join(domain_names())}")
    module = importlib.import_module(f"benchmarks.context.simulation.domains.{_MODULES[name]}")
    return module.DOMAIN
