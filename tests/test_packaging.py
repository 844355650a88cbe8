"""The wheel and the sdist build from the local tree without a deprecation warning; the wheel carries its package
data and metadata (one version, the changelog's newest; Project-URLs; the three formats in the summary); the sdist
holds no part of the test suite; the README's editable install (no editable mode named: ``package-dir`` declares the
layout) leaves the packages visible to mypy from elsewhere, and its clone install line installs the package.

The tree is copied to a temporary directory first (a build writes ``build/`` and ``*.egg-info`` beside the sources).
When the running environment already has the build requirement (``setuptools>=77``), the build is fully offline:
``pip wheel --no-deps --no-build-isolation --no-index``. Otherwise pip builds in an isolated environment, which
fetches setuptools from the configured index (the only case that needs one).
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

import pipeline

pytestmark = pytest.mark.server  # tests/tiers.py

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
    shutil.copytree(ROOT / "tests", tree / "tests", ignore=ignore)  # so that the sdist has a suite to leave out
    for name in ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "MANIFEST.in"):
        shutil.copy2(ROOT / name, tree / name)
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "-v", "-w", str(out), str(tree)]
    if _setuptools_version() >= BUILD_REQUIREMENT:
        command += ["--no-build-isolation", "--no-index"]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    (wheel,) = out.glob("llm_stream_pipeline-*.whl")
    return output, wheel


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory, built: tuple[str, Path]) -> list[str]:
    """The member names of the sdist, built from the same copied tree with setuptools' PEP 517 hook."""
    tree = built[1].parents[1] / "tree"
    out = tmp_path_factory.mktemp("sdist")
    code = "import sys; from setuptools import build_meta; print(build_meta.build_sdist(sys.argv[1]))"
    done = subprocess.run(
        [sys.executable, "-c", code, str(out)], cwd=tree, capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (archive,) = out.glob("llm_stream_pipeline-*.tar.gz")
    with tarfile.open(archive) as members:
        return [name.partition("/")[2] for name in members.getnames()]


def _metadata(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        (metadata_name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return archive.read(metadata_name).decode().splitlines()


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
    lines = _metadata(built[1])
    assert "License-Expression: MIT" in lines
    assert "Requires-Python: >=3.11" in lines
    classifiers = {line.removeprefix("Classifier: ") for line in lines if line.startswith("Classifier:")}
    # 3.11 in CI; 3.12 and 3.13: the whole suite passed on them (CHANGELOG 0.2.0). 3.14 is not claimed.
    assert {f"Programming Language :: Python :: 3.{minor}" for minor in (11, 12, 13)} <= classifiers
    assert "Programming Language :: Python :: 3.14" not in classifiers
    assert "Operating System :: POSIX :: Linux" in classifiers
    assert "Typing :: Typed" in classifiers


def test_the_version_has_one_source_which_the_changelog_names(built: tuple[str, Path]) -> None:
    version = next(line.removeprefix("Version: ") for line in _metadata(built[1]) if line.startswith("Version: "))
    newest = re.search(r"^## \[(\d+\.\d+\.\d+[^\]]*)\]", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    assert newest is not None, "CHANGELOG.md has no released version heading (## [X.Y.Z] - date)"
    assert version == pipeline.__version__ == newest.group(1)
    assert built[1].name.startswith(f"llm_stream_pipeline-{pipeline.__version__}-")


def test_the_installed_distribution_reports_the_same_version() -> None:
    try:
        installed = importlib.metadata.version("llm-stream-pipeline")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("run from a source tree that was never installed")
    assert installed == pipeline.__version__, "a stale install: run the README's pip install -e again"


def test_the_metadata_has_project_urls_keywords_and_names_the_three_formats(built: tuple[str, Path]) -> None:
    lines = _metadata(built[1])
    urls = {line.removeprefix("Project-URL: ").partition(", ")[0] for line in lines if line.startswith("Project-URL:")}
    assert {"Homepage", "Documentation", "Repository", "Issues", "Changelog"} <= urls
    summary = next(line.removeprefix("Summary: ") for line in lines if line.startswith("Summary: "))
    assert all(name in summary for name in ("chat completions", "Messages API", "Responses API"))
    keywords = next(line.removeprefix("Keywords: ") for line in lines if line.startswith("Keywords: "))
    assert {"llm", "sse", "openai", "anthropic"} <= set(keywords.split(","))


def test_the_wheel_holds_no_part_of_the_test_suite_nor_its_corpus(built: tuple[str, Path]) -> None:
    names = zipfile.ZipFile(built[1]).namelist()
    assert not [name for name in names if name.startswith("tests/") or "corpus" in name or "fixtures" in name]
    streams = [name for name in names if name.endswith(".sse")]
    assert streams
    assert all(name.startswith("pipeline/compose/examples/") for name in streams), streams


def test_the_sdist_holds_no_part_of_the_test_suite(sdist: list[str]) -> None:
    assert not [name for name in sdist if name.startswith("tests/")]
    assert {"pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "pipeline/py.typed", "operators/py.typed"} <= set(
        sdist
    )


SETUP = re.compile(r"pip install (?:--quiet )?-e '\.\[[a-z,]+\]'(?P<options>[^\n&#]*)")
"""An editable install of the clone with its extras, and whatever options follow it on the line."""


def _editable_installs() -> dict[str, list[str]]:
    """The options each set-up (README, CONTRIBUTING, .ci/run) gives its editable install."""
    found = {}
    for name in ("README.md", "CONTRIBUTING.md", ".ci/run"):
        match = SETUP.search((ROOT / name).read_text(encoding="utf-8"))
        assert match is not None, f"{name} has no `pip install -e '.[...]'` set-up command"
        found[name] = shlex.split(match.group("options"))
    return found


def test_every_set_up_installs_editable_the_default_way() -> None:
    """No ``--config-settings editable_mode=...``: the mode setuptools says is transitional (compat) is not needed,
    since ``package-dir`` declares the layout (decision 0053)."""
    assert _editable_installs() == {"README.md": [], "CONTRIBUTING.md": [], ".ci/run": []}


def _fresh_env(base: Path) -> Path:
    """A fresh environment's python, without pip's own copy: the running one's packages through a .pth file."""
    env_dir = base / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=120)
    python = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()
    Path(site, "running-env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return python


def _copy_tree(tree: Path) -> Path:
    for name in ("operators", "pipeline"):
        shutil.copytree(ROOT / name, tree / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, tree / name)
    (tree / "tests").mkdir()  # what else sits beside the packages in a clone
    (tree / "tests" / "conftest.py").write_text("", encoding="utf-8")
    return tree


def _site_packages(python: Path) -> Path:
    return Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True, timeout=60,
        ).stdout.strip()
    )


OFFLINE = ["--no-deps", "--no-index", "--no-build-isolation"]
"""What makes the test's installs offline: the running environment already holds every dependency."""


def _clean_env() -> dict[str, str]:
    """The environment without ``PYTHONPATH``: the fresh environment finds the packages only as it installed them."""
    return {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}


def test_the_readmes_editable_install_is_one_path_line_visible_to_mypy_from_any_folder(tmp_path: Path) -> None:
    """The project installed as the README says (``pip install -e``, no option), then ``mypy --strict`` on a file
    outside the checkout that imports the packages: setuptools writes one ``.pth`` line naming the tree (no import
    hook, which mypy cannot follow) and says nothing of a transitional mode."""
    tree = _copy_tree(tmp_path / "tree")
    python = _fresh_env(tmp_path)
    install = [str(python), "-m", "pip", "install", *OFFLINE, "-v", "-e", str(tree), *_editable_installs()["README.md"]]
    done = subprocess.run(install, env=_clean_env(), capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "transitional" not in done.stdout + done.stderr
    site = _site_packages(python)
    (pth,) = site.glob("__editable__.llm_stream_pipeline-*.pth")
    assert pth.read_text(encoding="utf-8").split() == [str(tree.resolve())]
    assert not list(site.glob("__editable__*finder*.py"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "app.py").write_text(
        "import pipeline\nfrom operators import Chunk\n\n"
        "def count(chunks: list[Chunk]) -> int:\n    return len(chunks)\n\n"
        "print(count(pipeline.collect(pipeline.example_path().read_bytes())), pipeline.__version__)\n",
        encoding="utf-8",
    )
    checked = subprocess.run(
        [str(python), "-m", "mypy", "--strict", "--no-incremental", "app.py"],
        cwd=elsewhere, env=_clean_env(), capture_output=True, text=True, check=False, timeout=600,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    ran = subprocess.run(
        [str(python), "app.py"], cwd=elsewhere, env=_clean_env(), capture_output=True, text=True, timeout=120
    )
    assert ran.stdout.split() == [ran.stdout.split()[0], pipeline.__version__], ran.stderr


def test_the_readmes_clone_install_line_installs_the_package(tmp_path: Path) -> None:
    """The README's first install line, run as written after its ``git clone`` (here: a copy of the tree under the
    clone's name) and made offline, installs a package that imports and runs from another folder."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^git clone <repository-url> (\S+) && (pip install '[^']+')$", readme, re.MULTILINE)
    assert match is not None, "the README has no `git clone <repository-url> DIR && pip install './DIR[...]'` line"
    _copy_tree(tmp_path / match.group(1))
    python = _fresh_env(tmp_path)
    command = shlex.split(match.group(2))
    done = subprocess.run(
        [str(python), "-m", *command[:2], *OFFLINE, *command[2:]],
        cwd=tmp_path, env=_clean_env(), capture_output=True, text=True, check=False, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    site = _site_packages(python)
    assert (site / "pipeline" / "py.typed").is_file()  # a copy, not an editable link
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ran = subprocess.run(
        [str(python), "-c", "import pipeline; print(pipeline.__file__, pipeline.__version__)"],
        cwd=elsewhere, env=_clean_env(), capture_output=True, text=True, check=False, timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    where, version = ran.stdout.split()
    assert Path(where).is_relative_to(site)
    assert version == pipeline.__version__
