"""The emulator in a child process, so the client under test does not share its interpreter (and GIL) with it.

``python -m benchmarks._emulator_proc DIR`` starts ``pipeline.emulator.Emulator`` with ``DIR`` as a replay
directory, prints one JSON line (``{"base_url": ..., "pid": ...}``) and serves until its stdin is closed.
``EmulatorProcess`` is the parent's side, a context manager.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import Any, Self

ROOT = Path(__file__).resolve().parent.parent


def emulator_class() -> Any | None:
    """``pipeline.emulator.Emulator`` when it can serve (the ``emulator`` extra is installed), else None."""
    try:
        module = importlib.import_module("pipeline.emulator")
        return getattr(module, "Emulator", None)  # ImportError without starlette and uvicorn
    except ImportError:
        return None


class EmulatorProcess:
    """Starts the child; ``base_url`` and ``pid`` once entered; closing stdin stops it."""

    def __init__(self, replay_dir: Path) -> None:
        self.replay_dir = replay_dir
        self.base_url = ""
        self.pid = 0
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> Self:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
        process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks._emulator_proc", str(self.replay_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=env,
        )
        self._process = process
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            process.wait(timeout=10)
            raise RuntimeError(f"the emulator process exited with {process.returncode} before it was ready")
        ready = json.loads(line)
        self.base_url = ready["base_url"]
        self.pid = process.pid
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        process = self._process
        if process is None:
            return
        self._process = None
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()  # our own child, by its handle
            process.wait()


def _main() -> None:
    emulator = emulator_class()
    if emulator is None:
        raise SystemExit("pipeline.emulator.Emulator is not available")
    config_class = importlib.import_module("pipeline.emulator").EmulatorConfig
    running = emulator(config=config_class(replay_dirs=[sys.argv[1]])).start()
    print(json.dumps({"base_url": running.base_url, "pid": os.getpid()}), flush=True)
    try:
        sys.stdin.read()  # until the parent closes our stdin (or goes away)
    finally:
        running.stop()


if __name__ == "__main__":
    _main()
