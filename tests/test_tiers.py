"""The tiers of tests/tiers.py: a test that starts a subprocess without the ``server`` marker fails, naming it; with
the marker it passes; ``--fast`` runs only the unmarked tests and does not import a module marked ``slow``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.server  # runs pytest in a subprocess

TESTS = Path(__file__).resolve().parent
SPAWNS = "import subprocess, sys\n\ndef test_spawns():\n    subprocess.run([sys.executable, '-c', ''], check=True)\n"


def _pytest(folder: Path, *options: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:nbmake", "-q", *options]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tiers"]\n', encoding="utf-8")
    (tmp_path / "test_unmarked.py").write_text(SPAWNS, encoding="utf-8")
    marked = "import pytest\n\npytestmark = pytest.mark.server\n" + SPAWNS
    (tmp_path / "test_marked.py").write_text(marked, encoding="utf-8")
    unit = "import pytest\n\ndef test_adds():\n    assert 1 + 1 == 2\n\n"
    unit += "@pytest.mark.slow\ndef test_sweeps():\n    pass\n"
    (tmp_path / "test_unit.py").write_text(unit, encoding="utf-8")
    (tmp_path / "test_heavy.py").write_text(
        'import pytest\n\npytestmark = pytest.mark.slow\nraise RuntimeError("a slow module was imported")\n',
        encoding="utf-8",
    )
    return tmp_path


def test_a_subprocess_fails_the_test_without_the_server_marker_and_not_with_it(suite: Path) -> None:
    (suite / "test_heavy.py").unlink()
    ran = _pytest(suite, "-rA")
    assert "FAILED test_unmarked.py::test_spawns" in ran.stdout, ran.stdout
    assert "is not marked `server`" in ran.stdout
    assert "PASSED test_marked.py::test_spawns" in ran.stdout
    assert "PASSED test_unit.py::test_adds" in ran.stdout


def test_fast_runs_only_the_unmarked_tests_and_never_imports_a_slow_module(suite: Path) -> None:
    (suite / "test_unmarked.py").unlink()
    ran = _pytest(suite, "--fast", "-rA")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "PASSED test_unit.py::test_adds" in ran.stdout
    assert "test_marked.py" not in ran.stdout
    assert "test_sweeps" not in ran.stdout
    assert "1 passed, 1 deselected" in ran.stdout


def test_no_property_example_has_a_deadline_unless_its_test_sets_one() -> None:
    from hypothesis import settings

    assert settings.default is not None
    assert settings.default.deadline is None  # the suite's profile (tests/tiers.py), loaded for every run
