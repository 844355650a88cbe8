"""The OpenAI Responses event builder: ``ResponseEvents`` writes the events of one stream, as the real API sends them.

Every payload has ``type`` and an increasing ``sequence_number``; the response object of ``response.created`` /
``.in_progress`` / ``.completed`` carries the settings a real response has. Usage (on ``response.completed``):
``input_tokens`` includes ``input_tokens_details.cached_tokens`` = ``CACHED_TOKENS``; ``output_tokens`` includes
``output_tokens_details.reasoning_tokens`` = ``REASONING_TOKENS``. The profiles (``_profiles.py``) are
written with it.
"""

from __future__ import annotations

import itertools

from ..._json import dumps
from .._script import ScriptOptions
from .._sse import Event, Json, raw_event
from .._stream_profiles import CLEAN_TEXT, WEATHER_ARGUMENTS
from ._sent_back import ENCRYPTED_ADDED, ENCRYPTED_CONTENT, REASONING_ID

__all__ = ["ARGUMENTS", "CACHED_TOKENS", "CLEAN", "REASONING_TOKENS", "ResponseEvents"]

CACHED_TOKENS = 16
"""``input_tokens_details.cached_tokens`` of every completed Responses stream (part of ``input_tokens``)."""
REASONING_TOKENS = 4
"""``output_tokens_details.reasoning_tokens`` of every completed Responses stream (part of ``output_tokens``)."""

CLEAN = "".join(CLEAN_TEXT)
"""The text of every clean answer."""
_RESPONSE_SETTINGS: Json = {
    **dict.fromkeys(("error", "incomplete_details", "instructions", "max_output_tokens", "previous_response_id")),
    "background": False,
    "parallel_tool_calls": True,
    "reasoning": {"effort": None, "summary": None},
    "store": True,
    "temperature": 1.0,
    "text": {"format": {"type": "text"}},
    "tool_choice": "auto",
    "tools": [],
    "top_p": 1.0,
    "truncation": "disabled",
    "metadata": {},
}
ARGUMENTS = "".join(WEATHER_ARGUMENTS)
"""The arguments of every function call."""


class ResponseEvents:
    """Builds the events of one Responses stream: one response id, and the sequence numbers in order."""

    def __init__(self, options: ScriptOptions) -> None:
        self.options = options
        suffix = options.completion_id[-24:]
        self.response_id = f"resp_emu{suffix}"
        self.message_item = f"msg_emu{suffix}"
        self.call_item = f"fc_emu{suffix}"
        self.call_id = f"call_emu0_{suffix[-12:]}"
        self._sequence = itertools.count()
        self._rotation = itertools.count(1)
        self.call_index = 0
        """The ``output_index`` of the function call."""

    def rotated(self) -> str:
        """A fresh item id, as GitHub Copilot gives on every event."""
        return f"item_emu{next(self._rotation)}_{self.response_id[-12:]}"

    def event(self, name: str, payload: Json) -> Event:
        body = {"type": name, "sequence_number": next(self._sequence), **payload}
        return raw_event(f"event: {name}", f"data: {dumps(body)}")

    def response(self, status: str, output: list[Json] | None = None, *, completed: bool = False) -> Json:
        """The response object of ``response.created`` / ``.in_progress`` / ``.completed``."""
        response: Json = {
            "id": self.response_id,
            "object": "response",
            "created_at": self.options.created,
            "status": status,
            **_RESPONSE_SETTINGS,
            "model": self.options.model,
            "output": output or [],
            "usage": None,
        }
        if completed:
            response["completed_at"] = self.options.created
        return response

    def opening(self) -> list[Event]:
        return [
            self.event("response.created", {"response": self.response("in_progress")}),
            self.event("response.in_progress", {"response": self.response("in_progress")}),
        ]

    def usage(self, output_tokens: int) -> Json:
        prompt = self.options.prompt_tokens + CACHED_TOKENS
        output = output_tokens + REASONING_TOKENS
        return {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": CACHED_TOKENS},
            "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": REASONING_TOKENS},
            "total_tokens": prompt + output,
        }

    def completed(self, output: list[Json], output_tokens: int) -> Event:
        response = self.response("completed", output, completed=True)
        response["usage"] = self.usage(output_tokens)
        return self.event("response.completed", {"response": response})

    # -- a message item

    def message(self, text: str, status: str = "completed", item_id: str | None = None) -> Json:
        content = (
            [{"type": "output_text", "annotations": [], "logprobs": [], "text": text}]
            if status != "in_progress"
            else []
        )
        return {
            "id": item_id or self.message_item,
            "type": "message",
            "status": status,
            "content": content,
            "role": "assistant",
        }

    def text_events(self, pieces: tuple[str, ...], *, rotate: bool = False, whole: bool = True) -> list[Event]:
        """A message item at ``output_index`` 0 (a new item id on every event when ``rotate``; only its opening
        and deltas unless ``whole``)."""

        def item_id() -> str:
            return self.rotated() if rotate else self.message_item

        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        where = {"output_index": 0, "content_index": 0}
        text = "".join(pieces)
        added = {"output_index": 0, "item": self.message("", "in_progress", item_id())}
        events = [
            self.event("response.output_item.added", added),
            self.event("response.content_part.added", {"item_id": item_id(), **where, "part": part}),
        ]
        for piece in pieces:
            delta = {"item_id": item_id(), **where, "delta": piece, "logprobs": []}
            events.append(self.event("response.output_text.delta", delta))
        if not whole:
            return events
        return [
            *events,
            self.event("response.output_text.done", {"item_id": item_id(), **where, "text": text, "logprobs": []}),
            self.event("response.content_part.done", {"item_id": item_id(), **where, "part": {**part, "text": text}}),
            self.event("response.output_item.done", {"output_index": 0, "item": self.message(text, item_id=item_id())}),
        ]

    # -- a function_call item

    def call(
        self,
        arguments: str,
        status: str = "completed",
        *,
        call_id: str | None = "",
        item_id: str = "",
        name: str | None = "get_weather",
    ) -> Json:
        """A ``function_call`` item; ``call_id=None`` leaves ``call_id`` out, ``""`` means this stream's id."""
        item: Json = {
            "id": item_id or self.call_item,
            "type": "function_call",
            "status": status,
            "arguments": arguments,
        }
        if call_id is not None:
            item["call_id"] = call_id or self.call_id
        item["name"] = name
        return item

    def added(self, item: Json) -> Event:
        return self.event("response.output_item.added", {"output_index": self.call_index, "item": item})

    def arguments(self, fragment: str, item_id: str = "", **extra: object) -> Event:
        payload = {"item_id": item_id or self.call_item, "output_index": self.call_index, "delta": fragment, **extra}
        return self.event("response.function_call_arguments.delta", payload)

    def arguments_done(self, item_id: str = "") -> Event:
        payload = {"item_id": item_id or self.call_item, "output_index": self.call_index, "arguments": ARGUMENTS}
        return self.event("response.function_call_arguments.done", payload)

    def item_done(self, item: Json) -> Event:
        return self.event("response.output_item.done", {"output_index": self.call_index, "item": item})

    # -- a reasoning item (always at output_index 0)

    @staticmethod
    def reasoning(summary: str | None, encrypted_content: str = ENCRYPTED_CONTENT) -> Json:
        """The ``reasoning`` item; ``summary=None`` gives the empty summary of ``output_item.added``."""
        parts = [] if summary is None else [{"type": "summary_text", "text": summary}]
        return {"id": REASONING_ID, "type": "reasoning", "encrypted_content": encrypted_content, "summary": parts}

    def reasoning_events(self, pieces: tuple[str, ...]) -> list[Event]:
        """A reasoning item whose one summary part is streamed in ``pieces``, then done with its encrypted content."""
        where = {"item_id": REASONING_ID, "output_index": 0, "summary_index": 0}
        part = {"type": "summary_text", "text": ""}
        text = "".join(pieces)
        added = {"output_index": 0, "item": self.reasoning(None, ENCRYPTED_ADDED)}
        events = [
            self.event("response.output_item.added", added),
            self.event("response.reasoning_summary_part.added", {**where, "part": part}),
        ]
        events.extend(self.event("response.reasoning_summary_text.delta", {**where, "delta": p}) for p in pieces)
        return [
            *events,
            self.event("response.reasoning_summary_text.done", {**where, "text": text}),
            self.event("response.reasoning_summary_part.done", {**where, "part": {**part, "text": text}}),
            self.event("response.output_item.done", {"output_index": 0, "item": self.reasoning(text)}),
        ]
