"""``llm-stream chat --tools NAME`` with ``NAME.py`` in the current folder (issue 35 item 3): found as ``python -m``
would find it (the console script's import path does not hold the current folder), its own imports of its
neighbours included; a name found nowhere says how to name a module or a file."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.emulator import Emulator

ENV_VARS = ("LLM_STREAM_BASE_URL", "LLM_STREAM_API_KEY", "LLM_STREAM_MODEL", "DEEPSEEK_API_KEY", "OPENAI_API_KEY",
            "OPENAI_BASE_URL")
TOOLS = '''
from {helpers} import forecast


def get_weather(city: str) -> str:
    """Current weather in a city."""
    return forecast(city)


TOOLS = [get_weather]
'''


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A tmp folder as the current folder; the import path and the imported modules as they were afterwards."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        del sys.modules[name]


def _names() -> tuple[str, str]:
    unique = uuid.uuid4().hex[:8]
    return f"mytools_{unique}", f"helpers_{unique}"


def test_a_module_in_the_current_folder_is_found_by_its_name(
    folder: Path, emu: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    name, helpers = _names()
    (folder / f"{name}.py").write_text(TOOLS.format(helpers=helpers), encoding="utf-8")
    (folder / f"{helpers}.py").write_text("def forecast(city: str) -> str:\n    return f'sunny in {city}'\n")
    before = len(emu.state.requests)

    status = main(["chat", "hi", "--base-url", emu.base_url, "--model", "clean-tool", "--tools", name,
                   "--max-steps", "1"])

    err = capsys.readouterr().err
    assert "No module named" not in err
    assert status in (0, 1), err  # 1: the one step allowed ran out with a call still to answer
    first = emu.state.requests[before]
    assert [tool["function"]["name"] for tool in first.body["tools"]] == ["get_weather"]


def test_a_name_found_nowhere_says_how_to_name_it(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name, _ = _names()

    assert main(["chat", "hi", "--base-url", "http://127.0.0.1:9/v1", "--tools", name]) == 2

    (line,) = capsys.readouterr().err.splitlines()
    assert f"No module named '{name}'" in line
    assert f"--tools path/to/{name}.py" in line
    assert str(folder) not in sys.path


def test_a_path_to_the_file_still_works_and_leaves_the_import_path_alone(
    folder: Path, emu: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    name, _ = _names()
    source = TOOLS.format(helpers="os.path").replace("import forecast", "import basename as forecast")
    (folder / f"{name}.py").write_text(source, encoding="utf-8")
    before = len(emu.state.requests)

    status = main(["chat", "hi", "--base-url", emu.base_url, "--model", "clean-tool", "--tools", f"./{name}.py",
                   "--max-steps", "1"])

    assert status in (0, 1), capsys.readouterr().err
    assert emu.state.requests[before].body["tools"][0]["function"]["name"] == "get_weather"
    assert str(folder) not in sys.path
