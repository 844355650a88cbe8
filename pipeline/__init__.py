"""The composition of the operators, the facades, and the I/O: sources, assembler, CLI.

    from pipeline import translate, stream, assemble

    chunks = pipeline.collect(Path("response.sse"))          # synchronous
    async for chunk in pipeline.stream(response.aiter_bytes()):  # asynchronous, paced by the caller
        ...
    message = pipeline.assemble(chunks)
"""

from ._assemble import Assembler, AssistantMessage, assemble, assemble_async
from ._translate import (
    ByteSource,
    bytes_source,
    collect,
    protocol_operators,
    stream,
    to_chunks,
    translate,
    translate_batches,
)

__all__ = [
    "Assembler",
    "AssistantMessage",
    "ByteSource",
    "assemble",
    "assemble_async",
    "bytes_source",
    "collect",
    "protocol_operators",
    "stream",
    "to_chunks",
    "translate",
    "translate_batches",
]
