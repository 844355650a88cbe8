"""The Gemini event builder: ``GeminiEvents`` writes the events of one ``streamGenerateContent?alt=sse`` stream, as
Google sends them, and ``google_error`` / ``gemini_error_shape`` its error shape (google.rpc ``Status``).

Every event is ``data: <GenerateContentResponse JSON>`` ended by CRLF CRLF, with no event name and no ``[DONE]``.
Each payload carries ``candidates`` (candidate ``index`` 0, ``content.role`` ``"model"``, ``content.parts``), the
``usageMetadata`` *so far* (cumulative, as Google repeats it on every event: ``promptTokenCount`` includes
``cachedContentTokenCount`` = ``CACHED_TOKENS``; ``candidatesTokenCount`` counts the answer's events so far, without
thoughts; ``thoughtsTokenCount`` the thought events; ``totalTokenCount`` their sum), ``modelVersion`` (the request's
model) and ``responseId`` (the same on every event). The profiles (``_profiles.py``) are written with it.
"""

from __future__ import annotations

from typing import Any

from ..._json import dumps
from .._errors import RequestError
from .._script import JSON_CONTENT_TYPE, Script, ScriptOptions, Write
from .._sse import Event, Json, raw_event

__all__ = ["CACHED_TOKENS", "NEWLINE", "RETRY_INFO", "GeminiEvents", "gemini_error_shape", "google_error", "rate_limit"]

CACHED_TOKENS = 16
"""``cachedContentTokenCount`` of every Gemini stream (a part of ``promptTokenCount``, as Google counts it)."""
NEWLINE = "\r\n"
"""Google's line end: each event is ``data: {...}`` then CRLF CRLF."""

RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
"""The ``@type`` of the google.rpc detail whose ``retryDelay`` (``"<retry_after>s"``) says when to retry a 429."""

_STATUSES = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


def google_error(code: int, message: str, status: str | None = None, details: list[Json] | None = None) -> Json:
    """``{"error": {"code", "message", "status", "details"?}}``: Google's error shape (google.rpc ``Status``), the
    HTTP error body and the in-band error event alike."""
    error: Json = {"code": code, "message": message, "status": status or _STATUSES.get(code, "UNKNOWN")}
    if details:
        error["details"] = details
    return {"error": error}


def gemini_error_shape(error: RequestError) -> Json:
    """A request the emulator refuses, in Google's error shape (``INVALID_ARGUMENT`` for a 400, ``NOT_FOUND`` for a
    404)."""
    return google_error(error.status, error.message)


def rate_limit(options: ScriptOptions) -> Script:
    """HTTP 429 ``RESOURCE_EXHAUSTED`` in the google.rpc shape, with a ``RetryInfo`` detail (``retryDelay``)."""
    details: list[Json] = [
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                            "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                            "quotaValue": "10"}],
        },
        {"@type": "type.googleapis.com/google.rpc.Help",
         "links": [{"description": "Learn more about Gemini API quotas",
                    "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]},
        {"@type": RETRY_INFO, "retryDelay": f"{options.retry_after}s"},
    ]
    message = "You exceeded your current quota, please check your plan and billing details."
    body = dumps(google_error(429, message, "RESOURCE_EXHAUSTED", details))
    return Script(429, JSON_CONTENT_TYPE + "; charset=UTF-8", (Write(body.encode()),))


class GeminiEvents:
    """Builds the events of one Gemini stream: one response id and model version, and the usage counted so far."""

    def __init__(self, options: ScriptOptions) -> None:
        self.options = options
        self.response_id = "emu" + options.completion_id[-24:]
        self.output = 0
        """``candidatesTokenCount`` so far (one per answer event)."""
        self.thoughts = 0
        """``thoughtsTokenCount`` so far (one per thought event)."""

    def usage(self) -> Json:
        """The ``usageMetadata`` so far."""
        prompt = self.options.prompt_tokens + CACHED_TOKENS
        usage: Json = {"promptTokenCount": prompt}
        if self.output:
            usage["candidatesTokenCount"] = self.output
        usage["totalTokenCount"] = prompt + self.output + self.thoughts
        usage["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": prompt}]
        usage["cachedContentTokenCount"] = CACHED_TOKENS
        if self.thoughts:
            usage["thoughtsTokenCount"] = self.thoughts
        return usage

    def payload(self, candidates: list[Json] | None, **extra: Any) -> Json:
        """One ``GenerateContentResponse``: ``candidates`` (left out when ``None``), the usage so far, the model
        version and the response id; ``extra`` keys (``promptFeedback``) before the usage."""
        body: Json = {} if candidates is None else {"candidates": candidates}
        body.update(extra)
        body["usageMetadata"] = self.usage()
        body["modelVersion"] = self.options.model
        body["responseId"] = self.response_id
        return body

    @staticmethod
    def event(payload: Json) -> Event:
        return raw_event(f"data: {dumps(payload)}")

    @staticmethod
    def candidate(
        parts: list[Json] | None,
        finish: str | None = None,
        *,
        index: int = 0,
        finish_message: str | None = None,
        **extra: Any,
    ) -> Json:
        """A candidate whose content holds ``parts`` (``None``: a content with no ``parts`` key, as Google sends on
        some finishing events), with ``finishReason`` / ``finishMessage`` when given."""
        content: Json = {"role": "model"} if parts is None else {"parts": parts, "role": "model"}
        candidate: Json = {"content": content}
        if finish is not None:
            candidate["finishReason"] = finish
        if finish_message is not None:
            candidate["finishMessage"] = finish_message
        candidate.update(extra)
        candidate["index"] = index
        return candidate

    def parts(self, parts: list[Json], finish: str | None = None, *, thoughts: int = 0, **extra: Any) -> Event:
        """One event of candidate 0 with ``parts``; counts one answer token (or ``thoughts`` thought tokens)."""
        if thoughts:
            self.thoughts += thoughts
        elif parts:
            self.output += 1
        return self.event(self.payload([self.candidate(parts, finish, **extra)]))

    def text(self, text: str, finish: str | None = None, **extra: Any) -> Event:
        return self.parts([{"text": text}], finish, **extra)

    def thought(self, text: str, signature: str | None = None) -> Event:
        part: Json = {"text": text, "thought": True}
        if signature is not None:
            part["thoughtSignature"] = signature
        return self.parts([part], thoughts=1)

    @staticmethod
    def call(
        name: str | None = "get_weather",
        args: Json | None = None,
        *,
        call_id: str | None = None,
        signature: str | None = None,
        **extra: Any,
    ) -> Json:
        """A ``functionCall`` part; ``name=None`` leaves the name out, ``args=None`` the arguments; a wire ``id`` only
        when ``call_id`` is given; ``thoughtSignature`` on the part when ``signature`` is."""
        call: Json = {} if name is None else {"name": name}
        if args is not None:
            call["args"] = args
        if call_id is not None:
            call["id"] = call_id
        call.update(extra)
        part: Json = {"functionCall": call}
        if signature is not None:
            part["thoughtSignature"] = signature
        return part

    def finish(self, reason: str, parts: list[Json] | None = None, **extra: Any) -> Event:
        """A finishing event (``finishReason``) whose content has ``parts`` (``None``: none at all)."""
        return self.event(self.payload([self.candidate(parts, reason, **extra)]))

    def error(self, code: int, status: str, message: str) -> Event:
        """An in-band error event, ``data: {"error": {...}}`` (no usage, no candidates)."""
        return self.event(google_error(code, message, status))
