"""The suite's tiers: which tests the contributor's fast loop runs (``python -m pytest --fast``, CONTRIBUTING.md).

Three markers (registered in ``pyproject.toml``) take a test out of the fast loop:

- ``server``: the test starts a loopback server or a subprocess (the emulator, a gateway, the proxy, the CLI, mypy).
  Given by rule to every test that uses the ``emu``, ``http``, ``fresh_emu`` or ``gateway`` fixture; a module that
  starts its own says ``pytestmark = pytest.mark.server``. The rule cannot rot: a test without the marker that
  starts a listening socket or a subprocess fails, naming the marker to add (``_Guard`` below).
- ``slow``: heavy in-process work (a sweep over the corpus, a property test drawing hundreds of examples).
- ``notebook``: a notebook run by nbmake, given to every ``.ipynb`` item.

``--fast`` deselects all three, the same as ``-m "not (server or slow or notebook)"``; the full suite
(``python -m pytest``, the README's command and ``.ci/run``'s) runs everything.
"""

from __future__ import annotations

import platform
import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

OUT_OF_THE_FAST_LOOP = ("server", "slow", "notebook")
FAST_EXAMPLES = 25
"""--fast draws this many examples for a property test that does not set its own count (hypothesis's default: 100)."""
SERVER_FIXTURES = frozenset({"emu", "http", "fresh_emu", "gateway"})
# a module-level `pytestmark = pytest.mark.server` (or a list holding it, or `slow`): --fast does not even import it
_MODULE_OUT = re.compile(r"^pytestmark = (?:\[[^\]]*|[^\n]*)pytest\.mark\.(?:server|slow)\b", re.MULTILINE)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fast",
        action="store_true",
        help="the contributor's loop: only the unit and property tests (deselects the server, slow and notebook marks)",
    )


def pytest_configure(config: pytest.Config) -> None:
    from hypothesis import settings

    # No example has a deadline: a time limit in a unit test fails on a busy shared machine, not on a defect (speed is
    # the benchmarks' to judge, benchmarks/README.md); a test that sets its own ``deadline=`` keeps it.
    settings.register_profile("suite", deadline=None)
    settings.register_profile("fast", parent=settings.get_profile("suite"), max_examples=FAST_EXAMPLES)
    settings.load_profile("fast" if config.getoption("fast") else "suite")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if not config.getoption("fast") or collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    return True if _MODULE_OUT.search(collection_path.read_text(encoding="utf-8")) else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.endswith(".ipynb") or ".ipynb::" in item.nodeid:
            item.add_marker(pytest.mark.notebook)
        if SERVER_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.server)
    if not config.getoption("fast"):
        return
    kept: list[pytest.Item] = []
    left_out: list[pytest.Item] = []
    for item in items:
        out = any(item.get_closest_marker(name) for name in OUT_OF_THE_FAST_LOOP)
        (left_out if out else kept).append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept


class _Guard:
    """Notes a listening socket or a subprocess started while a test without the ``server`` marker runs.

    Only noted, never refused (a server thread that raised would hang the test instead of failing it); the test
    fails after its own outcome, with the marker to add.
    """

    def __init__(self) -> None:
        self.watching = False
        self.seen: list[str] = []

    def note(self, what: str) -> None:
        if self.watching:
            self.seen.append(what)

    def install(self) -> None:
        listen = socket.socket.listen
        popen_init = subprocess.Popen.__init__

        def watched_listen(sock: socket.socket, *args: Any) -> None:
            self.note(f"a listening socket on {sock.getsockname()!r}")
            listen(sock, *args)

        def watched_popen_init(popen: subprocess.Popen[Any], args: Any, *rest: Any, **options: Any) -> None:
            self.note(f"a subprocess {args!r}"[:200])
            popen_init(popen, args, *rest, **options)

        socket.socket.listen = watched_listen  # type: ignore[method-assign, assignment]
        subprocess.Popen.__init__ = watched_popen_init  # type: ignore[method-assign, assignment]


platform.processor()  # cached from here on: the openai SDK asks for it, and the first ask runs `uname -p`
_GUARD = _Guard()
_GUARD.install()


def _watched(item: pytest.Item) -> bool:
    return item.get_closest_marker("server") is None and item.get_closest_marker("notebook") is None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    _GUARD.seen.clear()
    _GUARD.watching = _watched(item)
    try:
        return (yield)
    finally:
        _GUARD.watching = False


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    _GUARD.watching = _watched(item)
    try:
        result = yield
    finally:
        _GUARD.watching = False
    if _GUARD.seen:
        seen, _GUARD.seen[:] = list(_GUARD.seen), []
        pytest.fail(
            f"{item.nodeid} starts {seen[0]} but is not marked `server`: add `pytestmark = pytest.mark.server` to "
            "its module (or use the emu/gateway fixtures), so that the fast loop (--fast) stays free of servers "
            "and subprocesses (tests/tiers.py)",
            pytrace=False,
        )
    return result
