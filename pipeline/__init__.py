"""The composition of the operators, the facades, and the I/O: sources, assembler, CLI.

    chunks = pipeline.collect(Path("response.sse"))              # recorded bytes, synchronous
    async for chunk in pipeline.stream(response.aiter_bytes()):  # any async byte source, paced by the caller
        ...
    async with pipeline.ChatClient(base_url, model=...) as client:   # a live endpoint, with bounded retry
        async for chunk in client.stream(messages, tools=tools):
            ...
    message = pipeline.assemble(chunks)
"""

from operators import LlmStreamError, RetryPolicy

from .agent import Tool, ToolRegistry, ToolResult, TurnEvent, run_turn, run_turn_to_end
from .compose import (
    Assembler,
    AssistantMessage,
    ByteSource,
    assemble,
    assemble_async,
    bytes_source,
    collect,
    example_path,
    protocol_rules,
    stream,
    to_chunks,
    translate,
    translate_batches,
)
from .session import (
    RepairReport,
    Session,
    SessionCorruptionError,
    SessionError,
    SessionEvent,
    SessionLockedError,
    SessionWriteError,
    check,
    repair,
)
from .transport import ChatClient, ClientConfig, ConfigError


def __getattr__(name: str) -> object:
    """``Emulator`` and ``EmulatorConfig`` import lazily: they need the ``emulator`` extra (starlette, uvicorn)."""
    if name in ("Emulator", "EmulatorConfig"):
        from . import emulator

        return getattr(emulator, name)
    raise AttributeError(f"module 'pipeline' has no attribute {name!r}")


__all__ = [
    "Assembler",
    "AssistantMessage",
    "ByteSource",
    "ChatClient",
    "ClientConfig",
    "ConfigError",
    "Emulator",
    "EmulatorConfig",
    "LlmStreamError",
    "RepairReport",
    "RetryPolicy",
    "Session",
    "SessionCorruptionError",
    "SessionError",
    "SessionEvent",
    "SessionLockedError",
    "SessionWriteError",
    "Tool",
    "ToolRegistry",
    "ToolResult",
    "TurnEvent",
    "assemble",
    "assemble_async",
    "bytes_source",
    "check",
    "collect",
    "example_path",
    "protocol_rules",
    "repair",
    "run_turn",
    "run_turn_to_end",
    "stream",
    "to_chunks",
    "translate",
    "translate_batches",
]
