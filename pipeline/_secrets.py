"""The secrets the ``llm_stream`` loggers never write (docs/decisions/0040-redaction-coverage.md): the registered keys
(``register_secret``) in any letter case, their code form, any cut of 8 characters or longer; the value of a key
header where a message quotes it (``register_key_headers``); the value of a URL's key parameter (``?key=``,
``&api_key=``: Google's documented style, issue 32), always. ``pipeline._logging``'s filter applies them."""

from __future__ import annotations

import re
import threading
from urllib.parse import unquote

__all__ = ["MIN_SECRET_CHARS", "REDACTED", "URL_KEY_PARAMETERS", "redact_header_values", "redact_secrets",
           "redact_url_keys", "register_key_headers", "register_secret", "registered", "split_url_key",
           "whole_keys"]

REDACTED = "[redacted]"

MIN_SECRET_CHARS = 8  # as the chunk redaction (docs/decisions/0015-redaction.md): shorter is no secret

URL_KEY_PARAMETERS = frozenset({"key", "api_key", "apikey", "api-key"})
"""The query parameters whose value is a key (compared in lower case): the Gemini API reads ``?key=``."""

_URL_KEY = re.compile(r"([?&;](?:key|api[_-]?key)=)([^&#\s'\"<>\\]+)", re.IGNORECASE)

_lock = threading.Lock()
_patterns: dict[str, re.Pattern[str]] = {}
_header_values: dict[str, re.Pattern[str]] = {}


def _pattern(secret: str) -> re.Pattern[str]:
    """The key, its code form (what an upper-cased ``finish_reason`` makes of it), or any start of either 8
    characters or longer, in any letter case."""

    def prefixes(text: str) -> str:
        head, rest = re.escape(text[:MIN_SECRET_CHARS]), text[MIN_SECRET_CHARS:]
        return head + "".join(f"(?:{re.escape(char)}" for char in rest) + ")?" * len(rest)

    code_form = re.sub(r"[^A-Z0-9]+", "_", secret.upper()).strip("_")
    forms = [prefixes(secret)]
    if len(code_form) >= MIN_SECRET_CHARS and code_form.lower() != secret.lower():
        forms.append(prefixes(code_form))
    return re.compile("|".join(forms), re.IGNORECASE)


def redact_secrets(text: str, secrets: tuple[str, ...] | None = None) -> str:
    """``text`` without any registered key (or the keys given): the key or its code form in any letter case, any
    start of either 8 characters or longer, and any other cut of either 8 characters or longer (a quote that lost
    the key's beginning)."""
    with _lock:
        keys = tuple(_patterns) if secrets is None else secrets
        chosen = tuple(_register(key) for key in keys)
    for pattern in chosen:
        text = pattern.sub(REDACTED, text)
    for key in keys:
        if len(key) >= MIN_SECRET_CHARS:
            text = _mask_cuts(text, _forms(key))
    return text


def _forms(secret: str) -> tuple[str, ...]:
    """The key and its code form, lower case (what a cut is compared with)."""
    code_form = re.sub(r"[^A-Z0-9]+", "_", secret.upper()).strip("_")
    return tuple({secret.lower(), code_form.lower()})


def _mask_cuts(text: str, forms: tuple[str, ...]) -> str:
    """Replaces every run of ``MIN_SECRET_CHARS`` or more characters that occurs inside one of ``forms`` (any letter
    case). Linear in the text: a window is looked up among the forms' windows, then the run is extended."""
    size = MIN_SECRET_CHARS
    folded = text.lower()
    if len(folded) != len(text):  # a letter whose lower case is longer: compare as written
        folded = text
    windows = {form[at : at + size] for form in forms for at in range(len(form) - size + 1)}
    out: list[str] = []
    done = at = 0
    while at + size <= len(folded):
        if folded[at : at + size] not in windows:
            at += 1
            continue
        end = at + size
        while end < len(folded) and any(folded[at : end + 1] in form for form in forms):
            end += 1
        out += [text[done:at], REDACTED]
        done = at = end
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


def _register(secret: str) -> re.Pattern[str]:
    pattern = _patterns.get(secret)
    if pattern is None:
        pattern = _patterns[secret] = _pattern(secret)
    return pattern


def register_key_headers(names: tuple[str, ...] | frozenset[str]) -> None:
    """Every later record of an ``llm_stream`` logger loses the value of each header in ``names`` wherever the
    message quotes it (``x-api-key: K``, ``'x-api-key': 'K'``, ``Authorization: Bearer K``), keys never registered
    with ``register_secret`` too: the key headers of every wire-format record (``pipeline.formats.WireRegistry``)."""
    with _lock:
        for name in names:
            if name.lower() not in _header_values:
                _header_values[name.lower()] = re.compile(
                    rf"(?<![\w-])({re.escape(name)}['\"]?\s*[:=,]\s*b?['\"]?(?:bearer\s+)?)"
                    rf"([^\s'\",;)}}\]]{{{MIN_SECRET_CHARS},}})",
                    re.IGNORECASE,
                )


def redact_url_keys(text: str) -> str:
    """``text`` with the value of every key parameter of a URL it quotes replaced: ``...?alt=sse&key=AIza...`` ->
    ``...?alt=sse&key=[redacted]`` (``key``, ``api_key``, ``apikey``, ``api-key``, any letter case), registered
    or not."""
    return _URL_KEY.sub(lambda match: match.group(1) + REDACTED, text) if "=" in text else text


def split_url_key(url: str) -> tuple[str, str | None]:
    """``(url without its key parameters, the key)``: ``https://h/v1beta?key=AIza&x=1`` -> ``("https://h/v1beta?x=1",
    "AIza")``; the other parameters and the fragment are kept as written. ``ValueError`` when the URL gives two
    different keys (the message does not quote them); an empty ``key=`` is dropped and gives no key."""
    base, mark, rest = url.partition("?")
    if not mark:
        return url, None
    query, hash_mark, fragment = rest.partition("#")
    kept: list[str] = []
    keys: set[str] = set()
    for part in query.split("&"):
        name, _, value = part.partition("=")
        if unquote(name).strip().lower() in URL_KEY_PARAMETERS:
            if value:
                keys.add(unquote(value))
        else:
            kept.append(part)
    if len(keys) > 1:
        raise ValueError("the URL carries two different keys (?key=...)")
    if len(kept) == len(query.split("&")):
        return url, None
    remaining = "&".join(part for part in kept if part)
    return base + ("?" + remaining if remaining else "") + hash_mark + fragment, next(iter(keys), None)


def redact_header_values(text: str) -> str:
    """``text`` without the value of a key header it quotes (``register_key_headers``) or of a URL key parameter."""
    with _lock:
        patterns = tuple(_header_values.values())
    for pattern in patterns:
        text = pattern.sub(lambda match: match.group(1) + REDACTED, text)
    return redact_url_keys(text)


def whole_keys(text: str) -> str:
    """``text`` without any registered key whole, in any letter case (a ``VALUES_REDACTED`` record's redaction)."""
    with _lock:
        keys = tuple(_patterns)
    for key in keys:
        text = re.sub(re.escape(key), REDACTED, text, flags=re.IGNORECASE)
    return text


def register_secret(secret: str | None) -> None:
    """Every later record of an ``llm_stream`` logger loses ``secret`` (ignored when None or too short)."""
    if secret and len(secret) >= MIN_SECRET_CHARS:
        with _lock:
            _register(secret)




def registered() -> bool:
    """Whether anything is registered (the filter's fast exit)."""
    return bool(_patterns or _header_values)
