"""The Anthropic Messages API, the emulator's side (``POST /v1/messages``): its profile registry
``MESSAGES_PROFILES`` (``_profiles.py``, each profile a stream written with the event builder of ``_events.py``),
``messages_error_shape`` (a refused request in the API's error shape) and ``check_thinking_sent_back`` (what
``thinking-tool``'s follow-up must send back, ``_sent_back.py``); ``pipeline.emulator``'s format record
(``_formats.py``) names all three.

The profiles are built on the emulator's shared parts, this package's parent's own private modules: ``Profile``,
``Script``, the SSE writer and the stream pieces every format's clean answer shares.
"""

from operators.extend import publish as _publish

from ._events import messages_error_shape
from ._profiles import MESSAGES_PROFILES
from ._sent_back import check_thinking_sent_back

__all__ = ["MESSAGES_PROFILES", "check_thinking_sent_back", "messages_error_shape"]

_publish(globals())  # each name's __module__ is this face (docs/architecture.md, "One path per name")
