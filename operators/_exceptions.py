"""The one exception root of the library, and the tree of everything that derives from it.

Every exception class defined by ``operators`` or ``pipeline`` derives from ``LlmStreamError``, and keeps the built-in
base callers already catch (a ``ConfigError`` is still a ``ValueError``)::

    LlmStreamError
    ├── RetryPolicyError (ValueError) ...... operators: a retry policy or its configuration breaks a rule
    ├── ConfigError (ValueError) ........... pipeline.client: a client setting is out of range
    ├── CliError ........................... pipeline.cli: a usage or input error, exit status 2
    ├── ToolDefinitionError (TypeError, ValueError)  pipeline.agent: a tool, signature or tools module the registry
    │                                        cannot use
    ├── ToolKindError (ValueError) ......... pipeline.formats: a tool call (or tool) of a kind the request's API has
    │                                        no form for (decision 0072)
    ├── StreamFailure ...................... operators.extend: a signal a source sends through on_error (never raised
    │                                        to the caller: it becomes an error finish)
    ├── (private) ........................... pipeline.agent's hint and conversion errors, pipeline.emulator's
    │                                        connection-cut and request errors: caught inside their package
    └── SessionError ....................... pipeline.session: the session log refused something
        ├── SessionValidationError ......... an event breaks a rule (on write and on read alike)
        ├── SessionWriteError .............. an append could not be made durable
        ├── SessionCorruptionError ......... the file holds a line that is not a valid event
        └── SessionLockedError ............. another writer holds the session's lock

    Warnings (not exceptions): SessionTornTailWarning (UserWarning), a torn last line was set aside.

A failed *response* is never raised: it is an error ``Finish`` in the chunk stream (``operators.Code`` lists the
codes).
"""

from __future__ import annotations

__all__ = ["LlmStreamError"]


class LlmStreamError(Exception):
    """The root of every exception this library raises: ``except LlmStreamError`` catches them all."""
