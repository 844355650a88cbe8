"""The item at one ``output_index`` of a Responses stream as ``ResponsesRepair`` knows it (``OutputItem``: its identity
as first given, and, for a call the client runs, its shape), the calls the library would not read at the terminal
event (``unread_call``) and the finish (``finish_of``).

A call the client runs (docs/decisions/0072-client-run-tool-calls.md; ``operators.responses.responses_call_shape``) is
identified by its ``call_id`` (an ``mcp_approval_request`` by its ``id``) and, for a function or custom tool call, its
``name``; a built-in call (``apply_patch_call``, ``shell_call``, ``local_shell_call``, ``computer_call``,
``mcp_approval_request``) is finished when an ``output_item.done`` gives its action or operation. What the provider runs
(a ``shell_call`` in a container, ``execution: "server"``) is no call here, as in the library.
"""

from __future__ import annotations

from typing import Any

from operators import Code, Failure, Finish
from operators.responses import ResponsesCallShape, responses_call_shape

from .._repair_values import Held, finish_from, named

__all__ = ["OutputItem", "finish_of", "never_identified", "unread_call"]

_INCOMPLETE = {"max_output_tokens": "max-tokens", "content_filter": "content_filter"}


class OutputItem:
    """The identity of the item at one ``output_index``, as first given (a held call's is filled in later); ``call``,
    its shape when it is a call the client runs (``responses_call_shape``, decision 0072), else None."""

    __slots__ = ("call", "call_id", "finished", "held", "id", "kind", "name", "rotated")

    def __init__(self, item: dict[str, Any]) -> None:
        self.kind = item.get("type")
        self.call: ResponsesCallShape | None = responses_call_shape(item)
        self.id = item.get("id") if named(item.get("id")) else None
        self.call_id = item.get("call_id") if named(item.get("call_id")) else None
        self.name = item.get("name") if named(item.get("name")) else None
        self.held: Held | None = None
        self.rotated = False  # another id was given for this item in the stream
        self.finished = False  # a built-in call: an output_item.done gave its arguments

    @property
    def identified(self) -> bool:
        """Whether a call has its identity (its ``call_id``, an approval request's ``id``) and, when it is named by
        the item, its ``name``; any other item is."""
        call = self.call
        if call is None:
            return True
        known = self.id if call.id_field == "id" else self.call_id
        return known is not None and (not call.own_name or self.name is not None)

    def identity(self) -> str:
        """The identity as known, for a message."""
        call = self.call
        if call is not None and call.id_field == "id":
            return f"id {self.id!r}"
        return f"call_id {self.call_id!r}" + (f", name {self.name!r}" if call is None or call.own_name else "")

    def other(self, item: dict[str, Any]) -> bool:
        """Whether ``item`` is another item than this one (another type, or another non-empty id): one
        ``output_index`` holds one item, as the library reads it (decision 0070)."""
        given = item.get("id")
        return item.get("type") != self.kind or (self.id is not None and named(given) and given != self.id)

    def fill_in(self, item: dict[str, Any]) -> None:
        for field in ("id", "call_id", "name"):
            if getattr(self, field) is None and named(item.get(field)):
                setattr(self, field, item[field])

    def finish_with(self, item: dict[str, Any]) -> None:
        """An ``output_item.done`` of this item: a built-in call is finished when it gives its arguments (a field of
        its ``argument_fields``, not null), as the library reads them."""
        call = self.call
        if call is not None and item.get("type") == self.kind and any(item.get(f) is not None
                                                                      for f in call.argument_fields):
            self.finished = True

    def conform(self, item: dict[str, Any]) -> bool:
        """Writes this identity into ``item`` where it differs; True when it changed. The identity is the ``id``, and
        for a call the client runs its ``call_id`` (what the openai SDK compares with the type) and a function's or
        custom tool's ``name``, which the library keeps from the first; an approval request's MCP tool ``name`` is
        part of its arguments, not its identity. An item the library does not read as a call (a hosted shell call, a
        client ``tool_search_call`` it refuses) keeps its own ``call_id``: its reading is the library's, unchanged."""
        changed = False
        call = self.call
        fields = ("id",) if call is None else ("id", "call_id", "name") if call.own_name else ("id", "call_id")
        for field in fields:
            value = getattr(self, field)
            if value is not None and item.get(field) != value:
                item[field] = value
                changed = True
        return changed


def never_identified(item: OutputItem) -> Failure:
    index = item.held.index if item.held is not None else "?"
    return Failure(Code.MALFORMED_TOOL_CALL, f"{item.kind} at output_index {index} was never identified "
                                             f"({item.identity()})")


def unread_call(items: dict[int, OutputItem]) -> Failure | None:
    """At the terminal event, a call the library does not read: one never identified, or a built-in call whose action
    or operation never came (a client never runs half a call, decision 0072)."""
    unidentified = next((i for i in items.values() if i.held is not None and i.held.raw is None), None)
    if unidentified is not None:
        return never_identified(unidentified)
    for index, item in items.items():
        if item.call is not None and item.call.argument_fields and not item.finished:
            return Failure(Code.MALFORMED_TOOL_CALL, f"{item.kind} at output_index {index}: never finished "
                                                     "(no output_item.done with its action or operation)")
    return None


def finish_of(kind: str, response: object, items: dict[int, OutputItem]) -> Finish:
    """The finish of the terminal event ``kind``: ``tool-calls`` when the response holds a call the client runs."""
    if kind == "response.completed":
        calls = any(item.call is not None for item in items.values())
        return finish_from("tool-calls" if calls else "stop", "completed")
    details = response.get("incomplete_details") if type(response) is dict else None
    reason = details.get("reason") if type(details) is dict else None
    wire = reason if type(reason) is str and reason else "incomplete"
    return finish_from(_INCOMPLETE.get(wire, ""), wire)
