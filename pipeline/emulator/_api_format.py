"""``ApiFormat``: the emulator's record of one API format it serves beyond chat completions (what only the emulator
knows of it: profiles, ids, which request fields carry the conversation, its error shape, its tool loops). A format
package (``messages/``, ``gemini/``, ...) may build its own record from it; ``_formats.py`` lists the records.
The path, the title and how a request asks to stream come from the format's ``pipeline.formats.WIRE_FORMATS`` record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import attrs

from pipeline.formats import WIRE_FORMATS

from ._errors import RequestError
from ._profiles import Profile

__all__ = ["ApiFormat", "SentBack"]

SentBack = Callable[[Mapping[str, Any]], None]
"""A follow-up request's check: ``RequestError`` 400 unless it sends back what the profile's first answer sent."""


def _frozen(checks: Mapping[str, SentBack]) -> Mapping[str, SentBack]:
    return MappingProxyType(dict(checks))


@attrs.frozen
class ApiFormat:
    """One API format the emulator serves beyond chat completions."""

    name: str
    """``"messages"``, ``"responses"``, ``"gemini"``: a name of ``pipeline.formats.WIRE_FORMATS``, whose record gives
    the path the emulator serves (under each of ``prefixes``) and the format's title."""
    profiles: Mapping[str, Profile]
    id_prefix: str
    """Prefix of the ``completion_id`` the profiles derive their ids from."""
    input_field: str
    """The request field that carries the conversation (``messages``, ``input``, ``contents``): its size estimates
    ``input_tokens``, its assistant turns (and tool items) are the ``agent`` profile's step."""
    system_field: str
    """The request field that carries the system prompt (``system``, ``instructions``, ``systemInstruction``),
    counted in ``input_tokens``."""
    error_shape: Callable[[RequestError], dict[str, Any]]
    """A refused request's body in the format's own error shape."""
    sent_back: Mapping[str, SentBack] = attrs.field(factory=dict, converter=_frozen)
    """The profiles whose follow-up must send back what their first answer sent (a tool loop's thinking or
    reasoning), each with its check."""
    assistant_role: str = "assistant"
    """The ``role`` of an assistant turn in the conversation (Gemini's is ``"model"``)."""
    turn_types: frozenset[str] = frozenset()
    """Conversation items that count as an assistant turn by their ``type`` (Responses: ``function_call``,
    ``function_call_output``)."""
    agent_first: str = "seed-bug"
    """The profile of the ``agent`` loop's first step (while the request has no assistant turn)."""
    stream_request: str = '"stream": true'
    """What a request must send to ask for a stream, as the 400 to one that does not says it."""
    prefixes: tuple[str, ...] = ("/v1", "")
    """The path prefixes the record's path is served under (Gemini's: also ``/v1beta`` and Vertex AI's
    ``/v1/projects/{project}/locations/{location}/publishers/google``)."""
    model_prefix: str = attrs.field()
    """The prefix of this format's model ids in ``GET /v1/models``: ``"emulator/<format>/"`` by default; a format
    whose path carries the model (one path segment, no ``/``) needs another (Gemini's: ``"emulator-gemini-"``)."""

    @model_prefix.default
    def _model_prefix(self) -> str:
        return f"emulator/{self.name}/"

    @property
    def title(self) -> str:
        """How messages name it: "the Anthropic Messages format"."""
        return WIRE_FORMATS[self.name].title

    @property
    def paths(self) -> tuple[str, ...]:
        """The paths it is served at, the record's path under each prefix: ``/v1/messages`` and ``/messages`` (a
        ``{model}`` in the path template is a Starlette path parameter)."""
        path = WIRE_FORMATS[self.name].path
        return tuple(prefix + path for prefix in self.prefixes)

    def asks_stream(self, path: str, query: str, body: Mapping[str, Any]) -> bool:
        """A ``POST`` to ``path`` with ``query`` and ``body`` asks for a stream, as the format's record says."""
        return WIRE_FORMATS[self.name].asks_stream("POST", path, query, body)

    def is_turn(self, item: object) -> bool:
        """A conversation item is an assistant turn (its role, or for Responses its type)."""
        if not isinstance(item, dict):
            return False
        return item.get("role") == self.assistant_role or item.get("type") in self.turn_types
