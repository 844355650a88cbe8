"""``llm-stream proxy`` / ``Proxy``: the openai SDK pointed at the proxy, which forwards to the loopback emulator."""

from __future__ import annotations

import http.server
import json
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from sdk_cases import CASES, MESSAGES, Case, expected_total_tokens, final_completion

from operators import RetryPolicy
from pipeline.emulator import Emulator
from pipeline.proxy import Proxy, create_proxy_app

pytestmark = pytest.mark.server  # tests/tiers.py

FAST = RetryPolicy(initial_delay_ms=1, max_delay_ms=50)


@pytest.fixture(scope="module")
def proxy(emu: Emulator) -> Iterator[Proxy]:
    with Proxy(emu.base_url, retry_policy=FAST, forward_headers="x-emulator-*") as running:
        yield running


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_openai_sdk_pointed_at_the_proxy_gets_the_right_completion(
    emu: Emulator, proxy: Proxy, case: Case
) -> None:
    completion = final_completion(openai.OpenAI(base_url=proxy.base_url, api_key="sk-test", max_retries=0), case)
    message = completion.choices[0].message
    assert tuple((c.function.name, c.function.arguments) for c in message.tool_calls or ()) == case.calls
    assert all(c.id for c in message.tool_calls or ())
    assert (message.content or None) == case.text
    assert completion.usage is not None
    assert completion.usage.total_tokens == expected_total_tokens(emu.base_url, case)


def test_healthz_answers_without_the_upstream() -> None:
    with Proxy("http://127.0.0.1:9/v1") as lonely:
        response = httpx.get(f"{lonely.url}/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_other_endpoints_and_non_streaming_requests_pass_through(emu: Emulator, proxy: Proxy) -> None:
    assert httpx.get(f"{proxy.base_url}/models").json() == httpx.get(f"{emu.base_url}/models").json()
    body = {"model": "m", "messages": MESSAGES}
    through = httpx.post(f"{proxy.base_url}/chat/completions", json=body, headers={"x-emulator-profile": "clean"})
    assert through.status_code == 200
    assert through.json()["choices"][0]["message"]["content"] == "Hello from the emulator."
    missing = httpx.get(f"{proxy.base_url}/nowhere")
    assert missing.status_code == httpx.get(f"{emu.base_url}/nowhere").status_code


@pytest.mark.parametrize("path", ["messages", "responses"])
def test_the_messages_and_responses_formats_pass_through_the_proxy_untouched(
    emu: Emulator, proxy: Proxy, path: str
) -> None:
    body = {"model": "thinking-tool" if path == "messages" else "reasoning-tool", "stream": True,
            "messages": MESSAGES, "input": "hi"}
    direct = httpx.post(f"{emu.base_url}/{path}", json=body)
    through = httpx.post(f"{proxy.base_url}/{path}", json=body)
    assert through.status_code == direct.status_code == 200
    assert through.headers["content-type"] == direct.headers["content-type"]
    # per request: ids and timestamps
    strip = re.compile(rb'(msg|resp|call|toolu|fc|item)_emu[0-9a-zA-Z_]*|"(created|completed)(_at)?":\s*[0-9]+')
    assert strip.sub(b"ID", through.content) == strip.sub(b"ID", direct.content)
    assert b"signature" in through.content if path == "messages" else b"encrypted_content" in through.content


def test_an_unreachable_upstream_is_a_502_carrying_the_transport_code() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with Proxy(f"http://127.0.0.1:{port}/v1") as lonely:
        response = httpx.post(f"{lonely.base_url}/chat/completions", json={"model": "m", "stream": True})
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "TRANSPORT"


class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: list[dict[str, str]] = []  # noqa: RUF012 - one recorder per test module

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        _Recorder.seen.append({k.lower(): v for k, v in self.headers.items()})
        body = json.dumps({"id": "x", "object": "chat.completion", "choices": []}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_the_clients_authorization_is_forwarded_to_the_upstream_and_headers_off_the_allow_list_are_not() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        upstream = f"http://127.0.0.1:{server.server_address[1]}/v1"
        with Proxy(upstream) as proxy:
            response = httpx.post(
                f"{proxy.base_url}/chat/completions",
                json={"model": "m", "messages": []},
                headers={"authorization": "Bearer sk-client", "proxy-authorization": "Basic x", "x-custom": "1"},
            )
    finally:
        server.shutdown()
        server.server_close()
    assert response.status_code == 200
    assert "sk-client" not in response.text
    (seen,) = _Recorder.seen
    assert seen["authorization"] == "Bearer sk-client"
    assert "x-custom" not in seen  # not on the allow-list (docs/proxy.md); --forward-headers adds names
    assert "proxy-authorization" not in seen
    assert seen["host"] == f"127.0.0.1:{server.server_address[1]}"


def test_a_bad_upstream_url_is_refused_before_serving() -> None:
    with pytest.raises(ValueError, match="http"):
        create_proxy_app("localhost:8808")


def test_the_proxy_command_refuses_a_busy_port_in_one_line_with_exit_2() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "pipeline.cli", "proxy", "--upstream", "http://127.0.0.1:9/v1", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr


def test_the_proxy_command_serves_until_interrupted(emu: Emulator) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli", "proxy", "--upstream", emu.base_url, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        assert f"http://127.0.0.1:{port}/v1" in banner
        response = httpx.post(
            f"http://127.0.0.1:{port}/v1/chat/completions",
            # the model names the profile: the proxy forwards an allow-list of headers, not x-emulator-profile
            json={"model": "seed-bug", "messages": MESSAGES, "stream": True},
        )
        assert response.text.rstrip().endswith("data: [DONE]")
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)
    assert process.stderr is not None
    assert "Traceback" not in process.stderr.read()
