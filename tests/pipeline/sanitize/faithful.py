"""The unmodified openai SDK on each of its HTTP clients (httpx2 and httpx, sync and async), with or without
``SanitizingTransport``: what a test compares, field by field."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import httpx
import httpx2
import openai

from pipeline import SanitizingTransport

Kind = Literal["httpx2", "httpx2-async", "httpx", "httpx-async"]
KINDS: tuple[Kind, ...] = ("httpx2", "httpx2-async", "httpx", "httpx-async")
REQUEST: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def sdk(kind: Kind, base_url: str, *, transport: bool | SanitizingTransport, **options: Any) -> Any:
    """An openai client of ``kind`` on ``base_url`` (``max_retries``, ``timeout``... in ``options``), through
    ``transport`` (``True``: a default ``SanitizingTransport``)."""
    module: Any = httpx2 if kind.startswith("httpx2") else httpx
    sync = not kind.endswith("async")
    client_class = module.Client if sync else module.AsyncClient
    given = SanitizingTransport() if transport is True else transport
    http = client_class(transport=given) if given else client_class()
    sdk_class = openai.OpenAI if sync else openai.AsyncOpenAI
    return sdk_class(base_url=base_url, api_key="sk-test-key-123456", http_client=http, **options)


def outcome(result: Any) -> Any:
    """A result or an error as a comparable value: pydantic models dumped, errors as (type, message)."""
    if isinstance(result, BaseException):
        return (type(result).__name__, str(result))
    if isinstance(result, list):
        return [outcome(r) for r in result]
    return result.model_dump() if hasattr(result, "model_dump") else result


def chunks(kind: Kind, base_url: str, *, transport: bool | SanitizingTransport, **options: Any) -> Any:
    """Every chunk of ``create(stream=True)``, or the error the SDK raised."""
    client = sdk(kind, base_url, transport=transport, **options)
    if kind.endswith("async"):

        async def read() -> list[Any]:
            async with client:
                stream = await client.chat.completions.create(stream=True, **REQUEST)
                return [c async for c in stream]

        runner = read
    else:

        async def runner() -> list[Any]:
            with client:
                return list(client.chat.completions.create(stream=True, **REQUEST))

    try:
        return outcome(asyncio.run(runner()))
    except Exception as exc:
        return outcome(exc)


def final(kind: Kind, base_url: str, *, transport: bool | SanitizingTransport, **options: Any) -> Any:
    """``chat.completions.stream(...).get_final_completion()``, or the error the SDK raised."""
    client = sdk(kind, base_url, transport=transport, **options)

    async def read_async() -> Any:
        async with client, client.chat.completions.stream(**REQUEST) as stream:
            return await stream.get_final_completion()

    async def read_sync() -> Any:
        with client, client.chat.completions.stream(**REQUEST) as stream:
            return stream.get_final_completion()

    try:
        return outcome(asyncio.run(read_async() if kind.endswith("async") else read_sync()))
    except Exception as exc:
        return outcome(exc)
