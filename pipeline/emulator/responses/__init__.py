"""The OpenAI Responses API, the emulator's side (``POST /v1/responses``): its profile registry
``RESPONSES_PROFILES`` (``_profiles.py``, each profile a stream written with the event builder of ``_events.py``) and
``check_reasoning_sent_back`` (what ``reasoning-tool``'s follow-up must send back, ``_sent_back.py``),
``CLIENT_CALL_CHECKS`` (what the follow-up of a client-run call's profile must send back, ``_tool_outputs.py``) and
``CLIENT_CALL_TURNS`` (the input items of those calls and their answers, each an assistant turn), which
``pipeline.emulator``'s format record (``_formats.py``) names; its errors are OpenAI's shape, the chat format's.

The profiles are built on the emulator's shared parts, this package's parent's own private modules: ``Profile``,
``Script``, the SSE writer, the HTTP error profiles and the stream pieces every format's clean answer shares.
"""

from operators.extend import publish as _publish

from ._profiles import RESPONSES_PROFILES
from ._sent_back import check_reasoning_sent_back
from ._tool_outputs import CLIENT_CALL_CHECKS, CLIENT_CALL_TURNS

__all__ = ["CLIENT_CALL_CHECKS", "CLIENT_CALL_TURNS", "RESPONSES_PROFILES", "check_reasoning_sent_back"]

_publish(globals())  # each name's __module__ is this face (docs/architecture.md, "One path per name")
