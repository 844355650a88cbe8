"""The SDK sweep over the Gemini peer corpus (issue 32 item 4; ``test_faithful_sweep.py`` for the other formats): each
of the 79 streams of ``tests/corpus/gemini-peers``, served by one loopback gateway one event per chunk, read by the
unmodified google-genai SDK (``models.generate_content_stream`` on ``httpx2.Client``, and through ``client.aio`` on
``httpx2.AsyncClient``) through ``SanitizingTransport``, agrees with the library's own reading of the same bytes
(``gemini_oracle``): text, thoughts, each call's name and arguments, the finish as the SDK reports it (a finish it
reports itself passes as sent); a cut, a nameless call and an upstream's in-band error raised as the SDK's
``APIError`` (before the first byte an HTTP error whose status google-genai retries exactly when ``x-should-retry``
says so, after it the in-band error event).

Where the plain SDK already reads a stream as the library does, its whole result (every chunk's ``model_dump()``)
through the transport is the plain one. Both client kinds, and a ``Proxy`` on loopback, give a client the same bytes.
``SDK_LIMITS`` lists the streams the SDK cannot read as the library does, each with its reason: the SDK reads each of
them the same without the transport, and an entry that no longer disagrees fails the test. The counts
docs/keep-your-client.md shows for the corpus are checked here.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("google.genai")

from gateway import Gateway
from gemini_oracle import gemini_disagreement
from gemini_sweep import (
    GEMINI_KINDS,
    GEMINI_STREAMS,
    gateway_root,
    gemini_gateway,
    library_reading,
    raw_readings,
    sdk_readings,
)
from sweep_corpus import STREAMS, Kind, Stream, forwarded_before_failing

from pipeline.proxy import Proxy

pytestmark = [
    pytest.mark.skipif(not GEMINI_STREAMS and not os.environ.get("CI"), reason="no corpus (corpus.py)"),
    pytest.mark.filterwarnings("ignore::UserWarning"),  # the SDK's enums on values it does not know (LOW, ...)
    pytest.mark.slow,  # a sweep over the corpus (tests/tiers.py)
]

_SIGNATURE = ("a `thoughtSignature` that is not base64 (the peer test's placeholder {}): the SDK's model "
              "(`Part.thought_signature: bytes`) raises pydantic's ValidationError; Google sends base64")
SDK_LIMITS: dict[str, str] = {
    "gemini-peers/18-vercel-vertex-partial-args-null-value":
        "a `partialArgs` piece whose `nullValue` is `{}` (the peer test's form): the SDK's model accepts only "
        "'NULL_VALUE' and raises ValidationError before the cut's in-band error (the library reads null)",
    "gemini-peers/31-vercel-text-and-inline-data-interleaved-in-one-event":
        "`inlineData.data` that is not base64 (the peer test's 'image1'): the SDK raises ValidationError",
    "gemini-peers/34-vercel-signatures-on-thought-and-text-parts-no-usage": _SIGNATURE.format("'reasoning_sig1'"),
    "gemini-peers/52-litellm-vertex-partial-args-signature": _SIGNATURE.format("'sig123'"),
    "gemini-peers/63-litellm-thought-then-signed-call-stop-one-event": _SIGNATURE.format("cut with '...'"),
    "gemini-peers/64-litellm-signed-call-no-thought-stop": _SIGNATURE.format("cut with '...'"),
    "gemini-peers/38-vercel-fixture-vertex-no-args-call-then-three-streamed-calls":
        "Vertex's streamed arguments (`partialArgs`, `willContinue`): the SDK gives each piece as a part of its own "
        "(a continuation has no name, and no call has `args`); the library assembles each call's arguments; the "
        "repairer passes the pieces as sent (decision 0071)",
}

DOCS = Path(__file__).resolve().parents[3] / "docs"
PLAIN_READS_RIGHT = 39
"""How many Gemini peer streams the plain SDK (no transport) reads as the library does."""


@pytest.fixture(scope="module")
def root() -> Iterator[str]:
    gateway: Gateway
    with gemini_gateway() as gateway:
        yield gateway_root(gateway)


def _cached(read: Callable[[Any], Any]) -> Callable[[Any], Any]:
    cache: dict[Any, Any] = {}
    return lambda key: cache[key] if key in cache else cache.setdefault(key, read(key))


@pytest.fixture(scope="module")
def through(root: str) -> Callable[[Kind], dict[str, dict[str, Any]]]:
    """The SDK's reading of every stream through the transport, once per client kind."""
    return _cached(lambda kind: sdk_readings(kind, root, transport=True))


@pytest.fixture(scope="module")
def plain(root: str) -> dict[str, dict[str, Any]]:
    """The plain SDK's reading of every stream (httpx2, no transport)."""
    return sdk_readings("httpx2", root, transport=False)


def _disagreement(stream: Stream, got: dict[str, Any]) -> str | None:
    return gemini_disagreement(library_reading(stream), got, forwarded_before_failing(stream))


def test_the_sweep_covers_every_gemini_peer_stream_and_each_exception_names_one() -> None:
    assert len(GEMINI_STREAMS) == 79
    assert {stream.name.split("/")[0] for stream in GEMINI_STREAMS} == {"gemini-peers"}
    assert set(SDK_LIMITS) <= {stream.name for stream in GEMINI_STREAMS}


@pytest.mark.server
@pytest.mark.parametrize(("kind", "stream"), [pytest.param(kind, stream, id=f"{kind}-{stream}")
                                              for stream in GEMINI_STREAMS for kind in GEMINI_KINDS])
def test_google_genai_through_the_transport_reads_each_gemini_stream_as_the_library_does(
    kind: Kind, stream: Stream, through: Callable[[Kind], dict[str, dict[str, Any]]],
    plain: dict[str, dict[str, Any]],
) -> None:
    got = through(kind)[stream.name]
    why = _disagreement(stream, got)
    if stream.name not in SDK_LIMITS:
        assert why is None, why
        return
    assert why is not None, f"no longer an exception: {SDK_LIMITS[stream.name]}"
    assert got == plain[stream.name]  # the SDK's own limit: it reads the stream the same without the transport


def _table(path: Path) -> dict[str, list[str]]:
    """The rows of the "What the sweep shows" table: corpus -> its cells."""
    rows = [line.strip("|").split("|") for line in path.read_text().splitlines() if line.startswith("| `")]
    return {cells[0].strip().split("`")[1]: [c.strip() for c in cells[1:]] for cells in rows}


def test_the_gemini_row_docs_keep_your_client_shows_is_the_sweeps(
    through: Callable[[Kind], dict[str, dict[str, Any]]]
) -> None:
    """Streams, agreeing, failures raised (HTTP / in-band), the SDK's own limits (httpx2); and the table has a row
    for each corpus of both sweeps and no other."""
    count: Counter[str] = Counter()
    for stream in GEMINI_STREAMS:
        got, forwarded = through("httpx2")[stream.name], forwarded_before_failing(stream)
        agrees = _disagreement(stream, got) is None
        raised = agrees and forwarded is not None
        count.update(streams=1, agree=agrees, limit=not agrees, http=raised and forwarded is False,
                     in_band=raised and forwarded is True)
    table = _table(DOCS / "keep-your-client.md")
    assert table["gemini-peers"] == [str(count["streams"]), str(count["agree"]),
                                     f"{count['http']} / {count['in_band']}", str(count["limit"])]
    assert set(table) == {stream.name.rsplit("/", 1)[0] for stream in STREAMS} | {"gemini-peers"}


def test_where_the_plain_sdk_reads_a_gemini_stream_as_the_library_does_the_transport_changes_nothing_it_returns(
    through: Callable[[Kind], dict[str, dict[str, Any]]], plain: dict[str, dict[str, Any]]
) -> None:
    """Repair, don't rewrite (0032): every chunk's ``model_dump()`` (ids, usage, signatures, safety ratings, grounding,
    unknown fields) through the transport is the plain SDK's."""
    agree = [s for s in GEMINI_STREAMS if "dump" in plain[s.name] and _disagreement(s, plain[s.name]) is None]
    assert len(agree) == PLAIN_READS_RIGHT
    assert [s.name for s in agree if through("httpx2")[s.name] != plain[s.name]] == []


@pytest.fixture(scope="module")
def raw(root: str) -> Callable[[Kind], dict[str, tuple[Any, ...]]]:
    """What a bare client of each kind gets through the transport, once per kind."""
    return _cached(lambda kind: raw_readings(kind, root, transport=True))


@pytest.mark.server
def test_both_client_kinds_get_the_same_bytes_through_the_transport(
    raw: Callable[[Kind], dict[str, tuple[Any, ...]]]
) -> None:
    """Status, ``x-should-retry``, ``retry-after-ms``, the body and how it ended, stream by stream."""
    got, want = raw("httpx2-async"), raw("httpx2")
    assert len(got) == len(GEMINI_STREAMS)
    assert [name for name in want if got[name] != want[name]] == []


@pytest.mark.server
def test_the_proxy_gives_a_gemini_client_the_bytes_the_transport_gives(
    root: str, raw: Callable[[Kind], dict[str, tuple[Any, ...]]]
) -> None:
    """With ``upstream`` Google's versioned root (``.../v1beta``), as docs/proxy.md says."""
    with Proxy(root + "/v1beta") as proxy:
        proxied = raw_readings("httpx2", proxy.base_url.removesuffix("/v1"), transport=False)
    want = raw("httpx2")
    assert [name for name in want if proxied[name] != want[name]] == []
    answered = sorted(name for name, (status, *_rest) in want.items() if status != 200)
    before = sorted(s.name for s in GEMINI_STREAMS if forwarded_before_failing(s) is False)
    assert answered == before  # exactly the failures found before the first byte are HTTP errors, through both
    assert len(answered) >= 10
