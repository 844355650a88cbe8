"""Logging through ``logging.getLogger("llm_stream")`` and its children, shared below the ``pipeline`` subpackages.

What is logged (docs/decisions/0020-environment-and-logging.md)::

    llm_stream.transport   INFO     retrying (attempt 1 of 3) in 250 ms after RATE_LIMIT (status 429, Retry-After
                                    250 ms): slow down
                           WARNING  the request failed after 2 attempts: TIMEOUT: no byte for 300 s
                           DEBUG    anomaly empty-identity at block 0: name '' ignored, keeping 'get_weather'
    llm_stream.operators   ERROR    an operator raised ...: the response ends with UNKNOWN (with the traceback)
    llm_stream.agent       DEBUG    a tool's failure, with its traceback

- ``get_logger(child)`` is ``logging.getLogger("llm_stream.<child>")`` with the redacting filter attached.
- ``log_chunks(logger, api_key=...)`` is a tap on a chunk stream (``ChatClient.chunks`` and the sanitizing transport
  end with it): it passes every chunk on unchanged and logs the retries, the final failure and the anomalies.
- The API key never reaches a log record: ``log_chunks`` redacts its messages, and registers the key with the filter
  that every ``llm_stream`` logger made by ``get_logger`` (and ``llm_stream.operators``) carries, which redacts the
  message, its arguments and a traceback's text of every record before any handler sees it: the key in any letter
  case, its code form, and any cut of either 8 characters or longer, wherever the cut begins
  (docs/decisions/0040-redaction-coverage.md); and the value of any key header a wire-format record names where a
  message quotes the header (``register_key_headers``, called by ``pipeline.formats.WireRegistry``); and the value of
  a URL's key parameter (``?key=...``, ``redact_url_keys``), always.
- ``LLM_STREAM_LOG=debug|info|warning``, read once when ``pipeline`` is imported (``configure_from_env``), adds one
  stderr handler to ``llm_stream`` at that level, as the openai SDK does for ``OPENAI_LOG``. Unset (or any other
  value), the library adds only a ``NullHandler``: logging stays the application's choice.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Mapping

from reactivex import Observable

from operators import Anomaly, Chunk, Failure, Finish, Retry

from ._chunk_stage import ChunkStage, chunk_operator
from ._secrets import (
    MIN_SECRET_CHARS,
    redact_header_values,
    redact_secrets,
    redact_url_keys,
    register_key_headers,
    register_secret,
    registered,
    whole_keys,
)

__all__ = [
    "ENV_VAR", "ROOT", "VALUES_REDACTED", "configure_from_env", "get_logger", "log_chunks",
    "redact_secrets", "redact_url_keys", "register_key_headers", "register_secret",
]

ROOT = "llm_stream"
ENV_VAR = "LLM_STREAM_LOG"
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}
FORMAT = "[%(asctime)s - %(name)s:%(lineno)d - %(levelname)s] %(message)s"
VALUES_REDACTED = "llm_stream_values_redacted"
"""``logger.info(..., extra={VALUES_REDACTED: True})``: the record's producer redacted each value it wrote into the
message (``redact_secrets``); the filter then keeps the message's own words (a structured line's field names,
``upstream_status``) and replaces only whole keys, not every 8-character run that a key happens to share with them."""
class _RedactingFilter(logging.Filter):
    """Rewrites a record before any handler sees it: the message (arguments merged) and a traceback's text.

    A record with arguments keeps its own words: each argument loses any secret (a cut of a key included), and the
    format string, the library's own text, loses only a whole key, so a field name such as ``upstream_status`` is
    never rewritten because a key shares 8 characters with it. A record without arguments (or whose redacted
    arguments no longer format) is redacted as one text; a ``VALUES_REDACTED`` record only of whole keys."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not registered():
            return True
        message = record.getMessage()
        if getattr(record, VALUES_REDACTED, False):  # the producer redacted each value itself
            redacted = redact_url_keys(whole_keys(message))
        else:
            redacted = _by_arguments(record) or redact_header_values(redact_secrets(message))
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and record.exc_info[0] is not None:
            text = logging.Formatter().formatException(record.exc_info)
            clean = redact_header_values(redact_secrets(text))
            if clean != text:  # the traceback names the key: keep only its redacted text
                record.exc_info, record.exc_text = None, clean
        return True


def _clean(value: object) -> object:
    if value is None or isinstance(value, (bool, int, float)):
        return value  # %d and %f keep their number
    text = str(value)
    clean = redact_header_values(redact_secrets(text))
    return value if clean == text else clean


def _by_arguments(record: logging.LogRecord) -> str | None:
    """The message with each argument redacted and only whole keys out of the format string; None without
    arguments, or when the redacted arguments no longer fit the format."""
    args = record.args
    if not args or not isinstance(record.msg, str):
        return None
    cleaned = {key: _clean(value) for key, value in args.items()} if isinstance(args, Mapping) else tuple(
        _clean(value) for value in args)
    try:
        return redact_header_values(whole_keys(record.msg)) % cleaned
    except (TypeError, ValueError, KeyError):
        return None


_FILTER = _RedactingFilter()


def _with_filter(logger: logging.Logger) -> logging.Logger:
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
    return logger


def get_logger(child: str) -> logging.Logger:
    """``logging.getLogger("llm_stream.<child>")``, with the redacting filter."""
    return _with_filter(logging.getLogger(f"{ROOT}.{child}" if child else ROOT))


def configure_from_env(env: Mapping[str, str] | None = None) -> logging.Handler | None:
    """The library's logging set-up: a ``NullHandler`` on ``llm_stream``; with ``LLM_STREAM_LOG`` set to ``debug``,
    ``info`` or ``warning``, one stderr handler at that level too (not added twice). Returns that handler."""
    env = os.environ if env is None else env
    root = _with_filter(logging.getLogger(ROOT))
    _with_filter(logging.getLogger(f"{ROOT}.operators"))  # made by operators, which cannot import this module
    if not any(isinstance(handler, logging.NullHandler) for handler in root.handlers):
        root.addHandler(logging.NullHandler())
    level = LEVELS.get(env.get(ENV_VAR, "").strip().lower())
    if level is None:
        return None
    handler = next((h for h in root.handlers if getattr(h, "llm_stream_env", False)), None)
    if handler is None:
        handler = logging.StreamHandler(sys.stderr)
        handler.llm_stream_env = True  # type: ignore[attr-defined]
        handler.setFormatter(logging.Formatter(FORMAT))
        root.addHandler(handler)
    handler.setLevel(level)
    root.setLevel(level)
    return handler


# -- the chunk tap ---------------------------------------------------------------------------------------------


def _failure_text(failure: Failure) -> str:
    details = [f"status {failure.status}"] if failure.status is not None else []
    if failure.retry_after_ms is not None:
        details.append(f"Retry-After {failure.retry_after_ms} ms")
    if failure.request_id is not None:
        details.append(f"request id {failure.request_id}")
    where = f" ({', '.join(details)})" if details else ""
    return f"{failure.code}{where}: {failure.message}"


class _Tap:
    """Per subscription: the attempts counted, each interesting chunk logged."""

    def __init__(self, logger: logging.Logger, secrets: tuple[str, ...]) -> None:
        self.logger = logger
        self.secrets = secrets
        self.retries = 0

    def log(self, level: int, text: str) -> None:
        self.logger.log(level, redact_secrets(text, self.secrets) if self.secrets else text)

    def on_next(self, chunk: Chunk) -> None:
        if isinstance(chunk, Retry):
            self.retries += 1
            if self.logger.isEnabledFor(logging.INFO):
                of = f" of {chunk.max_retries}" if chunk.max_retries is not None else ""
                self.log(logging.INFO, f"retrying (attempt {chunk.attempt}{of}) in {chunk.delay_ms:.0f} ms after "
                                       f"{_failure_text(chunk.failure)}")
        elif isinstance(chunk, Finish):
            self.finish(chunk)
        elif isinstance(chunk, Anomaly) and self.logger.isEnabledFor(logging.DEBUG):
            where = f" at block {chunk.index}" if chunk.index is not None else ""
            self.log(logging.DEBUG, f"anomaly {chunk.kind}{where}: {chunk.detail}")

    def finish(self, chunk: Finish) -> None:
        reason = chunk.reason
        attempts = f" after {self.retries + 1} attempts" if self.retries else ""
        if reason.failure is None:
            if self.logger.isEnabledFor(logging.DEBUG):
                self.log(logging.DEBUG, f"the response finished{attempts}: {reason.kind}")
            return
        level = logging.INFO if reason.kind == "aborted" else logging.WARNING
        verb = "was aborted" if reason.kind == "aborted" else "failed"
        if self.logger.isEnabledFor(level):
            self.log(level, f"the request {verb}{attempts}: {_failure_text(reason.failure)}")


class _TapStage(ChunkStage[Chunk, Chunk]):
    __slots__ = ("pass_anomalies", "tap")

    def __init__(self, tap: _Tap, pass_anomalies: bool) -> None:
        self.tap = tap
        self.pass_anomalies = pass_anomalies

    def on_item(self, item: Chunk, out: list[Chunk]) -> None:
        try:
            self.tap.on_next(item)
        except Exception:  # logging never changes the stream
            logging.getLogger(ROOT).debug("logging a chunk failed", exc_info=True)
        if self.pass_anomalies or not isinstance(item, Anomaly):
            out.append(item)


def log_chunks(
    logger: logging.Logger, *, api_key: str | None = None, pass_anomalies: bool = True
) -> Callable[[Observable[Chunk]], Observable[Chunk]]:
    """A tap on a chunk stream: every chunk passes on unchanged; each ``retry`` is logged at INFO (attempt, code,
    status, Retry-After, message, delay), an error finish at WARNING (an aborted one at INFO), anomalies and a
    successful finish at DEBUG, with ``api_key`` redacted from every message (and registered with the filter).
    ``pass_anomalies=False`` logs the anomalies without passing them on (for a stream that asks for none)."""
    register_secret(api_key)
    secrets = (api_key,) if api_key and len(api_key) >= MIN_SECRET_CHARS else ()

    return chunk_operator(lambda: _TapStage(_Tap(logger, secrets), pass_anomalies))
