"""Starting spans whose attributes the instrumentation built itself, without the SDK checking
each value again.

The SDK cleans every attribute value it is given (type checks, sequences copied to tuples,
strings cut to the span limit) under a lock. The handler's values are plain ``str`` / ``bool`` /
``int`` / ``float`` it made itself, and a run has some 250 of them, so on the agent's thread that
cleaning is a large part of the tracing cost. :func:`put_attributes` stores such values straight
into the span's attribute map, with exactly the SDK's outcome (insertion order, a re-set key moves
to the end); anything else - another value type, an attribute count or a length limit the span
would enforce, an ended span, a span that is not the SDK's - goes through ``set_attributes`` as
before.

:class:`SpanStarter` starts a span without attributes and then puts them, when nothing can see
the difference: the provider is the instrumentation's own (its processors read no attributes in
``on_start`` but the run span's, which is always started the SDK's way) and its sampler is one of
the SDK's built-in samplers, which never read attributes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.context import Context
from opentelemetry.sdk.trace import TracerProvider, sampling
from opentelemetry.trace import Link, Span, Tracer

_SCALARS = frozenset({str, bool, int, float})
_KEYS = frozenset({str})
_PARENT_BASED_DELEGATES = (
    "_root",
    "_remote_parent_sampled",
    "_remote_parent_not_sampled",
    "_local_parent_sampled",
    "_local_parent_not_sampled",
)


def put_attributes(span: Span, attributes: Mapping[str, Any]) -> None:
    """``span.set_attributes(attributes)``, the SDK's per-value cleaning skipped for plain scalars."""
    bounded = getattr(span, "_attributes", None)
    lock = getattr(span, "_lock", None)
    if (
        type(bounded) is not BoundedAttributes
        or lock is None
        or bounded.max_value_len is not None
        or (bounded.maxlen is not None and len(bounded) + len(attributes) > bounded.maxlen)
        or not _SCALARS.issuperset(map(type, attributes.values()))
        or not _KEYS.issuperset(map(type, attributes))
        or "" in attributes
    ):
        span.set_attributes(attributes)
        return
    with lock:
        if getattr(span, "_end_time", 0) is None and not bounded._immutable:
            target = bounded._dict
            with bounded._lock:
                if not target.keys().isdisjoint(attributes):
                    for key in attributes:  # the SDK moves a re-set key to the end
                        target.pop(key, None)
                target.update(attributes)
            return
    span.set_attributes(attributes)  # ended (the SDK warns and ignores) or frozen: its own way


def sampler_ignores_attributes(sampler: object) -> bool:
    """True for the SDK's built-in samplers (and ``ParentBased`` over them): none reads the
    attributes a span is started with."""
    if type(sampler) in (sampling.StaticSampler, sampling.TraceIdRatioBased):
        return True
    if type(sampler) is sampling.ParentBased:
        return all(
            sampler_ignores_attributes(getattr(sampler, name, None)) for name in _PARENT_BASED_DELEGATES
        )
    return False


class SpanStarter:
    """``tracer.start_span`` for the handler's own spans; attributes put after the start when
    ``trusted`` (see the module docstring), else given to the SDK as usual."""

    __slots__ = ("tracer", "trusted")

    def __init__(self, tracer: Tracer, *, trusted: bool = False) -> None:
        self.tracer = tracer
        self.trusted = trusted

    @classmethod
    def for_provider(cls, tracer: Tracer, provider: object, *, own_provider: bool) -> SpanStarter:
        trusted = (
            own_provider
            and isinstance(provider, TracerProvider)
            and sampler_ignores_attributes(provider.sampler)
        )
        return cls(tracer, trusted=trusted)

    def start(
        self,
        name: str,
        context: Context,
        attributes: Mapping[str, Any],
        *,
        links: Sequence[Link] | None = None,
        start_time: int | None = None,
    ) -> Span:
        if not self.trusted:
            return self.tracer.start_span(
                name, context=context, attributes=attributes, links=links, start_time=start_time
            )
        span = self.tracer.start_span(name, context=context, links=links, start_time=start_time)
        put_attributes(span, attributes)
        return span
