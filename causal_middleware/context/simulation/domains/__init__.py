"""The shipped simulation domains. ``finance`` is the default; the others check that the pipeline
(which holds no domain rules) carries over to domains it was not developed on."""

from __future__ import annotations

import importlib

from causal_middleware.context.simulation.domain import Domain

DEFAULT_DOMAIN = "finance"
_MODULES = {"finance": "finance", "healthcare_admin": "healthcare_admin", "it_helpdesk": "it_helpdesk"}


def domain_names() -> list[str]:
    """Names of the shipped domains, default first."""
    return [DEFAULT_DOMAIN] + sorted(n for n in _MODULES if n != DEFAULT_DOMAIN)


def get_domain(name: str) -> Domain:
    if name not in _MODULES:
        raise KeyError(f"unknown domain {name!r}; shipped domains: {', '.join(domain_names())}")
    module = importlib.import_module(f"causal_middleware.context.simulation.domains.{_MODULES[name]}")
    return module.DOMAIN
