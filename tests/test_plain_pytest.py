"""``python -m pytest`` needs no plugin it is not given: ``addopts`` names no plugin's option, and the notebooks turn
nbmake on themselves (``notebooks/conftest.py``), so a clone with only pytest runs ``tests/``; with nbmake installed,
the suite's own command still runs every notebook."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.server  # runs pytest in a subprocess

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(path.name for path in (ROOT / "notebooks").glob("*.ipynb"))


def _collect(*options: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "--collect-only", *options]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


def _notebooks(output: str) -> list[str]:
    """The notebooks a ``--collect-only`` listing names."""
    return [word.strip("<>") for word in output.split() if word.endswith(".ipynb>")]


def test_addopts_names_no_option_of_a_plugin() -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    assert options["addopts"].split() == ["-ra"]


def test_without_nbmake_the_tests_collect_and_the_notebooks_are_left_out_saying_so() -> None:
    ran = _collect("-p", "no:nbmake", "notebooks", "tests/test_exceptions.py")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "notebooks: not run (nbmake is not installed" in ran.stdout
    assert "test_every_exception_class_derives_from_the_root" in ran.stdout
    assert ".ipynb" not in ran.stdout


def test_with_nbmake_the_suites_command_collects_every_notebook_with_its_cell_timeout() -> None:
    pytest.importorskip("nbmake")
    ran = _collect("-m", "notebook")  # the suite's own command (testpaths), only the notebooks kept
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "notebooks: run by nbmake (120 s a cell)" in ran.stdout
    assert sorted(set(_notebooks(ran.stdout))) == NOTEBOOKS


def test_a_given_cell_timeout_wins() -> None:
    pytest.importorskip("nbmake")
    ran = _collect("--nbmake-timeout=30", "notebooks")
    assert "notebooks: run by nbmake (30 s a cell)" in ran.stdout, ran.stdout + ran.stderr
