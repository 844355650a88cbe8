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

from ._usage import checked_usage
from ._wire import WireCompletionDetails, WirePromptDetails, WireUsage

__all__ = ["ResponsesUsage", "counts_anything", "messages_usage", "other_usage", "reads_nothing", "responses_usage"]

Number = int | float


class InputDetails(msgspec.Struct):
    cached_tokens: Number | None = None
    cache_write_tokens: Number | None = None


class OutputDetails(msgspec.Struct):
    reasoning_tokens: Number | None = None


class ResponsesUsage(msgspec.Struct):
    input_tokens: Number | None = None
    output_tokens: Number | None = None
    total_tokens: Number | None = None
    input_tokens_details: InputDetails | None = None
    output_tokens_details: OutputDetails | None = None


def _number(value: object) -> int | float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def messages_usage(merged: dict[str, Any]) -> WireUsage | None:
    """The merged Messages usage in OpenAI's shape (``None`` when no count is known). A count that is not a number
    counts as absent; a negative or absurd one is left to the normalisation, which drops it (``invalid-usage``)."""
    uncached = _number(merged.get("input_tokens"))
    reads = _number(merged.get("cache_read_input_tokens"))
    writes = _number(merged.get("cache_creation_input_tokens"))
    output = _number(merged.get("output_tokens"))
    details = merged.get("output_tokens_details")
    thinking = _number(details.get("thinking_tokens")) if isinstance(details, dict) else None
    if uncached is None and reads is None and writes is None and output is None:
        return None
    prompt = None
    if uncached is not None or reads is not None or writes is not None:
        prompt = (uncached or 0) + (reads or 0) + (writes or 0)
    return WireUsage(
        prompt_tokens=prompt,
        completion_tokens=output,
        prompt_tokens_details=(
            WirePromptDetails(cached_tokens=reads, cache_write_tokens=writes)
            if reads is not None or writes is not None
            else None
        ),
        completion_tokens_details=WireCompletionDetails(reasoning_tokens=thinking) if thinking is not None else None,
    )


def responses_usage(usage: ResponsesUsage) -> WireUsage:
    """The Responses usage in OpenAI's chat shape: ``input_tokens`` (cached included) is ``prompt_tokens``."""
    details = usage.input_tokens_details
    out_details = usage.output_tokens_details
    return WireUsage(
        prompt_tokens=usage.input_tokens,
        completion_tokens=usage.output_tokens,
        total_tokens=usage.total_tokens,
        prompt_tokens_details=(
            WirePromptDetails(cached_tokens=details.cached_tokens, cache_write_tokens=details.cache_write_tokens)
            if details is not None
            else None
        ),
        completion_tokens_details=(
            WireCompletionDetails(reasoning_tokens=out_details.reasoning_tokens) if out_details is not None else None
        ),
    )



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
