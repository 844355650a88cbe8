"""The values the chunks carry: ``Failure`` (why a response failed), ``FinishReason`` (how it ended), ``Usage`` (its
token accounting). The chunk classes that carry them are in ``_chunks.py``; the finished blocks in ``_blocks.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Literal, TypeAlias

import attrs

from ._blocks import non_empty_str
from ._numbers import whole_ms

__all__ = ["Failure", "FinishKind", "FinishReason", "Json", "Usage"]

FinishKind: TypeAlias = Literal["stop", "tool-calls", "max-tokens", "aborted", "error"]

Json: TypeAlias = dict[str, Any]


def _plain_code(value: object) -> object:
    """``RATE_LIMIT`` is stored as the plain string ``"RATE_LIMIT"``: equal to it, and printed the same."""
    return str(value) if isinstance(value, StrEnum) else value


@attrs.frozen
class Failure:
    """Why a response failed: a stable routing ``code`` plus what is known about it."""

    code: str = attrs.field(converter=_plain_code, validator=non_empty_str)
    message: str
    status: int | None = None
    retry_after_ms: int | None = attrs.field(default=None, converter=whole_ms)
    """The provider's wait (``retry-after-ms``, else ``Retry-After``) in whole milliseconds, rounded up."""
    request_id: str | None = None
    should_retry: bool | None = None
    """The provider's own say (``x-should-retry: true`` / ``false``), which overrides the code's retryability in
    ``RetryPolicy.normal`` as the openai SDK does; None when it said nothing."""

    def to_dict(self) -> Json:
        """The failure as a JSON-ready dict (the fields that are set)."""
        out: Json = {"code": self.code, "message": self.message}
        if self.status is not None:
            out["status"] = self.status
        if self.retry_after_ms is not None:
            out["retry_after_ms"] = self.retry_after_ms
        if self.request_id is not None:
            out["request_id"] = self.request_id
        if self.should_retry is not None:
            out["should_retry"] = self.should_retry
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Failure:
        return cls(
            code=data["code"],
            message=data["message"],
            status=data.get("status"),
            retry_after_ms=data.get("retry_after_ms"),
            request_id=data.get("request_id"),
            should_retry=data.get("should_retry"),
        )


def _failure_matches_kind(instance: FinishReason, attribute: attrs.Attribute[Any], value: object) -> None:
    needs = instance.kind in ("error", "aborted")
    if needs and value is None:
        raise ValueError(f"a {instance.kind!r} finish must carry a failure")
    if not needs and value is not None:
        raise ValueError(f"a {instance.kind!r} finish carries no failure")


@attrs.frozen
class FinishReason:
    """``stop``, ``tool-calls``, ``max-tokens``, or ``error`` / ``aborted`` with a failure."""

    kind: FinishKind
    failure: Failure | None = attrs.field(default=None, validator=_failure_matches_kind)

    @property
    def code(self) -> str | None:
        return self.failure.code if self.failure is not None else None

    def to_dict(self) -> Json:
        out: Json = {"kind": self.kind}
        if self.failure is not None:
            out["failure"] = self.failure.to_dict()
        return out

    @classmethod
    def error(cls, code: str, message: str, **facts: Any) -> FinishReason:
        return cls("error", Failure(code, message, **facts))


_USAGE_KEYS = (
    "input_tokens", "output_tokens", "total_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"
)


@attrs.frozen
class Usage:
    """Token accounting with disjoint counts: billed input is input + cache_read + cache_write. A count the wire did
    not give, or gave invalid, is ``None`` and left out of the JSON: unknown, never 0 (decision 0046)."""

    input_tokens: int | float | None
    output_tokens: int | float | None
    total_tokens: int | None = None
    cache_read_tokens: int | float | None = None
    cache_write_tokens: int | float | None = None
    reasoning_tokens: int | float | None = None

    def to_dict(self) -> Json:
        out: Json = {}
        for key in _USAGE_KEYS:
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    def __add__(self, other: Usage) -> Usage:
        def add(a: int | float | None, b: int | float | None) -> Any:
            if a is None and b is None:
                return None
            return (a or 0) + (b or 0)

        def both(a: int | float | None, b: int | float | None) -> Any:  # a sum with an unknown part is unknown
            return None if a is None or b is None else a + b

        return Usage(
            input_tokens=both(self.input_tokens, other.input_tokens),
            output_tokens=both(self.output_tokens, other.output_tokens),
            total_tokens=add(self.total_tokens, other.total_tokens)
            if self.total_tokens is not None and other.total_tokens is not None
            else None,
            cache_read_tokens=add(self.cache_read_tokens, other.cache_read_tokens),
            cache_write_tokens=add(self.cache_write_tokens, other.cache_write_tokens),
            reasoning_tokens=add(self.reasoning_tokens, other.reasoning_tokens),
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Usage:
        return cls(
            input_tokens=data.get("input_tokens"),
            output_tokens=data.get("output_tokens"),
            total_tokens=data.get("total_tokens"),
            cache_read_tokens=data.get("cache_read_tokens"),
            cache_write_tokens=data.get("cache_write_tokens"),
            reasoning_tokens=data.get("reasoning_tokens"),
        )
