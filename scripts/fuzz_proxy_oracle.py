"""The oracle of the ``proxy`` fuzz target (``fuzz_proxy.py``): what one request through the proxy must come to, read
from docs/proxy.md, never from the proxy's own code (its allow-list and its path rule are restated here).

Each check names itself in the ``OracleFailure`` it raises:

- the ASGI messages are well formed: one ``http.response.start`` with a status h11 can send (200-599 and headers h11
  accepts), bodies after it, the last with ``more_body`` False and nothing after it, unless the client hung up or the
  upstream cut the body;
- what reached the upstream: its scheme, host and port are the upstream's; its path is under the base path, no
  decoded segment ``.`` or ``..``, and is the client's path after ``/v1/`` as sent (dot segments resolved); its query
  is the client's (no empty ``?`` added); its body is the client's byte for byte, within ``max_body_bytes``; no header
  hop-by-hop, ``proxy-*``, ``expect``, ``cookie``, ``forwarded``, ``via``, ``x-forwarded-*`` or named in the
  client's ``Connection``; every other name on the allow-list, in ``--forward-headers`` or httpx's own ``host`` and
  ``content-length`` (the upstream's host, the body's length); the keys as docs/proxy.md says;
- nothing reached the upstream: the answer is the proxy's own refusal, and the right one (401, 400, 413, 404, or
  nothing for a client that hung up);
- a pass-through answer reaches the client with its status and body byte for byte, without hop-by-hop headers (a
  cut one stays cut), a clean chat stream byte for byte, an unreachable upstream as 502, an answer with odd JSON
  types or nesting past any decoder as an error in the API's shape or a cut, never a 500;
- the proxy's own keys a client wrote into its query or a forwarded header's value reach the upstream redacted; a
  body nested too deep to read (more than about 1,000 levels) may be refused 400;
  the upstream's response is closed whatever the client did;
- one access-log line per request, and no key, in any letter case or a cut of 8 characters, in any record of the
  ``llm_stream`` loggers.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

import h11

from scripts.fuzz_proxy_cases import (
    ANSWERS,
    CLIENT_KEYS,
    JSON,
    SSE,
    UPSTREAM_HOST,
    UPSTREAM_KEY,
    UPSTREAM_PORT,
    Client,
    Run,
    Sent,
    json_depth,
    own_keys,
    without_keys,
)
from scripts.fuzz_reference import OracleFailure, ensure

_TRACEPARENT = re.compile(rb"00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}")
"""A W3C trace context the proxy writes when a tracer provider records (it replaces the client's)."""

__all__ = ["ALLOWED", "check_run", "expected_refusal", "resolve"]

ALLOWED = frozenset({
    "content-type", "accept", "accept-encoding", "user-agent", "openai-organization", "openai-project",
    "openai-beta", "anthropic-version", "anthropic-beta", "x-goog-api-client", "x-goog-user-project",
    "idempotency-key", "traceparent", "tracestate",
})
"""The allow-list as docs/proxy.md states it (tests/test_fuzz_proxy.py holds it against the proxy's)."""
HOP_BY_HOP = frozenset({"connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade"})
NEVER = HOP_BY_HOP | {"expect", "cookie", "forwarded", "via"}
KEY_HEADERS = (b"authorization", b"x-api-key", b"x-goog-api-key")
PREFIXES = (b"/v1/", b"/v1beta/", b"/v1beta1/")
"""The version segments the proxy forwards (docs/proxy.md: Google's ``/v1beta/`` and ``/v1beta1/`` as ``/v1/``)."""
_ENDS_WITH: tuple[tuple[re.Pattern[bytes], bytes], ...] = (
    (re.compile(rb".*/chat/completions\Z"), b"authorization"),
    (re.compile(rb".*/messages\Z"), b"x-api-key"),
    (re.compile(rb".*/responses\Z"), b"authorization"),
    (re.compile(rb".*/models/[^/]+:streamGenerateContent\Z"), b"x-goog-api-key"),
)
"""Each format's stream path and its key header (docs/proxy.md): a path under the base that ends with one (Vertex AI's
``projects/.../models/m:streamGenerateContent``, ``v1/messages``) is that format's, before any endpoint family."""
_FAMILIES: tuple[tuple[re.Pattern[bytes], bytes], ...] = (
    (re.compile(rb"messages(/|\Z)"), b"x-api-key"),
    (re.compile(rb"models/[^/]+:[^/]+(/|\Z)"), b"x-goog-api-key"),
)
"""The endpoint families with their own key header (``messages/count_tokens``, Gemini's ``models/m:countTokens``);
any other path's key goes as ``authorization: Bearer``."""


def upstream_key_header(relative: bytes) -> bytes:
    """The header the proxy's own key goes upstream in, for a path under the base (written from docs/proxy.md, apart
    from the proxy's ``upstream_key_header``)."""
    path = b"/" + relative.strip(b"/")
    for pattern, header in _ENDS_WITH:
        if pattern.match(path):
            return header
    return next((header for pattern, header in _FAMILIES if pattern.match(path[1:])), b"authorization")


def _relative(raw_path: bytes) -> bytes | None:
    """The client's path after its version segment, as sent; None when the proxy does not forward it."""
    return next((raw_path[len(prefix):] for prefix in PREFIXES if raw_path.startswith(prefix)), None)
_UNSAFE = re.compile(rb'["<>\\^`{|}]')  # httpx percent-encodes these in a URL: the same request, equivalently written


def _equivalent(raw: bytes) -> bytes:
    return _UNSAFE.sub(lambda m: b"%%%02X" % m.group()[0], raw)


def _parts(segment: bytes) -> list[str]:
    return unquote(segment.decode("latin-1")).replace("\\", "/").split("/")


def resolve(raw: bytes) -> tuple[bytes | None, bool]:
    """The client's path after ``/v1/`` with dot segments resolved, each other segment as sent (``None``: it climbs
    above the base path), and whether a segment hides a ``..`` behind an encoded slash (which the proxy may refuse)."""
    out: list[bytes] = []
    hidden = False
    for segment in raw.split(b"/"):
        plain = unquote(segment.decode("latin-1"))
        if plain == ".":
            continue
        if plain == "..":
            if not out:
                return None, hidden
            out.pop()
            continue
        hidden = hidden or ".." in _parts(segment)
        out.append(segment)
    return b"/".join(out), hidden


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> list[bytes]:
    return [value for key, value in headers if key == name]


def _presented_key(client: Client) -> bool:
    for name, value in client.headers:
        text = value.decode("latin-1")
        if name == b"authorization":
            scheme, _, token = text.partition(" ")
            if scheme.lower() == "bearer" and token.strip() in CLIENT_KEYS:
                return True
        elif name in (b"x-api-key", b"x-goog-api-key") and text.strip() in CLIENT_KEYS:
            return True
    return False


def check_messages(run: Run, cut: bool) -> None:
    messages = run.messages
    for message in messages:
        ensure(message.get("type") in ("http.response.start", "http.response.body"), f"asgi: a {message!r} message")
    starts = [at for at, m in enumerate(messages) if m["type"] == "http.response.start"]
    ensure(starts in ([], [0]), f"asgi: one http.response.start, first (at {starts})")
    if starts:
        start = messages[0]
        status = start.get("status")
        ensure(type(status) is int and 200 <= status <= 599, f"asgi: a status uvicorn can send ({status!r})")
        try:
            h11.Response(status_code=int(status or 0), headers=list(start.get("headers", [])))
        except h11.LocalProtocolError as error:
            raise OracleFailure(f"asgi: response headers h11 refuses: {error}") from error
    ends = [at for at, m in enumerate(messages) if m["type"] == "http.response.body" and not m.get("more_body", False)]
    ensure(ends in ([], [len(messages) - 1]), f"asgi: nothing after the body's end (ends at {ends})")
    ensure(all(isinstance(m.get("body", b""), bytes) for m in messages[1:]), "asgi: bodies are bytes")
    if not run.hung_up and not cut:
        ensure(bool(starts), "asgi: the app returned without starting a response (uvicorn answers 500)")
        ensure(bool(ends) and len(messages) >= 2, "asgi: the app returned without ending its response")


def status_of(run: Run) -> int | None:
    return run.messages[0]["status"] if run.messages else None


_ERROR_SHAPE = re.compile(rb'\{("type": ?"error", ?)?"error"')  # OpenAI's error body, or Anthropic's (/v1/messages)


def body_of(run: Run) -> bytes:
    return b"".join(m.get("body", b"") for m in run.messages[1:])


def expected_refusal(run: Run) -> tuple[int | None, str] | None:
    """The proxy's own answer this request must get (status, why; ``None`` status: no answer, the client is gone),
    or ``None``: it goes upstream."""
    client, plan = run.client, run.plan
    raw_path, _, _ = client.target.partition(b"?")
    path = unquote(raw_path.decode("ascii"))
    relative = _relative(raw_path)
    if relative is None:
        local = {"/health": 200, "/healthz": 200, "/ready": 200, "/metrics": 200}
        return local.get(path, 404), "a path outside /v1/ (/v1beta/, /v1beta1/) is the proxy's own"
    if plan.client_keys and not _presented_key(client):
        return 401, "a request without a client key is 401"
    resolved = resolve(relative)[0]
    if resolved is None:
        return 400, "a path leaving the base path is 400"
    if b"#" in resolved + client.target.partition(b"?")[2]:
        return 400, "a target holding a '#' (no URL's path or query) is 400"
    lengths = [v.strip() for v in _header(client.headers, b"content-length")]
    if any(v.isdigit() and int(v) > plan.max_body for v in lengths):
        return 413, "a Content-Length over the cap is 413"
    delivered = plan.pieces[: plan.hang_at] if plan.hang_up == "body" else plan.pieces
    if sum(map(len, delivered)) > plan.max_body:
        return 413, "a body over the cap is 413"
    if plan.hang_up == "body" or not client.complete:
        return None, "a client gone while sending its body gets no answer"
    return None


def check_refusal(run: Run) -> None:
    expected = expected_refusal(run)
    status = status_of(run)
    if not run.upstream and status == 400 and json_depth(run.client.body) > 500 and (
            expected is None or expected[0] not in (401, 404)):
        return  # a body nested too deep to read is 400 (the decoders' limit is about 1,000 levels)
    if run.upstream:
        ensure(expected is None, f"refusal: reached the upstream, yet {expected and expected[1]}")
        return
    raw_path = run.client.target.partition(b"?")[0]
    relative = _relative(raw_path)
    hidden = relative is not None and resolve(relative)[1]  # the proxy may refuse it: 400 before the body
    if status == 400 and hidden and (expected is None or expected[0] not in (401, 404)):
        return
    if expected is None:
        ensure(run.hung_up, f"refusal: nothing reached the upstream and the answer is {status}")
        return
    want, why = expected
    if want is None:
        ensure(status is None, f"refusal: {why} (got {status})")
    else:
        ensure(status == want or (run.hung_up and status is None), f"refusal: {why} (got {status})")
        if want == 401:
            names = {k for k, _ in run.messages[0]["headers"]}
            ensure(b"www-authenticate" in names, "refusal: a 401 says how to authenticate")


def _forwardable(name: str, forward: tuple[str, ...]) -> bool:
    return name in ALLOWED or any(name == f or (f.endswith("*") and name.startswith(f[:-1])) for f in forward)


def check_upstream(run: Run) -> None:
    ensure(len(run.upstream) <= 1, f"upstream: {len(run.upstream)} requests for one (retrying is the client's)")
    if not run.upstream:
        return
    sent, client, plan = run.upstream[0], run.client, run.plan
    ensure((sent.scheme, sent.host, sent.port) == ("http", UPSTREAM_HOST, UPSTREAM_PORT),
           f"upstream: went to {sent.scheme}://{sent.host}:{sent.port}, not the upstream")
    path, mark, query = sent.raw_path.partition(b"?")
    prefix = plan.base.rstrip("/").encode() + b"/"
    ensure(path.startswith(prefix), f"upstream: the path {path!r} leaves the base path {plan.base}")
    for segment in path[len(prefix):].split(b"/"):
        plain = unquote(segment.decode("latin-1"))  # "a\\." is no dot segment; "a%2f.." hides one, "a\\.." too
        ensure(plain not in (".", "..") and ".." not in _parts(segment),
               f"upstream: a dot segment reached the upstream in {path!r}")
    raw_path, _, client_query = client.target.partition(b"?")
    relative = _relative(raw_path)
    ensure(relative is not None, f"upstream: {raw_path!r} is not under /v1/ as sent, yet was forwarded")
    resolved = resolve(relative or b"")[0]
    ensure(resolved is not None and _equivalent(path[len(prefix):]) == _equivalent(resolved),
           f"upstream: the path {path!r} is not the client's {raw_path!r} resolved")
    ensure(bool(mark) == bool(client_query), f"upstream: the query mark {mark!r} for a client's query {client_query!r}")
    wanted = without_keys(client_query, own_keys(run), b"%5Bredacted%5D")  # the proxy's own keys never go upstream
    ensure(_equivalent(query) == _equivalent(wanted), f"upstream: the query {query!r} is not {wanted!r}")
    ensure(sent.body == client.body, "upstream: the body is not the client's byte for byte")
    ensure(len(sent.body) <= plan.max_body, "upstream: a body over max_body_bytes went upstream")
    check_upstream_headers(run, sent)


def check_upstream_headers(run: Run, sent: Sent) -> None:
    client, plan = run.client, run.plan
    named = {t.strip().lower() for v in _header(client.headers, b"connection") for t in v.decode("latin-1").split(",")}
    for raw_name, value in sent.headers:
        name = raw_name.decode("latin-1")
        ensure(name not in NEVER and not name.startswith(("x-forwarded-", "proxy-")) and name not in named,
               f"headers: {name} went upstream")
        if name == "host":
            ensure(value == f"{UPSTREAM_HOST}:{UPSTREAM_PORT}".encode(), f"headers: host {value!r} is not upstream's")
        elif name == "content-length":
            ensure(value == str(len(sent.body)).encode(), f"headers: content-length {value!r} is not the body's")
        elif raw_name not in KEY_HEADERS:
            ensure(_forwardable(name, plan.forward), f"headers: {name} is neither allowed nor forwarded")
            injected = name in ("traceparent", "tracestate") and _TRACEPARENT.fullmatch(
                dict(sent.headers).get(b"traceparent", b"")) is not None  # a tracer's own context (docs/proxy.md)
            as_sent = [(k, without_keys(v, own_keys(run), b"[redacted]")) for k, v in client.headers]
            ensure(injected or (raw_name, value) in as_sent, f"headers: {name} is not as the client sent it")
    keys_sent = [(k, v) for k, v in sent.headers if k in KEY_HEADERS]
    for key in CLIENT_KEYS if plan.client_keys else ():  # in a key header: elsewhere it is what the client wrote
        ensure(all(key.lower().encode() not in v.lower() for _, v in keys_sent), "keys: a client key went upstream")
    if plan.upstream_key:
        relative = sent.raw_path.partition(b"?")[0][len(plan.base.rstrip("/")) + 1:]
        header, upstream = upstream_key_header(relative), UPSTREAM_KEY.encode()
        want = (header, b"Bearer " + upstream if header == b"authorization" else upstream)
        ensure(keys_sent == [want], f"keys: the upstream key is not the only key header ({[k for k, _ in keys_sent]})")
    elif plan.client_keys:
        ensure(not keys_sent, "keys: a key header went upstream though the client's key is never forwarded")
    else:
        ensure(keys_sent == [(k, v) for k, v in client.headers if k in KEY_HEADERS and k.decode() not in named],
               "keys: the client's key headers did not pass as sent")


def check_answer(run: Run) -> None:
    """The upstream's answer as the client got it, and released whatever the client did."""
    for sent in run.upstream:
        answered = not sent.cancelled and run.plan.answer != "connect"
        ensure(sent.closed or not answered, "answer: the upstream's response was never closed (its connection held)")
    if not run.upstream or run.hung_up or run.upstream[0].cancelled:
        return
    answer, status = run.plan.answer, status_of(run)
    if answer == "connect":
        ensure(status == 502, f"answer: an unreachable upstream is 502 (got {status})")
    elif answer == "odd":  # odd JSON types, nesting past any decoder: the API's error shape or a cut, never a 500
        ensure(status != 500 and (status is None or status < 400 or _ERROR_SHAPE.match(body_of(run)) is not None),
               f"answer: odd JSON answered {status}, not in the API's error shape: {body_of(run)[:80]!r}")
    elif answer == "sse":  # a clean stream is forwarded as the upstream sent it (docs/decisions/0032)
        ensure(status == 200 and body_of(run) == SSE, "answer: a clean chat stream did not pass byte for byte")
    elif answer in ANSWERS:
        ensure(status == ANSWERS[answer], f"answer: the upstream's {ANSWERS[answer]} reached the client as {status}")
        names = {k.lower().decode("latin-1") for k, _ in run.messages[0]["headers"]}
        ensure(not names & (HOP_BY_HOP | {"x-hop"}), f"answer: hop-by-hop response headers {names & HOP_BY_HOP}")
        ensure(b"x-kept" in {k.lower() for k, _ in run.messages[0]["headers"]}, "answer: an end-to-end header lost")
        body, ended = body_of(run), not run.messages[-1].get("more_body", False)
        if answer == "cut":
            ensure(not ended and JSON.startswith(body), "answer: a cut upstream body did not reach the client cut")
        else:
            ensure(ended and body == JSON, "answer: the upstream's body did not reach the client byte for byte")


def check_logs(run: Run) -> None:
    ensure(run.access == 1, f"logs: {run.access} access-log lines for one request")
    keys = [*CLIENT_KEYS, UPSTREAM_KEY]
    for text in run.logs:
        folded = text.lower()
        for key in keys:
            cuts = {key.lower()[at : at + 8] for at in range(len(key) - 7)}
            ensure(not any(cut in folded for cut in cuts), f"logs: a key (or a cut of it) in a log record: {text!r}")


def check_run(run: Run) -> None:
    cut = run.plan.answer in ("cut", "odd") or any(s.cancelled for s in run.upstream)
    check_messages(run, cut)
    check_refusal(run)
    check_upstream(run)
    check_answer(run)
    check_logs(run)
