"""The ``proxy`` fuzz target (scripts/fuzz_proxy.py): every seed keeps its oracle under every plan, the oracle catches
the bugs it is there for (each planted in the real proxy with monkeypatch), and the built-in loop runs bounded."""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httpx
import pytest

from pipeline.proxy import _forward as _proxy_forward
from pipeline.proxy import _headers as _proxy_headers
from scripts import fuzz, fuzz_proxy, fuzz_proxy_cases, fuzz_proxy_oracle
from scripts.fuzz_proxy_cases import CLIENT_KEYS, UPSTREAM_KEY, Plan, Run
from scripts.fuzz_reference import OracleFailure

CHAT = b'{"model":"m","stream":true,"messages":[]}'


def request(target: str, *headers: str, body: bytes = CHAT) -> bytes:
    head = [f"POST {target} HTTP/1.1", "Host: x", *headers, f"Content-Length: {len(body)}"]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def plan(data: bytes, **changes: Any) -> Plan:
    client = fuzz_proxy.parse_request(data)
    assert client is not None
    drawn = fuzz_proxy.plan_of(data, client)
    fields = {"base": "/v1", "client_keys": False, "upstream_key": False, "forward": (), "max_body": 1 << 20,
              "pieces": [client.body], "hang_up": "none", "hang_at": 0, "answer": "json"} | changes
    for name, value in fields.items():
        setattr(drawn, name, value)
    return drawn


def run(data: bytes, **changes: Any) -> Run:
    result = fuzz_proxy.run_proxy(data, plan(data, **changes))
    assert result is not None
    return result


def test_the_seeds_are_requests_covering_what_the_proxy_must_refuse_or_drop() -> None:
    seeds = fuzz_proxy.proxy_seeds()
    text = b"\n".join(seeds).lower()

    assert len(seeds) >= 12
    assert all(fuzz_proxy.parse_request(seed) is not None for seed in seeds)
    for needle in (b"/v1/messages", b"/v1/responses", b"%2e%2e", b"%2f", b"connection: keep-alive, user-agent",
                   b"cookie:", b"x-forwarded-for:", b"expect: 100-continue", b"content-length: 100000000",
                   b"transfer-encoding: chunked", b"?limit=", b"/v1/models? "):
        assert needle in text, needle


@pytest.mark.parametrize("index", range(len(fuzz_proxy.proxy_seeds())))
def test_every_seed_keeps_the_oracle_under_its_plan_and_under_each_key_setting(index: int) -> None:
    seed = fuzz_proxy.proxy_seeds()[index]
    fuzz.TARGETS["proxy"](seed)
    for client_keys in (False, True):
        for upstream_key in (False, True):
            for answer in ("json", "429", "connect", "cut", "odd"):
                fuzz_proxy_oracle.check_run(run(seed, client_keys=client_keys, upstream_key=upstream_key,
                                                answer=answer, max_body=64 << 20))


def test_a_seed_nested_past_any_decoder_is_a_400_and_never_goes_upstream() -> None:
    (seed,) = [s for s in fuzz_proxy.proxy_seeds() if b"[" * 1000 in s]
    result = run(seed, client_keys=False, upstream_key=False, answer="json", max_body=64 << 20)
    fuzz_proxy_oracle.check_run(result)
    assert result.messages[0]["status"] == 400
    assert not result.upstream


@pytest.mark.parametrize("odd", range(len(fuzz_proxy_cases.ODD)))
def test_each_odd_upstream_answer_keeps_the_oracle_and_is_never_a_500(odd: int) -> None:
    seed = fuzz_proxy.proxy_seeds()[0]  # a streamed chat request
    for mode in ("stream", "buffered"):
        result = run(seed, client_keys=False, upstream_key=True, answer="odd", max_body=64 << 20, odd=odd, mode=mode)
        fuzz_proxy_oracle.check_run(result)
        assert result.messages[0]["status"] != 500


def test_the_oracle_catches_the_proxys_own_key_forwarded_in_the_query(monkeypatch: pytest.MonkeyPatch) -> None:
    seed = b"GET /v1/models?k=" + fuzz_proxy_cases.UPSTREAM_KEY.encode() + b" HTTP/1.1\r\nHost: a\r\n\r\n"
    fuzz_proxy_oracle.check_run(run(seed, client_keys=False, upstream_key=True, answer="json", max_body=64))
    monkeypatch.setattr(_proxy_headers.Keys, "scrub", lambda self, text, replacement="": text)
    with pytest.raises(OracleFailure, match="the query"):
        fuzz_proxy_oracle.check_run(run(seed, client_keys=False, upstream_key=True, answer="json", max_body=64))


def test_a_request_h11_refuses_is_not_a_request() -> None:
    assert fuzz_proxy.run_proxy(b"POST /v1/x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n") is None
    assert fuzz_proxy.run_proxy(b"\x00\x01garbage\r\n\r\n") is None
    fuzz.TARGETS["proxy"](b"")


def test_what_went_upstream_is_recorded_as_httpx_sent_it() -> None:
    key = f"Authorization: Bearer {CLIENT_KEYS[0]}"
    data = request("/v1/chat/completions?a=1", "Cookie: s=1", "User-Agent: u", key)

    result = run(data, base="/api/openai/v1", client_keys=True, upstream_key=True)

    [sent] = result.upstream
    assert sent.raw_path == b"/api/openai/v1/chat/completions?a=1"
    assert sent.body == CHAT
    names = [name for name, _ in sent.headers]
    assert b"cookie" not in names
    assert b"user-agent" in names
    assert (b"authorization", f"Bearer {UPSTREAM_KEY}".encode()) in sent.headers
    assert result.messages[0]["status"] == 200


def test_the_oracles_allow_list_is_the_one_the_proxy_documents_and_uses() -> None:
    assert fuzz_proxy_oracle.ALLOWED == _proxy_headers.ALLOWED


def test_the_oracle_catches_a_forwarded_cookie(monkeypatch: pytest.MonkeyPatch) -> None:
    data = request("/v1/chat/completions", "Cookie: session=abc")
    fuzz_proxy_oracle.check_run(run(data))
    monkeypatch.setattr(_proxy_headers, "NEVER", _proxy_headers.NEVER - {"cookie"})
    monkeypatch.setattr(_proxy_headers, "ALLOWED", _proxy_headers.ALLOWED | {"cookie"})

    with pytest.raises(fuzz.OracleFailure, match="headers: cookie went upstream"):
        fuzz_proxy_oracle.check_run(run(data))


def test_the_oracle_catches_a_path_leaving_the_base_path(monkeypatch: pytest.MonkeyPatch) -> None:
    data = request("/v1/%2e%2e/%2e%2e/x")
    assert run(data).messages[0]["status"] == 400

    def resolved_over_the_base(base_path: str, raw: bytes) -> str:
        return posixpath.normpath(base_path + "/" + unquote(raw.decode("latin-1")))

    monkeypatch.setattr(_proxy_forward, "upstream_path", resolved_over_the_base)
    with pytest.raises(fuzz.OracleFailure, match="refusal: reached the upstream, yet a path leaving the base"):
        fuzz_proxy_oracle.check_run(run(data))
    with pytest.raises(fuzz.OracleFailure, match="leaves the base path /api/openai/v1"):
        fuzz_proxy_oracle.check_upstream(run(data, base="/api/openai/v1"))


def test_the_oracle_catches_the_client_key_forwarded_beside_the_upstream_key(monkeypatch: pytest.MonkeyPatch) -> None:
    data = request("/v1/messages", f"x-api-key: {CLIENT_KEYS[1]}")
    fuzz_proxy_oracle.check_run(run(data, client_keys=True, upstream_key=True))
    original = _proxy_headers.forwarded_headers

    def with_the_clients_key(headers: Any, **options: Any) -> list[tuple[str, str]]:
        out = original(headers, **options)
        return out + [(name.decode(), value.decode()) for name, value in headers if name == b"x-api-key"]

    monkeypatch.setattr(_proxy_forward, "forwarded_headers", with_the_clients_key)
    with pytest.raises(fuzz.OracleFailure, match="keys: a client key went upstream"):
        fuzz_proxy_oracle.check_run(run(data, client_keys=True, upstream_key=True))
    with pytest.raises(fuzz.OracleFailure, match="keys: the upstream key is not the only key header"):
        fuzz_proxy_oracle.check_run(run(data, client_keys=False, upstream_key=True))


def test_the_oracle_catches_an_empty_query_added(monkeypatch: pytest.MonkeyPatch) -> None:
    data = request("/v1/chat/completions")
    fuzz_proxy_oracle.check_run(run(data))
    original = _proxy_headers.upstream_path
    monkeypatch.setattr(_proxy_forward, "upstream_path", lambda base, raw: original(base, raw) + "?")

    with pytest.raises(fuzz.OracleFailure, match="upstream: the query mark"):
        fuzz_proxy_oracle.check_run(run(data))


def test_the_oracle_catches_a_key_in_a_log_record() -> None:
    result = run(request("/v1/models"))
    result.logs.append(f"GET /v1/{CLIENT_KEYS[0].upper()[:10]}")

    with pytest.raises(fuzz.OracleFailure, match="logs: a key"):
        fuzz_proxy_oracle.check_run(result)


def test_a_client_hanging_up_during_its_body_gets_no_answer_and_nothing_goes_upstream() -> None:
    data = request("/v1/chat/completions")

    result = run(data, pieces=[CHAT[:5], CHAT[5:]], hang_up="body", hang_at=1)

    assert result.upstream == []
    assert result.messages == []
    fuzz_proxy_oracle.check_run(result)


def test_the_built_in_loop_runs_the_proxy_target_bounded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = fuzz.main(["--target", "proxy", "--seconds", "1", "--no-atheris", "--artifacts", str(tmp_path)])

    printed = capsys.readouterr().out
    assert code == 0, printed
    assert int(printed.split("inputs=")[1].split()[0]) > len(fuzz_proxy.proxy_seeds())
    assert list(tmp_path.iterdir()) == []


def test_the_oracle_catches_an_upstream_response_never_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    data = request("/v1/models")
    fuzz_proxy_oracle.check_run(run(data))

    async def left_open(self: httpx.Response) -> None:
        pass

    monkeypatch.setattr(httpx.Response, "aclose", left_open)
    with pytest.raises(fuzz.OracleFailure, match="never closed"):
        fuzz_proxy_oracle.check_run(run(data))


@pytest.mark.parametrize(("target", "header"), [
    ("/v1/messages/models/m:streamGenerateContent", b"x-goog-api-key"),  # ends with Gemini's template: Gemini's
    ("/v1/messages/count_tokens", b"x-api-key"),
    ("/v1/models/m:countTokens", b"x-goog-api-key"),
    ("/v1/models", b"authorization"),
    ("/v1//v1/messages", b"x-api-key"),  # ends with Messages' template
    ("/v1/v1/chat/completions", b"authorization"),
])
def test_the_upstream_key_goes_in_the_header_of_the_format_the_path_belongs_to(target: str, header: bytes) -> None:
    # found by the bounded run in CI: a path under `messages` that ends with Gemini's stream template is Gemini's
    # (the template a path ends with comes before the endpoint family), and the oracle must say so too
    result = run(request(target, "x-api-key: client"), upstream_key=True)
    fuzz_proxy_oracle.check_run(result)
    keys = fuzz_proxy_oracle.KEY_HEADERS
    assert [[name for name, _ in sent.headers if name in keys] for sent in result.upstream] == [[header]]
