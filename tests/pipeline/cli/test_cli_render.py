"""The terminal renderer: one readable line per chunk, colour only on a terminal, ``--json`` and ``--assembled``."""

from __future__ import annotations

import io
import json

import pytest

import pipeline
from operators import Code, Failure, Finish, FinishReason, Retry
from pipeline import example_path
from pipeline.cli._render import Printer

SEED_BUG = example_path("seed-bug")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_text_mode_writes_one_line_per_chunk_without_colour_off_a_terminal() -> None:
    out = io.StringIO()
    printer = Printer(out)
    chunks = pipeline.collect(SEED_BUG, anomalies=True)
    for chunk in chunks:
        printer.chunk(chunk)

    assert len(out.getvalue().splitlines()) == len(chunks)
    assert "\x1b[" not in out.getvalue()


def test_a_terminal_gets_colour_unless_no_color_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert Printer(_Terminal()).color

    monkeypatch.setenv("NO_COLOR", "1")
    assert not Printer(_Terminal()).color

    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("TERM", "dumb")
    assert not Printer(_Terminal()).color


def test_an_error_finish_shows_its_code_and_message_in_red() -> None:
    printer = Printer(io.StringIO(), color=True)

    line = printer.render(Finish(FinishReason.error(Code.SERVER, "upstream failed")))

    assert line == "    \x1b[31mfinish\x1b[0m       error SERVER: upstream failed"


def test_a_retry_shows_the_attempt_the_delay_and_the_failure() -> None:
    printer = Printer(io.StringIO(), color=False)

    line = printer.render(Retry(attempt=1, max_retries=2, delay_ms=250.4, failure=Failure(Code.TIMEOUT, "no data")))

    assert line == "    ↻ retry      attempt 1/2 in 250 ms after TIMEOUT: no data"


def test_json_mode_writes_to_json_and_no_summary() -> None:
    out = io.StringIO()
    printer = Printer(out, mode="json")
    chunks = pipeline.collect(SEED_BUG)
    for chunk in chunks:
        printer.chunk(chunk)
    printer.summary()

    assert [json.loads(line) for line in out.getvalue().splitlines()] == [chunk.to_dict() for chunk in chunks]


def test_assembled_mode_writes_only_the_message() -> None:
    out = io.StringIO()
    printer = Printer(out, mode="assembled")
    chunks = pipeline.collect(SEED_BUG)
    for chunk in chunks:
        printer.chunk(chunk)
    assert out.getvalue() == ""

    printer.summary()

    expected = pipeline.assemble(chunks).to_dict()
    expected["finish"]["message"] = None
    assert json.loads(out.getvalue()) == expected
