"""The Gemini sweep's oracle (``test_gemini_sdk_sweep.py``): whether what google-genai's ``generate_content_stream``
gave through the transport agrees with the library's own reading of the same bytes (decisions 0032, 0033, 0071).

- A finish the SDK reports itself passes as sent and is returned, not raised: ``STOP`` for ``stop``, ``tool-calls``
  and the outcomes an empty or files-only answer is (``EMPTY_RESPONSE``, ``UNSUPPORTED_OUTPUT``); ``MAX_TOKENS``;
  a filter's reason (``SAFETY``, ``PROHIBITED_CONTENT``, ...) or a blocked prompt for ``CONTENT_FILTER``;
  ``MALFORMED_FUNCTION_CALL`` for ``MALFORMED_TOOL_CALL``; any other reason, named in the library's message, for
  ``UNKNOWN``. Text, thoughts and each call's name and arguments are the library's; a call's id is the wire's, or
  none where the library made one (``gemini-made-<n>`` never reaches Google's bytes).
- A failure the repairer finds (a cut, a nameless call, an upstream's in-band error) is raised as the SDK's
  ``APIError``: before the first byte an HTTP error naming our code whose status google-genai retries exactly when
  ``x-should-retry`` says so (the failure's own status where that holds); after it, the in-band error event, naming
  our code or the provider's message.
"""

from __future__ import annotations

from typing import Any

__all__ = ["GENAI_RETRIED", "gemini_disagreement"]

GENAI_RETRIED = frozenset({408, 429, 500, 502, 503, 504})
"""The statuses google-genai's ``HttpRetryOptions`` retry by default (``_api_client._RETRY_HTTP_STATUS_CODES``)."""
_FILTERED = frozenset({"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
                       "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "LANGUAGE"})
_NAMED = frozenset({"STOP", "MAX_TOKENS", "MALFORMED_FUNCTION_CALL", *_FILTERED})
_SDK_FINISH = {"stop": "STOP", "tool-calls": "STOP", "max-tokens": "MAX_TOKENS", "EMPTY_RESPONSE": "STOP",
               "UNSUPPORTED_OUTPUT": "STOP", "MALFORMED_TOOL_CALL": "MALFORMED_FUNCTION_CALL"}


def gemini_disagreement(lib: dict[str, Any], got: dict[str, Any], forwarded: bool | None) -> str | None:
    """Why the SDK's reading ``got`` disagrees with the library's ``lib``, or None when it agrees; ``forwarded`` is
    whether the repairer released a byte before its failure (None: it found none)."""
    if forwarded is not None:
        return _failure_disagreement(lib["finish"][1], lib["failure"], got, forwarded)
    if "error" in got:
        return f"the library reads {lib['finish']}, the SDK raised {got['error']}: {got['message'][:200]}"
    for field in ("text", "reasoning"):
        if got[field] != lib[field]:
            return f"{field}: SDK {got[field]!r} != library {lib[field]!r}"
    if len(got["calls"]) != len(lib["calls"]) or not all(
            _same_call(g, w) for g, w in zip(got["calls"], lib["calls"], strict=False)):
        return f"calls: SDK {got['calls']!r} != library {lib['calls']!r}"
    return _finish_disagreement(lib, got)


def _same_call(got: tuple[Any, ...], lib: tuple[Any, ...]) -> bool:
    """The same name and arguments (none on the wire is ``{}``), and the wire's id, or none where the library made
    one."""
    (wire, name, args), (made, lib_name, lib_args) = got, lib
    same_id = wire == made if wire is not None else str(made).startswith("gemini-made-")
    return same_id and name == lib_name and (args if args is not None else {}) == lib_args


def _finish_disagreement(lib: dict[str, Any], got: dict[str, Any]) -> str | None:
    kind, code = lib["finish"]
    finish, blocked = got["finish"], got["blocked"]
    if code == "CONTENT_FILTER":
        agrees = blocked is not None or finish in _FILTERED
    elif code == "UNKNOWN":
        agrees = blocked is None and finish not in _NAMED and str(finish) in lib["failure"]["message"]
    else:
        agrees = blocked is None and finish == _SDK_FINISH.get(code or kind)
    return None if agrees else f"finish: SDK {finish!r} (blocked: {blocked!r}), library {lib['finish']}"


def _failure_disagreement(code: str, failure: dict[str, Any], got: dict[str, Any], forwarded: bool) -> str | None:
    if "error" not in got:
        return f"the library fails with {code}, the SDK returned {got['finish']!r}: {got['text'][:100]!r}"
    if not got["api_error"]:
        return f"the library fails with {code}, the SDK raised {got['error']}, not its APIError: {got['message'][:200]}"
    if (got["http"] is None) != forwarded:
        path = "in-band" if got["http"] is None else "HTTP"
        return f"{path} error, but bytes were {'' if forwarded else 'not '}forwarded before the failure"
    if got["http"] is None:
        said = failure["message"].split(": ", 1)[-1][:60]
        return None if code in got["message"] or said in got["message"] else \
            f"in-band error names neither {code} nor {said!r}: {got['message'][:200]}"
    status, own = got["http"], failure["status"]
    if f"{code}: " not in got["message"]:
        return f"HTTP {status} does not name {code}: {got['message'][:200]}"
    if got["code"] != status:
        return f"the SDK's code {got['code']} is not the HTTP status {status}"
    if (status in GENAI_RETRIED) != failure["retry"]:
        return f"HTTP {status} for {code}: google-genai would {'not ' if failure['retry'] else ''}retry it"
    if own is not None and own >= 400 and (own in GENAI_RETRIED) == failure["retry"] and status != own:
        return f"HTTP {status} for {code}, not its own {own}"
    if got["x-should-retry"] != ("true" if failure["retry"] else "false"):
        return f"x-should-retry {got['x-should-retry']!r} for {code} (retryable: {failure['retry']})"
    return None
