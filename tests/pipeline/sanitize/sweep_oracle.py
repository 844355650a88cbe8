"""The sweep's oracle (``test_faithful_sweep.py``): whether what the unmodified SDK read through the transport
agrees with the library's own reading of the same bytes, as the decision notes promise (0032, 0033, 0036)."""

from __future__ import annotations

import re
from typing import Any

from sweep_corpus import Format, Stream, Unparsed

__all__ = ["OUTCOMES", "disagreement"]

OUTCOMES = frozenset({"REFUSAL", "EMPTY_RESPONSE", "PAUSE_TURN", "UNSUPPORTED_OUTPUT"})
"""Library finishes the SDK represents as a result, not an error (decision 0032: not errors by default): the SDK
returns the answer as sent (a refusal, an empty answer, a paused turn, an item the library does not assemble)."""
_SDK_FINISH: dict[Format, dict[str, tuple[Any, ...]]] = {
    "chat": {"stop": ("stop",), "tool-calls": ("tool_calls",)},
    "messages": {"stop": ("end_turn", "stop_sequence"), "tool-calls": ("tool_use",), "max-tokens": ("max_tokens",)},
    "responses": {"stop": (("completed", None),), "tool-calls": (("completed", None),)},
}
_STATUS = {"TIMEOUT": 504, "RATE_LIMIT": 429}
"""The HTTP status of a failure found before the first byte that has none of its own; any other is 502 (0033)."""
_SDK_RAISES = {("chat", "max-tokens", None): "LengthFinishReasonError",
               ("chat", "error", "CONTENT_FILTER"): "ContentFilterFinishReasonError"}
"""Finishes the openai SDK's stream helper raises as its own typed error."""


def _no_finish_on_the_wire(stream: Stream) -> bool:
    """A chat stream that never names a finish reason (the library's ``stop`` comes from ``[DONE]``)."""
    return re.search(rb'"finish_reason":\s*"', stream.path.read_bytes()) is None


def disagreement(stream: Stream, lib: dict[str, Any], got: dict[str, Any], forwarded: bool | None) -> str | None:
    """Why the SDK's reading ``got`` disagrees with the library's ``lib``, or None when it agrees: the same text,
    reasoning (where the SDK exposes it), calls and finish (mapped the SDK's way); a failure raised as the decision
    notes promise (before the first byte an HTTP error naming our code with ``x-should-retry`` as classified, after
    it the in-band error the SDK raises)."""
    kind, code = lib["finish"]
    raises = _SDK_RAISES.get((stream.format, kind, code))
    if raises is not None:
        return None if got.get("error") == raises else f"expected the SDK's {raises}, got {got}"
    if kind == "error" and code not in OUTCOMES:
        return _failure_disagreement(code, lib["failure"], got, bool(forwarded))
    if "error" in got:
        return f"the library reads {lib['finish']}, the SDK raised {got['error']}: {got['message'][:200]}"
    if got["text"] != lib["text"]:
        return f"text: SDK {got['text']!r} != library {lib['text']!r}"
    if not _same_calls(got["calls"], lib["calls"]):
        return f"calls: SDK {got['calls']!r} != library {lib['calls']!r}"
    if got["reasoning"] is not None and got["reasoning"] != lib["reasoning"]:
        return f"reasoning: SDK {got['reasoning']!r} != library {lib['reasoning']!r}"
    bad = [c for c in got["calls"] if not c[0] or not c[1] or _doubled(c[1])]
    if bad:
        return f"calls without an id or name, or with a doubled name: {bad}"
    if kind == "error":
        return None  # an outcome the SDK represents: its content compared above
    wanted = _SDK_FINISH[stream.format].get(kind, ())
    if got["finish"] in wanted:
        return None
    if stream.format == "chat" and got["finish"] is None and _no_finish_on_the_wire(stream):
        return None
    return f"finish: SDK {got['finish']!r}, library {lib['finish']}"


def _same_calls(got: list[tuple[Any, ...]], want: list[tuple[Any, ...]]) -> bool:
    """Each call's id and name equal, and its arguments (unless the library's are cut JSON the SDK parses partly)."""
    return len(got) == len(want) and all(
        g[:2] == w[:2] and (g[2] == w[2] or isinstance(w[2], Unparsed)) for g, w in zip(got, want, strict=True)
    )


def _doubled(name: str) -> bool:
    half = len(name) // 2
    return len(name) % 2 == 0 and name[:half] * 2 == name


def _failure_disagreement(code: str, failure: dict[str, Any], got: dict[str, Any], forwarded: bool) -> str | None:
    if "error" not in got:
        return f"the library fails with {code}, the SDK returned {got}"
    if not got["api_error"]:
        return f"the library fails with {code}, the SDK raised {got['error']}, not its APIError: {got['message'][:200]}"
    in_band = got["status"] is None or got["status"] == 200
    if in_band != forwarded:
        path = "in-band" if in_band else "HTTP"
        return f"{path} error, but bytes were {'' if forwarded else 'not '}forwarded before the failure"
    if not in_band:  # before the first byte: our HTTP error
        own = failure["status"]
        status = own if own is not None and own >= 400 else _STATUS.get(code, 502)
        if code not in got["message"]:
            return f"HTTP {got['status']} does not name {code}: {got['message'][:200]}"
        if got["status"] != status:
            return f"HTTP {got['status']} for {code}, decision 0033 says {status}"
        if got["x-should-retry"] != ("true" if failure["retry"] else "false"):
            return f"x-should-retry {got['x-should-retry']!r} for {code} (retryable: {failure['retry']})"
        return None
    said = failure["message"].split(": ", 1)[-1][:60]
    return None if code in got["message"] or said in got["message"] else \
        f"in-band error names neither {code} nor {said!r}: {got['message'][:200]}"
