"""A key given only in the base URL's query (``?key=``) against a gateway that echoes the key it receives in every
place a server can put a string: it arrives as the key (in the key header), and no chunk, failure or log line
carries it back out (issue 32 item 2)."""

from __future__ import annotations

import json
import logging

import pytest
from leaky_gateway import KEY, LeakyGateway

from operators import Failure, RetryPolicy
from pipeline.client import ChatClient

pytestmark = pytest.mark.server

R = "[redacted]"
MESSAGES = [{"role": "user", "content": "hi"}]


def _client(gateway: LeakyGateway, case: str) -> ChatClient:
    policy = RetryPolicy.normal(max_retries=1, initial_delay_ms=1, max_delay_ms=2, jitter_ratio=0)
    return ChatClient(f"{gateway.base_url}?key={KEY}", model=case, retry_policy=policy)


async def test_the_url_key_is_sent_as_the_key_and_redacted_from_the_failure(gateway: LeakyGateway) -> None:
    async with _client(gateway, "http-401") as client:
        assert client.config.api_key == KEY
        assert KEY not in client.config.url
        message = await client.complete(MESSAGES)
    # the gateway echoes the key of the Authorization header: the URL's key went there
    assert message.finish.failure == Failure(
        "AUTH", f"Incorrect API key provided: {R}. Check Bearer {R}.", status=401, request_id=f"req_{R}"
    )


@pytest.mark.parametrize("case", ["inband-error", "split-text", "tool-arguments", "malformed-cut"])
async def test_no_chunk_or_log_line_carries_a_url_key(
    gateway: LeakyGateway, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with _client(gateway, case) as client:
        chunks = [chunk async for chunk in client.stream(MESSAGES, anomalies=True)]
    shown = json.dumps([chunk.to_dict() for chunk in chunks], ensure_ascii=False)
    assert R in shown  # the gateway did echo the key
    assert KEY[:9].lower() not in shown.lower()
    logged = "\n".join(logging.Formatter().format(r) for r in caplog.records if not r.name.startswith("httpcore"))
    assert KEY[:9].lower() not in logged.lower()
