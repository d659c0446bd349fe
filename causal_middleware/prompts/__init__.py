"""Prompts built from untrusted trace content, and replies read back from them.

* :mod:`~causal_middleware.prompts.fence` - untrusted text (documents, ids, sub-queries, tool
  outputs, user messages) goes into a prompt inside a fence whose tag carries a per-prompt random
  nonce; fence-like sequences inside the content are neutralised, control characters and line
  breaks in one-line fields (ids, queries) collapsed; the system prompt says fenced text is data.
  :func:`redact_prompt` (the exporter's redactor) runs on every prompt before it leaves the process.
* :mod:`~causal_middleware.prompts.reply` - the one rule for reading a verdict back: the LAST
  top-level JSON value of the reply that has the expected shape. A reply that quotes an injected
  verdict and then gives its own is read as its own.
* :mod:`~causal_middleware.prompts.llm` - the one chat-model call of attribution, repair and
  context: redaction, call budget, reply text blocks, token usage (:func:`~.llm.reply_usage`).
"""

from causal_middleware.prompts.fence import (
    DATA_RULE,
    Fence,
    clean_line,
    escape_fences,
    outgoing_messages,
    redact_prompt,
)
from causal_middleware.prompts.reply import has_keys, last_json, top_level_values

__all__ = [
    "DATA_RULE",
    "Fence",
    "clean_line",
    "escape_fences",
    "has_keys",
    "last_json",
    "outgoing_messages",
    "redact_prompt",
    "top_level_values",
]
