"""The CLI sits at the top of the dependency graph: nothing else imports it, its modules import each other without a
cycle (function-level imports included), and it reaches other subpackages only through their public faces."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CLI = ROOT / "pipeline" / "cli"


def _imports(path: Path) -> list[str]:
    """Every module ``path`` imports, anywhere in the file, as an absolute dotted name."""
    package = "pipeline.cli" if path.parent == CLI else ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            names.append(base)
            names.extend(f"{base}.{alias.name}" for alias in node.names)
    return names


def _is_cli(name: str) -> bool:
    return name == "pipeline.cli" or name.startswith("pipeline.cli.")


def test_nothing_outside_the_cli_imports_it() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for top in ("pipeline", "operators")
        for path in (ROOT / top).rglob("*.py")
        if CLI not in path.parents and any(_is_cli(name) for name in _imports(path))
    ]

    assert offenders == []


def test_the_cli_modules_import_each_other_without_a_cycle() -> None:
    graph = {
        path.stem: {name.split(".")[2] for name in _imports(path) if name.startswith("pipeline.cli.")} - {path.stem}
        for path in CLI.glob("*.py")
    }
    done: set[str] = set()

    def visit(module: str, trail: tuple[str, ...]) -> None:
        assert module not in trail, f"import cycle: {' -> '.join([*trail, module])}"
        if module in done:
            return
        for other in sorted(graph.get(module, set())):
            visit(other, (*trail, module))
        done.add(module)

    for module in sorted(graph):
        visit(module, ())


def test_other_subpackages_are_reached_through_their_faces() -> None:
    private = [
        f"{path.name}: {name}"
        for path in CLI.glob("*.py")
        for name in _imports(path)
        if name.startswith(("pipeline.", "operators."))
        and not _is_cli(name)
        and any(part.startswith("_") for part in name.split(".")[1:-1])
    ]

    assert private == []
