"""How a value is quoted back to the model in an error result: as JSON, clipped, always encodable as UTF-8."""

from __future__ import annotations

import json

from .._json import clip

__all__ = ["EXCERPT", "describe", "excerpt", "safe_repr", "show", "utf8_safe"]

EXCERPT = 200
"""Characters of a bad value quoted back to the model."""


def excerpt(text: str) -> str:
    """At most ``EXCERPT`` characters (``pipeline._json.clip``), always encodable as UTF-8."""
    return utf8_safe(clip(text, EXCERPT))


def utf8_safe(text: str) -> str:
    """``text`` unchanged, unless it holds a lone surrogate: that becomes its escape (``\\ud800``)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def show(value: object) -> str:
    """``value`` as JSON (or repr), clipped: how a bad value is quoted back to the model."""
    if isinstance(value, str):  # the first characters, quoted (not the quoted text, clipped)
        quoted = json.dumps(value[:EXCERPT], ensure_ascii=False)
        if len(value) > EXCERPT:
            quoted = f"{quoted}… ({len(value)} characters)"
        return utf8_safe(quoted)
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except Exception:
        text = safe_repr(value)
    return excerpt(text)


def safe_repr(value: object) -> str:
    """``repr(value)``, or ``<type object>`` when its ``__repr__`` raises."""
    try:
        return repr(value)
    except Exception:
        return f"<{type(value).__name__} object>"


def describe(exc: BaseException) -> str:
    """``TypeName: message`` (the type alone when the message is empty or cannot be read)."""
    try:
        message = str(exc)
    except Exception:
        message = ""
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
