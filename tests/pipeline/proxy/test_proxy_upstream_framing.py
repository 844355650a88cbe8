"""The proxy's reading of an upstream body's framing (``pipeline/proxy/_framing.py``, decision 0073): whatever the
reads, the body's bytes come out whole and in order, one piece per chunk as h11 would hand them, the end is found,
what follows it is kept apart, and malformed framing is refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.proxy._framing import MAX_SIZE_LINE, MAX_TRAILERS, Decoder, decoder_for
from pipeline.proxy._wire import Head


def _response(*headers: tuple[bytes, bytes], status: int = 200) -> Head:
    return Head(status, b"", b"1.1", list(headers), [(name.lower(), value) for name, value in headers])


CHUNKED = _response((b"transfer-encoding", b"chunked"))


def _feed(decoder: Decoder, wire: bytes, cuts: list[int]) -> list[bytes]:
    out: list[bytes] = []
    start = 0
    for cut in [*sorted(set(cuts)), len(wire)]:
        if cut > start:
            out += decoder.feed(wire[start:cut])
            start = cut
    return out


def _chunked(chunks: list[bytes], extension: bytes, trailers: bytes) -> bytes:
    body = b"".join(b"%x%s\r\n%s\r\n" % (len(chunk), extension, chunk) for chunk in chunks if chunk)
    return body + b"0\r\n" + trailers + b"\r\n"


@given(chunks=st.lists(st.binary(max_size=300), max_size=8),
       extension=st.sampled_from([b"", b";name=value", b" ", b";a;b=\"c\""]),
       trailers=st.sampled_from([b"", b"x-trailer: 1\r\n", b"a: b\r\nc: d\r\n"]),
       after=st.binary(max_size=20),
       cuts=st.lists(st.integers(min_value=0, max_value=3000), max_size=12))
def test_a_chunked_body_comes_out_whole_whatever_the_reads(chunks: list[bytes], extension: bytes, trailers: bytes,
                                                           after: bytes, cuts: list[int]) -> None:
    decoder = decoder_for(b"POST", CHUNKED)
    pieces = _feed(decoder, _chunked(chunks, extension, trailers) + after, cuts)
    assert b"".join(pieces) == b"".join(chunks)
    assert all(pieces)
    assert decoder.done
    assert decoder.extra == after


def test_each_chunk_of_a_read_is_its_own_piece() -> None:
    decoder = decoder_for(b"POST", CHUNKED)
    assert decoder.feed(_chunked([b"data: 1\n\n", b"data: 2\n\n"], b"", b"")) == [b"data: 1\n\n", b"data: 2\n\n"]


@given(body=st.binary(max_size=500), after=st.binary(max_size=20),
       cuts=st.lists(st.integers(min_value=0, max_value=600), max_size=8))
def test_a_body_of_a_given_length_ends_at_its_length(body: bytes, after: bytes, cuts: list[int]) -> None:
    decoder = decoder_for(b"GET", _response((b"content-length", str(len(body)).encode())))
    assert b"".join(_feed(decoder, body + after, cuts)) == body
    assert decoder.done
    assert not decoder.to_close
    assert decoder.extra == after


def test_a_body_without_length_or_chunks_runs_to_the_close() -> None:
    decoder = decoder_for(b"GET", _response((b"content-type", b"text/plain")))
    assert decoder.to_close
    assert not decoder.done
    assert decoder.feed(b"abc") == [b"abc"]


@pytest.mark.parametrize(("method", "status"), [(b"HEAD", 200), (b"GET", 204), (b"GET", 304), (b"CONNECT", 200)])
def test_responses_without_a_body_end_at_once(method: bytes, status: int) -> None:
    decoder = decoder_for(method, _response((b"transfer-encoding", b"chunked"), status=status))
    assert decoder.done
    decoder.feed(b"stray")
    assert decoder.extra == b"stray"


@pytest.mark.parametrize("wire", [
    b"zz\r\nab\r\n0\r\n\r\n",  # not hex
    b"\r\n",  # no size
    b"-1\r\n",  # a sign
    b"2\r\nabXY0\r\n\r\n",  # a chunk not followed by CRLF
    b"11111111111111111\r\n",  # more hex digits than any size
    b"1" * (MAX_SIZE_LINE + 1),  # a size line that never ends
    b"0\r\n" + b"x: " + b"y" * MAX_TRAILERS + b"\r\n\r\n",  # trailers past their bound
], ids=["not-hex", "empty", "sign", "no-crlf", "too-many-digits", "endless-size-line", "trailers"])
def test_malformed_framing_is_refused(wire: bytes) -> None:
    decoder = decoder_for(b"POST", CHUNKED)
    with pytest.raises(ValueError, match="upstream's body"):
        decoder.feed(wire)


def test_trailers_within_their_bound_are_read_a_byte_at_a_time() -> None:
    wire = _chunked([b"x"], b"", b"x-long: " + b"y" * 1000 + b"\r\n")
    decoder = decoder_for(b"POST", CHUNKED)
    assert b"".join(_feed(decoder, wire, list(range(len(wire))))) == b"x"
    assert decoder.done
