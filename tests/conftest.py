"""Shared fixtures for the whole suite: the loopback emulator and an HTTP client to it. Corpus paths: ``corpus.py``.

``emu`` is one ``pipeline.emulator.Emulator`` per test module, on a loopback port, configured by ``emulator_config``;
a module that needs another configuration (replay folders, ...) overrides ``emulator_config``, never ``emu``::

    @pytest.fixture(scope="module")
    def emulator_config() -> EmulatorConfig:
        return EmulatorConfig(replay_dirs=[REAL_STREAMS])

``http`` is an ``httpx.Client`` on the emulator's base URL (5 s timeouts), one per module; ``fresh_emu`` an emulator
of a test's own (for counting what the server saw without another test's late request); ``gateway`` the
loopback gateway of ``tests/leaky_gateway.py`` that echoes the API key back, one per module.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from leaky_gateway import LeakyGateway

from pipeline.emulator import EmulatorConfig

pytest_plugins = ["tiers"]  # the markers and --fast (the contributor's loop): tests/tiers.py


@pytest.fixture(scope="module")
def emulator_config() -> EmulatorConfig:
    """The configuration of the module's emulator: the default one."""
    return EmulatorConfig()


@pytest.fixture(scope="module")
def emu(emulator_config: EmulatorConfig) -> Iterator[object]:
    """A loopback emulator for the test module (the serving part needs the ``emulator`` extra)."""
    from pipeline.emulator import Emulator

    with Emulator(config=emulator_config) as emulator:
        yield emulator


@pytest.fixture(scope="module")
def http(emu: object) -> Iterator[httpx.Client]:
    """An HTTP client on the emulator's base URL."""
    with httpx.Client(base_url=emu.base_url, timeout=httpx.Timeout(5.0)) as client:  # type: ignore[attr-defined]
        yield client


@pytest.fixture
def fresh_emu() -> Iterator[object]:
    """An emulator of the test's own, for counting disconnects without another test's late one."""
    from pipeline.emulator import Emulator

    with Emulator() as emulator:
        yield emulator


@pytest.fixture(scope="module")
def gateway() -> Iterator[LeakyGateway]:
    """The loopback gateway that sends the API key back in every place a response can carry it."""
    with LeakyGateway() as leaky:
        yield leaky
