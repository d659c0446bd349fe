"""Pick a chat model for the agent: Claude when an API key is configured, else the offline model."""

from __future__ import annotations

import os
from typing import Any, Literal

from langchain_core.language_models.chat_models import BaseChatModel

from .anthropic import API_KEY_ENV, AnthropicChatModel

Preference = Literal["anthropic", "offline"]


def select_chat_model(prefer: Preference | None = None, **kwargs: Any) -> BaseChatModel:
    """The chat model to run with.

    ``prefer=None``: :class:`AnthropicChatModel` when ``$ANTHROPIC_API_KEY`` is set, else
    the ``offline`` model an installed package registers (the benchmark package's scripted model). ``"anthropic"`` insists on Claude (a
    missing key is a ValueError now, not at the first call); ``"offline"`` always gives the offline
    model. ``kwargs`` go to the chosen model's constructor.
    """
    if prefer not in (None, "anthropic", "offline"):
        raise ValueError(f"prefer must be None, 'anthropic' or 'offline', got {prefer!r}")
    has_key = bool(os.environ.get(API_KEY_ENV)) or kwargs.get("api_key") is not None
    if prefer == "anthropic" or (prefer is None and has_key):
        if not has_key and kwargs.get("client") is None:
            raise ValueError(f"prefer='anthropic' needs ${API_KEY_ENV} (or api_key=)")
        return AnthropicChatModel(**kwargs)
    return _registered_model("offline", **kwargs)


MODELS_GROUP = "causal_middleware.models"


def _registered_model(name: str, **kwargs: Any) -> BaseChatModel:
    """A chat model another installed package registers under ``name`` in the
    ``causal_middleware.models`` entry-point group (the benchmark package registers ``offline``,
    its deterministic scripted model); ValueError naming what to install when none does."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=MODELS_GROUP):
        if ep.name == name:
            factory = ep.load()
            model = factory(**kwargs)
            if not isinstance(model, BaseChatModel):
                raise TypeError(f"model plugin {name!r} ({ep.value}) did not build a chat model")
            return model
    raise ValueError(
        f"no {name!r} model is installed: it ships with the benchmark package "
        "(benchmarks/ in a checkout; `make install`)"
    )


# --- model specs (``--model``) ----------------------------------------------------------------
LOCAL = "local"
GGUF_PREFIX = "gguf:"
_NAMED = ("offline", "anthropic", LOCAL)


def is_model_spec(spec: str) -> bool:
    """Whether ``spec`` names a model (``offline``, ``anthropic[:MODEL]``, ``local[:NAME]``,
    ``gguf:PATH``) rather than a ``module:attr`` object to load."""
    head, _, _ = spec.partition(":")
    return spec in _NAMED or head in ("anthropic", LOCAL, "gguf")


def resolve_chat_model(spec: str, **kwargs: Any) -> BaseChatModel:
    """The chat model ``spec`` names; ``kwargs`` go to its constructor.

    ``offline``: the offline model. ``anthropic`` / ``anthropic:MODEL``: Claude (needs
    ``$ANTHROPIC_API_KEY``). ``local``: the default local model (Qwen2.5-Coder-0.5B-Instruct) from
    the cache; ``local:NAME``: a catalogued one (``qwen2.5-coder-0.5b``, ``smollm2-135m``,
    ``qwen2.5-coder-1.5b``); ``gguf:PATH``: any GGUF file with a chat template. A missing runtime
    or file is a one-line error naming ``make local-model``; an unknown spec a ValueError listing
    the forms.
    """
    if not isinstance(spec, str) or not is_model_spec(spec):
        raise ValueError(
            f"unknown model {spec!r}: expected offline, anthropic[:MODEL], local, local:NAME or gguf:PATH"
        )
    head, _, rest = spec.partition(":")
    if spec == "offline":
        return select_chat_model("offline", **kwargs)
    if head == "anthropic":
        return select_chat_model("anthropic", **({"model": rest} if rest else {}), **kwargs)
    from .llamacpp import LlamaCppChatModel, import_llama_cpp  # lazily: only local models need them
    from .llamacpp_weights import DEFAULT_LOCAL_MODEL

    import_llama_cpp()  # the runtime first: its message is the one that tells what to install
    if head == "gguf":
        from pathlib import Path

        if not rest or not Path(rest).expanduser().is_file():
            raise FileNotFoundError(f"--model gguf:PATH: no GGUF file at {rest!r}")
        return LlamaCppChatModel(model_path=str(Path(rest).expanduser()), **kwargs)
    if head == LOCAL and spec != LOCAL and not rest:
        raise ValueError("--model local:NAME names no model")
    return LlamaCppChatModel.from_catalogue(rest or DEFAULT_LOCAL_MODEL, **kwargs)
