"""The rules of the chunk protocol, one reactive operator each, and the vocabulary they speak.

Every operator is a factory returning a typed ``Operator[A, B]`` (``Callable[[Observable[A]], Observable[B]]``):
compose them with ``source.pipe(parse_sse(), coalesce_identity(), ...)``. Between operators the Observable carries
``Batch[Signal]`` (one sequence per network read, decision 0008); state is created per subscription, so a pipeline
can be subscribed twice (a retry is a re-subscription). Operators never do I/O. ``pipeline.translate`` composes them
and hands out single public chunks: the place for ordinary reactivex operators.

Public faces: this module (the operators, the chunk protocol, the codes, ``RetryPolicy``, the exception root),
``operators.wire`` (the typed wire values ``parse_sse`` decodes), ``operators.extend`` (the kit for a custom
operator among the rules, and for a custom byte source), and one package per wire format other than chat
(``operators.messages``, ``operators.responses``, ``operators.gemini``: its parser, re-exported here, and its
registry record).

The operators, in the order of the default chain: ``parse_sse`` (or ``parse_stream`` for a named or detected wire
format: ``parse_messages_sse``, ``parse_responses_sse``, ``parse_gemini_sse``), ``coalesce_identity``,
``accumulate_arguments``, ``close_on_done``, ``classify_finish``, and ``retry_when_retryable`` around each attempt.
Each factory's docstring carries its rule and its marble diagram (``help(operators.coalesce_identity)``);
docs/operators.md is generated from them by ``scripts/gen_docs.py``.
"""

from ._accumulate_arguments import accumulate_arguments
from ._chunk_values import Failure, FinishKind, FinishReason, Usage
from ._chunks import (
    Anomaly,
    BlockEnd,
    BlockStart,
    BlockType,
    Chunk,
    Finish,
    ReasoningBlock,
    ReasoningDelta,
    Retry,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
    ToolCallKind,
    UsageChunk,
    chunk_from_dict,
    chunk_from_json,
)
from ._classify_finish import classify_finish
from ._close_on_done import close_on_done
from ._coalesce_identity import coalesce_identity
from ._codes import CODES, DEFAULT_RETRYABLE_CODES, Code, CodeInfo
from ._exceptions import LlmStreamError
from ._faces import publish as _publish
from ._limits import DEFAULT_LIMITS, Limits
from ._parse_format import FORMATS, Format, detect_format, parse_stream
from ._parse_sse import parse_sse
from ._retry_policy import RetryPolicy, RetryPolicyError
from ._retry_when_retryable import retry_when_retryable
from ._signals import Rule, Signal
from ._stage import Batch, Operator
from .gemini import parse_gemini_sse
from .messages import parse_messages_sse
from .responses import parse_responses_sse

__all__ = [
    "CODES",
    "DEFAULT_LIMITS",
    "DEFAULT_RETRYABLE_CODES",
    "FORMATS",
    "Anomaly",
    "Batch",
    "BlockEnd",
    "BlockStart",
    "BlockType",
    "Chunk",
    "Code",
    "CodeInfo",
    "Failure",
    "Finish",
    "FinishKind",
    "FinishReason",
    "Format",
    "Limits",
    "LlmStreamError",
    "Operator",
    "ReasoningBlock",
    "ReasoningDelta",
    "Retry",
    "RetryPolicy",
    "RetryPolicyError",
    "Rule",
    "Signal",
    "TextBlock",
    "TextDelta",
    "ToolCallBlock",
    "ToolCallDelta",
    "ToolCallKind",
    "Usage",
    "UsageChunk",
    "accumulate_arguments",
    "chunk_from_dict",
    "chunk_from_json",
    "classify_finish",
    "close_on_done",
    "coalesce_identity",
    "detect_format",
    "parse_gemini_sse",
    "parse_messages_sse",
    "parse_responses_sse",
    "parse_sse",
    "parse_stream",
    "retry_when_retryable",
]

_publish(globals())  # each name's __module__ is this face (docs/architecture.md, "One path per name")
