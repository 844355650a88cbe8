"""A Gemini function call as it is read: its identity, signature and arguments, given whole (``args``) or streamed
by Vertex AI (``partialArgs`` by ``jsonPath``, ``willContinue``), until it ends and is emitted whole.

The stage (``_stage.py``) decides when a call starts and ends; this module keeps one call's state and builds its
arguments object. A ``jsonPath`` is ``$`` followed by ``.name``, ``['name']`` / ``["name"]`` or ``[n]`` steps.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from .._exceptions import LlmStreamError
from ._events import UNSET, PartialArg

__all__ = ["MADE_ID_PREFIX", "Call", "Malformed", "path_steps"]

MADE_ID_PREFIX = "gemini-made-"
"""The prefix of the id the library makes for a call the wire gave none (decision 0071); never sent to Google."""

_STEP = re.compile(r"""\.([^.\[\]]+)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\["((?:[^"\\]|\\.)*)"\]""")
_VALUE_KEYS = ("string_value", "number_value", "int_value", "double_value", "bool_value", "null_value")


class Malformed(LlmStreamError):
    """A payload the parser cannot read (its shape, not its JSON): ``MALFORMED_RESPONSE``."""


def path_steps(path: object) -> list[str | int] | None:
    """``"$.a[0]['b c']"`` -> ``["a", 0, "b c"]``; None when it is not a path this parser reads."""
    if not isinstance(path, str) or not path.startswith("$"):
        return None
    steps: list[str | int] = []
    position = 1
    while position < len(path):
        found = _STEP.match(path, position)
        if found is None:
            return None
        name, number, single, double = found.groups()
        if number is not None:
            steps.append(int(number))
        else:
            quoted = single if single is not None else double
            steps.append(name if name is not None else re.sub(r"\\(.)", r"\1", quoted or ""))
        position = found.end()
    return steps or None


def _value(piece: PartialArg) -> tuple[bool, Any]:
    """(whether the piece holds a value, the value)."""
    for key in _VALUE_KEYS:
        value = getattr(piece, key)
        if value is UNSET:
            continue
        if key == "null_value":
            return True, None
        if key == "int_value" and isinstance(value, str) and re.fullmatch(r"-?\d+", value):
            return True, int(value)  # proto3 JSON writes an int64 as a string
        return True, value
    return False, None


def _put(root: dict[str, Any], steps: list[str | int], value: Any, *, append: bool) -> bool:
    """Sets (or, for a continued string, extends) the value at ``steps``; False when the path crosses a value of
    another shape."""
    node: Any = root
    for step, following in zip(steps, [*steps[1:], None], strict=True):
        last = following is None
        if isinstance(step, int):
            if not isinstance(node, list):
                return False
            while len(node) <= step:
                node.append(None)
        elif not isinstance(node, dict):
            return False
        if last:
            before = node[step] if isinstance(step, int) else node.get(step)
            node[step] = before + value if append and isinstance(before, str) and isinstance(value, str) else value
            return True
        child = node[step] if isinstance(step, int) else node.get(step)
        if child is None:
            child = [] if isinstance(following, int) else {}
            node[step] = child
        node = child
    return True


class Call:
    """One call of the response: ``position`` among its calls (its wire index), id, name, signature, arguments."""

    __slots__ = ("arguments", "continuing", "given", "id", "made", "name", "pieces", "position", "signature", "size")

    def __init__(self, position: int, wire_id: str | None, name: str) -> None:
        self.position = position
        self.made = wire_id is None
        self.id = wire_id if wire_id is not None else f"{MADE_ID_PREFIX}{position}"
        self.name = name
        self.signature: str | None = None
        self.given: Any = UNSET  # ``args`` as given
        self.arguments: dict[str, Any] = {}  # built from ``partialArgs``
        self.pieces = False
        self.size = 0  # bytes of the streamed pieces' paths and values so far (max_arguments_bytes bounds them)
        self.continuing: list[str | int] | None = None  # the path whose string value continues in the next piece

    def sign(self, signature: object) -> None:
        if self.signature is None and isinstance(signature, str) and signature:
            self.signature = signature

    def give(self, args: Any) -> bool:
        """``args`` given whole; False when it comes after arguments were already known (a sealing repeat)."""
        if args is UNSET or args is None:
            return True
        if not isinstance(args, dict):
            raise Malformed("functionCall.args is not an object")
        if self.given is not UNSET or self.pieces:
            return False
        self.given = args
        return True

    def add(self, pieces: list[PartialArg]) -> list[str]:
        """Vertex's streamed pieces; returns the details of the pieces not read."""
        skipped = []
        for piece in pieces:
            steps = path_steps(piece.json_path)
            held, value = _value(piece)
            if steps is None or not held:
                skipped.append(f"partialArgs piece at {str(piece.json_path)[:60]} ignored")
                continue
            self.pieces = True
            self.size += len(str(piece.json_path)) + (
                len(value.encode("utf-8", "surrogatepass")) if isinstance(value, str) else 8
            )
            append = self.continuing == steps
            if not _put(self.arguments, steps, value, append=append):
                skipped.append(f"partialArgs piece at {str(piece.json_path)[:60]} crosses another value")
            self.continuing = steps if piece.will_continue is True and isinstance(value, str) else None
        return skipped

    def arguments_json(self) -> str:
        """The arguments as one compact JSON text, keys in wire order (``{}`` when none were given)."""
        built: Any = self.given if self.given is not UNSET else self.arguments
        if self.given is not UNSET and self.pieces:
            built = {**self.given, **self.arguments}
        return msgspec.json.encode(built).decode()
