"""The generated documentation agrees with the code and the corpus it is generated from.

- ``docs/protocol.md``: the error-code table between ``<!-- codes:begin -->`` and ``<!-- codes:end -->`` is exactly
  what ``scripts/gen_docs.py`` generates from ``operators.CODES``.
- ``docs/operators.md``: the operator sections between ``<!-- operators:begin -->`` and ``<!-- operators:end -->`` are
  exactly what ``scripts/gen_docs.py`` generates from the factories' docstrings, each of which carries its marble
  diagram (the one copy: no module docstring draws one).
- ``docs/gateways.md``: exactly what ``scripts/gen_gateways.py`` generates from the real-stream corpus (skipped when
  the corpus is not there).

Fix a failure by running the script named in the message, and commit the regenerated page.
"""

from __future__ import annotations

import ast
import json
import pydoc
import re
from pathlib import Path

import pytest

import operators
from operators import CODES, CodeInfo
from scripts import gen_docs, gen_gateways

DOCS = Path(__file__).resolve().parents[1] / "docs"
MARBLE_LINE = re.compile(r"^\s*(in|out|bytes|attempt \d):\s+--", re.M)


def test_protocol_code_table_matches_operators_codes() -> None:
    diff = gen_docs.check(DOCS / "protocol.md")

    assert not diff, "docs/protocol.md is out of date: run python scripts/gen_docs.py\n" + "\n".join(diff)


def test_the_code_table_lists_every_code_with_its_retryability() -> None:
    table = gen_docs.codes_table()

    for info in CODES.values():
        assert f"| `{info.code}` | {'yes' if info.retryable else 'no'} |" in table


def test_check_reports_a_drifted_table(tmp_path: Path) -> None:
    page = tmp_path / "protocol.md"
    page.write_text((DOCS / "protocol.md").read_text(encoding="utf-8"), encoding="utf-8")
    extra = {**CODES, "NEW_CODE": CodeInfo("NEW_CODE", True, "a code added to the table but not to the docs")}

    diff = gen_docs.check(page, extra)

    assert any("NEW_CODE" in line for line in diff)


def test_check_rejects_a_page_without_markers(tmp_path: Path) -> None:
    page = tmp_path / "protocol.md"
    page.write_text("# no table here\n", encoding="utf-8")

    with pytest.raises(ValueError, match="codes:begin"):
        gen_docs.check(page)


def test_operators_page_matches_the_factories_docstrings() -> None:
    diff = gen_docs.check_operators(DOCS / "operators.md")

    assert not diff, "docs/operators.md is out of date: run python scripts/gen_docs.py\n" + "\n".join(diff)


@pytest.mark.parametrize(("name", "title"), gen_docs.OPERATORS, ids=[name for name, _ in gen_docs.OPERATORS])
def test_help_shows_each_operators_marble_diagram(name: str, title: str) -> None:
    shown = pydoc.render_doc(getattr(operators, name), renderer=pydoc.plaintext)  # type: ignore[attr-defined]

    assert MARBLE_LINE.search(shown), f"help(operators.{name}) shows no marble diagram"
    assert MARBLE_LINE.search(gen_docs.operator_section(getattr(operators, name), title))


def test_every_public_operator_factory_has_a_section() -> None:
    documented = {name for name, _ in gen_docs.OPERATORS}
    rules = {"coalesce_identity", "accumulate_arguments", "close_on_done", "classify_finish", "retry_when_retryable"}
    factories = {name for name in operators.__all__ if name.startswith("parse_") or name in rules}

    assert documented == factories


def test_no_module_docstring_draws_a_marble_of_its_own() -> None:
    package = Path(operators.__file__).parent
    drawn = [
        path.name
        for path in sorted(package.rglob("*.py"))
        if MARBLE_LINE.search(ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or "")
    ]

    assert drawn == [], "a marble diagram belongs on its factory's docstring, once"


def test_check_operators_reports_a_page_that_drifted(tmp_path: Path) -> None:
    page = tmp_path / "operators.md"
    text = (DOCS / "operators.md").read_text(encoding="utf-8")
    edited = text.replace("## `classify_finish()`", "## `classify_finish()`\n\nEdited by hand.")
    page.write_text(edited, encoding="utf-8")

    diff = gen_docs.check_operators(page)

    assert any("Edited by hand." in line for line in diff)


def test_check_operators_rejects_a_page_without_markers(tmp_path: Path) -> None:
    page = tmp_path / "operators.md"
    page.write_text("# no sections here\n", encoding="utf-8")

    with pytest.raises(ValueError, match="operators:begin"):
        gen_docs.check_operators(page)


def test_gateways_page_matches_the_corpus() -> None:
    fixtures = gen_gateways.find_fixtures()
    assert fixtures is not None, "no real-stream corpus: tests/corpus/fixtures/sse/real, or LLM_STREAM_FIXTURES"

    diff = gen_gateways.check(fixtures, DOCS / "gateways.md")

    assert not diff, "docs/gateways.md is out of date: run python scripts/gen_gateways.py\n" + "\n".join(diff[:80])


NOTEBOOKS = sorted((DOCS.parent / "notebooks").glob("*.ipynb"))
MACHINE_PATHS = ("/work/", "/home/", "/root/", "/Users/", "/tmp/", "C:\\")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.name)
def test_a_notebook_is_committed_with_its_outputs_and_no_machine_path(notebook: Path) -> None:
    cells = [cell for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"] if cell["cell_type"] == "code"]
    ran = [cell.get("execution_count") is not None for cell in cells if "".join(cell["source"]).strip()]
    hint = f"{notebook.name} is committed unexecuted: run jupyter nbconvert --execute --to notebook --inplace"
    assert all(ran), hint
    assert any(cell.get("outputs") for cell in cells), hint
    outputs = json.dumps([cell["outputs"] for cell in cells])
    assert not [path for path in MACHINE_PATHS if path in outputs]


def test_the_docs_site_lists_the_notebooks_and_the_changelog() -> None:
    assert (DOCS / "notebooks").resolve() == (DOCS.parent / "notebooks").resolve()
    assert (DOCS / "changelog.md").read_text(encoding="utf-8").strip() == '--8<-- "CHANGELOG.md"'
    config = (DOCS.parent / "mkdocs.yml").read_text(encoding="utf-8")
    assert "strict: true" in config
    assert all(name in config for name in ("mkdocstrings", "mkdocs-jupyter", "execute: false"))
