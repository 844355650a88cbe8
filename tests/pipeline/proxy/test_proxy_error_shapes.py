"""The proxy's own refusals in the error shape of the API the path belongs to (``_forward.error_response``): Google's
on Gemini's paths, whose ``code`` is the HTTP status the refusal is answered with (the google-genai SDK raises and
retries by that status; decision 0071)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from operators import Code
from pipeline.proxy._forward import error_response

GEMINI = "/v1beta/models/m:streamGenerateContent"


def _answer(status: int, code: str, path: str) -> tuple[int, dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(error_response(send, status, code, "refused", path=path))
    return sent[0]["status"], json.loads(sent[1]["body"])


@pytest.mark.parametrize(("status", "code", "rpc"), [
    (401, Code.AUTH, "UNAUTHENTICATED"), (400, Code.INVALID_REQUEST, "INVALID_ARGUMENT"),
    (413, Code.LIMIT_EXCEEDED, "OUT_OF_RANGE"), (408, Code.TIMEOUT, "DEADLINE_EXCEEDED"),
    (503, Code.SERVER, "UNAVAILABLE"), (504, Code.TIMEOUT, "DEADLINE_EXCEEDED"), (502, Code.TRANSPORT, "UNAVAILABLE"),
])
def test_a_refusal_on_a_gemini_path_is_googles_error_naming_the_status_it_is_answered_with(status: int, code: str,
                                                                                            rpc: str) -> None:
    answered, body = _answer(status, code, GEMINI)
    assert answered == status
    assert (body["error"]["code"], body["error"]["status"]) == (status, rpc)
    assert body["error"]["message"] == f"{code}: refused"


def test_a_refusal_elsewhere_keeps_its_apis_shape() -> None:
    assert _answer(401, Code.AUTH, "/v1/chat/completions")[1]["error"]["code"] == Code.AUTH
    assert _answer(401, Code.AUTH, "/v1/messages")[1]["error"]["type"] == "authentication_error"
