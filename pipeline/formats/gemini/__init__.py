"""Google's Gemini request body: ``gemini_request`` (the chat-shaped conversation as a ``generateContent`` request,
``_request.py``, with a message's own parts in ``_parts.py``), which the format's ``WireFormat`` record
(``pipeline/formats/_registry.py``) names as its body builder.

Its face is ``pipeline.formats`` (``pipeline.formats.gemini_request``, its ``__module__``), which publishes it; the
builder shares the parts of ``pipeline.formats``'s own private modules (``_request_parts.py``, ``_requests.py``).
"""

from ._request import gemini_request

__all__ = ["gemini_request"]
# no publish() here: every name is published by its face, pipeline.formats (docs/architecture.md, "One path per name")
