"""The fault-injecting gateway emulator (needs the ``emulator`` extra: starlette, uvicorn)."""

from .._emulator import PROFILES, Emulator, EmulatorConfig, RecordedRequest, create_app, run_emulator

__all__ = ["PROFILES", "Emulator", "EmulatorConfig", "RecordedRequest", "create_app", "run_emulator"]
