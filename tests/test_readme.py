"""Every Python snippet of the README runs as written (against the emulator on loopback for the live ones), and so
does every self-contained snippet of docs/operators.md (those with their own asserts)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipeline.emulator import Emulator

README = Path(__file__).resolve().parents[1] / "README.md"
SNIPPETS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
LIVE_URL = "http://127.0.0.1:8808/v1"  # the README's address for `llm-stream emulate`


def test_the_readme_has_its_snippets() -> None:
    assert len(SNIPPETS) >= 4


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[f"snippet-{n}" for n in range(len(SNIPPETS))])
def test_readme_snippet_runs(
    snippet: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # a snippet that writes a session file writes it here
    with Emulator() as emulator:
        code = snippet.replace(LIVE_URL, emulator.base_url)  # the emulator the test started, on a free port
        exec(compile(code, f"README.md snippet {SNIPPETS.index(snippet)}", "exec"), {"__name__": "readme"})
    printed = capsys.readouterr().out
    assert printed or "chunks = " in snippet  # each snippet shows its result (the last one keeps it in `chunks`)


OPERATORS_DOC = README.parent / "docs" / "operators.md"
DOC_SNIPPETS = [
    snippet
    for snippet in re.findall(r"```python\n(.*?)```", OPERATORS_DOC.read_text(encoding="utf-8"), flags=re.S)
    if "assert " in snippet
]


def test_docs_operators_has_a_runnable_example() -> None:
    assert DOC_SNIPPETS


@pytest.mark.parametrize("snippet", DOC_SNIPPETS, ids=[f"operators-md-{n}" for n in range(len(DOC_SNIPPETS))])
def test_docs_operators_snippet_runs(snippet: str) -> None:
    exec(compile(snippet, "docs/operators.md snippet", "exec"), {"__name__": "docs"})
