"""The composition of the operators and everything that touches the outside, by product (docs/architecture.md):
``pipeline.compose`` (the facades), ``pipeline.client`` (the HTTP client), ``pipeline.formats`` (each wire format's
request: the registry ``ChatClient(api=...)`` reads), ``pipeline.session`` (the session log),
``pipeline.agent`` (tools and the turn loop), ``pipeline.emulator`` (the fault-injecting gateway, needs the
``emulator`` extra) and ``pipeline.cli``. This module re-exports what an application meets (each name's canonical
path, its ``__module__``, is its subpackage or ``operators``: docs/architecture.md, "One path per name"):

    chunks = pipeline.collect(Path("response.sse"))              # recorded bytes, synchronous
    async for chunk in pipeline.stream(response.aiter_bytes()):  # any async byte source, paced by the caller
        ...
    async with pipeline.ChatClient(base_url, model=...) as client:   # a live endpoint, with bounded retry
        async for chunk in client.stream(messages, tools=tools):
            ...
    message = pipeline.assemble(chunks)
"""

from operators import Limits, LlmStreamError, RetryPolicy
from operators.extend import publish as _publish

from . import _logging
from . import proxy as _proxy
from . import sanitize as _sanitize
from .agent import (
    CustomTool,
    Grammar,
    Tool,
    ToolDefinitionError,
    ToolRegistry,
    ToolResult,
    TurnEvent,
    TurnEventKind,
    run_turn,
    run_turn_to_end,
)
from .client import ChatClient, ClientConfig, ConfigError, InsecureBaseUrlWarning
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
from .formats import ToolKindError
from .sanitize import SanitizingTransport
from .session import (
    RepairReport,
    Session,
    SessionCorruptionError,
    SessionError,
    SessionEvent,
    SessionLockedError,
    SessionState,
    SessionTornTailWarning,
    SessionValidationError,
    SessionWriteError,
    check,
    repair,
)

_sanitize._moved_to = _proxy  # the proxy's deprecated paths under pipeline.sanitize, without an import back up
_logging.configure_from_env()  # LLM_STREAM_LOG, read once (docs/decisions/0020-environment-and-logging.md)

__version__ = "0.2.0"
"""The package's one version: the distribution's metadata reads it (pyproject ``dynamic``), CHANGELOG.md's newest
entry names it (tests/test_packaging.py)."""

__all__ = [
    "Assembler",
    "AssistantMessage",
    "ByteSource",
    "ChatClient",
    "ClientConfig",
    "ConfigError",
    "CustomTool",
    "Grammar",
    "InsecureBaseUrlWarning",
    "Limits",
    "LlmStreamError",
    "RepairReport",
    "RetryPolicy",
    "SanitizingTransport",
    "Session",
    "SessionCorruptionError",
    "SessionError",
    "SessionEvent",
    "SessionLockedError",
    "SessionState",
    "SessionTornTailWarning",
    "SessionValidationError",
    "SessionWriteError",
    "Tool",
    "ToolDefinitionError",
    "ToolKindError",
    "ToolRegistry",
    "ToolResult",
    "TurnEvent",
    "TurnEventKind",
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

_publish(globals())  # each name's __module__ is this face (docs/architecture.md, "One path per name")
