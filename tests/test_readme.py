"""Every code block of README.md, CONTRIBUTING.md and docs/ runs as written, or is a fragment (docs/writing-docs.md).

- ```` ```python ```` blocks run, each in a fresh namespace, in a temporary folder (a snippet that writes a session
  file writes it there). A snippet naming ``http://127.0.0.1:8808`` (the address of ``llm-stream emulate``, with or
  without ``/v1``) runs against an emulator the test starts on a free port; the README's own snippets start theirs.
- Blocks without a language, or ```` ```text ````, are output or diagrams, not code.
- Any other block (bash, ini, dockerfile, ...), or a Python block that cannot run alone, carries the marker
  ``<!-- fragment: why -->`` on the line before its fence, and is not run.

The README's first screen (its first 40 lines) holds the install lines (from a clone or a git URL: the package is not
on PyPI yet, and the README and docs/index.md say so where a reader sees it) and the four-row "you use ... -> use ..."
table, each row linking to a section of the README with a block that runs.

Every README ```` ```python ```` block also passes ``mypy --strict`` (what a newcomer's editor or CI says of a
pasted snippet).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from pipeline.emulator import Emulator

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
LIVE_URL = "http://127.0.0.1:8808"
FENCE = re.compile(r"^```([\w-]*)\s*$")
FRAGMENT = re.compile(r"^<!-- fragment(?::[^>]*)? -->$")
NOT_CODE = frozenset({"", "text"})


@attrs.frozen
class Block:
    page: Path
    line: int
    """1-based line of the opening fence."""
    language: str
    code: str
    fragment: bool

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT).as_posix()}:{self.line}"


def blocks_of(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    number = 0
    while number < len(lines):
        opening = FENCE.match(lines[number])
        if opening is None:
            number += 1
            continue
        end = next((i for i in range(number + 1, len(lines)) if lines[i].strip() == "```"), None)
        assert end is not None, f"{page}:{number + 1}: a code fence that never closes"
        before = next((lines[i].strip() for i in range(number - 1, -1, -1) if lines[i].strip()), "")
        code = "\n".join(lines[number + 1 : end]) + "\n"
        found.append(Block(page, number + 1, opening.group(1), code, FRAGMENT.match(before) is not None))
        number = end + 1
    return found


BLOCKS = [block for page in PAGES for block in blocks_of(page)]
RUNNABLE = [block for block in BLOCKS if block.language == "python" and not block.fragment]


def test_the_readme_and_the_docs_have_runnable_blocks() -> None:
    assert len([block for block in RUNNABLE if block.page == README]) >= 4
    assert len({block.page for block in RUNNABLE}) >= 6


@pytest.mark.parametrize("block", [b for b in BLOCKS if b not in RUNNABLE], ids=lambda block: block.name)
def test_a_block_that_does_not_run_is_output_or_marked_as_a_fragment(block: Block) -> None:
    assert block.language in NOT_CODE or block.fragment, (
        f"{block.name}: a ```{block.language} block is neither run nor marked: put <!-- fragment: why --> on the "
        "line before it, or make it a ```python block that runs alone"
    )


@pytest.mark.server
@pytest.mark.parametrize("block", RUNNABLE, ids=lambda block: block.name)
def test_a_python_block_runs(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code = block.code
    if LIVE_URL in code:
        with Emulator() as emulator:
            code = code.replace(LIVE_URL, emulator.url)
            exec(compile(code, block.name, "exec"), {"__name__": "docs"})
    else:
        exec(compile(code, block.name, "exec"), {"__name__": "docs"})
    if block.page == README:
        assert capsys.readouterr().out  # each README snippet shows its result


def install_lines(page: Path) -> list[str]:
    """The lines of the page's first block that installs the package (a ``pip install`` of it)."""
    for block in blocks_of(page):
        lines = [line.strip() for line in block.code.splitlines()]
        if any("pip install" in line and "llm-stream-pipeline" in line for line in lines):
            return lines
    raise AssertionError(f"{page.name} has no block that installs the package")


def _visible(text: str) -> str:
    """The text without its HTML comments (what a reader sees on GitHub and in the site)."""
    return re.sub(r"<!--.*?-->", "", text, flags=re.S)


@pytest.mark.parametrize("page", [README, ROOT / "docs" / "index.md"], ids=lambda page: page.name)
def test_the_install_lines_work_without_the_package_index_and_say_so(page: Path) -> None:
    lines = install_lines(page)
    assert not [line for line in lines if re.match(r"pip install ['\"]?llm-stream-pipeline\b(?!.* @ )", line)], (
        "the package is not on PyPI: no bare `pip install llm-stream-pipeline`"
    )
    clone = [line for line in lines if line.startswith("git clone ")]
    assert clone, "the clone form"
    assert re.search(r"&& pip install '\./llm-stream-pipeline\[[a-z,]+\]'$", clone[0]), clone[0]
    assert any(re.match(r"pip install 'llm-stream-pipeline\[[a-z,]+\] @ git\+", line) for line in lines), "the git form"
    assert "not on PyPI yet" in _visible(page.read_text(encoding="utf-8"))


@pytest.mark.parametrize("page", [README, ROOT / "docs" / "index.md"], ids=lambda page: page.name)
def test_the_extras_are_named_for_what_they_give(page: Path) -> None:
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    sentence = next(line for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("The extras:"))
    named = dict(re.findall(r"`\[([a-z]+)\]` for ([^,]+)", sentence))
    assert set(named) == {"proxy", "emulator"}, sentence
    assert "llm-stream proxy" in named["proxy"]
    assert "proxy" not in named["emulator"]
    assert {"prometheus-client>=0.20", "uvicorn>=0.29"} <= set(extras["proxy"])
    assert "starlette>=0.37" in extras["emulator"]


@pytest.mark.server
def test_the_readme_blocks_pass_mypy_strict(tmp_path: Path) -> None:
    blocks = [block for block in RUNNABLE if block.page == README]
    files = []
    for block in blocks:
        path = tmp_path / f"readme_line_{block.line}.py"
        path.write_text(block.code, encoding="utf-8")
        files.append(str(path))
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--config-file", str(ROOT / "pyproject.toml"), *files],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]


def test_the_first_screen_has_the_install_lines_and_the_four_entry_points() -> None:
    text = README.read_text(encoding="utf-8")
    first_screen = text.splitlines()[:40]
    assert set(install_lines(README)) <= {line.strip() for line in first_screen}
    rows = [line for line in first_screen if line.startswith("| ") and not line.startswith("| You use")]
    assert len(rows) == 4, rows
    sections = {_anchor(part.partition("\n")[0]): part for part in text.split("\n## ")[1:]}
    names = ["SanitizingTransport", "llm-stream proxy", "run_turn", "llm-stream replay"]
    for row, name in zip(rows, names, strict=True):
        assert name in row
        (link,) = re.findall(r"\]\(#([\w-]+)\)", row)
        assert link in sections, f"{link} is not a README section"
        assert "```python" in sections[link], f"the section {link} has no runnable example"


def test_the_readme_speaks_no_internal_jargon() -> None:
    text = README.read_text(encoding="utf-8")
    for phrase in ("the seed's", "anchor", "TC-", "variant B", "../shared", "reference 4."):
        assert phrase not in text


def _anchor(heading: str) -> str:
    """GitHub's and mkdocs' anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
