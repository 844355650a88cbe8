"""The retry budget across attempts (``Attempts``, used by the transport's opt-in internal retries), and
``Sanitizer``: one attempt re-encoded from the operators' chunks as fresh OpenAI SSE (the 0022 design; the transport
and the proxy now repair in place with ``ChatRepair`` instead, decision 0032).

The bytes go through the library's own chain (``translate_batches``: ``parse_sse`` and ``protocol_rules()``), then the
API key the request carried is redacted from every chunk (``redact_key``), then ``OpenAIEncoder`` writes them back.
The completion's id, model and creation time are taken from the first upstream event that has them (the request's
model and a generated id otherwise), so a client sees the provider's own id.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable

import attrs
import msgspec
from reactivex.abc import DisposableBase
from reactivex.subject import Subject

from operators import Anomaly, Chunk, Failure, Finish, Limits, RetryPolicy
from operators.extend import StreamFailure
from pipeline.compose import redact_key, to_chunks, translate_batches

from .._logging import get_logger
from ._encode import Identity, OpenAIEncoder

__all__ = ["Attempts", "Sanitizer"]

_log = get_logger("sanitize")

_SNIFF_BYTES = 64 * 1024


class _Head(msgspec.Struct):
    id: str | None = None
    model: str | None = None
    created: int | None = None
    system_fingerprint: str | None = None


class Sanitizer:
    """Feeds one attempt's body reads through the chain; ``feed``/``close``/``fail`` return the SSE bytes ready.

    Deprecated (``pipeline.sanitize.Sanitizer`` warns): ``SanitizingTransport`` and ``ChatRepair`` repair in place."""

    def __init__(self, *, model: str, limits: Limits | None = None, api_key: str | None = None) -> None:
        self._model = model
        self._subject: Subject[bytes] = Subject()
        self._out: list[bytes] = []
        self._head = bytearray()
        self._encoder: OpenAIEncoder | None = None
        self._pending: list[Chunk] = []
        self.forwarded = False
        """Whether any byte of this attempt has been handed to the client (set by the transport)."""
        # anomalies are logged, but a comment line (a keep-alive) costs no object (docs/decisions/0039-ignored-lines.md)
        parsed = translate_batches(self._subject, limits=limits, format="chat")
        chunks = redact_key(api_key)(to_chunks(anomalies=True)(parsed))
        self._subscription: DisposableBase = chunks.subscribe(on_next=self._on_chunk)

    @property
    def finish(self) -> Finish | None:
        """The attempt's finish, once it has come (``None`` before)."""
        return self._encoder.finish if self._encoder is not None else _last_finish(self._pending)

    @property
    def failure(self) -> Failure | None:
        finish = self.finish
        return finish.reason.failure if finish is not None else None

    def _on_chunk(self, chunk: Chunk) -> None:
        if isinstance(chunk, Anomaly):
            where = f" at block {chunk.index}" if chunk.index is not None else ""
            _log.debug("anomaly %s%s: %s", chunk.kind, where, chunk.detail)
            return
        if isinstance(chunk, Finish) and chunk.reason.failure is not None and self.forwarded:
            failure = chunk.reason.failure
            _log.warning("failed after bytes were forwarded, ending with the in-band error event: %s: %s",
                         failure.code, failure.message)
        if self._encoder is None:
            self._pending.append(chunk)
            return
        self._emit(chunk)

    def _emit(self, chunk: Chunk) -> None:
        assert self._encoder is not None
        data = self._encoder.encode(chunk)
        if data:
            self._out.append(data)

    def _start_encoder(self) -> None:
        self._encoder = OpenAIEncoder(self._identity())
        pending, self._pending = self._pending, []
        for chunk in pending:
            self._emit(chunk)

    def _identity(self) -> Identity:
        head = _sniff(bytes(self._head)) or _Head()
        self._head.clear()
        return Identity(
            id=head.id or f"chatcmpl-{uuid.uuid4().hex}",
            model=head.model or self._model,
            created=head.created if head.created is not None else int(time.time()),
            system_fingerprint=head.system_fingerprint,
        )

    def _take(self) -> bytes:
        if self._encoder is None and (self._pending or len(self._head) >= _SNIFF_BYTES):
            self._start_encoder()
        out = b"".join(self._out)
        self._out.clear()
        return out

    def feed(self, piece: bytes) -> bytes:
        if self._encoder is None:
            self._head += piece[: _SNIFF_BYTES - len(self._head)]
        self._subject.on_next(piece)
        return self._take()

    def close(self) -> bytes:
        """The body ended."""
        self._subject.on_completed()
        return self._end()

    def fail(self, failure: Failure) -> bytes:
        """The body could not be read to its end (a timeout, a dropped connection)."""
        self._subject.on_error(StreamFailure(failure))
        return self._end()

    def _end(self) -> bytes:
        if self._encoder is None:
            self._start_encoder()
        self._subscription.dispose()
        return self._take()

    def dispose(self) -> None:
        self._subscription.dispose()


def _last_finish(chunks: list[Chunk]) -> Finish | None:
    return next((c for c in reversed(chunks) if isinstance(c, Finish)), None)


def _sniff(head: bytes) -> _Head | None:
    """The id, model and created of the first ``data:`` event in ``head`` that is a JSON object, if any."""
    for line in head.splitlines():
        if line.startswith(b"data:") and line[5:].lstrip().startswith(b"{"):
            try:
                return msgspec.json.decode(line[5:], type=_Head)
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue  # cut by the sniffing bound, or not a completion chunk: the next one may be
    return None


@attrs.define
class Attempts:
    """The retry budget over attempts: ``delay_s(failure)`` is the wait before the next attempt, or ``None`` when
    the failure is final (not retryable, out of budget, or a Retry-After longer than the policy allows)."""

    policy: RetryPolicy
    random: Callable[[], float] = random.random
    retries: int = 0

    def delay_s(self, failure: Failure) -> float | None:
        retry = self.retries + 1
        if not self.policy.is_retryable(failure) or not self.policy.allows(retry):
            _log.warning("final failure after %d retr%s: %s: %s", self.retries, "y" if self.retries == 1 else "ies",
                         failure.code, failure.message)
            return None
        delay = self.policy.delay_ms(retry, failure, self.random)
        if delay is None:
            _log.warning("final failure: %s asks to wait %.0f ms, longer than the policy allows: %s",
                         failure.code, failure.retry_after_ms or 0, failure.message)
            return None
        self.retries = retry
        waited = "Retry-After" if failure.retry_after_ms is not None and delay == failure.retry_after_ms else "backoff"
        _log.info("retry %d before the first byte in %.0f ms (%s): %s: %s", retry, delay, waited, failure.code,
                  failure.message)
        return delay / 1000
