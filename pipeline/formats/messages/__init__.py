"""The Anthropic Messages API's request body: ``messages_request`` (the chat-shaped conversation as a Messages
request, ``_request.py``) and ``DEFAULT_MAX_TOKENS``, which its ``WireFormat`` record (``pipeline/formats/
_registry.py``) names as the format's body builder.

Their face is ``pipeline.formats`` (``pipeline.formats.messages_request``, its ``__module__``), which publishes them;
the builder shares the parts of ``pipeline.formats``'s own private modules (``_request_parts.py``, ``_requests.py``).
"""

from ._request import DEFAULT_MAX_TOKENS, messages_request

__all__ = ["DEFAULT_MAX_TOKENS", "messages_request"]
# no publish() here: every name is published by its face, pipeline.formats (docs/architecture.md, "One path per name")
