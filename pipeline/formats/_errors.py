"""``ToolKindError``: a conversation holding a tool call that the target API has no form for."""

from __future__ import annotations

from operators import LlmStreamError

__all__ = ["ToolKindError"]


class ToolKindError(LlmStreamError, ValueError):
    """A history or a tool declaration holds a tool call (or tool) of a kind the request's API cannot take: a custom
    tool, ``apply_patch``, ``shell``, ``local_shell``, ``computer`` or ``mcp_approval`` call (docs/decisions/
    0072-client-run-tool-calls.md) sent to chat completions, the Messages API or Gemini, whose readers never give one;
    or a kind the Responses builder does not know. Raised rather than sending something the API would read wrong.

    A ``ValueError``, as every conversation a builder cannot express is."""
