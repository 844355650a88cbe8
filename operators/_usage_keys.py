"""A chat chunk's usage in keys other than OpenAI's: read where the keys say unambiguously what they count, else
absent and named, never 0 (docs/decisions/0046-usage-in-other-keys.md).

Gateways relaying Anthropic (or Responses) counts into chat-completions chunks write ``input_tokens`` /
``output_tokens`` where OpenAI writes ``prompt_tokens`` / ``completion_tokens``. ``parse_sse`` calls ``other_usage``
only for a usage object in which no OpenAI key but ``total_tokens`` holds a value (``reads_nothing``):

- ``input_tokens`` / ``output_tokens`` with Anthropic's cache keys (``cache_read_input_tokens``,
  ``cache_creation_input_tokens``): Anthropic's meaning, ``input_tokens`` excluding the cache (as the Messages
  parser reads them); with Responses' ``input_tokens_details`` / ``output_tokens_details.reasoning_tokens``: the
  Responses meaning, ``input_tokens`` including the cached ones; with neither: both meanings agree.
- Both families of cache keys at once: ``input_tokens`` could mean either, so nothing is read.
- No key the library reads (``{"tokens": 5}``): nothing is read.

What is not read is absent (no ``usage`` chunk, never 0/0) and named in an ``unknown-usage`` anomaly. An object
that holds no value at all (``{}``, every key ``null``) is no usage, silently. Likewise, in every format, a usage whose
input and output counts are both invalid (``invalid-usage``) reports no usage rather than 0/0 (``counts_anything``,
read by ``coalesce_identity``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from ._messages_events import wire_usage as messages_usage
from ._responses_events import ResponsesUsage
from ._responses_events import wire_usage as responses_usage
from ._usage import checked_usage
from ._wire import WireUsage

__all__ = ["counts_anything", "other_usage", "reads_nothing"]


def reads_nothing(usage: WireUsage) -> bool:
    """True when no OpenAI key but ``total_tokens`` (which both families use) holds a value: the only usage
    ``other_usage`` is asked about."""
    return (
        usage.prompt_tokens is None
        and usage.completion_tokens is None
        and usage.prompt_tokens_details is None
        and usage.completion_tokens_details is None
        and usage.prompt_cache_hit_tokens is None
    )

_ANTHROPIC_CACHE = frozenset({"cache_read_input_tokens", "cache_creation_input_tokens"})


def _responses_shaped(counted: dict[str, Any]) -> bool:
    details = counted.get("output_tokens_details")
    return "input_tokens_details" in counted or (isinstance(details, dict) and "reasoning_tokens" in details)


def other_usage(raw: object) -> tuple[WireUsage | None, str | None]:
    """The chat-shaped usage the keys of ``raw`` (a chunk's ``usage`` value) spell, and the detail of an
    ``unknown-usage`` anomaly when they spell none (None when there is nothing to report)."""
    if not isinstance(raw, dict):
        return None, None
    counted = {key: value for key, value in raw.items() if value is not None}
    if not counted:
        return None, None
    keys = ", ".join(sorted(str(key)[:40] for key in counted)[:12])
    if "input_tokens" not in counted and "output_tokens" not in counted:
        return None, f"usage keys {keys} hold no count this library reads; no counts reported"
    responses = _responses_shaped(counted)
    if responses and _ANTHROPIC_CACHE & counted.keys():
        return None, (
            f"usage keys {keys} mix Anthropic's cache counts with Responses' token details, so input_tokens could "
            "mean either; no counts reported"
        )
    if responses:
        try:
            usage: WireUsage | None = responses_usage(msgspec.convert(counted, ResponsesUsage))
        except msgspec.ValidationError:
            usage = None
    else:
        usage = messages_usage(counted)
    if usage is None:
        return None, f"usage keys {keys} hold no number this library reads; no counts reported"
    return usage, None


def counts_anything(usage: WireUsage) -> bool:
    """Whether the prompt or the completion count of ``usage`` is a valid count (``checked_usage`` drops the others):
    when neither is, the usage reports nothing, and ``coalesce_identity`` emits none rather than 0/0."""
    pair = WireUsage(prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens)
    given = (usage.prompt_tokens is not None) + (usage.completion_tokens is not None)
    return given > len(checked_usage(pair)[1])
