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

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.context import Context
from opentelemetry.sdk import trace as _sdk_trace
from opentelemetry.sdk.trace import TracerProvider, sampling
from opentelemetry.trace import (
    INVALID_SPAN,
    Link,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    Tracer,
)
from opentelemetry.trace.propagation import _SPAN_KEY

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
        or (bounded.maxlen is not None and len(bounded._dict) + len(attributes) > bounded.maxlen)
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


_OK = Status(StatusCode.OK)


def set_ok(span: Span) -> None:
    """``span.set_status(Status(StatusCode.OK))``: for an SDK span, the SDK's steps inline (one
    call frame and its decorator's less); any other span its own way."""
    if type(span) is _sdk_trace._Span:
        lock = span._lock
        with lock:
            if span._end_time is None:
                status = span._status
                if not (status and status.status_code is StatusCode.OK):
                    span._status = _OK
                return
    span.set_status(_OK)  # ended (the SDK warns and ignores) or not the SDK's


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


def _code_digest(fn: Any) -> str:
    code = fn.__code__
    return hashlib.sha1(
        repr((code.co_code, code.co_names, code.co_varnames, code.co_consts)).encode()
    ).hexdigest()


# ``Tracer.start_span`` of the SDK versions whose steps :meth:`SpanStarter._start_child` repeats
# (1.45.x); any other SDK (a changed ``start_span``) gets ``tracer.start_span`` itself.
_KNOWN_START_SPAN = frozenset({"e40cc3eee7206e5da138dab51946de2e5db99b83"})  # opentelemetry-sdk 1.45.2
# ``_Span.__init__`` whose positional order :meth:`SpanStarter._start_child` passes its arguments in
_KNOWN_SPAN_INIT = frozenset({"1670faf75b7fd0fa502446491e8996c15fcef85b"})  # opentelemetry-sdk 1.45.2
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)


def _fast_start_ok(tracer: Any) -> bool:
    """The SDK tracer whose ``start_span`` (for a child of a valid local span, no links, no
    attributes) :meth:`SpanStarter._start_child` repeats step for step: the known SDK code, the
    always-on sampler (its decision and trace state never depend on the call)."""
    try:
        return (
            type(tracer) is _sdk_trace.Tracer
            and _code_digest(_sdk_trace.Tracer.start_span) in _KNOWN_START_SPAN
            and _code_digest(_sdk_trace._Span.__init__) in _KNOWN_SPAN_INIT
            and type(tracer.sampler) is sampling.StaticSampler
            and tracer.sampler._decision is sampling.Decision.RECORD_AND_SAMPLE
        )
    except Exception:  # an SDK without these names: the ordinary path
        return False


class SpanStarter:
    """``tracer.start_span`` for the handler's own spans; attributes put after the start when
    ``trusted`` (see the module docstring), else given to the SDK as usual. When trusted and the
    tracer is the SDK's with the always-on sampler, a child span is made with the very steps of
    ``Tracer.start_span`` less the generic ones that cannot change the outcome there (the
    sampler's call, the context lookups done twice)."""

    __slots__ = ("tracer", "trusted", "_fast", "_flags")

    def __init__(self, tracer: Tracer, *, trusted: bool = False) -> None:
        self.tracer = tracer
        self.trusted = trusted
        self._fast = trusted and _fast_start_ok(tracer)
        self._flags: dict[int, TraceFlags] = {}

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
        span = None
        if self._fast and not links:
            span = self._start_child(name, context, start_time)
        if span is None:
            span = self.tracer.start_span(name, context=context, links=links, start_time=start_time)
        put_attributes(span, attributes)
        return span

    def _start_child(self, name: str, context: Context, start_time: int | None) -> Span | None:
        """``tracer.start_span(name, context=context, start_time=start_time)`` for a parent span
        that is valid (None otherwise: the caller takes the SDK's path), as the SDK does it with
        the always-on sampler: same ids, flags, trace state, span class and processors' calls."""
        tracer: Any = self.tracer
        if not tracer._tracer_config.is_enabled:
            return None
        parent_span = context.get(_SPAN_KEY) if context is not None else None
        if parent_span is None or not isinstance(parent_span, Span) or parent_span is INVALID_SPAN:
            return None
        parent = parent_span.get_span_context()
        if type(parent) is not SpanContext or not parent.is_valid:
            return None
        parent_flags = parent.trace_flags
        flags = self._flags.get(parent_flags)
        if flags is None:
            flags = _SAMPLED
            if parent_flags.random_trace_id:
                flags = TraceFlags(flags | TraceFlags.RANDOM_TRACE_ID)
            self._flags[int(parent_flags)] = flags
        span_context = SpanContext(
            parent.trace_id,
            tracer.id_generator.generate_span_id(),
            is_remote=False,
            trace_flags=flags,
            trace_state=parent.trace_state,
        )
        record_end_metrics = tracer._tracer_metrics.start_span(parent, sampling.Decision.RECORD_AND_SAMPLE)
        # _Span(name=, context=, parent=, sampler=, resource=, attributes=, span_processor=, kind=,
        # links=, instrumentation_info=, record_exception=True, set_status_on_exception=True,
        # limits=, instrumentation_scope=, record_end_metrics=) as the SDK calls it, positionally
        span = _sdk_trace._Span(
            name,
            span_context,
            parent,
            tracer.sampler,
            None,  # trace_config
            tracer.resource,
            _NO_ATTRIBUTES,
            None,  # events
            (),  # links
            SpanKind.INTERNAL,
            tracer.span_processor,
            tracer.instrumentation_info,
            True,  # record_exception
            True,  # set_status_on_exception
            tracer._span_limits,
            tracer._instrumentation_scope,
            record_end_metrics=record_end_metrics,
        )
        span.start(start_time=start_time, parent_context=context)
        return span


_NO_ATTRIBUTES: Any = sampling.SamplingResult(
    sampling.Decision.RECORD_AND_SAMPLE
).attributes  # what the sampler gives
