"""Wire formats, the pipeline side: one ``WireFormat`` record per format (the request it sends: path template,
headers, key header, body builder, how it asks to stream), keyed by the parsers' names (``operators.FORMATS``), the
lookups over them (``WIRE_REGISTRY``), and the request builders with their ``RequestOptions``.

    WIRE_FORMATS["messages"].path                       # "/messages"
    messages_request(history, model="m", options=RequestOptions(max_tokens=512))
    gemini_request(history, model="m", options=RequestOptions(max_tokens=512))   # Gemini's generateContent body

``ChatClient(api=...)``, the emulator, the CLI, the sanitizing transport and the proxy read the records
(docs/architecture.md, "Adding a wire format").
"""

from operators.extend import publish as _publish

from ._addressing import StreamTest, body_says_stream, url_says_stream
from ._errors import ToolKindError
from ._lookup import WIRE_REGISTRY, WireRegistry
from ._options import RequestOptions
from ._registry import ANTHROPIC_VERSION, APIS, WIRE_FORMATS, Api, WireFormat, wire_format
from ._requests import chat_request
from .gemini import gemini_request
from .messages import DEFAULT_MAX_TOKENS, messages_request
from .responses import responses_request

__all__ = [
    "ANTHROPIC_VERSION",
    "APIS",
    "DEFAULT_MAX_TOKENS",
    "WIRE_FORMATS",
    "WIRE_REGISTRY",
    "Api",
    "RequestOptions",
    "StreamTest",
    "ToolKindError",
    "WireFormat",
    "WireRegistry",
    "body_says_stream",
    "chat_request",
    "gemini_request",
    "messages_request",
    "responses_request",
    "url_says_stream",
    "wire_format",
]

_publish(globals())  # each name's __module__ is this face (docs/architecture.md, "One path per name")
