"""``ChatClient``: a streaming client for chat completions, the Messages API, the Responses API or Gemini's
``streamGenerateContent`` (``api=``), through the pipeline with bounded retry.

The chain, per ``chunks()`` subscription::

    http_source --> parse_stream(api) --> rules (each attempt) --> retry_when_retryable --> to_chunks --> chunks

``rules=`` means what it means in ``pipeline.translate`` and ``pipeline.stream``: the rule chain applied to each
attempt, replacing ``protocol_rules()``. Processing after the retry (seeing ``retry`` chunks and the final attempt)
is done with ordinary reactivex operators on the ``Observable[Chunk]`` that ``chunks()`` returns::

    client.chunks(client.request_body(messages)).pipe(ops.filter(lambda c: c.type != "retry"))

``stream()`` bridges Rx to ``async for`` without any scheduler thread: the request task pushes each read through
the chain and then waits until the caller has taken what it produced, so the caller's loop paces the reads.

The conversation is always given in chat shape (what ``Session.messages()`` returns); ``request_body`` turns it into
the body of the client's API (``_requests.py``, docs/decisions/0027-request-shapes.md), so ``run_turn`` sends the same
conversation, tool calls and tool results included, whichever API the client speaks.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any

import attrs
import httpx
import reactivex as rx
from reactivex import Observable, abc

from operators import (
    Batch,
    Chunk,
    Code,
    Failure,
    Finish,
    FinishReason,
    Limits,
    RetryPolicy,
    Rule,
    Signal,
    retry_when_retryable,
)
from pipeline.compose import Assembler, AssistantMessage, apply, to_chunks, translate_batches
from pipeline.formats import WIRE_FORMATS, Api, RequestOptions

from .._logging import get_logger, log_chunks
from ._config import ClientConfig
from ._source import Pace, http_source

__all__ = ["ChatClient"]


class ChatClient:
    """Streams completions through the pipeline, with bounded retry. ``api`` (default ``"chat"``) chooses the API:
    ``"chat"`` posts to ``{base_url}/chat/completions``, ``"messages"`` to ``{base_url}/messages`` (with
    ``x-api-key`` and ``anthropic-version`` besides ``Authorization``), ``"responses"`` to ``{base_url}/responses``,
    ``"gemini"`` to ``{base_url}/models/{model}:streamGenerateContent?alt=sse`` (the key in ``x-goog-api-key`` only,
    never in the URL; the base URL defaults to Google's, ``GEMINI_BASE_URL``); each format's record says where (path
    template, query) and which headers carry the key (``pipeline.formats.WIRE_FORMATS``).

        client = ChatClient(base_url="http://127.0.0.1:8808/v1", model="seed-bug")
        async for chunk in client.stream([{"role": "user", "content": "hi"}]):
            ...
        message = await client.complete(messages)
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        model: str | None = None,
        api_key: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        idle_timeout: float | None = None,
        total_timeout: float | None = None,
        limits: Limits | None = None,
        retry_policy: RetryPolicy | None = None,
        headers: Mapping[str, str] | None = None,
        config: ClientConfig | None = None,
        api: Api | None = None,
    ) -> None:
        if config is not None and api is not None and api != config.api:
            raise ValueError(f"api={api!r} disagrees with config.api={config.api!r}: give one of them")
        self.config = config or ClientConfig.resolve(
            base_url=base_url,
            model=model,
            api_key=api_key,
            idle_timeout=idle_timeout,
            total_timeout=total_timeout,
            limits=limits,
            api=api,
        )
        self.retry_policy = retry_policy if retry_policy is not None else RetryPolicy()
        self.headers = dict(headers or {})
        self._own_client = http_client is None
        self._client = http_client or httpx.AsyncClient(
            timeout=httpx.Timeout(connect=self.config.connect_timeout, read=None, write=30.0, pool=30.0)
        )

    def __repr__(self) -> str:
        api = "" if self.config.api == "chat" else f", api={self.config.api!r}"
        return f"ChatClient(base_url={self.config.base_url!r}, model={self.config.model!r}{api})"

    async def aclose(self) -> None:
        if self._own_client:
            await self._client.aclose()

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- the request ----------------------------------------------------------------------------------------------

    def request_body(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        options: RequestOptions | None = None,
        model: str | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """The streaming request body for the client's API, from a chat-shaped conversation (``messages`` and chat
        ``tools``; ``system`` goes first). The request options are ``options`` or given as keywords (``tools=...``,
        ``RequestOptions``' fields); other ``extra`` keys are added last, as they are, in the API's own shape.
        ``ValueError`` for a conversation the API cannot be sent (docs/decisions/0027-request-shapes.md)."""
        fields = {name: extra.pop(name) for name in attrs.fields_dict(RequestOptions) if name in extra}
        body = WIRE_FORMATS[self.config.api].build(
            messages, model=model or self.config.model, options=RequestOptions.of(options, fields)
        )
        body.update(extra)
        return body

    def _request_headers(self) -> dict[str, str]:
        wire = WIRE_FORMATS[self.config.api]
        headers = dict(self.headers)
        given = {name.lower() for name in headers}
        headers.update((name, value) for name, value in wire.headers.items() if name.lower() not in given)
        if "accept-encoding" not in given:  # the encodings the stream's reader inflates a slice at a time (0039)
            headers["Accept-Encoding"] = "gzip, deflate"
        if self.config.api_key:
            if wire.bearer:  # not to Google, which reads Authorization as an OAuth token
                headers["Authorization"] = f"Bearer {self.config.api_key}"
            if wire.key_header != "authorization":  # the record's own key header, besides Authorization
                headers[wire.key_header] = self.config.api_key
        return headers

    def response(self, body: Mapping[str, Any], *, pace: Pace | None = None) -> Observable[bytes]:
        """A cold Observable of the response's byte reads. Each subscription sends the request again (with the
        client's configuration and headers at that moment); subscribe from within a running event loop. Disposing it
        closes the response."""

        def factory(scheduler: abc.SchedulerBase | None) -> Observable[bytes]:
            return http_source(self._client, self.config, body, headers=self._request_headers(), pace=pace)

        return rx.defer(factory)

    # -- the facades ----------------------------------------------------------------------------------------------

    def attempts(
        self,
        body: Mapping[str, Any],
        *,
        rules: Iterable[Rule] | None = None,
        pace: Pace | None = None,
        comments: bool = False,
    ) -> Observable[Batch[Signal]]:
        """One attempt per subscription: the response through the API's parse operator (``parse_stream(api)``) and
        ``rules`` (default ``protocol_rules()``), as batches; ``comments=True`` reports SSE comment lines as
        ``comment`` anomalies."""
        return translate_batches(
            self.response(body, pace=pace), rules=rules, limits=self.config.limits, format=self.config.api,
            comments=comments,
        )

    def chunks(
        self,
        body: Mapping[str, Any],
        *,
        retry: RetryPolicy | bool = True,
        anomalies: bool = False,
        scheduler: abc.SchedulerBase | None = None,
        rules: Iterable[Rule] | None = None,
        pace: Pace | None = None,
    ) -> Observable[Chunk]:
        """The whole chain as an Observable of chunks: attempts (``rules`` on each), then ``retry_when_retryable``.
        Compose post-retry processing on the result with ordinary reactivex operators. The API key is redacted from
        every chunk (``redact_key``, docs/decisions/0015-redaction.md)."""
        from pipeline.compose import redact_key  # here, not at the top, to keep this change inside chunks()

        chain: list[Rule] = []
        if retry is not False:
            policy = retry if isinstance(retry, RetryPolicy) else self.retry_policy
            chain.append(retry_when_retryable(policy, scheduler=scheduler))
        attempts = self.attempts(body, rules=rules, pace=pace, comments=anomalies)
        chunks: Observable[Chunk] = to_chunks(anomalies=True)(apply(attempts, chain))  # logged even when not asked for
        # last, so stream(), complete(), run_turn and the session see only chunks without the key
        redacted = redact_key(self.config.api_key)(chunks)
        return log_chunks(get_logger("transport"), api_key=self.config.api_key, pass_anomalies=anomalies)(redacted)

    async def stream(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        retry: RetryPolicy | bool = True,
        anomalies: bool = False,
        cancel: asyncio.Event | None = None,
        rules: Iterable[Rule] | None = None,
        **request: Any,
    ) -> AsyncIterator[Chunk]:
        """``async for chunk in client.stream(messages, tools=...)``: chunks as they arrive, retries included.

        ``rules`` replaces the rule chain of each attempt (default ``protocol_rules()``). Setting ``cancel`` stops the
        request (or a pending retry) and ends with an ``aborted`` finish. Leaving the loop early closes the response.
        """
        if "operators" in request:
            raise TypeError(
                "ChatClient.stream() takes no operators=: rules= replaces the rule chain of each attempt, and "
                "processing after the retry composes on client.chunks(...) with reactivex operators"
            )
        body = self.request_body(messages, **request)
        ready: collections.deque[Chunk] = collections.deque()
        wake = asyncio.Event()
        drained = asyncio.Event()
        drained.set()
        ended = False

        def on_next(chunk: Chunk) -> None:
            ready.append(chunk)
            drained.clear()
            wake.set()

        def on_end(*_: Any) -> None:
            nonlocal ended
            ended = True
            wake.set()

        async def pace() -> None:
            await drained.wait()

        watcher: asyncio.Task[Any] | None = None
        if cancel is not None:
            watcher = asyncio.get_running_loop().create_task(cancel.wait())
            watcher.add_done_callback(lambda _: wake.set())

        subscription = self.chunks(body, retry=retry, anomalies=anomalies, rules=rules, pace=pace).subscribe(
            on_next=on_next, on_error=on_end, on_completed=on_end
        )
        try:
            while True:
                if cancel is not None and cancel.is_set():
                    subscription.dispose()
                    yield Finish(FinishReason("aborted", Failure(Code.ABORTED, "cancelled by the caller")))
                    return
                while ready:
                    yield ready.popleft()
                drained.set()
                if ended:
                    return
                wake.clear()
                if ready or ended:
                    continue
                await wake.wait()
        finally:
            subscription.dispose()
            if watcher is not None:
                watcher.cancel()

    async def complete(self, messages: Sequence[Mapping[str, Any]], **kwargs: Any) -> AssistantMessage:
        """Streams a response and returns it assembled (``kwargs`` as for ``stream``)."""
        assembler = Assembler()
        async for chunk in self.stream(messages, **kwargs):
            assembler.feed(chunk)
        return assembler.result()
