"""``llm-stream proxy`` as an operator runs it (issue 23): the command with keys of its own in front of a recording
gateway on loopback: 401 before anything goes upstream, the server's key upstream and never the client's, no cookie
or x-forwarded-*, /health, /metrics moving with each request, one access-log line per request on stderr, the cap on
streams in flight, and a graceful SIGTERM."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from proxy_gateway import Gateway, sse_text

CLIENT_KEY = "sk-client-abcdef123456"
OTHER_CLIENT_KEY = "sk-client-second-7890ab"
SERVER_KEY = "sk-server-upstream-0123456789"


class Cli:
    """The proxy command in a child process, its stderr in a file."""

    def __init__(self, upstream: str, stderr: Path, *flags: str) -> None:
        env = dict(os.environ, PROXY_CLIENT_KEYS=f"{CLIENT_KEY}, {OTHER_CLIENT_KEY}", PROXY_UPSTREAM_KEY=SERVER_KEY)
        self.stderr_path = stderr
        self._stderr = stderr.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pipeline.cli", "proxy", "--upstream", upstream, "--port", "0",
             "--client-key-env", "PROXY_CLIENT_KEYS", "--upstream-key-env", "PROXY_UPSTREAM_KEY", *flags],
            stdout=subprocess.PIPE, stderr=self._stderr, text=True, env=env,
        )
        assert self.process.stdout is not None
        banner = self.process.stdout.readline()
        match = re.search(r"base_url (\S+)/v1", banner)
        assert match, (banner, stderr.read_text())
        self.url = match.group(1)

    def stderr_lines(self) -> list[str]:
        return [line for line in self.stderr_path.read_text().splitlines() if line.strip()]

    def close(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=30)
        self._stderr.close()
        return code


@pytest.fixture(scope="module")
def gateway() -> Iterator[Gateway]:
    with Gateway() as gw:
        yield gw


@pytest.fixture(scope="module")
def cli(gateway: Gateway, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    running = Cli(gateway.base_url, tmp_path_factory.mktemp("proxy") / "stderr", "--max-streams", "2")
    yield running
    assert running.close() == 0


def _chat(model: str = "m", stream: bool = False) -> dict[str, object]:
    return {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": stream}


def test_a_request_without_a_client_key_is_refused_401_and_nothing_goes_upstream(gateway: Gateway, cli: Cli) -> None:
    before = len(gateway.seen)
    for headers in ({}, {"authorization": "Bearer sk-wrong-key-000000"}, {"x-api-key": "sk-wrong-key-000000"}):
        response = httpx.post(f"{cli.url}/v1/chat/completions", json=_chat(), headers=headers)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "AUTH"
        message = response.json()["error"]["message"]  # every header a key is accepted in
        assert "Authorization: Bearer <key>, x-api-key: <key> or x-goog-api-key: <key>" in message
    assert len(gateway.seen) == before


def test_the_upstream_gets_the_servers_key_and_never_the_clients_nor_cookies_or_forwarding_headers(
    gateway: Gateway, cli: Cli
) -> None:
    headers = {"authorization": f"Bearer {CLIENT_KEY}", "cookie": "session=abc", "x-forwarded-for": "10.0.0.1",
               "x-forwarded-host": "evil", "x-custom": "1", "user-agent": "held-out/1", "openai-beta": "x=1"}
    response = httpx.post(f"{cli.url}/v1/chat/completions", json=_chat(), headers=headers)
    assert response.status_code == 200
    seen = gateway.seen[-1]
    assert seen.headers["authorization"] == f"Bearer {SERVER_KEY}"
    assert CLIENT_KEY not in str(seen.headers)
    assert not {"cookie", "x-forwarded-for", "x-forwarded-host", "x-custom"} & set(seen.headers)
    assert seen.headers["user-agent"] == "held-out/1"
    assert seen.headers["openai-beta"] == "x=1"
    # the second key of the list works too; the Messages API gets the server's key as x-api-key
    response = httpx.post(f"{cli.url}/v1/messages", json=_chat(), headers={"x-api-key": OTHER_CLIENT_KEY})
    assert response.status_code == 200
    seen = gateway.seen[-1]
    assert seen.target == "/v1/messages"
    assert seen.headers["x-api-key"] == SERVER_KEY
    assert "authorization" not in seen.headers
    assert OTHER_CLIENT_KEY not in str(seen.headers)


def test_health_answers_200_without_a_key(cli: Cli) -> None:
    for path in ("/health", "/healthz", "/ready"):
        response = httpx.get(f"{cli.url}{path}")
        assert response.status_code == 200, path


def _requests_total(text: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("llm_stream_proxy_requests_total{"))


def test_metrics_are_prometheus_text_whose_request_counter_moves_with_each_request(cli: Cli) -> None:
    first = httpx.get(f"{cli.url}/metrics")
    assert first.status_code == 200
    assert first.headers["content-type"].startswith("text/plain")
    assert "# TYPE llm_stream_proxy_requests_total counter" in first.text
    assert "# TYPE llm_stream_proxy_upstream_ttfb_seconds histogram" in first.text
    assert "llm_stream_proxy_streams_in_flight" in first.text
    count = _requests_total(first.text)
    for expected in (count + 1, count + 2):
        httpx.post(f"{cli.url}/v1/chat/completions", json=_chat(), headers={"authorization": f"Bearer {CLIENT_KEY}"})
        assert _requests_total(httpx.get(f"{cli.url}/metrics").text) == expected
    httpx.post(f"{cli.url}/v1/chat/completions", json=_chat())  # a 401 counts too
    text = httpx.get(f"{cli.url}/metrics").text
    assert _requests_total(text) == count + 3
    assert 'llm_stream_proxy_streams_refused_total{reason="unauthorized"}' in text


async def test_past_max_streams_a_third_stream_is_answered_503_while_the_two_finish_whole(cli: Cli) -> None:
    headers = {"authorization": f"Bearer {CLIENT_KEY}"}
    async with httpx.AsyncClient(timeout=30) as client:

        async def stream() -> tuple[int, bytes]:
            response = await client.post(f"{cli.url}/v1/chat/completions", json=_chat("events:6:0.25", True),
                                         headers=headers)
            return response.status_code, response.content

        two = [asyncio.ensure_future(stream()) for _ in range(2)]
        await asyncio.sleep(0.6)  # both in flight
        third = await client.post(f"{cli.url}/v1/chat/completions", json=_chat("events:1:0", True), headers=headers)
        ready = await client.get(f"{cli.url}/ready")
        results = await asyncio.gather(*two)
    assert third.status_code == 503
    assert third.headers["retry-after"] == "1"
    assert ready.status_code == 503
    for status, body in results:
        assert status == 200
        assert sse_text(body) == "t0 t1 t2 t3 t4 t5 "
        assert body.rstrip().endswith(b"data: [DONE]")


def test_one_access_log_line_per_request_names_the_status_and_holds_no_key(cli: Cli) -> None:
    statuses = []
    for headers in ({}, {"authorization": f"Bearer {CLIENT_KEY}"}):
        response = httpx.post(f"{cli.url}/v1/log-check?key={CLIENT_KEY}", json=_chat(), headers=headers)
        statuses.append(response.status_code)
    assert statuses == [401, 200]

    def lines() -> list[str]:
        return [line for line in cli.stderr_lines() if "/v1/log-check" in line]

    deadline = time.monotonic() + 5
    while len(lines()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    assert len(lines()) == 2, cli.stderr_lines()
    for line, status in zip(lines(), statuses, strict=True):
        assert line.startswith(f'"POST /v1/log-check" {status} '), line
        assert re.search(r" [0-9.]+ms [0-9]+B", line), line
    assert httpx.get(f"{cli.url}/health?probe=log-check").status_code == 200
    deadline = time.monotonic() + 5
    while not any(line.startswith('"GET /health" 200 ') for line in cli.stderr_lines()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert any(line.startswith('"GET /health" 200 ') for line in cli.stderr_lines())  # probes are logged too
    text = cli.stderr_path.read_text()
    for key in (CLIENT_KEY, OTHER_CLIENT_KEY, SERVER_KEY, CLIENT_KEY.upper(), SERVER_KEY[:12]):
        assert key not in text


def test_sigterm_lets_the_stream_in_flight_finish_whole_then_exits_0(gateway: Gateway, tmp_path: Path) -> None:
    cli = Cli(gateway.base_url, tmp_path / "stderr", "--log-format", "json", "--grace-period", "20")
    try:
        with httpx.stream("POST", f"{cli.url}/v1/chat/completions", json=_chat("events:8:0.25", True),
                          headers={"authorization": f"Bearer {CLIENT_KEY}"}, timeout=30) as response:
            pieces = response.iter_raw()
            first = next(pieces)
            cli.process.send_signal(signal.SIGTERM)
            body = first + b"".join(pieces)
        assert response.status_code == 200
        assert sse_text(body) == "".join(f"t{n} " for n in range(8))
        assert body.rstrip().endswith(b"data: [DONE]")
        assert cli.process.wait(timeout=20) == 0
    finally:
        code = cli.close()
    assert code == 0
    (line,) = [line for line in cli.stderr_lines() if line.startswith("{")]
    assert '"status":200' in line
    assert '"finish":"stop"' in line
    assert "Traceback" not in cli.stderr_path.read_text()


def test_past_the_grace_period_the_stream_is_cut_and_the_proxy_still_exits_0(gateway: Gateway, tmp_path: Path) -> None:
    cli = Cli(gateway.base_url, tmp_path / "stderr", "--grace-period", "1")
    try:
        with httpx.stream("POST", f"{cli.url}/v1/chat/completions", json=_chat("events:40:0.25", True),
                          headers={"authorization": f"Bearer {CLIENT_KEY}"}, timeout=30) as response:
            pieces = response.iter_raw()
            body = next(pieces)
            cli.process.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            rest: list[bytes] = []
            with pytest.raises(httpx.RemoteProtocolError):  # cut: the body's end never came
                rest.extend(pieces)
            body += b"".join(rest)
        assert cli.process.wait(timeout=20) == 0
        assert time.monotonic() - signalled < 8
        assert b"[DONE]" not in body
    finally:
        cli.close()
    # cut with the format's in-band error first, cut=shutdown in the access log, and no traceback
    assert body.rstrip().endswith(b"}"), body[-200:]
    last = body.rstrip().split(b"\n\n")[-1]
    assert last.startswith(b'data: {"error"'), last
    assert b'"code": "SERVER"' in last or b'"code":"SERVER"' in last
    stderr = cli.stderr_path.read_text()
    assert "Traceback" not in stderr
    (line,) = [line for line in cli.stderr_lines() if "/v1/chat/completions" in line]
    assert line.endswith(" cut=shutdown"), line
