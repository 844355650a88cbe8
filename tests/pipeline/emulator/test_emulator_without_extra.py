"""Without the ``emulator`` extra (starlette, uvicorn), ``pipeline`` and ``pipeline.emulator`` still import, the
profiles and scripts work, and serving fails with an ImportError that says what to install."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.server  # tests/tiers.py

ROOT = Path(__file__).resolve().parents[3]

BLOCK_THE_EXTRA = """
import sys
sys.modules["starlette"] = None
sys.modules["uvicorn"] = None
"""


def run(code: str, *, block_the_extra: bool = True) -> subprocess.CompletedProcess[str]:
    script = (BLOCK_THE_EXTRA if block_the_extra else "import sys\n") + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )


def test_the_emulator_imports_and_scripts_without_the_extra() -> None:
    result = run(
        """
        import pipeline
        import pipeline.emulator
        from pipeline.emulator import PROFILES, EmulatorConfig, ScriptOptions, build_script

        assert "clean" in pipeline.emulator.PROFILES
        assert build_script("clean", ScriptOptions()).body.endswith(b"data: [DONE]\\n\\n")
        EmulatorConfig(default_profile="seed-bug")
        for name in ("Emulator", "create_app", "run_emulator"):
            try:
                getattr(pipeline.emulator, name)()
            except ImportError as error:
                assert "pip install 'llm-stream-pipeline[emulator]'" in str(error), error
            else:
                raise AssertionError(f"{name} worked without starlette and uvicorn")
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_from_pipeline_emulator_import_emulator_names_the_extra() -> None:
    result = run("from pipeline.emulator import Emulator\n")
    assert result.returncode != 0
    assert "pip install 'llm-stream-pipeline[emulator]'" in result.stderr


def test_importing_the_emulator_does_not_import_starlette_or_uvicorn() -> None:
    result = run(
        """
        import pipeline.emulator
        from pipeline.emulator import build_script

        build_script("seed-bug")
        print(sorted(name for name in ("starlette", "uvicorn") if name in sys.modules))
        """,
        block_the_extra=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_star_import_of_pipeline_works_without_the_extra() -> None:
    result = run(
        """
        from pipeline import *
        import pipeline.emulator

        assert pipeline.emulator.PROFILES
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr


CLI = "from pipeline.cli import main\nsys.exit(main({args!r}))\n"


def test_the_demo_says_what_it_skipped_and_how_to_get_it() -> None:
    result = run(CLI.format(args=["demo", "--color", "never"]))
    assert result.returncode == 0, result.stderr
    assert "call_00_glob" in result.stdout  # part 1 ran
    assert "== 2. Live requests to the gateway emulator: skipped" in result.stdout
    assert "pip install 'llm-stream-pipeline[emulator]'" in result.stdout


def test_the_demo_asked_for_its_live_part_fails_without_the_extra() -> None:
    result = run(CLI.format(args=["demo", "--live", "--color", "never"]))
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("llm-stream: the demo's live requests (part 2)")


@pytest.mark.parametrize(
    ("args", "extra"),
    [(["emulate", "--port", "0"], "emulator"), (["proxy", "--upstream", "http://127.0.0.1:9/v1"], "proxy")],
)
def test_a_command_that_needs_the_extra_names_it_once(args: list[str], extra: str) -> None:
    result = run(CLI.format(args=args))
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.count(f"pip install 'llm-stream-pipeline[{extra}]'") == 1
