"""Shared fixtures for the whole suite: the loopback emulator and an HTTP client to it. Corpus paths: ``corpus.py``.

``emu`` is one ``pipeline.emulator.Emulator`` per test module, on a loopback port, configured by ``emulator_config``;
a module that needs another configuration (replay folders, ...) overrides ``emulator_config``, never ``emu``::

    @pytest.fixture(scope="module")
    def emulator_config() -> EmulatorConfig:
        return EmulatorConfig(replay_dirs=[REAL_STREAMS])

``http`` is an ``httpx.Client`` on the emulator's base URL (5 s timeouts), one per module.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from pipeline.emulator import EmulatorConfig


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
