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
    ``causal_middleware.models.offline.OfflineChatModel``. ``"anthropic"`` insists on Claude (a
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
    from causal_middleware.models.offline import OfflineChatModel  # lazily: only the offline path needs it

    return OfflineChatModel(**kwargs)
