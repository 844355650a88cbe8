"""``Limits``: how much one response may carry before it ends with ``LIMIT_EXCEEDED``.

One frozen value, passed to the operators that count (``parse_sse``, ``accumulate_arguments``, ``close_on_done``),
to ``protocol_rules``/``translate``/``stream`` and to ``ChatClient`` (through ``ClientConfig.limits``). Crossing a
limit ends the response with an error finish ``LIMIT_EXCEEDED`` (not retryable: the same request would send the same
flood again), after the usage seen so far; nothing past the limit is buffered.
"""

from __future__ import annotations

import attrs

from ._chunk_values import Failure
from ._codes import Code

__all__ = ["DEFAULT_LIMITS", "Limits", "limit_exceeded"]

KiB = 1024
MiB = 1024 * KiB


def _positive_int(instance: object, attribute: attrs.Attribute[int], value: object) -> None:
    if type(value) is not int or value < 1:
        raise ValueError(f"Limits.{attribute.name} must be a positive int, got {value!r}")


@attrs.frozen
class Limits:
    """The bounds of one response (one attempt). Every field is a positive ``int``.

    - ``max_event_bytes``: one SSE line, and one event's joined ``data`` (1 MiB);
    - ``max_arguments_bytes``: one tool call's arguments, UTF-8 bytes (8 MiB);
    - ``max_text_bytes``: all text and reasoning of one response together, UTF-8 bytes (16 MiB);
    - ``max_tool_calls``: tool calls in one response (128);
    - ``max_error_body_bytes``: the bytes of an error body read to classify it, after decompression (64 KiB);
    - ``max_ignored_lines``: SSE lines that carry nothing (comment lines, blank lines that end no event, ``retry:``
      and unknown fields; not ``data:``, ``event:``, ``id:``) in one response (100,000; docs/decisions/
      0039-ignored-lines.md).
    """

    max_event_bytes: int = attrs.field(default=1 * MiB, validator=_positive_int)
    max_arguments_bytes: int = attrs.field(default=8 * MiB, validator=_positive_int)
    max_text_bytes: int = attrs.field(default=16 * MiB, validator=_positive_int)
    max_tool_calls: int = attrs.field(default=128, validator=_positive_int)
    max_error_body_bytes: int = attrs.field(default=64 * KiB, validator=_positive_int)
    max_ignored_lines: int = attrs.field(default=100_000, validator=_positive_int)


DEFAULT_LIMITS = Limits()


def limit_exceeded(name: str, value: int, limit: int, what: str) -> Failure:
    """The failure for a crossed limit: names the ``Limits`` field, its value, and what crossed it.

    ``limit_exceeded("max_event_bytes", 1048577, 1048576, "one SSE line")`` gives the message
    ``"one SSE line reached 1048577 bytes, over max_event_bytes=1048576"``; ``value`` is what was counted when the
    limit was crossed (not the full size of what was sent: the rest is never read).
    """
    unit = " bytes" if name.endswith("_bytes") else ""
    return Failure(Code.LIMIT_EXCEEDED, f"{what} reached {value}{unit}, over {name}={limit}")
