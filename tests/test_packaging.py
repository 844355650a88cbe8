"""The wheel builds from the local tree without a deprecation warning, and carries its package data.

The tree is copied to a temporary directory first (a build writes ``build/`` and ``*.egg-info`` beside the sources).
When the running environment already has the build requirement (``setuptools>=77``), the build is fully offline:
``pip wheel --no-deps --no-build-isolation --no-index``. Otherwise pip builds in an isolated environment, which
fetches setuptools from the configured index (the only case that needs one).
"""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
BUILD_REQUIREMENT = (77, 0)


def _setuptools_version() -> tuple[int, ...]:
    try:
        version = importlib.metadata.version("setuptools")
    except importlib.metadata.PackageNotFoundError:
        return ()
    return tuple(int(part) for part in re.findall(r"\d+", version)[:2])


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """``(pip's output, the wheel)``, built once for the module."""
    base = tmp_path_factory.mktemp("packaging")
    tree, out = base / "tree", base / "dist"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("operators", "pipeline"):
        shutil.copytree(ROOT / name, tree / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, tree / name)
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "-v", "-w", str(out), str(tree)]
    if _setuptools_version() >= BUILD_REQUIREMENT:
        command += ["--no-build-isolation", "--no-index"]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    (wheel,) = out.glob("llm_stream_pipeline-*.whl")
    return output, wheel


def test_the_wheel_builds_without_a_deprecation_warning(built: tuple[str, Path]) -> None:
    output, _ = built
    lines = [line for line in output.splitlines() if "deprecat" in line.lower()]
    assert not lines, "\n".join(lines)


def test_the_wheel_carries_py_typed_and_the_bundled_examples(built: tuple[str, Path]) -> None:
    _, wheel = built
    names = set(zipfile.ZipFile(wheel).namelist())
    examples = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "pipeline/compose/examples").glob("*.sse"))
    assert examples
    assert {"operators/py.typed", "pipeline/py.typed", *examples} <= names


def test_the_wheel_metadata_states_the_license_the_pythons_and_the_systems(built: tuple[str, Path]) -> None:
    _, wheel = built
    with zipfile.ZipFile(wheel) as archive:
        (metadata_name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = archive.read(metadata_name).decode()
    assert "License-Expression: MIT" in metadata.splitlines()
    assert "Requires-Python: >=3.11" in metadata.splitlines()
    lines = metadata.splitlines()
    classifiers = {line.removeprefix("Classifier: ") for line in lines if line.startswith("Classifier:")}
    assert {f"Programming Language :: Python :: 3.{minor}" for minor in (11, 12)} <= classifiers
    assert "Programming Language :: Python :: 3.13" not in classifiers  # not claimed before a run on 3.13
    assert "Operating System :: POSIX :: Linux" in classifiers
    assert "Typing :: Typed" in classifiers
