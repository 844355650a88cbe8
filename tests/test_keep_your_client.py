"""docs/keep-your-client.md: every snippet runs against the emulator and, with the README's "Keep your client" snippet,
passes ``mypy --strict``; and the page's claim about plain langchain-openai holds on the emulator's profiles."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from pipeline import SanitizingTransport
from pipeline.emulator import Emulator

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "keep-your-client.md"
SNIPPETS = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
README_TEXT = ROOT.joinpath("README.md").read_text(encoding="utf-8")
README_SECTION = README_TEXT.split("## Keep your client", 1)[1].split("\n## ")[0]
README_SNIPPETS = [
    s for s in re.findall(r"```python\n(.*?)```", README_SECTION, flags=re.S) if "SanitizingTransport" in s
]
LIVE_URL = "http://127.0.0.1:8808"


def test_the_page_shows_every_client() -> None:
    joined = "\n".join(SNIPPETS)
    for needle in ("openai.OpenAI(", "openai.AsyncOpenAI(", "responses.stream(", "anthropic.Anthropic(", "ChatOpenAI(",
                   "anthropic.AsyncAnthropic(", "client_args={", "async_client_args={",
                   "httpx_async_client=httpx2.AsyncClient(", "client.aio.models.generate_content_stream("):
        assert needle in joined
    for factory in ("openai.DefaultHttpxClient(", "openai.DefaultAsyncHttpxClient(", "anthropic.DefaultHttpxClient(",
                    "anthropic.DefaultAsyncHttpxClient("):  # the SDKs' own factories, shown before plain clients
        assert factory in joined
        assert joined.index(factory) < joined.index("httpx2.AsyncClient(")
    assert README_SNIPPETS
    assert "keep-your-client.md" in README_SECTION


@pytest.mark.server
@pytest.mark.parametrize("snippet", SNIPPETS, ids=[f"snippet-{n}" for n in range(len(SNIPPETS))])
def test_each_snippet_runs(snippet: str, capsys: pytest.CaptureFixture[str]) -> None:
    with Emulator() as emulator:
        root = emulator.base_url.removesuffix("/v1")
        exec(compile(snippet.replace(LIVE_URL, root), "docs/keep-your-client.md", "exec"), {"__name__": "docs"})
    printed = capsys.readouterr().out
    assert printed.strip()
    assert "False" not in printed


@pytest.mark.server
def test_the_snippets_pass_mypy_strict(tmp_path: Path) -> None:
    files = []
    for n, snippet in enumerate([*SNIPPETS, *README_SNIPPETS]):
        path = tmp_path / f"snippet_{n}.py"
        path.write_text(snippet, encoding="utf-8")
        files.append(str(path))
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--config-file", str(ROOT / "pyproject.toml"), *files],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]


_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}},
          {"type": "function", "function": {"name": "get_time", "parameters": {}}}]


async def _langchain(base_url: str, profile: str, transport: bool) -> Any:
    http = httpx.AsyncClient(transport=SanitizingTransport()) if transport else httpx.AsyncClient()
    model = ChatOpenAI(
        model=profile, base_url=base_url, api_key=SecretStr("sk-x"), max_retries=0, http_async_client=http
    )
    message: Any = None
    try:
        async for piece in model.bind_tools(_TOOLS).astream("hi"):
            message = piece if message is None else message + piece
    except Exception as error:
        return type(error).__name__, "MALFORMED_TOOL_CALL" in str(error)
    finally:
        await http.aclose()
    return [(c["name"], c["args"], bool(c["id"])) for c in message.tool_calls], message.content


@pytest.mark.server
def test_what_the_transport_adds_over_plain_langchain_openai() -> None:
    async def compare(base_url: str) -> None:
        for profile in ("seed-bug", "ollama-parallel", "late-id", "no-done"):  # plain langchain-openai is right
            plain = await _langchain(base_url, profile, False)
            assert plain == await _langchain(base_url, profile, True)
            assert isinstance(plain[0], list)
            assert all(called for *_, called in plain[0])
        plain = await _langchain(base_url, "never-identified", False)
        assert plain[0] == [("get_weather", {"city": "Paris"}, False)]  # a call without an id
        assert await _langchain(base_url, "never-identified", True) == ("OpenAIAPIError", True)
        assert (await _langchain(base_url, "id-after-sse-id", False))[0] == "JSONDecodeError"
        assert await _langchain(base_url, "id-after-sse-id", True) == ([], "Hello from the emulator.")

    with Emulator() as emulator:
        asyncio.run(compare(emulator.base_url))
