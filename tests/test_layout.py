"""The layout rules of the library, checked on the source with ``ast`` (nothing under test is imported).

- no module of ``operators/`` or ``pipeline/`` is over 300 lines (the developers' guide's limit);
- no import cycle among those modules, imports inside functions (lazy imports) included;
- ``operators`` never imports ``pipeline``;
- no module imports a private module (``_x``) of another package: ``pipeline`` uses the public faces of
  ``operators`` and of its sibling subpackages; a package's own private helpers (``pipeline._json`` for every
  ``pipeline`` subpackage) are allowed;
- library docstrings and comments cite our own docs (``docs/decisions/NNNN-*.md``, ``docs/*.md``), not section
  numbers or case ids of the external reference.

The import graph has one node per module (a package is its ``__init__``) and one edge per import statement, wherever
it stands: ``import a.b`` and ``from a.b import name`` import ``a.b``; ``from a import b`` imports the submodule
``a.b`` when there is one; relative imports are resolved against the importing module's package. Imports of modules
outside the two packages are left out.
"""

from __future__ import annotations

import ast
import io
import itertools
import re
import tokenize
from collections.abc import Iterable, Iterator, Mapping
from functools import cache
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("operators", "pipeline")
MAX_LINES = 300
FOREIGN_CITATION = re.compile(r"§|dsh-behaviour|\breference [45]\.|\bTC-\d")


@attrs.frozen
class Import:
    """One import statement's target: the importing module, the imported module, and the line of the statement."""

    source: str
    target: str
    line: int


# -- the modules ------------------------------------------------------------------------------------------


@cache
def library_modules() -> Mapping[str, Path]:
    """Every module of the two packages by dotted name; a package is named by its ``__init__``."""
    modules: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def is_package(path: Path) -> bool:
    return path.name == "__init__.py"


@cache
def source_of(path: Path) -> str:
    return path.read_text(encoding="utf-8")


# -- the import graph -------------------------------------------------------------------------------------


def imports_of(module: str, source: str, package: bool, known: Iterable[str]) -> list[Import]:
    """Every import in ``source`` (module ``module``), lazy ones included, resolved to dotted module names."""
    known_names = set(known)
    found: list[Import] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [Import(module, alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = resolve_from(module, package, node.level, node.module)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                target = submodule if submodule in known_names else base
                found.append(Import(module, target, node.lineno))
    return list(dict.fromkeys(found))  # one per statement and target


def resolve_from(module: str, package: bool, level: int, name: str | None) -> str:
    """The absolute name of ``from <level dots><name> import ...`` written in ``module``."""
    if level == 0:
        assert name is not None
        return name
    parts = module.split(".") if package else module.split(".")[:-1]
    parts = parts[: len(parts) - (level - 1)]
    return ".".join([*parts, name] if name else parts)


def library_imports() -> list[Import]:
    """Every import, in every library module, of another library module."""
    modules = library_modules()
    found: list[Import] = []
    for module, path in modules.items():
        for imported in imports_of(module, source_of(path), is_package(path), modules):
            target = nearest_module(imported.target, modules)
            if target is not None and target != module:
                found.append(attrs.evolve(imported, target=target))
    return found


def nearest_module(name: str, modules: Mapping[str, Path]) -> str | None:
    """``name`` itself when it is a library module, else its longest prefix that is (``a.b.c`` -> ``a.b``)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


# -- cycles -----------------------------------------------------------------------------------------------


def strongly_connected_components(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative so that a deep graph cannot overflow the stack."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
    return components


def cycle_through(start: str, members: set[str], graph: Mapping[str, set[str]]) -> list[str]:
    """A shortest cycle from ``start`` back to itself inside one component: [start, ..., start]."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for successor in sorted(graph.get(node, set()) & members):
                if successor == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start] if node != start else [start, start]
                if successor not in previous:
                    previous[successor] = node
                    following.append(successor)
        frontier = following
    raise AssertionError(f"{start} is in no cycle")


def import_cycles(imports: Iterable[Import]) -> list[str]:
    """Each import cycle, written ``a -> b (a:12) -> a (b:30)``."""
    graph: dict[str, set[str]] = {}
    lines: dict[tuple[str, str], int] = {}
    for imported in imports:
        graph.setdefault(imported.source, set()).add(imported.target)
        graph.setdefault(imported.target, set())
        lines.setdefault((imported.source, imported.target), imported.line)
    cycles: list[str] = []
    for component in strongly_connected_components(graph):
        if len(component) < 2:
            continue
        path = cycle_through(component[0], set(component), graph)
        steps = [path[0]] + [f"{b} ({a}:{lines[a, b]})" for a, b in itertools.pairwise(path)]
        others = sorted(set(component) - set(path))
        also = f" (also tangled in it: {', '.join(others)})" if others else ""
        cycles.append(" -> ".join(steps) + also)
    return cycles


# -- private modules --------------------------------------------------------------------------------------


def private_owner(module: str) -> str | None:
    """The package whose private module ``module`` is (``pipeline.compose._x`` -> ``pipeline.compose``), or None."""
    parts = module.split(".")
    for position, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:position])
    return None


def is_within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


# -- comments and docstrings ------------------------------------------------------------------------------


def prose_of(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every comment and every string statement (docstrings, attribute docstrings)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for offset, text in enumerate(node.value.value.splitlines()):
                yield node.lineno + offset, text
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


# -- the rules --------------------------------------------------------------------------------------------


def test_no_module_is_over_300_lines() -> None:
    too_long = [
        f"{relative(path)}: {count} lines"
        for path in library_modules().values()
        if (count := len(source_of(path).splitlines())) > MAX_LINES
    ]

    assert not too_long, f"modules over {MAX_LINES} lines (split them by concept):\n" + "\n".join(too_long)


def test_no_import_cycle_including_lazy_imports() -> None:
    cycles = import_cycles(library_imports())

    assert not cycles, "import cycles (module:line of each import):\n" + "\n".join(cycles)


def test_operators_never_imports_pipeline() -> None:
    modules = library_modules()
    found = [
        f"{relative(modules[imported.source])}:{imported.line} imports {imported.target}"
        for module, path in modules.items()
        if is_within(module, "operators")
        for imported in imports_of(module, source_of(path), is_package(path), modules)
        if is_within(imported.target, "pipeline")
    ]

    assert not found, "operators must not depend on pipeline:\n" + "\n".join(found)


def test_no_module_imports_a_private_module_of_another_package() -> None:
    modules = library_modules()
    found: list[str] = []
    for module, path in modules.items():
        for imported in imports_of(module, source_of(path), is_package(path), modules):
            owner = private_owner(imported.target)
            if owner and owner.split(".")[0] in PACKAGES and not is_within(module, owner):
                found.append(
                    f"{relative(path)}:{imported.line} imports {imported.target}, private to {owner}: "
                    f"import the public name from {owner} instead"
                )

    assert not found, "imports of another package's private module:\n" + "\n".join(found)


def test_library_docstrings_and_comments_cite_our_own_docs() -> None:
    found = [
        f"{relative(path)}:{line}: {text.strip()}"
        for path in library_modules().values()
        for line, text in prose_of(source_of(path))
        if FOREIGN_CITATION.search(text)
    ]

    assert not found, (
        "cite docs/decisions/NNNN-*.md or docs/*.md, not the external reference's sections or case ids:\n"
        + "\n".join(found)
    )


# -- the checks themselves --------------------------------------------------------------------------------


def test_imports_are_resolved_relative_lazy_and_to_submodules() -> None:
    known = ["pkg", "pkg.sub", "pkg.sub._a", "pkg.sub._b", "pkg._helpers"]
    source = (
        "from . import _b\n"
        "from ._b import thing\n"
        "from .. import _helpers\n"
        "from pkg import sub\n"
        "import pkg.sub._b as b\n"
        "def later():\n"
        "    from .._helpers import other\n"
    )

    targets = [(i.target, i.line) for i in imports_of("pkg.sub._a", source, False, known)]

    assert sorted(targets) == [
        ("pkg._helpers", 3),
        ("pkg._helpers", 7),
        ("pkg.sub", 4),
        ("pkg.sub._b", 1),
        ("pkg.sub._b", 2),
        ("pkg.sub._b", 5),
    ]


def test_a_relative_import_in_a_package_init_is_resolved_against_the_package_itself() -> None:
    assert resolve_from("pkg.sub", True, 1, "_a") == "pkg.sub._a"
    assert resolve_from("pkg.sub._a", False, 1, "_b") == "pkg.sub._b"
    assert resolve_from("pkg.sub._a", False, 2, None) == "pkg"


def test_a_cycle_through_a_lazy_import_is_named_with_its_lines() -> None:
    imports = [Import("a", "b", 3), Import("b", "c", 5), Import("c", "a", 40), Import("c", "d", 6)]

    assert import_cycles(imports) == ["a -> b (a:3) -> c (b:5) -> a (c:40)"]


def test_an_acyclic_graph_has_no_cycle() -> None:
    assert import_cycles([Import("a", "b", 1), Import("b", "c", 1), Import("a", "c", 2)]) == []


def test_a_private_module_is_private_to_its_package() -> None:
    assert private_owner("pipeline.compose._assemble") == "pipeline.compose"
    assert private_owner("pipeline._json") == "pipeline"
    assert private_owner("operators.extend") is None
    assert is_within("pipeline.session._events", private_owner("pipeline._json") or "")
    assert not is_within("pipeline.session._events", private_owner("pipeline.compose._assemble") or "")


def test_foreign_citations_are_recognised_in_comments_and_docstrings() -> None:
    source = '"""See dsh-behaviour.md §4.3."""\nX = 1  # reference 5.2\n"""Our docs/decisions/0006-retry.md."""\n'

    flagged = [line for line, text in prose_of(source) if FOREIGN_CITATION.search(text)]

    assert flagged == [1, 2]
