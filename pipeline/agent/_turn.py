"""The tool-calling turn loop: request -> stream (with retry) -> assemble -> persist -> run tools -> repeat.

    async for event in run_turn(client, session, registry, "What is the weather in Paris?"):
        ...   # TurnEvent: step-start, chunk, attempt-failed, retry, assistant-message, tool-call, tool-result,
              #            step-end, turn-end

Per step:

1. The request carries ``session.messages()`` (the committed history, in chat shape) and the registry's tool
   schemas, in the shape of the client's API (``ChatClient(api="chat" | "messages" | "responses")``: assistant tool
   calls and tool results as that API writes them, docs/decisions/0027-request-shapes.md); ``system="..."`` (with
   any other request keyword) goes to ``ChatClient.request_body`` on every step.
2. The response streams through the pipeline with ``retry_when_retryable``. A retried attempt is recorded as
   ``assistant/attempt`` (its chunks, for the record) followed by ``llm/retry``; its partial output and its error text
   never reach the next request's messages, which are the same messages again, and its tool calls never run
   (docs/decisions/0011-session-durability.md).
3. A successful response is committed as ``assistant/message``; each of its tool calls (identified by construction:
   a ``ToolCallBlock`` cannot exist without a non-empty id and name) is recorded as ``tool/call`` with its kind, the
   tools run (concurrently when the model asked for several; a call that is not a function goes to the registry's
   custom tool or its kind's handler, docs/decisions/0072-client-run-tool-calls.md), and each result is recorded as
   ``tool/result``. The next request sends each kind of call and its result back as that API's items.
4. The loop goes on until the model stops calling tools, the response fails, or ``max_steps`` is reached.

A session whose last turn was interrupted (a crash) is recovered first with ``Session.recover``.
Setting ``cancel`` stops the request or a pending retry, or abandons running tools (each gets an error result), and
ends the turn ``aborted``. The session is consistent after every event: a crash mid-turn leaves a log that
``Session.recover`` closes without re-running anything.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Literal, TypeAlias
from urllib.parse import urlsplit

import attrs

from operators import Chunk, Code, Failure, FinishReason, Retry, ToolCallBlock
from pipeline.client import ChatClient
from pipeline.compose import Assembler, AssistantMessage
from pipeline.formats import ToolKindError
from pipeline.session import Session, SessionValidationError, SessionWriteError

from ._registry import ToolRegistry
from ._tool import ToolResult

__all__ = ["TurnEvent", "TurnEventKind", "run_turn", "run_turn_to_end"]

TurnEventKind: TypeAlias = Literal[
    "step-start",
    "chunk",
    "attempt-failed",
    "retry",
    "assistant-message",
    "tool-call",
    "tool-result",
    "step-end",
    "turn-end",
]
"""What happened, as ``TurnEvent.kind`` says it; ``TurnEvent``'s docstring says what ``data`` holds for each."""


@attrs.frozen
class TurnEvent:
    """One observable moment of a turn, for a UI. ``data`` depends on ``kind``:

    chunk: the Chunk; attempt-failed / retry: the Retry chunk; assistant-message: the AssistantMessage;
    tool-call: the ToolCallBlock; tool-result: (ToolCallBlock, ToolResult); turn-end: the reason dict.
    """

    kind: TurnEventKind
    turn: int
    step: int
    data: Any = None


def _provider(client: ChatClient) -> str:
    parts = urlsplit(client.config.base_url)
    return parts.netloc or client.config.base_url


def _record(chunks: Sequence[Chunk]) -> list[dict[str, Any]]:
    """A failed attempt's chunks for ``assistant/attempt``. A tool-call delta whose id was not known yet is recorded
    without the ``id`` key, so that no line of the log holds an empty call id (``chunk_from_dict`` reads it back)."""
    out = []
    for chunk in chunks:
        data = chunk.to_dict()
        if data["type"] == "tool-call-delta" and not data["id"]:
            del data["id"]
        out.append(data)
    return out


def _content(message: AssistantMessage) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    if message.reasoning_blocks:  # each block kept, with what the provider needs back (decision 0028)
        content.extend(block.to_dict() for block in message.reasoning_blocks)
    elif message.reasoning:
        content.append({"type": "reasoning", "text": message.reasoning})
    if message.text:
        content.append({"type": "text", "text": message.text})
    content.extend(call.to_dict() for call in message.tool_calls)
    return content


def _refused(exc: SessionWriteError) -> bool:
    """Whether the log refused an event for what it holds (the gateway's content), not for a failed write."""
    return isinstance(exc.__cause__, SessionValidationError | ValueError | TypeError)


def _append_attempt(
    session: Session, turn: int, step: int, attempt: int, chunks: Sequence[Chunk], failure: Failure
) -> None:
    """Record a failed attempt with its chunks, or without them when the log refuses what the gateway sent."""
    try:
        session.append_attempt(turn, step, attempt, _record(chunks), failure)
    except SessionWriteError as exc:
        if not _refused(exc):
            raise
        session.append_attempt(turn, step, attempt, [], failure)


def _check_tools(client: ChatClient, tools: Sequence[Mapping[str, Any]] | None) -> None:
    """``ToolKindError`` before anything is written when the registry declares a tool only the Responses API takes
    (a custom tool, a built-in kind's tool: decision 0072) and the client speaks another API."""
    if client.config.api == "responses":
        return
    for tool in tools or ():
        if tool.get("type") != "function":
            raise ToolKindError(
                f"the registry declares a {tool.get('type')!r} tool, which only the Responses API takes; this client "
                f"speaks api={client.config.api!r} (docs/decisions/0072-client-run-tool-calls.md)"
            )


def _duplicate_call_id(message: AssistantMessage) -> str | None:
    seen: set[str] = set()
    for call in message.tool_calls:
        if call.id in seen:
            return call.id
        seen.add(call.id)
    return None


async def _run_tools(
    registry: ToolRegistry, calls: Sequence[ToolCallBlock], cancel: asyncio.Event | None
) -> list[ToolResult] | None:
    """The tools' results in call order, or None when ``cancel`` was set first (the tools are cancelled)."""
    work = asyncio.ensure_future(registry.call_many([(call.name, call.arguments, call.kind) for call in calls]))
    if cancel is None:
        return await work
    stop = asyncio.ensure_future(cancel.wait())
    try:
        done, _ = await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
    if work in done:
        return work.result()
    work.cancel()
    return None


async def run_turn(
    client: ChatClient,
    session: Session,
    registry: ToolRegistry,
    user_message: str,
    *,
    max_steps: int = 8,
    cancel: asyncio.Event | None = None,
    **request: Any,
) -> AsyncIterator[TurnEvent]:
    """Runs one user turn to its end, persisting every step; yields TurnEvents as they happen."""
    if max_steps < 1:
        raise ValueError(f"max_steps must be at least 1, got {max_steps}")
    tools = registry.schemas() or None
    _check_tools(client, tools)
    if session.state.open_turn is not None:
        # A crash interrupted the last turn: close it first, with only the missing closers and without re-running
        # anything (cold recovery, docs/decisions/0011-session-durability.md).
        session.recover()
    turn = session.next_turn()
    session.append_user_message(user_message)
    provider = _provider(client)

    async def end(step: int, reason: dict[str, Any]) -> TurnEvent:
        session.append_turn_end(turn, reason)
        return TurnEvent("turn-end", turn, step, reason)

    for step in range(1, max_steps + 1):
        yield TurnEvent("step-start", turn, step)
        assembler = Assembler()
        attempt = 1
        attempt_chunks: list[Chunk] = []
        # the client builds the body in its API's shape (ChatClient.request_body); the history stays chat-shaped
        async for chunk in client.stream(session.messages(), tools=tools, cancel=cancel, **request):
            assembler.feed(chunk)
            if isinstance(chunk, Retry):
                session.append_attempt(turn, step, attempt, _record(attempt_chunks), chunk.failure)
                session.append_retry(turn, step, chunk.attempt, chunk.max_retries, chunk.delay_ms, chunk.failure)
                yield TurnEvent("attempt-failed", turn, step, chunk)
                yield TurnEvent("retry", turn, step, chunk)
                attempt += 1
                attempt_chunks = []
                continue
            attempt_chunks.append(chunk)
            yield TurnEvent("chunk", turn, step, chunk)
        message = assembler.result()

        failure = message.finish.failure
        duplicate = _duplicate_call_id(message)
        if failure is None and duplicate is not None:
            failure = Failure(Code.MALFORMED_TOOL_CALL, f"two tool calls share the id {duplicate!r}")
            _append_attempt(session, turn, step, attempt, attempt_chunks, failure)
            yield await end(step, FinishReason("error", failure).to_dict())
            return
        if failure is not None:  # error or aborted: the attempt is kept for the record, nothing is committed
            _append_attempt(session, turn, step, attempt, attempt_chunks, failure)
            yield await end(step, message.finish.to_dict())
            return

        try:
            session.append_assistant_message(
                turn,
                step,
                content=_content(message),
                provider=provider,
                model=client.config.model,
                usage=message.usage,
                finish=message.finish,
            )
        except SessionWriteError as exc:
            if not _refused(exc):
                raise
            failure = Failure(Code.MALFORMED_RESPONSE, f"the response cannot be recorded: {exc}")
            _append_attempt(session, turn, step, attempt, attempt_chunks, failure)
            yield await end(step, FinishReason("error", failure).to_dict())
            return
        yield TurnEvent("assistant-message", turn, step, message)
        if not message.tool_calls:
            session.append_step_end(turn, step)
            yield TurnEvent("step-end", turn, step)
            yield await end(step, {"kind": "stop"})
            return

        for call in message.tool_calls:
            session.append_tool_call(turn, step, call.id, call.name, call.arguments, kind=call.kind)
            yield TurnEvent("tool-call", turn, step, call)
        results = await _run_tools(registry, message.tool_calls, cancel)
        cancelled = results is None
        if results is None:
            results = [ToolResult("cancelled: the turn was cancelled before the tool finished", is_error=True)] * len(
                message.tool_calls
            )
        for call, result in zip(message.tool_calls, results, strict=True):
            session.append_tool_result(turn, step, call.id, result.text, is_error=result.is_error)
            yield TurnEvent("tool-result", turn, step, (call, result))
        session.append_step_end(turn, step)
        yield TurnEvent("step-end", turn, step)
        if cancelled:
            reason = FinishReason("aborted", Failure(Code.ABORTED, "cancelled by the caller")).to_dict()
            yield await end(step, reason)
            return

    yield await end(max_steps, {"kind": "max-steps"})


async def run_turn_to_end(
    client: ChatClient,
    session: Session,
    registry: ToolRegistry,
    user_message: str,
    **kwargs: Any,
) -> list[TurnEvent]:
    """Runs a turn and returns all its events (convenience for scripts and tests)."""
    return [event async for event in run_turn(client, session, registry, user_message, **kwargs)]
