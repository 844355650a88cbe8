"""``ProxyConfig``: everything ``llm-stream proxy`` is configured with, one frozen value for the app
(``create_proxy_app``), the server (``Proxy``, ``run_proxy``) and the command line, as ``EmulatorConfig`` is for the
emulator. A plain value: usable without the ``proxy`` extra.

Every field is also a flag (``--max-streams``) and an environment variable (``LLM_STREAM_PROXY_MAX_STREAMS``); a flag
wins over the variable, the variable over the default (``ProxyConfig.from_env``). The keys themselves are never in the
config: ``client_key_env`` and ``upstream_key_env`` name the variables that hold them, read when the app is made.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal, TypeAlias

import attrs

from operators import Limits, RetryPolicy

from ..sanitize import Mode

__all__ = ["EventLoop", "LogFormat", "ProxyConfig", "is_loopback"]

LogFormat: TypeAlias = Literal["text", "json", "off"]
EventLoop: TypeAlias = Literal["auto", "asyncio", "uvloop"]
MiB = 1024 * 1024


_CREDENTIALS_REFUSED = ("upstream must not carry credentials (user:password@host): the proxy would never send them, "
                        "and would show them; give the upstream's key with --upstream-key-env")


def _has_credentials(url: str) -> bool:
    """``url`` carries a user or a password (``http://user:pw@host/v1``), well formed or not."""
    from urllib.parse import urlsplit

    try:
        return "@" in urlsplit(url).netloc
    except ValueError:
        return "@" in url.partition("://")[2].partition("/")[0]


def _upstream(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    from urllib.parse import urlsplit

    if _has_credentials(value):
        raise ValueError(_CREDENTIALS_REFUSED)  # the URL is not shown: it holds a password
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"upstream must be an http(s) URL such as https://api.example.com/v1, got {value!r}")


def is_loopback(host: str) -> bool:
    """``host`` (a ``--host``) listens on loopback only: ``localhost`` or a loopback address (``127.0.0.0/8``,
    ``::1``). Anything else, a name included (it may resolve anywhere), listens beyond."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _switch(text: str) -> bool:
    """A yes-or-no variable: ``1``, ``true``, ``yes``, ``on`` or ``0``, ``false``, ``no``, ``off``."""
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"must be 1, true, yes, on, 0, false, no or off, got {text!r}")


def _positive(instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{attribute.name} must be a positive number, got {value!r}")


def _int_at_least(least: int) -> Callable[[object, attrs.Attribute[int], int], None]:
    def check(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
        if type(value) is not int or value < least:
            raise ValueError(f"{attribute.name} must be an int >= {least}, got {value!r}")

    return check


def _one_of(*choices: str) -> Callable[[object, attrs.Attribute[str], str], None]:
    def check(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
        if value not in choices:
            raise ValueError(f"{attribute.name} must be one of {', '.join(choices)}; got {value!r}")

    return check


def _env_name(instance: object, attribute: attrs.Attribute[str | None], value: str | None) -> None:
    if value is not None and (not value or "=" in value or "\0" in value):
        raise ValueError(f"{attribute.name} must name an environment variable, got {value!r}")


def _names(value: str | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else value
    return tuple(sorted({item.strip().lower() for item in items if item.strip()}))


def _limits(value: Limits | Mapping[str, int] | str | None) -> Limits:
    """``Limits``, a mapping of its fields, or ``"max_text_bytes=1000000,max_tool_calls=64"``."""
    if isinstance(value, Limits):
        return value
    if value is None:
        return Limits()
    if isinstance(value, str):
        pairs: dict[str, int] = {}
        for item in filter(None, (part.strip() for part in value.split(","))):
            name, sep, number = item.partition("=")
            if not sep:
                raise ValueError(f"limits are NAME=VALUE pairs separated by commas, got {item!r}")
            try:
                pairs[name.strip()] = int(number)
            except ValueError:
                raise ValueError(f"limit {name.strip()} must be an int, got {number.strip()!r}") from None
        value = pairs
    known = {field.name for field in attrs.fields(Limits)}
    unknown = sorted(set(value) - known)
    if unknown:
        raise ValueError(f"unknown limit {', '.join(unknown)}; the limits are {', '.join(sorted(known))}")
    return Limits(**value)


def _reader(convert: Callable[[str], Any], expected: str) -> Callable[[str], Any]:
    """How a flag's or a variable's text is read: ``convert``, or ``ValueError("must be <expected>, got ...")``."""

    def parse(text: str) -> Any:
        try:
            return convert(text)
        except ValueError:
            raise ValueError(f"must be {expected}, got {text!r}") from None

    return parse


_number = _reader(float, "a number of seconds")
_integer = _reader(lambda text: int(text.replace("_", "")), "an integer")


def _help(parse: Callable[[str], Any], text: str) -> dict[str, Any]:
    """A field that is a flag and a variable: how its text is read (``parse``) and its ``--help``."""
    return {"parse": parse, "help": text}


def _setting(parse: Callable[[str], Any], text: str, **field: Any) -> Any:
    """``attrs.field(**field)``, a flag and a variable (``_help``). With a default: mypy's attrs plugin takes a
    field made here as one that has a default."""
    return attrs.field(metadata=_help(parse, text), **field)


def _seconds(default: float, text: str) -> Any:
    """A positive number of seconds."""
    return _setting(_number, text, default=default, validator=_positive)


def _count(default: int, least: int, text: str) -> Any:
    """An int of at least ``least``."""
    return _setting(_integer, text, default=default, validator=_int_at_least(least))


@attrs.frozen(kw_only=True)
class ProxyConfig:
    """The proxy's settings; see docs/proxy.md for each, with its flag and environment variable.

    Every field but ``retry_policy`` is a flag (``--max-streams``) and a variable (``LLM_STREAM_PROXY_MAX_STREAMS``):
    its ``metadata`` holds ``parse`` (text to value) and ``help``.
    """

    ENV_PREFIX: ClassVar[str] = "LLM_STREAM_PROXY_"

    upstream: str = attrs.field(validator=_upstream, metadata=_help(str,  # no default: required, for mypy too
        "the upstream base URL, e.g. https://api.deepseek.com/v1 (requests to /v1/<path> go to <upstream>/<path>)"))
    host: str = _setting(str, "address to bind (default 127.0.0.1: loopback only)", default="127.0.0.1")
    port: int = _count(8809, 0, "port (0 picks a free one; default 8809)")
    mode: Mode = _setting(str, "stream: forward clean bytes at once (default); buffered: hold each streamed response "
                          "until its finish", default="stream", validator=_one_of("stream", "buffered"))
    retries: int = _count(0, 0, "retries of a retryable failure before the client sees a byte (default 0: the "
                          "client's own retries decide)")
    connect_timeout: float = _seconds(10.0, "seconds to connect to the upstream (default 10)")
    idle_timeout: float = _seconds(300.0, "seconds the upstream may send nothing before the request ends with 504 / "
                                   "TIMEOUT (default 300)")
    total_timeout: float = _seconds(600.0, "seconds one request may take from its first byte to its last, retries "
                                    "included (default 600)")
    max_streams: int = _count(512, 1, "requests in flight to the upstream at once; one more is answered 503 with "
                              "Retry-After (default 512)")
    max_body_bytes: int = _count(64 * MiB, 1, "largest request body accepted; a larger one is answered 413 (default "
                                 "64 MiB)")
    header_timeout: float = _seconds(10.0, "seconds a client has to send a request's headers, from its first byte or "
                                     "its connection (default 10)")
    client_idle_timeout: float = _seconds(30.0, "seconds a client connection may stay idle between requests or while "
                                          "sending a body (default 30)")
    body_timeout: float = _seconds(60.0, "seconds a client has to send a request's whole body, read before the "
                                   "request takes a stream slot; past it, 408 (default 60)")
    linger_timeout: float = _seconds(30.0, "seconds the proxy goes on reading and discarding a body it answered "
                                     "early (413, 401, ...) so the client reads the answer, not a reset; also ends "
                                     "after 5 s without a byte (default 30)")
    linger_bytes: int = _count(256 * MiB, 0, "bytes of such a body the proxy reads and discards before it closes "
                               "anyway (default 256 MiB)")
    grace_period: float = _seconds(25.0, "seconds streams in flight may take to finish after SIGTERM before they are "
                                   "cut (default 25)")
    loop: EventLoop = _setting(str, "the event loop: auto (uvloop where installed, as the proxy extra installs it on "
                               "Linux and macOS; else asyncio), asyncio, or uvloop (default auto)", default="auto",
                               validator=_one_of("auto", "asyncio", "uvloop"))
    log_format: LogFormat = _setting(str, "the access log on stderr, one line per request: text (default), json, or "
                                     "off", default="text", validator=_one_of("text", "json", "off"))
    client_key_env: str | None = _setting(str, "an environment variable holding the keys clients must present "
                                          "(comma-separated); others get 401", default=None, validator=_env_name)
    upstream_key_env: str | None = _setting(str, "an environment variable holding the key sent upstream; the client's "
                                            "key is then never forwarded", default=None, validator=_env_name)
    forward_headers: tuple[str, ...] = _setting(str, "more request headers to forward upstream, comma-separated (a "
                                                "trailing * matches a prefix)", default=(), converter=_names)
    allow_open_relay: bool = attrs.field(
        default=False, validator=attrs.validators.instance_of(bool), metadata={**_help(_switch, (
            "start even when listening beyond loopback with --upstream-key-env and no --client-key-env, where anyone "
            "who reaches the port spends the upstream key (refused without it): only behind something that "
            "authenticates clients itself")), "switch": True})
    limits: Limits = _setting(str, "bounds of what the repairer holds of one response before it can forward (a sound "
                              "answer is never cut), NAME=VALUE,... of pipeline Limits (e.g. max_text_bytes=1000000)",
                              default=attrs.Factory(Limits), converter=_limits)

    retry_policy: RetryPolicy | None = attrs.field(default=None, metadata={"flag": False})
    """Python only: the sanitizing transport's whole policy, overriding ``retries`` (tests use a short backoff)."""

    def __attrs_post_init__(self) -> None:
        if self.open_relay() and not self.allow_open_relay:
            raise ValueError(
                f"refusing to listen on {self.host} with --upstream-key-env and no --client-key-env: anyone who can "
                "reach the port would spend the upstream key (an open relay). Give clients keys of their own "
                f"(--client-key-env VAR, or {self.env_var('client_key_env')}), listen on 127.0.0.1, or, behind "
                f"something that authenticates clients, pass --allow-open-relay ({self.env_var('allow_open_relay')}=1)")

    def open_relay(self) -> bool:
        """Listening beyond loopback (``is_loopback``) with the upstream key and no client keys: whoever reaches the
        port spends the operator's key. Refused unless ``allow_open_relay`` (then the proxy warns as it starts)."""
        return self.upstream_key_env is not None and self.client_key_env is None and not is_loopback(self.host)

    def timeouts(self) -> dict[str, float]:
        """The upstream request's timeouts, as httpx's ``timeout`` extension names them."""
        return {"connect": self.connect_timeout, "read": self.idle_timeout, "write": self.idle_timeout,
                "pool": self.connect_timeout}

    def policy(self) -> RetryPolicy | None:
        """The sanitizing transport's retries: ``retry_policy``, else ``retries`` retries of the default codes, else
        ``None``: none of its own, the client's retry loop governs (docs/decisions/0033-one-retry-layer.md)."""
        if self.retry_policy is not None or self.retries == 0:
            return self.retry_policy
        return RetryPolicy.normal(max_retries=self.retries)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> ProxyConfig:
        """The config from ``LLM_STREAM_PROXY_*`` variables (default ``os.environ``), then ``overrides`` (keyword
        arguments that are not ``None``: the flags given). ``ValueError`` names the variable of a bad value."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for field in attrs.fields(cls):
            override = overrides.get(field.name)
            if override is not None:
                values[field.name] = override
                continue
            if "parse" not in field.metadata:
                continue
            name = cls.env_var(field.name)
            text = environ.get(name)
            if text is None or not text.strip():
                continue
            try:
                values[field.name] = field.metadata["parse"](text.strip())
            except ValueError as exc:
                raise ValueError(f"{name}: {exc}") from None
        if "upstream" not in values:
            raise ValueError(f"the upstream is required: --upstream URL or {cls.env_var('upstream')}")
        return cls(**values)

    @classmethod
    def env_var(cls, field: str) -> str:
        """The variable of a field: ``LLM_STREAM_PROXY_<FIELD>``."""
        return cls.ENV_PREFIX + field.upper()
