"""The proxy's requests upstream and its reading of their responses' heads (``pipeline/proxy/_wire.py``, decision
0073) agree with h11, which did both before: the same request bytes, the same refusals; the same heads read (status,
reason, version, headers, what follows), the same heads refused. The ``httpx.Request`` the proxy makes is httpx's
own from the same content."""

from __future__ import annotations

import h11
import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.proxy._headers import upstream_request
from pipeline.proxy._wire import MAX_HEAD, LocalError, RemoteError, read_head, request_bytes

_NAMES = st.sampled_from([b"Host", b"host", b"Content-Type", b"X-Api-Key", b"content-length", b"Transfer-Encoding",
                          b"bad name", b"x:y", b"", b"Accept"])
_VALUES = st.sampled_from([b"example.org", b"application/json", b"1", b"2", b"chunked", b"gzip", b" padded ",
                           b"a\r\nb", b"a\x00b", b"", b"3, 3", b"1, 2", b"-1", b"Chunked", b"tab\tinside"])


def _h11_request(verb: bytes, target: bytes, headers: list[tuple[bytes, bytes]], body: list[bytes]) -> bytes | None:
    conn = h11.Connection(h11.CLIENT)
    try:
        out = conn.send(h11.Request(method=verb, target=target, headers=headers)) or b""
        for part in body:
            out += conn.send(h11.Data(data=part)) or b""
        return out + (conn.send(h11.EndOfMessage()) or b"")
    except h11.LocalProtocolError:
        return None


@given(verb=st.sampled_from([b"POST", b"GET", b"BAD VERB", b""]),
       target=st.sampled_from([b"/v1/chat/completions", b"/a?b=c", b"/with space", b"/x\x7f", b""]),
       headers=st.lists(st.tuples(_NAMES, _VALUES), max_size=5),
       body=st.lists(st.binary(max_size=5), max_size=3))
def test_a_request_is_written_and_refused_as_h11_writes_and_refuses_it(
        verb: bytes, target: bytes, headers: list[tuple[bytes, bytes]], body: list[bytes]) -> None:
    expected = _h11_request(verb, target, headers, body)
    try:
        written: bytes | None = request_bytes(verb, target, headers, body)
    except LocalError:
        written = None
    assert written == expected


def _h11_head(wire: bytes) -> tuple[int, bytes, bytes, list[tuple[bytes, bytes]], bytes] | str | None:
    conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
    conn.send(h11.Request(method=b"GET", target=b"/", headers=[(b"host", b"x")]))
    conn.send(h11.EndOfMessage())
    if wire:  # h11 reads empty data as the connection closed
        conn.receive_data(wire)
    try:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                return None
            if type(event) is h11.Response:
                return (event.status_code, event.reason, event.http_version, list(event.headers.raw_items()),
                        conn.trailing_data[0])
    except h11.RemoteProtocolError:
        return "refused"


def _ours(wire: bytes) -> tuple[int, bytes, bytes, list[tuple[bytes, bytes]], bytes] | str | None:
    try:
        head, end = read_head(wire)
        while head is not None and head.status_code < 200:
            wire = wire[end:]
            head, end = read_head(wire)
    except RemoteError:
        return "refused"
    if head is None:
        return None
    return head.status_code, head.reason, head.http_version, head.headers, wire[end:]


_LINES = st.sampled_from([
    b"HTTP/1.1 200 OK\r\n", b"HTTP/1.0 404 Not Found\r\n", b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 204\r\n",
    b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", b"HTTP/1.1 101 Switching\r\n", b"HTTP/2 200\r\n",
    b"HTTP/1.1 99 Odd\r\n", b"NOT HTTP\r\n", b" HTTP/1.1 200 OK\r\n", b"\r\n",
    b"Content-Type: text/event-stream\r\n", b"content-length: 5\r\n", b"Content-Length: 5, 5\r\n",
    b"Content-Length: 4\r\n", b"Content-Length: x\r\n", b"Transfer-Encoding: chunked\r\n",
    b"transfer-encoding: gzip\r\n", b"X-Folded: a\r\n", b"  continued\r\n", b"Bad Header: 1\r\n", b"NoColon\r\n",
    b"X-Empty:\r\n", b"X-Lf: only\n", b"Connection: close\r\n", b"x: \x00\r\n",
])


@given(lines=st.lists(_LINES, max_size=6), end=st.sampled_from([b"\r\n", b"\n", b""]), body=st.binary(max_size=8))
def test_a_response_head_is_read_and_refused_as_h11_reads_and_refuses_it(lines: list[bytes], end: bytes,
                                                                         body: bytes) -> None:
    wire = b"".join(lines) + end + body
    assert _ours(wire) == _h11_head(wire)


@pytest.mark.parametrize("wire", [b"HTTP/1.1 200 OK\r\nx: " + b"a" * MAX_HEAD, b"HTTP/1.1 200 OK\r\n" * 9000])
def test_a_head_past_its_bound_is_refused(wire: bytes) -> None:
    assert _ours(wire) == "refused"


_FORWARDED = st.lists(st.tuples(st.sampled_from([b"content-type", b"accept", b"x-api-key", b"user-agent", b"x-Mixed"]),
                                st.sampled_from([b"application/json", b"*/*", b"k" * 9, b"caf\xc3\xa9", b""])),
                      max_size=4)


@given(method=st.sampled_from(["POST", "GET", "PUT", "PATCH", "DELETE", "post"]),
       url=st.sampled_from(["http://127.0.0.1:8080/v1/chat/completions", "https://api.example/v1/x?y=1",
                            "http://[::1]:9/v1/m"]),
       headers=_FORWARDED, body=st.sampled_from([b"", b"{}", b'{"model":"m","stream":true}', b"\xff\x00"]))
def test_the_upstream_request_is_the_one_httpx_builds_from_the_same_content(
        method: str, url: str, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    """``upstream_request`` builds its headers once; the request is httpx's own ``content=`` request: the same
    headers in the same order (Host first, Content-Length where httpx puts it), body, method, URL and extensions."""
    extensions = {"timeout": {"read": 1.0}}
    expected = httpx.Request(method, httpx.URL(url), headers=headers, content=body, extensions=extensions)
    made = upstream_request(method, httpx.URL(url), headers, body, extensions)
    assert made.headers.raw == expected.headers.raw
    assert (made.method, made.url, made.content, made.extensions) == (
        expected.method, expected.url, expected.content, expected.extensions)
    assert b"".join(made.stream) == b"".join(expected.stream)  # type: ignore[arg-type]
