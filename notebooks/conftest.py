"""The notebooks run under nbmake wherever they are collected (``python -m pytest``, ``python -m pytest notebooks``),
and only there: ``--nbmake`` is not in ``addopts``, so ``python -m pytest tests/operators`` runs without the plugin
installed. Without nbmake (the ``dev`` extra), the notebooks are not collected and the header says so.

Each cell may take 120 s unless ``--nbmake-timeout`` says otherwise.
"""

from __future__ import annotations

import pytest

CELL_TIMEOUT = 120
"""Seconds a notebook cell may run (nbmake's own default is 300)."""


def _nbmake(config: pytest.Config) -> bool:
    return config.pluginmanager.hasplugin("nbmake")


def pytest_configure(config: pytest.Config) -> None:
    if not _nbmake(config):
        return
    config.option.nbmake = True
    given = config.invocation_params.args
    if not any(str(arg).startswith("--nbmake-timeout") for arg in given):
        config.option.nbmake_timeout = CELL_TIMEOUT


def pytest_report_header(config: pytest.Config) -> str:
    if _nbmake(config):
        return f"notebooks: run by nbmake ({config.option.nbmake_timeout} s a cell)"
    return "notebooks: not run (nbmake is not installed: pip install -e '.[dev]')"
