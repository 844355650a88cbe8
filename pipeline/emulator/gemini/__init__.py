"""Google's Gemini API, the emulator's side (``POST .../models/{model}:streamGenerateContent?alt=sse``, at the Gemini
API's paths and Vertex AI's): its profile registry ``GEMINI_PROFILES`` (``_profiles.py``, each profile a stream
written with the event builder ``GeminiEvents`` of ``_events.py``), ``gemini_error_shape`` (a refused request in
Google's error shape, google.rpc ``Status``), ``check_signature_sent_back`` (what ``thinking-tool``'s follow-up must
send back, ``_sent_back.py``), and ``GEMINI_API_FORMAT``, the format's ``ApiFormat`` record that
``pipeline.emulator``'s list of formats (``_formats.py``) names.

The model is a segment of the path, so it cannot hold a ``/``: a Gemini profile is chosen by the model
``emulator-gemini-<profile>`` (``GET /v1/models`` lists them so), a bare ``<profile>`` or the ``x-emulator-profile``
header. The profiles are built on the emulator's shared parts, this package's parent's own private modules.
"""

from operators.extend import publish as _publish

from .._api_format import ApiFormat as _ApiFormat
from ._events import gemini_error_shape
from ._profiles import GEMINI_PROFILES
from ._sent_back import check_signature_sent_back

__all__ = ["GEMINI_API_FORMAT", "GEMINI_PROFILES", "VERTEX_PREFIXES", "check_signature_sent_back", "gemini_error_shape"]

VERTEX_PREFIXES = tuple(
    f"/{version}/projects/{{project}}/locations/{{location}}/publishers/google" for version in ("v1", "v1beta1")
)
"""Vertex AI's paths before ``/models/{model}:streamGenerateContent`` (google-genai's Vertex client uses v1beta1)."""

GEMINI_API_FORMAT = _ApiFormat(
    "gemini",
    GEMINI_PROFILES,
    "gemini",
    "contents",
    "systemInstruction",
    gemini_error_shape,
    {"thinking-tool": check_signature_sent_back},
    assistant_role="model",
    agent_first="clean-tool",
    stream_request="alt=sse in the query of POST .../models/{model}:streamGenerateContent",
    prefixes=("/v1", "", "/v1beta", *VERTEX_PREFIXES),
    model_prefix="emulator-gemini-",
)
"""The emulator's record of the Gemini format: served at ``/v1beta``, ``/v1``, bare and Vertex AI's paths; its
assistant turns are ``"role": "model"``; ``agent`` calls ``clean-tool`` first."""

_publish(globals())  # each name's __module__ is this face (docs/architecture.md, "One path per name")
