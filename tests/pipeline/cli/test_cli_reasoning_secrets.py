"""A key echoed into the reasoning fields (a Messages thinking ``signature``, a Responses ``encrypted_content`` and
reasoning item ``id``) reaches no output: ``ChatClient.stream()`` and ``complete()``, and ``llm-stream chat`` in text,
``--json`` and ``--assembled`` modes, with and without ``--session`` (stdout, stderr, log records, the session file).
docs/decisions/0040-redaction-coverage.md."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from leaky_gateway import FORMAT_CASES, KEY, LeakyGateway

from pipeline.cli import main
from pipeline.client import ChatClient

MODES: dict[str, list[str]] = {
    "plain": [],
    "json": ["--json"],
    "assembled": ["--assembled"],
    "session": ["--session"],
    "session-json": ["--session", "--json"],
}


def leaks(text: str) -> bool:
    """The key, any 9 or more of its first characters, in any letter case, or in its code form."""
    folded = text.lower()
    return KEY[:9].lower() in folded or KEY[:9].lower().replace("-", "_") in folded


@pytest.fixture(scope="module")
def gateway() -> Iterator[LeakyGateway]:
    with LeakyGateway() as gw:
        yield gw


@pytest.mark.parametrize("case", sorted(FORMAT_CASES))
async def test_stream_and_complete_carry_no_key_echoed_into_reasoning_fields(gateway: LeakyGateway, case: str) -> None:
    api = FORMAT_CASES[case][0]
    async with ChatClient(gateway.base_url, model=case, api_key=KEY, api=api) as client:  # type: ignore[arg-type]
        chunks = [chunk async for chunk in client.stream([{"role": "user", "content": "hi"}], anomalies=True)]
        message = await client.complete([{"role": "user", "content": "hi"}])

    assert chunks[-1].to_json()["reason"] == {"kind": "stop"}
    assert [block.text for block in message.reasoning_blocks] == ["hmm"]
    assert not leaks(repr(chunks))
    assert not leaks(repr(message))


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("case", sorted(FORMAT_CASES))
def test_chat_carries_no_key_echoed_into_reasoning_fields(
    gateway: LeakyGateway,
    case: str,
    mode: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("LLM_STREAM_API_KEY", KEY)
    caplog.set_level(logging.DEBUG)
    session = tmp_path / "chat.jsonl"
    argv = ["chat", "hi", "--base-url", gateway.base_url, "--model", case, "--api", FORMAT_CASES[case][0]]
    for flag in MODES[mode]:
        argv += [flag, str(session)] if flag == "--session" else [flag]

    status = main(argv)

    out, err = capsys.readouterr()
    assert status == 0, out + err
    assert "hmm" in out or ("--json" not in argv and "--assembled" not in argv)
    assert not leaks(out)
    assert not leaks(err)
    formatter = logging.Formatter()
    assert not leaks("\n".join(formatter.format(r) for r in caplog.records if not r.name.startswith("httpcore")))
    if "--session" in argv:
        recorded = session.read_text(encoding="utf-8")
        assert "hmm" in recorded
        assert not leaks(recorded)
