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
  message quotes the header (``register_key_headers``, called by ``pipeline.formats.WireRegistry``).
- ``LLM_STREAM_LOG=debug|info|warning``, read once when ``pipeline`` is imported (``configure_from_env``), adds one
  stderr handler to ``llm_stream`` at that level, as the openai SDK does for ``OPENAI_LOG``. Unset (or any other
  value), the library adds only a ``NullHandler``: logging stays the application's choice.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
from collections.abc import Callable, Mapping

from reactivex import Observable

from operators import Anomaly, Chunk, Failure, Finish, Retry

from ._chunk_stage import ChunkStage, chunk_operator

__all__ = [
    "ENV_VAR", "ROOT", "VALUES_REDACTED", "configure_from_env", "get_logger", "log_chunks",
    "redact_secrets", "register_key_headers", "register_secret",
]

ROOT = "llm_stream"
ENV_VAR = "LLM_STREAM_LOG"
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}
FORMAT = "[%(asctime)s - %(name)s:%(lineno)d - %(levelname)s] %(message)s"
REDACTED = "[redacted]"
VALUES_REDACTED = "llm_stream_values_redacted"
"""``logger.info(..., extra={VALUES_REDACTED: True})``: the record's producer redacted each value it wrote into the
message (``redact_secrets``); the filter then keeps the message's own words (a structured line's field names,
``upstream_status``) and replaces only whole keys, not every 8-character run that a key happens to share with them."""
MIN_SECRET_CHARS = 8  # as the chunk redaction (docs/decisions/0015-redaction.md): shorter is no secret

_lock = threading.Lock()
_patterns: dict[str, re.Pattern[str]] = {}
_header_values: dict[str, re.Pattern[str]] = {}


def _pattern(secret: str) -> re.Pattern[str]:
    """The key, its code form (what an upper-cased ``finish_reason`` makes of it), or any start of either 8
    characters or longer, in any letter case."""

    def prefixes(text: str) -> str:
        head, rest = re.escape(text[:MIN_SECRET_CHARS]), text[MIN_SECRET_CHARS:]
        return head + "".join(f"(?:{re.escape(char)}" for char in rest) + ")?" * len(rest)

    code_form = re.sub(r"[^A-Z0-9]+", "_", secret.upper()).strip("_")
    forms = [prefixes(secret)]
    if len(code_form) >= MIN_SECRET_CHARS and code_form.lower() != secret.lower():
        forms.append(prefixes(code_form))
    return re.compile("|".join(forms), re.IGNORECASE)


def redact_secrets(text: str, secrets: tuple[str, ...] | None = None) -> str:
    """``text`` without any registered key (or the keys given): the key or its code form in any letter case, any
    start of either 8 characters or longer, and any other cut of either 8 characters or longer (a quote that lost
    the key's beginning)."""
    with _lock:
        keys = tuple(_patterns) if secrets is None else secrets
        chosen = tuple(_register(key) for key in keys)
    for pattern in chosen:
        text = pattern.sub(REDACTED, text)
    for key in keys:
        if len(key) >= MIN_SECRET_CHARS:
            text = _mask_cuts(text, _forms(key))
    return text


def _forms(secret: str) -> tuple[str, ...]:
    """The key and its code form, lower case (what a cut is compared with)."""
    code_form = re.sub(r"[^A-Z0-9]+", "_", secret.upper()).strip("_")
    return tuple({secret.lower(), code_form.lower()})


def _mask_cuts(text: str, forms: tuple[str, ...]) -> str:
    """Replaces every run of ``MIN_SECRET_CHARS`` or more characters that occurs inside one of ``forms`` (any letter
    case). Linear in the text: a window is looked up among the forms' windows, then the run is extended."""
    size = MIN_SECRET_CHARS
    folded = text.lower()
    if len(folded) != len(text):  # a letter whose lower case is longer: compare as written
        folded = text
    windows = {form[at : at + size] for form in forms for at in range(len(form) - size + 1)}
    out: list[str] = []
    done = at = 0
    while at + size <= len(folded):
        if folded[at : at + size] not in windows:
            at += 1
            continue
        end = at + size
        while end < len(folded) and any(folded[at : end + 1] in form for form in forms):
            end += 1
        out += [text[done:at], REDACTED]
        done = at = end
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


def _register(secret: str) -> re.Pattern[str]:
    pattern = _patterns.get(secret)
    if pattern is None:
        pattern = _patterns[secret] = _pattern(secret)
    return pattern


def register_key_headers(names: tuple[str, ...] | frozenset[str]) -> None:
    """Every later record of an ``llm_stream`` logger loses the value of each header in ``names`` wherever the
    message quotes it (``x-api-key: K``, ``'x-api-key': 'K'``, ``Authorization: Bearer K``), keys never registered
    with ``register_secret`` too: the key headers of every wire-format record (``pipeline.formats.WireRegistry``)."""
    with _lock:
        for name in names:
            if name.lower() not in _header_values:
                _header_values[name.lower()] = re.compile(
                    rf"(?<![\w-])({re.escape(name)}['\"]?\s*[:=,]\s*b?['\"]?(?:bearer\s+)?)"
                    rf"([^\s'\",;)}}\]]{{{MIN_SECRET_CHARS},}})",
                    re.IGNORECASE,
                )


def _redact_header_values(text: str) -> str:
    with _lock:
        patterns = tuple(_header_values.values())
    for pattern in patterns:
        text = pattern.sub(lambda match: match.group(1) + REDACTED, text)
    return text


def _whole_keys(text: str) -> str:
    """``text`` without any registered key whole, in any letter case (a ``VALUES_REDACTED`` record's redaction)."""
    with _lock:
        keys = tuple(_patterns)
    for key in keys:
        text = re.sub(re.escape(key), REDACTED, text, flags=re.IGNORECASE)
    return text


def register_secret(secret: str | None) -> None:
    """Every later record of an ``llm_stream`` logger loses ``secret`` (ignored when None or too short)."""
    if secret and len(secret) >= MIN_SECRET_CHARS:
        with _lock:
            _register(secret)


class _RedactingFilter(logging.Filter):
    """Rewrites a record before any handler sees it: the message (arguments merged) and a traceback's text."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _patterns and not _header_values:
            return True
        message = record.getMessage()
        whole_keys_only = getattr(record, VALUES_REDACTED, False)  # the producer redacted each value itself
        redacted = _whole_keys(message) if whole_keys_only else _redact_header_values(redact_secrets(message))
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and record.exc_info[0] is not None:
            text = logging.Formatter().formatException(record.exc_info)
            clean = _redact_header_values(redact_secrets(text))
            if clean != text:  # the traceback names the key: keep only its redacted text
                record.exc_info, record.exc_text = None, clean
        return True


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
