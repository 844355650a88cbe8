"""Logging through ``llm_stream`` (docs/decisions/0020-environment-and-logging.md): each retry with its reason and
delay, Retry-After, the final failure, anomalies at DEBUG, a raising operator with its traceback, never the key;
``LLM_STREAM_LOG`` adds one stderr handler, and without it the library adds only a ``NullHandler``."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import reactivex as rx
from leaky_gateway import CASES, KEY, LeakyGateway
from reactivex import operators as rx_ops

import pipeline
from operators import Anomaly, Chunk, Code, Finish, Retry, RetryPolicy, Signal
from operators.extend import map_items
from pipeline import _logging, _secrets
from pipeline.emulator import Emulator

ROOT = Path(__file__).parents[1]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def fast_policy(*, max_delay_ms: float = 5, max_retries: int = 3) -> RetryPolicy:
    return RetryPolicy.normal(initial_delay_ms=1, max_delay_ms=max_delay_ms, jitter_ratio=0, max_retries=max_retries)


async def collect(
    base_url: str,
    profile: str,
    headers: Mapping[str, str] | None = None,
    *,
    retry: bool = False,
    policy: RetryPolicy | None = None,
    anomalies: bool = False,
    api_key: str | None = None,
) -> list[Chunk]:
    """One streamed request through a ``ChatClient``, every chunk."""
    client = pipeline.ChatClient(base_url, model=profile, api_key=api_key, headers=headers,
                                 retry_policy=policy or fast_policy())
    async with asyncio.timeout(10), client:
        return [c async for c in client.stream([{"role": "user", "content": "hi"}], retry=retry, anomalies=anomalies)]


def messages(caplog: pytest.LogCaptureFixture, level: int, name: str = "llm_stream.transport") -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level and r.name == name]


def run_python(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k != "LLM_STREAM_LOG"}
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, env={**clean, **env}, check=True
    )


# --------------------------------------------------------------------------------------------------- set-up


def test_get_logger_names_a_child_of_llm_stream() -> None:
    logger = _logging.get_logger("transport")
    assert logger.name == "llm_stream.transport"
    assert logger.parent is logging.getLogger("llm_stream")


@pytest.mark.server
def test_without_llm_stream_log_the_library_adds_only_a_null_handler_and_prints_nothing() -> None:
    done = run_python(
        "import logging, pipeline\n"
        "print([type(h).__name__ for h in logging.getLogger('llm_stream').handlers])\n"
        "logging.getLogger('llm_stream.transport').warning('not shown: logging is the application choice')\n"
    )
    assert done.stdout.strip() == "['NullHandler']"
    assert done.stderr == ""


@pytest.mark.server
@pytest.mark.parametrize(("value", "shown", "hidden"), [("debug", "DEBUG", None), ("INFO", "INFO", "DEBUG"),
                                                        ("warning", "WARNING", "INFO")])
def test_llm_stream_log_adds_one_stderr_handler_at_its_level(value: str, shown: str, hidden: str | None) -> None:
    done = run_python(
        "import logging, pipeline\n"
        "from pipeline import _logging\n"
        "_logging.configure_from_env()  # a second call adds no second handler\n"
        "print(len(logging.getLogger('llm_stream').handlers))\n"
        "log = logging.getLogger('llm_stream.transport')\n"
        "for level in ('debug', 'info', 'warning'):\n"
        "    getattr(log, level)(f'a {level} record')\n",
        LLM_STREAM_LOG=value,
    )
    assert done.stdout.strip() == "2"  # the NullHandler and the stderr handler
    assert "llm_stream.transport:" in done.stderr
    assert f"- {shown}] a {shown.lower()} record" in done.stderr
    if hidden is not None:
        assert f"a {hidden.lower()} record" not in done.stderr


def test_an_unknown_llm_stream_log_value_adds_no_handler() -> None:
    assert _logging.configure_from_env({"LLM_STREAM_LOG": "loud"}) is None


# --------------------------------------------------------------------------------------------------- what is logged


async def test_each_retry_is_logged_with_its_code_delay_and_retry_after(
    emu: Emulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="llm_stream")
    headers = {"x-emulator-fail-first": "1", "x-emulator-then": "clean", "x-emulator-retry-after": "0.02",
               "x-emulator-key": unique("log429")}
    chunks = await collect(emu.base_url, "rate-limit", headers, retry=True, policy=fast_policy(max_delay_ms=100))

    (retry,) = [c for c in chunks if isinstance(c, Retry)]
    (line,) = messages(caplog, logging.INFO)
    assert line.startswith(f"retrying (attempt 1 of {retry.max_retries}) in 20 ms after RATE_LIMIT (status 429, ")
    assert "Retry-After 20 ms" in line
    assert retry.failure.message in line
    assert messages(caplog, logging.WARNING) == []
    assert messages(caplog, logging.DEBUG)[-1] == "the response finished after 2 attempts: stop"


async def test_the_final_failure_is_logged_at_warning_with_the_attempts(
    emu: Emulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="llm_stream")
    headers = {"x-emulator-fail-first": "9", "x-emulator-then": "clean", "x-emulator-key": unique("log500")}
    chunks = await collect(emu.base_url, "server-error", headers, retry=True, policy=fast_policy(max_retries=2))

    finish = chunks[-1]
    assert isinstance(finish, Finish)
    assert finish.reason.code == Code.SERVER
    assert len(messages(caplog, logging.INFO)) == 2
    (line,) = messages(caplog, logging.WARNING)
    assert line.startswith("the request failed after 3 attempts: SERVER (status 500")


async def test_anomalies_are_logged_at_debug_even_when_the_stream_does_not_carry_them(
    emu: Emulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="llm_stream")
    quiet = await collect(emu.base_url, "seed-bug")
    quiet_logged = [m for m in messages(caplog, logging.DEBUG) if m.startswith("anomaly ")]
    caplog.clear()
    loud = await collect(emu.base_url, "seed-bug", anomalies=True)
    loud_logged = [m for m in messages(caplog, logging.DEBUG) if m.startswith("anomaly ")]

    anomalies = [c for c in loud if isinstance(c, Anomaly)]
    assert anomalies
    assert not any(isinstance(c, Anomaly) for c in quiet)
    assert loud_logged == [f"anomaly {a.kind} at block {a.index}: {a.detail}" for a in anomalies]
    assert len(quiet_logged) == len(loud_logged)  # the ids differ per request; the anomalies do not


def test_a_raising_rule_is_logged_with_its_traceback_and_the_stream_ends_unknown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(item: Signal) -> Signal:
        raise ValueError("a user's rule broke")

    caplog.set_level(logging.ERROR, logger="llm_stream")
    first, *rest = pipeline.protocol_rules()
    chunks = pipeline.collect(pipeline.example_path().read_bytes(), rules=[first, map_items(broken), *rest])

    finish = chunks[-1]
    assert isinstance(finish, Finish)
    assert finish.reason.code == Code.UNKNOWN
    (record,) = [r for r in caplog.records if r.name == "llm_stream.operators"]
    assert record.getMessage() == "an operator raised ValueError: the response ends with UNKNOWN"
    assert record.exc_info is not None
    assert "a user's rule broke" in logging.Formatter().formatException(record.exc_info)
    assert "in broken" in logging.Formatter().formatException(record.exc_info)


def test_log_chunks_passes_every_chunk_on_unchanged() -> None:
    chunks = pipeline.collect(pipeline.example_path().read_bytes(), anomalies=True)
    seen: list[object] = []
    logger = _logging.get_logger("test")
    rx.from_iterable(chunks).pipe(_logging.log_chunks(logger)).subscribe(seen.append)
    assert seen == chunks
    dropped: list[object] = []
    rx.from_iterable(chunks).pipe(_logging.log_chunks(logger, pass_anomalies=False)).subscribe(dropped.append)
    assert dropped == [c for c in chunks if not isinstance(c, Anomaly)]


# --------------------------------------------------------------------------------------------------- never the key


@pytest.fixture(scope="module")
def gateway() -> Iterator[LeakyGateway]:
    with LeakyGateway() as gw:
        yield gw


@pytest.mark.parametrize("case", sorted(CASES))
async def test_no_record_carries_the_key_whatever_the_gateway_echoes(
    gateway: LeakyGateway, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="llm_stream")
    await collect(gateway.base_url, case, retry=True, anomalies=True, api_key=KEY)

    assert caplog.records, "the case logged nothing"
    for record in caplog.records:
        text = caplog.handler.format(record)
        assert KEY not in text
        assert KEY[:12].lower() not in text.lower()


def test_the_filter_removes_a_registered_key_from_a_message_its_arguments_and_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = "sk-filter-" + unique("k")
    _logging.register_secret(secret)
    logger = _logging.get_logger("test.filter")
    caplog.set_level(logging.DEBUG, logger="llm_stream")
    try:
        raise RuntimeError(f"Incorrect API key provided: {secret.upper()}")
    except RuntimeError:
        logger.exception("calling with %s failed (cut: %s)", secret, secret[:10])

    (record,) = caplog.records
    text = caplog.handler.format(record)
    assert secret.lower() not in text.lower()
    assert secret[:10] not in text
    assert "calling with [redacted] failed (cut: [redacted])" in text
    assert "RuntimeError: Incorrect API key provided: [redacted]" in text


@pytest.mark.parametrize(
    "shown",
    [
        lambda key: key.upper(),
        lambda key: key[-12:],
        lambda key: key[5:17].upper(),
        lambda key: re.sub(r"[^A-Z0-9]+", "_", key.upper())[-10:],
    ],
    ids=["upper-cased", "tail-cut", "middle-cut-upper-cased", "code-form-tail"],
)
def test_the_filter_removes_the_key_whatever_its_letter_case_or_wherever_it_was_cut(
    shown: Any, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "sk-cut-" + unique("Vw4nCutQ2Tail8Mid")
    _logging.register_secret(secret)
    logger = _logging.get_logger("test.cut")
    caplog.set_level(logging.DEBUG, logger="llm_stream")

    logger.warning("upstream said: ...%s... (x-api-key)", shown(secret))

    (record,) = caplog.records
    text = caplog.handler.format(record)
    assert shown(secret) not in text
    assert "upstream said: ...[redacted]... (x-api-key)" in text


def test_a_rule_after_close_on_done_that_raises_is_logged_with_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    def explode(source: Any) -> Any:
        def boom(batch: Any) -> Any:
            raise RuntimeError("late rule broke")

        return source.pipe(rx_ops.map(boom))

    with caplog.at_level(logging.ERROR, logger="llm_stream"):
        chunks = pipeline.collect(b"data: [DONE]\n\n", rules=[*pipeline.protocol_rules(), explode])
    finish = chunks[-1]
    assert isinstance(finish, Finish)
    assert finish.reason.code == "UNKNOWN"
    (record,) = [r for r in caplog.records if r.name == "llm_stream.compose"]
    assert record.exc_info is not None
    assert "late rule broke" in str(record.exc_info[1])


def test_a_record_with_arguments_keeps_its_own_words_and_loses_the_key_in_its_values(
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = "sk-upstream-0123456789abcdef"  # shares "upstream" (8 characters) with the field name below
    saved = dict(_secrets._patterns)
    logger = _logging.get_logger("test.args")
    try:
        _secrets._patterns.clear()  # only this key: one another test registered may share a cut with these words
        _logging.register_secret(secret)
        with caplog.at_level(logging.INFO, logger="llm_stream.test.args"):
            logger.info("upstream_status=%d answer=%s cut=%s", 401, f"Incorrect API key provided: {secret}",
                        secret[:12])
            logger.info(f"pre-formatted upstream_status with the key {secret} inside")  # no arguments: one text
    finally:  # the key is forgotten: "upstream" in later records of this process stays as written
        _secrets._patterns.clear()
        _secrets._patterns.update(saved)

    templated, formatted = (record.getMessage() for record in caplog.records)
    assert templated == "upstream_status=401 answer=Incorrect API key provided: [redacted] cut=[redacted]"
    assert secret not in formatted
    assert "sk-upstream-0123" not in formatted
