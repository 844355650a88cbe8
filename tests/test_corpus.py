"""The corpus lives in the repository, so the suite runs from a clone alone: ``tests/corpus/fixtures`` is a byte for
byte copy of ``../shared/fixtures`` (the shared reference material), kept equal by
``test_the_in_repo_corpus_equals_the_shared_one`` wherever ``../shared`` sits beside the clone (CI puts it there, so
there the test must run; elsewhere, without it, the test skips and the copy alone serves the suite), except for the
expectations ``DOCUMENTED_DIFFERENCES`` names, each changed by a decision note (and saying so in its
``differs_from_shared``), which must still differ. Every folder
``corpus.py`` names holds its streams, each with its expectation, and git stores the files' bytes unchanged
(``.gitattributes``: no end-of-line or whitespace conversion).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from corpus import (
    FIXTURES,
    MESSAGES_STREAMS,
    OUTSIDE_SHARED,
    PEER_FORMAT_STREAMS,
    PEER_STREAMS,
    REAL_STREAMS,
    RESPONSES_STREAMS,
    ROOT,
)

COPY_AGAIN = (
    "rm -rf tests/corpus/fixtures && cp -r ../shared/fixtures tests/corpus/fixtures"
    " && chmod -R u+w tests/corpus/fixtures"
)
"""How the copy is made again after ``../shared`` changes (``tests/corpus/README.md``); then the expectations
``DOCUMENTED_DIFFERENCES`` names are edited again as their decision says."""

_CLIENT_CALLS = ("decision 0072 (client-run tool calls): the stream's {item} is read as a tool call, so tool_calls "
                 "holds it with its kind; ../shared lists function_call items only")
DOCUMENTED_DIFFERENCES: dict[str, str] = {
    "responses/03-vercel-ai-custom-tool-call.expected.json": _CLIENT_CALLS.format(item="custom_tool_call"),
    "responses/06-vercel-ai-mcp-approval-request.expected.json": _CLIENT_CALLS.format(item="mcp_approval_request"),
    "responses/08-vercel-ai-local-shell-call.expected.json": _CLIENT_CALLS.format(item="local_shell_call"),
}
"""Files of the copy that differ from ``../shared`` on purpose: path -> the decision that changed them."""


def _files(root: Path) -> dict[str, Path]:
    """Every file under ``root``, by its path relative to it (POSIX form)."""
    return {path.relative_to(root).as_posix(): path for path in root.rglob("*") if path.is_file()}


def differences(copy: Path, origin: Path) -> list[str]:
    """What keeps ``copy`` from being ``origin`` file by file, byte for byte: one line a file, missing (in ``origin``
    only), extra (in ``copy`` only) or differing (both, other bytes); empty when they are equal."""
    ours, theirs = _files(copy), _files(origin)
    both = sorted(ours.keys() & theirs.keys())
    differing = [name for name in both if ours[name].read_bytes() != theirs[name].read_bytes()]
    return [
        *(f"missing: {name}" for name in sorted(theirs.keys() - ours.keys())),
        *(f"extra: {name}" for name in sorted(ours.keys() - theirs.keys())),
        *(f"differs: {name}" for name in differing),
    ]


def test_the_in_repo_corpus_equals_the_shared_one() -> None:
    origin = OUTSIDE_SHARED / "fixtures"
    if not origin.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"CI runs with ../shared beside the clone, and {origin} is not there")
        pytest.skip(f"no {origin} beside the clone: the in-repo copy alone serves the suite")
    found = differences(FIXTURES, origin)
    documented = [f"differs: {name}" for name in DOCUMENTED_DIFFERENCES]
    problems = [line for line in found if line not in documented]
    assert [line for line in documented if line not in found] == [], "a documented difference no longer differs"
    assert not problems, (
        f"tests/corpus/fixtures is not a copy of {origin} ({len(problems)} files; copy it again: {COPY_AGAIN}):\n"
        + "\n".join(problems)
    )


def test_each_documented_difference_says_so_in_its_file() -> None:
    for name, why in DOCUMENTED_DIFFERENCES.items():
        data = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
        decision = why.split(" ", 2)[1]
        assert decision in data["differs_from_shared"], name


def test_the_comparison_names_each_missing_extra_and_differing_file(tmp_path: Path) -> None:
    origin, copy = tmp_path / "origin", tmp_path / "copy"
    for root in (origin, copy):
        (root / "sse").mkdir(parents=True)
        (root / "sse" / "same.sse").write_bytes(b"data: 1\r\n\r\n")
    (origin / "sse" / "gone.sse").write_bytes(b"data: 2\n\n")
    (copy / "sse" / "added.sse").write_bytes(b"data: 3\n\n")
    (origin / "README.md").write_bytes(b"no final newline")
    (copy / "README.md").write_bytes(b"no final newline\n")

    assert differences(copy, copy) == []
    assert differences(copy, origin) == ["missing: sse/gone.sse", "extra: sse/added.sse", "differs: README.md"]


@pytest.mark.parametrize(
    ("folder", "least"),
    [(REAL_STREAMS, 36), (PEER_STREAMS, 67), (MESSAGES_STREAMS, 40), (RESPONSES_STREAMS, 36),
     (PEER_FORMAT_STREAMS / "messages", 32), (PEER_FORMAT_STREAMS / "responses", 33)],
    ids=["sse/real", "sse/peers", "messages", "responses", "peers-formats/messages", "peers-formats/responses"],
)
def test_every_corpus_folder_holds_its_streams_each_with_its_expectation(folder: Path, least: int) -> None:
    streams = sorted(folder.glob("*.sse"))
    assert len(streams) >= least, f"{folder} holds {len(streams)} streams"
    assert [s.name for s in streams if not s.with_suffix(".expected.json").is_file()] == []


def test_the_corpus_keeps_its_readmes() -> None:
    readmes = ["STREAMS-MANIFEST.md", "sse/real/MANIFEST.md", "sse/peers/MANIFEST.md", "peers-formats/README.md"]
    assert [name for name in readmes if not (FIXTURES / name).is_file()] == []
    assert (ROOT / "tests" / "corpus" / "README.md").is_file()


@pytest.mark.server  # runs git
def test_git_stores_the_corpus_bytes_unconverted() -> None:
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    probe = [f"tests/corpus/fixtures/{name}" for name in ("sse/real/x.sse", "messages/x.expected.json", "x.md")]
    done = subprocess.run([git, "check-attr", "text", "eol", "whitespace", "--", *probe],
                          cwd=ROOT, capture_output=True, text=True, check=True)
    attributes = {tuple(line.rsplit(": ", 2)[1:]) for line in done.stdout.splitlines()}
    assert attributes == {("text", "unset"), ("eol", "unspecified"), ("whitespace", "unset")}, done.stdout
