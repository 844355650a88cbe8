"""The Anthropic Messages API, the emulator's side (``POST /v1/messages``): its profile registry
``MESSAGES_PROFILES`` (``_profiles.py``, each profile a stream written with the event builder of ``_events.py``) and
``anthropic_error``, the API's error shape; ``pipeline.emulator``'s format record (``_formats.py``) reads both.

The profiles are built on the emulator's shared parts, this package's parent's own private modules: ``Profile``,
``Script``, the SSE writer and the stream pieces every format's clean answer shares.
"""

from operators.extend import publish as _publish

from ._events import anthropic_error
from ._profiles import MESSAGES_PROFILES

__all__ = ["MESSAGES_PROFILES", "anthropic_error"]

_publish(globals())  # each name's __module__ is this face (docs/architecture.md, "One path per name")
