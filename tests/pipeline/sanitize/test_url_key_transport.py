"""The sanitizing transport on a request whose key is in its URL (``?key=``, Google's style) and in no header: the
key is the request's key, so the error the transport writes in its place and its log lines never show it."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import httpx
import pytest

from pipeline import SanitizingTransport, _secrets

KEY = "AIzaSyKd3Wq9Xw3Zr7Vn5Hb1Lp8Tc"


@pytest.fixture(autouse=True)
def _forget_keys() -> Iterator[None]:
    """The keys registered here are forgotten after each test (a registered key's 8-character cuts are redacted from
    every later record)."""
    saved = dict(_secrets._patterns)
    yield
    _secrets._patterns.clear()
    _secrets._patterns.update(saved)


def echoing_error(request: httpx.Request) -> httpx.Response:
    """An upstream that answers a stream with an in-band error quoting the key it was given in the URL."""
    key = request.url.params["key"]
    error = {"error": {"message": f"API key {key} is not allowed here", "type": "server_error"}}
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=f"data: {json.dumps(error)}\n\n")


def test_an_in_band_error_quoting_a_url_key_is_written_back_without_it(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="llm_stream")
    with httpx.Client(transport=SanitizingTransport(httpx.MockTransport(echoing_error))) as client:
        response = client.post(
            f"http://upstream.test/v1/chat/completions?key={KEY}",
            json={"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
        )
    text = response.read().decode()
    assert "[redacted]" in text  # the upstream's message is there, its key is not
    assert KEY[:9] not in text
    assert KEY[:9] not in caplog.text
