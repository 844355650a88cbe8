"""What the ``proxy`` fuzz target works with (``fuzz_proxy.py`` runs it, ``fuzz_proxy_oracle.py`` judges it): the
records of one run, the keys and the upstream, the canned upstream answers, and the seeds and tokens of the target.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

__all__ = ["ANSWERS", "CLIENT_KEYS", "DEEP", "HOP", "JSON", "ODD", "PROXY_TOKENS", "SSE", "UPSTREAM_HOST",
           "UPSTREAM_KEY", "UPSTREAM_PORT", "Answer", "Client", "Plan", "Run", "Sent", "json_depth", "own_keys",
           "proxy_seeds", "without_keys"]

CLIENT_KEYS = ("fzc1Q7x2m9LpV3wA", "fzc2B4n8v1RtK6yE")
UPSTREAM_KEY = "fzuZ5k3w8HdN2qJr"
UPSTREAM_HOST, UPSTREAM_PORT = "upstream.invalid", 8080
ANSWERS = {"json": 200, "429": 429, "cut": 200}
"""The status of each pass-through canned answer (``connect`` is a connection error, ``sse`` a clean chat stream)."""
JSON = b'{"id":"r1","object":"list","data":[{"id":"m"}]}'
HOP = [("connection", "keep-alive, x-hop"), ("keep-alive", "timeout=5"), ("x-hop", "1"), ("x-kept", "yes")]
SSE = b"".join(
    b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}\n\n'
    % (delta, reason)
    for delta, reason in ((b'{"role":"assistant","content":""}', b"null"), (b'{"content":"hi"}', b"null"),
                          (b"{}", b'"stop"'))
) + b"data: [DONE]\n\n"
DEEP = 5000
"""Levels of nesting of the deep bodies: past any JSON decoder's (about 1,000)."""


def _chunk(delta: bytes) -> bytes:
    return b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":%s}]}\n\n' % delta


ODD: tuple[tuple[int, bytes, bytes], ...] = (
    (200, b"text/event-stream", _chunk(b'{"tool_calls":[{"index":{"a":1},"id":"x","function":{"name":"f"}}]}')),
    (200, b"text/event-stream", _chunk(b'{"tool_calls":[{"index":[0],"id":"x","function":{"name":"f"}}]}')),
    (200, b"text/event-stream", _chunk(b'{"tool_calls":[{"index":"0","id":7,"function":{"name":[]}}]}')),
    (200, b"text/event-stream", _chunk(b'{"content":{"text":1}}') + b"data: [DONE]\n\n"),
    (200, b"text/event-stream", b'data: {"choices":"x"}\n\ndata: null\n\ndata: 7\n\ndata: []\n\n'),
    (200, b"text/event-stream", b'data: {"error":' + b"[" * DEEP + b"]" * DEEP + b"}\n\n"),
    (200, b"text/event-stream", _chunk(b'{"content":' + b"[" * DEEP + b"]" * DEEP + b"}")),
    (503, b"application/json", b'{"error":' + b"[" * DEEP + b"]" * DEEP + b"}"),
    (200, b"application/json", b'{"choices":' + b"{" * 3 + b"}" * 3 + b',"x":1e999999}'),
)
"""Upstream answers with odd JSON types and nesting past any decoder: (status, content type, body). The proxy answers
each in the API's shape (or cuts the stream after its first byte), never with a 500 of its own."""
Answer = Literal["json", "429", "connect", "cut", "sse", "odd"]


@attrs.define
class Client:
    method: str
    target: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes
    complete: bool
    http_version: str = "1.1"


@attrs.define
class Plan:
    base: str
    client_keys: bool
    upstream_key: bool
    forward: tuple[str, ...]
    max_body: int
    pieces: list[bytes]
    hang_up: str
    hang_at: int
    answer: Answer
    mode: Literal["stream", "buffered"] = "stream"
    log_format: Literal["text", "json"] = "text"
    odd: int = 0
    """Which of ``ODD`` the upstream answers (``answer == "odd"``)."""


@attrs.define
class Sent:
    scheme: str
    host: str
    port: int | None
    raw_path: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes
    cancelled: bool = False
    """Cancelled before its answer (the client went away)."""
    closed: bool = False
    """Its answer's body was closed (the upstream's connection released)."""


@attrs.define
class Run:
    client: Client
    plan: Plan
    messages: list[dict[str, Any]] = attrs.Factory(list)
    late: list[dict[str, Any]] = attrs.Factory(list)
    """Messages sent after the client went away (uvicorn drops them)."""
    upstream: list[Sent] = attrs.Factory(list)
    logs: list[str] = attrs.Factory(list)
    """The records of the ``llm_stream`` loggers, every level; ``access`` counts the access log's."""
    access: int = 0
    hung_up: bool = False


def json_depth(body: bytes) -> int:
    """How deep ``body``'s brackets nest, strings skipped (what a JSON decoder recurses into)."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in body:
        if in_string:
            escaped, in_string = (False, True) if escaped else (byte == 0x5C, byte != 0x22)
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


def without_keys(value: bytes, keys: list[bytes], replacement: bytes) -> bytes:
    for key in keys:
        value = value.replace(key, replacement)
    return value


def own_keys(run: Run) -> list[bytes]:
    """The proxy's own keys in this run: never sent upstream where a client wrote them (query, header values)."""
    keys = [*(CLIENT_KEYS if run.plan.client_keys else ()), *([UPSTREAM_KEY] if run.plan.upstream_key else [])]
    return [key.encode() for key in keys]


def _request(method: str, target: str, headers: list[tuple[str, str]], body: bytes = b"", *, chunked: bool = False
             ) -> bytes:
    head = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1:8809", *(f"{k}: {v}" for k, v in headers)]
    if chunked:
        head.append("Transfer-Encoding: chunked")
        body = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:7], body[7:]) if part) + b"0\r\n\r\n"
    elif body and not any(k.lower() == "content-length" for k, _ in headers):
        head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def proxy_seeds() -> list[bytes]:
    """A dozen requests: the three APIs, the paths, headers and bodies the proxy must refuse or drop (a body nested
    past any JSON decoder among them)."""
    json_type = ("Content-Type", "application/json")
    chat = b'{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}'
    bearer = ("Authorization", f"Bearer {CLIENT_KEYS[0]}")
    return [
        _request("POST", "/v1/chat/completions", [json_type, bearer, ("Accept", "text/event-stream")], chat),
        _request("POST", "/v1/messages", [json_type, ("x-api-key", CLIENT_KEYS[1]),
                                          ("anthropic-version", "2023-06-01")], b'{"model":"m","max_tokens":8}'),
        _request("POST", "/v1/responses", [json_type, bearer, ("OpenAI-Beta", "responses=v1")],
                 b'{"model":"m","stream":true,"input":"hi"}'),
        _request("POST", "/v1/%2e%2e/%2e%2e/x", [json_type, bearer], chat),
        _request("POST", "/v1/chat%2Fcompletions/..%2f..%2fx", [json_type, bearer], chat),
        _request("GET", "/v1/models", [bearer, ("Connection", "keep-alive, User-Agent, X-Custom-Trace"),
                                       ("User-Agent", "fuzz/1"), ("X-Custom-Trace", "t1"), ("X-Request-Id", "r1")]),
        _request("POST", "/v1/chat/completions", [json_type, bearer, ("Cookie", "session=abc"),
                                                  ("X-Forwarded-For", "10.0.0.1"), ("Forwarded", "for=10.0.0.1"),
                                                  ("Via", "1.1 lb")], chat),
        _request("POST", "/v1/chat/completions", [json_type, bearer, ("Expect", "100-continue")], chat),
        _request("POST", "/v1/chat/completions", [json_type, bearer, ("Content-Length", "100000000")], chat),
        _request("POST", "/v1/chat/completions", [json_type, bearer, ("TE", "trailers")], chat, chunked=True),
        _request("GET", "/v1/models?limit=2&after=m%20x&q=%22a%22", [bearer, ("Accept", "application/json")]),
        _request("GET", "/v1/models?", [bearer, ("Proxy-Authorization", "Basic eDp5")]),
        _request("GET", "/health", []),
        _request("POST", "/v1beta/models/m:streamGenerateContent?alt=sse",
                 [json_type, ("x-goog-api-key", CLIENT_KEYS[0])],
                 b'{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}'),
        _request("POST", "/v1/chat/completions", [json_type, bearer],
                 b'{"model":"m","stream":true,"messages":' + b"[" * DEEP + b"]" * DEEP + b"}"),
    ]


PROXY_TOKENS = [
    b"\r\n", b"\r\n\r\n", b"/", b"%2e", b"%2e%2e/", b"../", b"./", b"%2F", b"%5c", b"?", b"&", b"%", b"#",
    b"/v1/", b"/messages", b"/chat/completions", b"/responses", b'"stream":true', b"0\r\n\r\n", b"5\r\nhello\r\n",
    b"/v1beta/", b"/v1beta1/", b"/models/m:streamGenerateContent", b"?alt=sse", b"x-goog-api-key: k\r\n",
    b"Connection: close, user-agent\r\n", b"Expect: 100-continue\r\n", b"Cookie: a=b\r\n", b"Via: 1.1 x\r\n",
    b"X-Forwarded-Host: evil\r\n", b"Forwarded: for=x\r\n", b"Transfer-Encoding: chunked\r\n", b"Content-Length: 5\r\n",
    b"Authorization: Bearer " + CLIENT_KEYS[0].encode() + b"\r\n", b"x-api-key: " + CLIENT_KEYS[1].encode() + b"\r\n",
    b"Authorization: bearer " + CLIENT_KEYS[1].upper().encode() + b"\r\n", b"Upgrade: websocket\r\n",
    b"Keep-Alive: 5\r\n", b"Proxy-Foo: 1\r\n", b"X-Custom-A: 1\r\n", b"X-Api-Keys: k\r\n", b"Host: evil\r\n",
    b"User-Agent: caf\xe9\r\n", b"HTTP/1.0", b"HEAD ", b"GET ", b"OPTIONS ",
]
"""Request-shaped pieces the built-in mutation loop inserts (the keys among them, so a key reaches the log check)."""
