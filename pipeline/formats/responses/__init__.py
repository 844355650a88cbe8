"""The OpenAI Responses API's request body: ``responses_request`` (the chat-shaped conversation as a Responses
request, ``_request.py``), which its ``WireFormat`` record (``pipeline/formats/_registry.py``) names as the format's
body builder.

Its face is ``pipeline.formats`` (``pipeline.formats.responses_request``, its ``__module__``), which publishes it;
the builder shares the parts of ``pipeline.formats``'s own private modules (``_request_parts.py``, ``_requests.py``).
"""

from ._request import responses_request

__all__ = ["responses_request"]
# no publish() here: every name is published by its face, pipeline.formats (docs/architecture.md, "One path per name")
