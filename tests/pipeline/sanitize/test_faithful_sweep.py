"""The sweep over every shared stream (issue 20): each of the 244 recorded streams of the corpus
(``sse/real`` and ``sse/peers`` chat completions, ``messages``, ``responses``, ``peers-formats``), served by one
loopback gateway one event per chunk, read by the unmodified SDK (openai chat and Responses, anthropic Messages)
through ``SanitizingTransport``, agrees with the library's own reading of the same bytes (``sweep_oracle``): text,
reasoning, each call's id, name and arguments, the finish mapped the SDK's way; a failure raised as the decision
notes promise (an HTTP error naming our code with ``x-should-retry`` as classified before the first byte, the in-band
error after it).

The SDK's final result is read on every client kind it takes (``httpx2`` and ``httpx``, sync and async, for openai;
``httpx2``'s two for anthropic, which takes no httpx client); where the plain SDK already reads a stream as the
library does, its whole result through the transport is the plain one. On all four client kinds, and through a
``Proxy`` on loopback, the bytes a client gets (status, retry headers, body, how it ended) are the same. The counts
docs/keep-your-client.md shows are checked here. ``SDK_LIMITS`` lists the streams the SDK cannot read as the library
does, each with its reason: the SDK reads each of them the same without the transport, and an entry that no longer
disagrees fails the test.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from gateway import Gateway
from sweep_corpus import (
    KINDS,
    STREAMS,
    Kind,
    Stream,
    corpus_gateway,
    forwarded_before_failing,
    library_reading,
    raw_readings,
    sdk_readings,
)
from sweep_oracle import disagreement

from pipeline.proxy import Proxy

pytestmark = [
    pytest.mark.skipif(not STREAMS and not os.environ.get("CI"), reason="no corpus (corpus.py)"),
    pytest.mark.filterwarnings("ignore::UserWarning"),  # pydantic's serializer on the SDKs' lenient models
    pytest.mark.slow,  # a sweep over the corpus (tests/tiers.py)
]

_OBJECT = ("the openai SDK's chat.completions.stream() skips every chunk whose `object` is not "
           "'chat.completion.chunk' (its Azure async-filter heuristic): this stream's chunks have none")
_CREATED = ("a peer suite's minimal Responses stream without `response.created`: the SDK's responses.stream() "
            "raises RuntimeError on its first event; the repairer repairs identity, it invents no event (0036)")
_ADDED = ("a peer suite's minimal Responses stream whose content events come without their "
          "`response.output_item.added` (or `output_index`): the SDK raises RuntimeError; no event is invented (0036)")
_INCOMPLETE = ("responses.stream().get_final_response() needs `response.completed`: on `response.incomplete` the "
               "SDK raises RuntimeError(\"Didn't receive a `response.completed` event.\")")
_EMPTY_OUTPUT = ("the upstream's `response.completed` says `output: []`: the SDK's final response is that event's, "
                 "the library assembles the streamed items; the repairer fills no terminal event")

SDK_LIMITS: dict[str, str] = {
    "sse/real/25-perplexity-sonar-cumulative-usage":
        _OBJECT + " on the last chunk ('chat.completion.done'), which carries the finish: the SDK's finish is None",
    "sse/real/29-openrouter-deepseek-web-annotations":
        "the openai SDK cannot merge a list delta without `index` (OpenRouter's `annotations`): RuntimeError; "
        "the library does not read the field, so no rule changes it (0032)",
    **dict.fromkeys(
        [f"sse/peers/{name}" for name in (
            "17-vercel-usage-details-no-choice-index", "18-vercel-partial-token-details",
            "29-vercel-fixture-moonshot-reasoning-text-finish-on-content", "60-litellm-cumulative-usage-last-wins",
            "61-litellm-trailing-usage-without-cache-details", "63-langchain-glm4-no-finish-key-until-last",
            "66-langchain-text-usage-after-stop-no-done", "67-langchain-tool-call-no-usage-no-done")],
        _OBJECT + ", so it has no completion (AssertionError)"),
    "responses/32-vercel-ai-inline-incomplete-max-output-tokens": _INCOMPLETE,
    "peers-formats/responses/20-vercel-xai-incomplete-without-details": _INCOMPLETE,
    **dict.fromkeys(
        [f"peers-formats/responses/{name}" for name in (
            "03-vercel-function-call-no-terminal-event", "04-vercel-arguments-cut-mid-stream",
            "17-vercel-text-only-in-content-part-done-annotations", "31-litellm-text-then-content-policy-error",
            "32-litellm-text-then-server-error")],
        _CREATED),
    **dict.fromkeys(
        [f"peers-formats/responses/{name}" for name in (
            "12-vercel-reasoning-summary-two-parts", "13-vercel-reasoning-item-empty-summary",
            "14-vercel-encrypted-reasoning-with-summary", "15-vercel-encrypted-reasoning-empty-summary",
            "16-vercel-two-reasoning-items-two-messages", "19-vercel-xai-incomplete-max-output-tokens",
            "23-vercel-xai-completed-without-usage")],
        _ADDED),
    "peers-formats/responses/11-vercel-minimal-message-item-delta-without-part":
        "a text delta with no `response.content_part.added` before it: the SDK raises TypeError; no part is invented",
    "peers-formats/responses/26-pydantic-ai-mock-text-only-in-done-with-phase":
        "text only in `output_text.done`, no content part: the SDK raises IndexError; no part is invented",
    "peers-formats/responses/25-pydantic-ai-mock-null-text-delta":
        "a `delta: null` text event: the SDK raises TypeError (str + None); the library skips it, the repairer "
        "forwards unread deltas as sent (0036)",
    "peers-formats/responses/24-pydantic-ai-mock-refusal-deltas":
        "refusal deltas with no `output_item.done` before `response.completed`: the SDK raises RuntimeError "
        "(unfinished output items); the library reads REFUSAL",
    "peers-formats/responses/05-vercel-function-call-delta-then-done-namespace": _EMPTY_OUTPUT,
    "peers-formats/responses/06-vercel-arguments-only-in-done": _EMPTY_OUTPUT,
    "peers-formats/responses/18-vercel-client-tool-search-call-id-changes":
        "a client-run tool_search_call whose call_id changes between added and done: the library says "
        "UNSUPPORTED_OUTPUT (decision 0045; the shared expectation's EMPTY_RESPONSE is stale), the SDK's identity "
        "check raises RuntimeError; the repairer keeps call ids of function calls only",
}

DOCS = Path(__file__).resolve().parents[3] / "docs"
PLAIN_READS_RIGHT = (65, 40, 33)
"""How many chat, Messages and Responses streams the plain SDK (no transport) reads as the library does."""


@pytest.fixture(scope="module")
def corpus() -> Iterator[Gateway]:
    with corpus_gateway() as gateway:
        yield gateway


def _cached(read: Callable[[Any], Any]) -> Callable[[Any], Any]:
    cache: dict[Any, Any] = {}
    return lambda key: cache[key] if key in cache else cache.setdefault(key, read(key))


@pytest.fixture(scope="module")
def through(corpus: Gateway) -> Callable[[Kind], dict[str, dict[str, Any]]]:
    """The SDK's reading of every stream through the transport, once per client kind."""

    def read(kind: Kind) -> dict[str, dict[str, Any]]:
        streams = [s for s in STREAMS if kind.startswith("httpx2") or s.format != "messages"]
        return sdk_readings(kind, corpus.base_url, streams, transport=True)

    return _cached(read)


@pytest.fixture(scope="module")
def plain(corpus: Gateway) -> dict[str, dict[str, Any]]:
    """The plain SDK's reading of every stream (httpx2, no transport)."""
    return sdk_readings("httpx2", corpus.base_url, STREAMS, transport=False)


@pytest.fixture(scope="module")
def raw(corpus: Gateway) -> Callable[[Kind], dict[str, tuple[Any, ...]]]:
    """What a bare client of each kind gets through the transport, once per kind."""
    return _cached(lambda kind: raw_readings(kind, corpus.base_url, STREAMS, transport=True))


def test_the_sweep_covers_every_shared_stream_and_each_exception_names_one() -> None:
    by_folder: dict[str, int] = {}
    for stream in STREAMS:
        folder = stream.name.rsplit("/", 1)[0]
        by_folder[folder] = by_folder.get(folder, 0) + 1
    assert by_folder == {"sse/real": 36, "sse/peers": 67, "messages": 40, "responses": 36,
                         "peers-formats/messages": 32, "peers-formats/responses": 33}
    assert set(SDK_LIMITS) <= {stream.name for stream in STREAMS}


def _sdk_cases() -> list[Any]:
    """Each stream on every client kind its SDK takes: all four for openai, httpx2's two for anthropic (>= 2 accepts
    only httpx2 clients)."""
    return [pytest.param(kind, stream, id=f"{kind}-{stream}") for stream in STREAMS for kind in KINDS
            if kind.startswith("httpx2") or stream.format != "messages"]


@pytest.mark.server
@pytest.mark.parametrize(("kind", "stream"), _sdk_cases())
def test_the_sdk_through_the_transport_reads_each_stream_as_the_library_does(
    kind: Kind, stream: Stream, through: Callable[[Kind], dict[str, dict[str, Any]]],
    plain: dict[str, dict[str, Any]],
) -> None:
    got = through(kind)[stream.name]
    why = disagreement(stream, library_reading(stream), got, forwarded_before_failing(stream))
    if stream.name not in SDK_LIMITS:
        assert why is None, why
        return
    assert why is not None, f"no longer an exception: {SDK_LIMITS[stream.name]}"
    if SDK_LIMITS[stream.name] == _INCOMPLETE:  # repaired (the plain SDK fails earlier), then the SDK's own limit
        assert got["message"] == "Didn't receive a `response.completed` event.", got
        assert plain[stream.name] != got
    else:  # the SDK's own limit: it reads the stream the same without the transport
        assert got == plain[stream.name]


def _table(path: Path) -> dict[str, list[str]]:
    """The rows of the "What the sweep shows" table: corpus -> its cells."""
    rows = [line.strip("|").split("|") for line in path.read_text().splitlines() if line.startswith("| `")]
    return {cells[0].strip().split("`")[1]: [c.strip() for c in cells[1:]] for cells in rows}


def test_the_counts_docs_keep_your_client_claims_are_the_sweeps(
    through: Callable[[Kind], dict[str, dict[str, Any]]]
) -> None:
    """Each corpus's row: streams, agreeing, failures raised (HTTP / in-band), the SDK's own limits (httpx2)."""
    counts: dict[str, Counter[str]] = {}
    for stream in STREAMS:
        lib, got, forwarded = library_reading(stream), through("httpx2")[stream.name], forwarded_before_failing(stream)
        count = counts.setdefault(stream.name.rsplit("/", 1)[0], Counter())
        agrees = disagreement(stream, lib, got, forwarded) is None
        raised = agrees and "error" in got and lib["finish"][0] == "error"
        count.update(streams=1, agree=agrees, limit=not agrees, http=raised and forwarded is False,
                     in_band=raised and forwarded is True)
    rows = {folder: [str(c["streams"]), str(c["agree"]), f"{c['http']} / {c['in_band']}", str(c["limit"])]
            for folder, c in counts.items()}
    shown = _table(DOCS / "keep-your-client.md")
    assert {folder: cells for folder, cells in shown.items() if folder != "gemini-peers"} == rows  # and Gemini's row:
    # test_gemini_sdk_sweep.py


def test_where_the_plain_sdk_reads_as_the_library_does_the_transport_changes_nothing_it_returns(
    through: Callable[[Kind], dict[str, dict[str, Any]]], plain: dict[str, dict[str, Any]]
) -> None:
    """Repair, don't rewrite (0032): on every stream the plain SDK already reads as the library does, its whole final
    result through the transport (the model's dump: ids, usage, logprobs, unknown fields) is the plain one."""
    agree = [s for s in STREAMS if disagreement(s, library_reading(s), plain[s.name], False) is None
             and "dump" in plain[s.name]]
    counts = {fmt: sum(s.format == fmt for s in agree) for fmt in ("chat", "messages", "responses")}
    assert counts == {"chat": PLAIN_READS_RIGHT[0], "messages": PLAIN_READS_RIGHT[1], "responses": PLAIN_READS_RIGHT[2]}
    assert [s.name for s in agree if through("httpx2")[s.name] != plain[s.name]] == []


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "httpx2"])
def test_every_client_kind_gets_the_same_bytes_through_the_transport(
    kind: Kind, raw: Callable[[Kind], dict[str, tuple[Any, ...]]]
) -> None:
    """Status, ``x-should-retry``, ``retry-after-ms``, the body and how it ended, stream by stream."""
    got, want = raw(kind), raw("httpx2")
    assert len(got) == len(STREAMS)
    assert [name for name in want if got[name] != want[name]] == []


@pytest.fixture(scope="module")
def proxied(corpus: Gateway) -> Iterator[dict[str, tuple[Any, ...]]]:
    with Proxy(corpus.base_url) as proxy:
        yield raw_readings("httpx2", proxy.base_url, STREAMS, transport=False)


@pytest.mark.server
def test_the_proxy_gives_a_client_the_bytes_the_transport_gives(
    proxied: dict[str, tuple[Any, ...]], raw: Callable[[Kind], dict[str, tuple[Any, ...]]]
) -> None:
    want = raw("httpx2")
    assert len(proxied) == len(STREAMS)
    assert [name for name in want if proxied[name] != want[name]] == []
    answered = sorted(name for name, (status, *_rest) in want.items() if status != 200)
    before = sorted(s.name for s in STREAMS if forwarded_before_failing(s) is False)
    assert answered == before  # exactly the failures found before the first byte are HTTP errors, through both
    assert len(answered) >= 15
