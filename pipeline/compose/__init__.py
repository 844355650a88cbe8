"""The composition: byte sources, the rule chain, and the facades translate, collect, stream and assemble."""

from .._assemble import Assembler, AssistantMessage, assemble, assemble_async
from .._examples import example_path
from .._translate import (
    READ_SIZE,
    ByteSource,
    apply,
    bytes_source,
    collect,
    protocol_operators,
    stream,
    to_chunks,
    translate,
    translate_batches,
)

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
    "protocol_operators",
    "stream",
    "to_chunks",
    "translate",
    "translate_batches",
]
