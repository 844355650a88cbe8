"""The composition: byte sources, the rule chain, and the facades translate, collect, stream and assemble."""

from operators.extend import publish as _publish

from ._assemble import Assembler, AssistantMessage, assemble, assemble_async
from ._examples import example_path
from ._redact import redact_key
from ._sources import READ_SIZE, ByteSource, bytes_source
from ._stream import stream
from ._translate import apply, collect, protocol_rules, to_chunks, translate, translate_batches

__all__ = [
    "READ_SIZE",
    "Assembler",
    "AssistantMessage",
    "ByteSource",
    "apply",
    "assemble",
    "assemble_async",
    "bytes_source",
    "collect",
    "example_path",
    "protocol_rules",
    "redact_key",
    "stream",
    "to_chunks",
    "translate",
    "translate_batches",
]

_publish(globals())  # each name's __module__ is this face (docs/architecture.md, "One path per name")
