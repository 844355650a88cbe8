"""What ``GeminiRepair`` reads of an event, as the library's parser reads it (``operators.gemini``, decision 0071): the
``GenerateContentResponse`` shape (typed as the parser types it, so a field of another shape is ``MALFORMED_RESPONSE``
in both; identity fields are ``Any``), and the calls of candidate 0 (``Calls``): which ``functionCall`` part starts a
call, continues the open one (Vertex's streamed arguments) or is a call without a name.

The parser's call rules, restated for the repairer (which keeps no arguments): a part continues the open call when it
gives the open call's id, or gives neither a name nor an id; any other part ends the open call. A part giving the id
of a call that ended is a repeat (ignored). A part without a name that continues nothing is ``MALFORMED_TOOL_CALL``.
A call stays open while its latest part said ``"willContinue": true`` or a ``partialArgs`` string value continues
(its piece says ``willContinue``, at a ``jsonPath`` the parser reads).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from operators import Code, Failure

__all__ = ["MADE_ID_PREFIX", "NO_BLOCK", "UNSET", "Calls", "FunctionCall", "Response", "decode_response", "name_of"]

MADE_ID_PREFIX = "gemini-made-"
NO_BLOCK = frozenset({"", "BLOCK_REASON_UNSPECIFIED", "BLOCKED_REASON_UNSPECIFIED"})
UNSET: Any = msgspec.UNSET
_STEP = re.compile(r"""\.([^.\[\]]+)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\["((?:[^"\\]|\\.)*)"\]""")
_VALUES = ("string_value", "number_value", "int_value", "double_value", "bool_value", "null_value")


class PartialArg(msgspec.Struct, rename="camel"):
    json_path: Any = None
    string_value: Any = UNSET
    number_value: Any = UNSET
    int_value: Any = UNSET
    double_value: Any = UNSET
    bool_value: Any = UNSET
    null_value: Any = UNSET
    will_continue: Any = None


class FunctionCall(msgspec.Struct, rename="camel"):
    id: Any = None
    name: Any = None
    args: Any = UNSET
    partial_args: list[PartialArg] | None = None
    will_continue: Any = None


class Part(msgspec.Struct, rename="camel"):
    text: str | None = None
    function_call: FunctionCall | None = None


class Content(msgspec.Struct, rename="camel"):
    parts: list[Part] | None = None


class Candidate(msgspec.Struct, rename="camel"):
    content: Content | None = None
    finish_reason: str | None = None
    finish_message: Any = None
    index: int | None = None


class PromptFeedback(msgspec.Struct, rename="camel"):
    block_reason: str | None = None


class Response(msgspec.Struct, rename="camel"):
    candidates: list[Candidate] | None = None
    prompt_feedback: PromptFeedback | None = None
    usage_metadata: dict[str, Any] | None = None
    error: Any = UNSET
    choices: Any = UNSET
    type: Any = UNSET


_decoder = msgspec.json.Decoder(Response)


def decode_response(payload: bytes) -> Response:
    """One payload; ``msgspec.DecodeError`` when it is not a JSON object of this shape (or nests too deep)."""
    try:
        return _decoder.decode(payload)
    except RecursionError:
        raise msgspec.DecodeError("JSON nested deeper than the decoder allows") from None


def name_of(value: object) -> str | None:
    """An identity field as it counts: a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def _is_path(path: object) -> bool:
    """Whether ``path`` is a ``jsonPath`` the parser reads (``$`` then ``.name``, ``[n]``, ``['name']`` steps)."""
    if not isinstance(path, str) or not path.startswith("$") or len(path) == 1:
        return False
    position = 1
    while position < len(path):
        found = _STEP.match(path, position)
        if found is None:
            return False
        position = found.end()
    return True


def _continues(piece: PartialArg) -> bool | None:
    """Whether a piece's string value continues in the next piece; None when the parser skips the piece."""
    for key in _VALUES:
        value = getattr(piece, key)
        if value is UNSET:
            continue
        if not _is_path(piece.json_path):
            return None
        if key == "null_value":
            return False
        if key == "int_value" and isinstance(value, str) and re.fullmatch(r"-?\d+", value):
            return False  # read as an integer
        return piece.will_continue is True and isinstance(value, str)
    return None


class Calls:
    """Candidate 0's calls as far as identity goes: how many, the open one's id, whether a string of it continues, and
    the ids of the calls that ended (at most ``limit`` kept: ``max_tool_calls``, what the library reads at most)."""

    __slots__ = ("continuing", "count", "ended", "limit", "open_id")

    def __init__(self, limit: int) -> None:
        self.count = 0
        self.open_id: str | None = None
        self.continuing = False
        self.ended: set[str] = set()
        self.limit = limit

    def part(self, call: FunctionCall) -> Failure | None:
        """One ``functionCall`` part; the failure it is (a call without a name, ``args`` not an object), or None."""
        wire_id, name = name_of(call.id), name_of(call.name)
        if self.open_id is not None and (wire_id == self.open_id or (name is None and wire_id is None)):
            return self._extend(call)
        self.end_open()
        if wire_id is not None and wire_id in self.ended:
            return None  # the same call again after it ended (LangChain's sealing args): not read
        if name is None:
            what = "absent" if call.name is None else repr(call.name)[:40]
            return Failure(Code.MALFORMED_TOOL_CALL,
                           f"functionCall without a name (name {what}): refused rather than assembled without its name")
        self.open_id = wire_id if wire_id is not None else f"{MADE_ID_PREFIX}{self.count}"
        self.count += 1
        self.continuing = False
        return self._extend(call)

    def _extend(self, call: FunctionCall) -> Failure | None:
        if call.args is not UNSET and call.args is not None and not isinstance(call.args, dict):
            return Failure(Code.MALFORMED_RESPONSE, "malformed Gemini payload (functionCall.args is not an object)")
        for piece in call.partial_args or ():
            continues = _continues(piece)
            if continues is not None:
                self.continuing = continues
        if call.will_continue is not True and not self.continuing:
            self.end_open()
        return None

    def end_open(self) -> None:
        if self.open_id is not None and len(self.ended) < self.limit:
            self.ended.add(self.open_id)
        self.open_id = None
        self.continuing = False

    @property
    def open(self) -> bool:
        return self.open_id is not None
