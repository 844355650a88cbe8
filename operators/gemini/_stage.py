"""The Gemini parsing stage: one ``GenerateContentResponse`` per event, candidate 0's parts, the finish at the end.

What ``parse_gemini_sse`` (``_parse.py``, where the rule is written) runs per subscription. The payload's types are
in ``_events.py``; a call's state and arguments in ``_calls.py``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .._chunk_values import Failure
from .._chunks import Anomaly
from .._codes import Code
from .._format_mismatch import foreign_format, format_mismatch
from .._limits import DEFAULT_LIMITS, Limits, limit_exceeded
from .._provider_errors import classify_inband_error
from .._signals import Done, Halt, ReasoningEnd, Signal, ToolCallSignature
from .._sse_framing import SseFraming, quote
from .._usage import is_count
from .._wire import (
    WireChoice,
    WireChunk,
    WireCompletionDetails,
    WireDelta,
    WireFunction,
    WirePromptDetails,
    WireToolCall,
    WireUsage,
    wire_chunk,
)
from ._calls import Call, Malformed
from ._events import FILTERED, FINISHES, NO_BLOCK, UNSET, USAGE_FIELDS, Part, Response, decode_response, part_kind

__all__ = ["_ParseGemini"]

_DONE = b"[DONE]"


def _name(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


class _ParseGemini(SseFraming):
    """Gemini: every event a ``GenerateContentResponse``; the end of the body (or ``[DONE]``) the end."""

    __slots__ = ("calls", "ended_ids", "finish", "open", "reported", "usage")
    END_NAME = "[DONE]"

    def __init__(self, limits: Limits = DEFAULT_LIMITS, *, comments: bool = False) -> None:
        super().__init__(limits, comments=comments)
        self.usage: dict[str, int | float] = {}  # the last valid value of each usageMetadata count
        self.calls: list[Call] = []
        self.open: Call | None = None  # a Vertex call whose arguments still stream
        self.ended_ids: set[str] = set()
        self.finish: tuple[str, Failure | None] | None = None  # (wire finish_reason, or the error it is)
        self.reported: set[str] = set()
        self.said = False  # text or reasoning was read (an answer of only files is not an empty one)

    # -- payloads -------------------------------------------------------------------------------------------------

    def dispatch(self, payload: bytes, out: list[Signal]) -> None:
        if payload == _DONE:  # a gateway's terminator: the end of the stream (decision 0043)
            self._end(out, by="[DONE]")
            return
        try:
            body = decode_response(payload)
        except msgspec.DecodeError:
            self._halt(Failure(Code.MALFORMED_RESPONSE, f"malformed Gemini payload: {quote(payload)}"), out)
            return
        if body.error is not UNSET:
            error = body.error if body.error is not None else {"message": quote(payload, 500)}
            self._halt(classify_inband_error(error), out)
            return
        seen = foreign_format(body.type if body.type is not UNSET else None, body.choices is not UNSET)
        if seen is not None or body.type is not UNSET:
            if seen is not None:
                self._halt(format_mismatch(seen, "gemini", payload), out)
            else:
                self._halt(Failure(Code.MALFORMED_RESPONSE, f"not a Gemini payload: {quote(payload)}"), out)
            return
        try:
            self._response(body, out)
        except Malformed as exc:
            self._halt(Failure(Code.MALFORMED_RESPONSE, f"malformed Gemini payload ({exc}): {quote(payload)}"), out)

    def _response(self, body: Response, out: list[Signal]) -> None:
        if body.usage_metadata is not None:
            self._usage(body.usage_metadata, out)
        if self.finish is not None:  # after the finish (or a block) only usage is read
            if body.candidates or body.prompt_feedback is not None:
                self._once("after-finish", "after-finish", "candidates after the finish were not read", out)
            return
        feedback = body.prompt_feedback
        if feedback is not None and feedback.block_reason not in NO_BLOCK and feedback.block_reason is not None:
            told = _name(feedback.block_reason_message)
            detail = f"prompt blocked: {feedback.block_reason[:60]}" + (f": {told[:500]}" if told else "")
            self.finish = ("content_filter", Failure(Code.CONTENT_FILTER, detail))  # this event's parts still count
            self.saw_finish = True
        for candidate in body.candidates or ():
            index = candidate.index or 0
            if index:
                self._once(
                    f"choice-{index}",
                    "extra-choice",
                    f"candidate {index} ignored: only candidate 0 is the message (candidateCount > 1)",
                    out,
                )
                continue
            content = candidate.content
            for part in (content.parts or ()) if content is not None else ():
                if self.finished:
                    return
                self._part(part, out)
            if candidate.finish_reason is not None and not self.finished:
                self._end_open(out)
                if self.finish is None:  # a block in the same event stays the finish
                    self._finish(candidate.finish_reason, candidate.finish_message)

    def _part(self, part: Part, out: list[Signal]) -> None:
        call = part.function_call
        if call is not None:
            self._call(part, out)
            return
        self._end_open(out)  # a part of another kind ends a streamed call
        signature = _name(part.thought_signature)
        text = part.text
        if text is not None:
            if part.thought is True:
                if text:
                    self.said = True
                    out.append(wire_chunk(WireDelta(reasoning_content=text)))
                if signature is not None:
                    out.append(ReasoningEnd(signature=signature))
                return
            if text:
                self.said = True
                out.append(wire_chunk(WireDelta(content=text)))
            if signature is not None:  # a reasoning block of its own, closed in place, after the part's text
                out.append(ReasoningEnd())
                out.append(ReasoningEnd(signature=signature))
            return
        kind = part_kind(part)
        if kind is not None:
            self._once(kind, "unsupported-part", f"{kind} part not read", out)
        elif signature is not None:
            if part.thought is not True:  # a signature alone: a reasoning block of its own (a thought's ends its own)
                out.append(ReasoningEnd())
            out.append(ReasoningEnd(signature=signature))
        else:
            self._once("empty-part", "unknown-part", "a part with no key this parser reads was ignored", out)

    def _call(self, part: Part, out: list[Signal]) -> None:
        given = part.function_call
        assert given is not None
        wire_id, name = _name(given.id), _name(given.name)
        open_call = self.open
        if open_call is not None and (wire_id == open_call.id or (name is None and wire_id is None)):
            self._extend(open_call, part, out)
            return
        self._end_open(out)
        if wire_id is not None and wire_id in self.ended_ids:
            out.append(Anomaly("repeated-call", None, f"functionCall {wire_id[:60]} again after it ended: ignored"))
            return
        if name is None:
            what = "absent" if given.name is None else repr(given.name)[:40]
            detail = f"functionCall without a name (name {what}): refused rather than assembled without its name"
            self._halt(Failure(Code.MALFORMED_TOOL_CALL, detail), out)
            return
        call = Call(len(self.calls), wire_id, name)
        self.calls.append(call)
        if call.made:
            out.append(Anomaly("made-id", call.position, f"functionCall {name[:60]} had no id: {call.id} made"))
        self._extend(call, part, out)

    def _extend(self, call: Call, part: Part, out: list[Signal]) -> None:
        given = part.function_call
        assert given is not None
        call.sign(part.thought_signature)
        if not call.give(given.args):
            out.append(Anomaly("repeated-args", call.position, f"functionCall {call.id[:60]}'s args came again"))
        for detail in call.add(given.partial_args or []):
            out.append(Anomaly("partial-args", call.position, detail))
        limit = self.limits.max_arguments_bytes
        if call.size > limit:  # the arguments are held until the call ends: bounded while they stream
            self._halt(limit_exceeded("max_arguments_bytes", call.size, limit, "one tool call's arguments"), out)
            return
        self.open = call
        if given.will_continue is not True and call.continuing is None:
            self._end_open(out)

    def _end_open(self, out: list[Signal]) -> None:
        call = self.open
        if call is None:
            return
        self.open = None
        self.ended_ids.add(call.id)
        function = WireFunction(name=call.name, arguments=call.arguments_json())
        out.append(wire_chunk(WireDelta(tool_calls=[WireToolCall(index=call.position, id=call.id, function=function)])))
        if call.signature is not None:
            out.append(ToolCallSignature(call.position, call.signature))

    def _finish(self, reason: str, message: object) -> None:
        told = _name(message)
        said = f": {told[:500]}" if told else ""
        self.saw_finish = True
        if reason in FINISHES:
            self.finish = ("tool_calls" if reason == "STOP" and self.calls else FINISHES[reason], None)
        elif reason in FILTERED:
            self.finish = ("content_filter", Failure(Code.CONTENT_FILTER, f"model stopped: {reason}{said}"))
        elif reason == "MALFORMED_FUNCTION_CALL":
            failure = Failure(Code.MALFORMED_TOOL_CALL, f"model stopped: MALFORMED_FUNCTION_CALL{said}")
            self.finish = ("malformed", failure)
        else:
            self.finish = ("unknown", Failure(Code.UNKNOWN, f"model stopped: {reason[:60]}{said}"))

    def _usage(self, metadata: dict[str, Any], out: list[Signal]) -> None:
        for key in USAGE_FIELDS:
            value = metadata.get(key)
            if value is None:
                continue
            if is_count(value):
                self.usage[key] = value
            else:
                kept = " (the earlier valid count kept)" if key in self.usage else ""
                out.append(Anomaly("invalid-usage", None, f"usageMetadata.{key}={str(value)[:40]} dropped{kept}"))

    def _once(self, key: str, kind: str, detail: str, out: list[Signal]) -> None:
        if key not in self.reported:
            self.reported.add(key)
            out.append(Anomaly(kind, None, detail))

    # -- the end --------------------------------------------------------------------------------------------------

    def wire_usage(self) -> WireUsage | None:
        """The counts read so far in the chat shape (decision 0071's mapping); None when none is known."""
        got = self.usage
        if not got:
            return None
        prompt, cached = got.get("promptTokenCount"), got.get("cachedContentTokenCount")
        candidates, thoughts = got.get("candidatesTokenCount"), got.get("thoughtsTokenCount")
        output = None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0)
        return WireUsage(
            prompt_tokens=prompt,
            completion_tokens=output,
            total_tokens=got.get("totalTokenCount"),
            prompt_tokens_details=WirePromptDetails(cached_tokens=cached) if cached is not None else None,
            completion_tokens_details=WireCompletionDetails(reasoning_tokens=thoughts)
            if thoughts is not None
            else None,
        )

    def _emit_usage(self, out: list[Signal]) -> None:
        usage = self.wire_usage()
        if usage is not None:
            out.append(WireChunk(usage=usage))

    def _halt(self, failure: Failure, out: list[Signal]) -> None:
        """Every failure: the usage known so far first (usage precedes every finish), then ``Halt``."""
        self._emit_usage(out)
        out.append(Halt(failure))
        self.finished = True

    def _exceeded(self, counted: int, what: str, out: list[Signal]) -> None:
        self._emit_usage(out)
        super()._exceeded(counted, what, out)

    def on_end(self, out: list[Signal]) -> None:
        self.read_unterminated(out)
        if not self.finished:
            self._end(out, by=None)

    def _end(self, out: list[Signal], by: str | None) -> None:
        """The end of the body (``by`` None) or a ``[DONE]``: the finish read, else a cut stream."""
        if self.finish is None:
            if self.open is not None:
                call = self.open
                out.append(Anomaly("unfinished-call", call.position, f"functionCall {call.name[:60]} never ended"))
            where = f" ({by} came first)" if by else ""
            self._halt(Failure(Code.STREAM_CLOSED, f"Gemini stream ended before any finishReason{where}"), out)
            return
        self._end_open(out)
        reason, failure = self.finish
        files = [key for key in ("inlineData", "fileData") if key in self.reported]
        if failure is None and files and not self.said and not self.calls:  # decision 0071: not empty, not ours
            failure = Failure(Code.UNSUPPORTED_OUTPUT, f"the answer is only {' and '.join(files)} parts, not carried")
        if failure is not None:
            self._halt(failure, out)
            return
        out.append(WireChunk(choices=[WireChoice(index=0, finish_reason=reason)], usage=self.wire_usage()))
        out.append(Done())
        self.finished = True
