"""The Messages parsing stage: one handler per payload ``type``, the state of the open blocks and the message, the end.

What ``parse_messages_sse`` (``_parse.py``, where the rule is written) runs per subscription, and what the
fast path (``_fast.py``) reads its hot events past. The payload helpers are in ``_events.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import msgspec

from .._chunk_values import Failure
from .._chunks import Anomaly
from .._codes import Code
from .._format_mismatch import foreign_format, format_mismatch, gemini_shaped
from .._limits import DEFAULT_LIMITS, Limits
from .._provider_errors import classify_inband_error
from .._signals import Done, Halt, ReasoningEnd, Signal
from .._sse_framing import SseFraming, quote
from .._usage_keys import messages_usage as wire_usage
from .._wire import WireChoice, WireChunk, WireDelta, WireFunction, WireToolCall, wire_chunk
from ._events import (
    FINISH_REASONS,
    Block,
    Malformed,
    block_kind,
    compact,
    index_of,
    merge_into,
    object_at,
    server_tool_name,
)

__all__ = ["_ParseMessages"]

_decode = msgspec.json.Decoder().decode
_Handler = Callable[["_ParseMessages", dict[str, Any], list[Signal]], None]
_DELTA_NAMES = frozenset({b"", b"content_block_delta"})  # the event name a delta may come under (none, or its own)
_DONE = b"[DONE]"


class _ParseMessages(SseFraming):
    """Messages: one handler per payload ``type``; ``message_stop`` the end."""

    __slots__ = ("blocks", "finish", "message_id", "started", "usage")
    END_NAME = "message_stop"

    def __init__(self, limits: Limits = DEFAULT_LIMITS, *, comments: bool = False) -> None:
        super().__init__(limits, comments=comments)
        self.blocks: dict[int, Block] = {}
        self.usage: dict[str, Any] = {}
        self.finish: str | None = None
        self.started = False
        self.message_id: object = None

    # -- payloads -------------------------------------------------------------------------------------------------

    def dispatch(self, payload: bytes, out: list[Signal]) -> None:
        if payload == _DONE:  # a gateway's terminator: the end of the stream, where message_stop is missing
            self._end(out, by="[DONE]")
            return
        try:
            body = _decode(payload)
        except (msgspec.DecodeError, RecursionError):
            body = None
        kind = body.get("type") if type(body) is dict else None
        if kind == "content_block_delta" and self.event in _DELTA_NAMES:  # the hot path: none of the checks apply
            handler: _Handler = _ParseMessages._block_delta
        else:
            if self.event == b"error" or kind == "error":
                error = body.get("error", body) if isinstance(body, dict) else {"message": quote(payload, 500)}
                self._halt(classify_inband_error(error), out)
                return
            if not isinstance(body, dict) or not isinstance(kind, str):
                is_object = isinstance(body, dict)
                gemini = is_object and gemini_shaped(payload)
                seen = foreign_format(kind, is_object and "choices" in body, gemini=gemini)
                if seen in ("chat", "gemini"):
                    self._halt(format_mismatch(seen, "messages", payload), out)
                else:
                    self._halt(Failure(Code.MALFORMED_RESPONSE, f"malformed Messages payload: {quote(payload)}"), out)
                return
            if self.event and self.event != kind.encode():
                out.append(Anomaly("event-mismatch", None, f"event {quote(self.event, 40)} carried a {kind} payload"))
            found = self._HANDLERS.get(kind)
            if found is None:
                if foreign_format(kind, False) == "responses":
                    self._halt(format_mismatch("responses", "messages", payload), out)
                else:
                    out.append(Anomaly("unknown-event", None, f"Messages event {kind[:60]} ignored"))
                return
            handler = found
        try:
            handler(self, body, out)
        except Malformed as exc:
            self._halt(Failure(Code.MALFORMED_RESPONSE, f"malformed Messages payload ({exc}): {quote(payload)}"), out)

    def _halt(self, failure: Failure, out: list[Signal]) -> None:
        """Every failure: the usage known so far first (usage precedes every finish), then ``Halt``."""
        self._emit_usage(out)
        out.append(Halt(failure))
        self.finished = True

    def _exceeded(self, counted: int, what: str, out: list[Signal]) -> None:
        self._emit_usage(out)  # LIMIT_EXCEEDED is a failure too: its usage first
        super()._exceeded(counted, what, out)

    def _message_start(self, body: dict[str, Any], out: list[Signal]) -> None:
        message = object_at(body, "message")
        if self.started:
            given = message.get("id")
            if given == self.message_id:
                out.append(Anomaly("duplicate-message-start", None, "a second message_start was ignored"))
                return
            first, second = str(self.message_id)[:60], str(given)[:60]
            out.append(Anomaly("message-restarted", None, f"message {second} started inside message {first}"))
            detail = f"message {second} started before message {first} ended: the stream of {first} was cut"
            self._halt(Failure(Code.STREAM_CLOSED, detail), out)
            return
        self.started = True
        self.message_id = message.get("id")
        merge_into(self.usage, message.get("usage"))
        content = message.get("content")
        if isinstance(content, list):
            for position, block in enumerate(content):
                if isinstance(block, dict):
                    self._start(position, block, out)
                    self._stop(position, out)
        self._stop_reason(message.get("stop_reason"))

    def _block_start(self, body: dict[str, Any], out: list[Signal]) -> None:
        self._start(index_of(body), object_at(body, "content_block"), out)

    def _start(self, index: int, block: dict[str, Any], out: list[Signal]) -> None:
        block_type = block.get("type")
        known = self.blocks.get(index)
        if known is not None:
            out.append(Anomaly("repeated-block-start", index, f"content block {index} started again"))
            if known.kind == "tool" and block_kind(block_type) == "tool":  # identity again, not another id (0070)
                out.append(known.started(index, block))
            return
        kind = block_kind(block_type)
        state = self.blocks[index] = Block(kind)
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str) and text:
                out.append(wire_chunk(WireDelta(content=text)))
        elif kind == "thinking":
            thinking = block.get("thinking")
            if isinstance(thinking, str) and thinking:
                out.append(wire_chunk(WireDelta(reasoning_content=thinking)))
            state.keep_opaque("signature", block.get("signature"), out, index)
        elif kind == "redacted_thinking":
            state.keep_opaque("data", block.get("data"), out, index)
        elif kind == "tool":
            out.append(state.started(index, block))
            given = block.get("input")
            if given not in (None, {}, "", []):
                state.whole = compact(given)
        elif kind == "server":
            named = f"server-side {str(block_type)[:60]}: {server_tool_name(block)[:120]}"
            out.append(Anomaly("server-tool", index, named))
        else:
            out.append(Anomaly("unknown-block", index, f"content block of type {str(block_type)[:60]} ignored"))

    def _block_delta(self, body: dict[str, Any], out: list[Signal]) -> None:
        index = body.get("index")  # index_of and object_at inlined: the hot path (decision 0008)
        if type(index) is not int or index < 0:
            raise Malformed("content_block_delta without a valid index")
        delta = body.get("delta")
        if type(delta) is not dict:
            raise Malformed("content_block_delta.delta is not an object")
        delta_type = delta.get("type")
        block = self.blocks.get(index)
        if block is None:
            out.append(Anomaly("delta-without-start", index, f"{str(delta_type)[:60]} for a block never started"))
            return
        if block.kind == "server":
            return  # its input streams too; reported once, at its start
        # the three hot cases build their chunk inline, without wire_chunk / string_at calls (decision 0008)
        if delta_type == "text_delta" and block.kind == "text":
            text = delta.get("text")
            if type(text) is not str:
                raise Malformed("text_delta.text is not a string")
            if text:
                out.append(WireChunk(choices=[WireChoice(index=0, delta=WireDelta(content=text))]))
        elif delta_type == "thinking_delta" and block.kind == "thinking":
            thinking = delta.get("thinking")
            if type(thinking) is not str:
                raise Malformed("thinking_delta.thinking is not a string")
            if thinking:
                out.append(WireChunk(choices=[WireChoice(index=0, delta=WireDelta(reasoning_content=thinking))]))
        elif delta_type == "input_json_delta" and block.kind == "tool":
            fragment = delta.get("partial_json")
            if type(fragment) is not str:
                raise Malformed("input_json_delta.partial_json is not a string")
            block.deltas = True
            call = WireToolCall(index=index, function=WireFunction(arguments=fragment))
            out.append(WireChunk(choices=[WireChoice(index=0, delta=WireDelta(tool_calls=[call]))]))
        elif delta_type == "signature_delta" and block.kind == "thinking":
            block.keep_opaque("signature", delta.get("signature"), out, index)
        elif delta_type == "citations_delta":
            citation = delta.get("citation")
            size = len(compact(citation)) if citation is not None else 0
            out.append(Anomaly("citation", index, f"citation of {size} characters not carried"))
        else:
            out.append(Anomaly("unknown-delta", index, f"{str(delta_type)[:60]} in a {block.kind} block ignored"))

    def _block_stop(self, body: dict[str, Any], out: list[Signal]) -> None:
        index = index_of(body)
        if index not in self.blocks:
            out.append(Anomaly("stop-without-start", index, f"content_block_stop for block {index} never started"))
            return
        self._stop(index, out)

    def _stop(self, index: int, out: list[Signal]) -> None:
        block = self.blocks[index]
        if block.stopped:
            return
        block.stopped = True
        if block.kind == "thinking":
            out.append(ReasoningEnd(signature=block.opaque))
        elif block.kind == "redacted_thinking":
            out.append(ReasoningEnd(encrypted=block.opaque))
        elif block.whole is not None and not block.deltas:  # arguments given whole count once
            call = WireToolCall(index=index, function=WireFunction(arguments=block.whole))
            out.append(wire_chunk(WireDelta(tool_calls=[call])))

    def _message_delta(self, body: dict[str, Any], out: list[Signal]) -> None:
        delta = body.get("delta")
        if isinstance(delta, dict):
            self._stop_reason(delta.get("stop_reason"))
        merge_into(self.usage, body.get("usage"))

    def _stop_reason(self, reason: object) -> None:
        if isinstance(reason, str) and reason:
            self.finish = FINISH_REASONS.get(reason, reason)
            self.saw_finish = True

    def _message_stop(self, body: dict[str, Any], out: list[Signal]) -> None:
        self._close(out)
        out.append(Done())
        self.finished = True

    def _ping(self, body: dict[str, Any], out: list[Signal]) -> None:
        pass

    # -- the end --------------------------------------------------------------------------------------------------

    def _close(self, out: list[Signal]) -> None:
        """Blocks never stopped, then the finish and the merged usage in one chunk."""
        for index, block in self.blocks.items():
            if not block.stopped:
                out.append(
                    Anomaly("unterminated-block", index, f"{block.kind} block {index} had no content_block_stop")
                )
                self._stop(index, out)
        out.append(WireChunk(choices=[WireChoice(index=0, finish_reason=self.finish)], usage=wire_usage(self.usage)))

    def _emit_usage(self, out: list[Signal]) -> None:
        usage = wire_usage(self.usage)
        if usage is not None:
            out.append(WireChunk(usage=usage))

    def on_end(self, out: list[Signal]) -> None:
        self.read_unterminated(out)
        if not self.finished:
            self._end(out, by=None)

    def _end(self, out: list[Signal], by: str | None) -> None:
        """The stream ends without ``message_stop``: at the end of the bytes (``by`` None) or at ``[DONE]``."""
        ended = f"{by} ended the stream" if by else "the stream ended"
        if self.saw_finish:
            out.append(Anomaly("missing-message-stop", None, f"{ended} after a stop_reason without message_stop"))
            self._close(out)
            out.append(Done(synthetic=by is None))
            self.finished = True
        else:
            where = f" ({by} came first)" if by else ""
            self._halt(Failure(Code.STREAM_CLOSED, f"Messages stream ended before message_stop{where}"), out)

    _HANDLERS: ClassVar[dict[str, _Handler]] = {
        "message_start": _message_start,
        "content_block_start": _block_start,
        "content_block_delta": _block_delta,
        "content_block_stop": _block_stop,
        "message_delta": _message_delta,
        "message_stop": _message_stop,
        "ping": _ping,
    }
