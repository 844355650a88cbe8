"""The rules of the chunk protocol, one reactive operator each, and the vocabulary they speak.

Every operator is a factory returning a typed ``Operator[A, B]`` (``Callable[[Observable[A]], Observable[B]]``):
compose them with ``source.pipe(parse_sse(), coalesce_identity(), ...)``. Between operators the Observable carries
``Batch[Signal]`` (one sequence per network read, decision 0008); state is created per subscription, so a pipeline
can be subscribed twice (a retry is a re-subscription). Operators never do I/O. ``pipeline.translate`` composes them
and hands out single public chunks: the place for ordinary reactivex operators.

Three public faces: this module (the operators, the chunk protocol, the codes, ``RetryPolicy``, the exception root),
``operators.wire`` (the typed wire values ``parse_sse`` decodes) and ``operators.extend`` (the kit for a custom
operator among the rules, and for a custom byte source).

parse_sse()
    Bytes split anywhere to typed wire values; ``[DONE]`` to ``Done``; malformed, in-band errors and a cut stream to
    ``Halt``::

        bytes: --"data: {c}\\n\\nda"--"ta: [DONE]\\n\\n"--|
        out:   --[c]-------------------[Done]|

coalesce_identity()
    Which block each fragment belongs to, and each tool call's identity. ``id``/``name`` are accepted only as
    non-empty strings and never concatenated::

        in:   --[call0 id=a name=Glob args='']--[call0 id='' name=null args='{}']--|
        out:  --[start 0 tool-call, frag 0 a/Glob '']--[frag 0 a/Glob '{}']------|

accumulate_arguments()
    Arguments fragments concatenate per call; ``null`` adds nothing::

        in:   --[frag '{"a"', frag null]--[frag ':1}', Done]--|
        out:  --[delta '{"a"', delta '']--[delta ':1}', state '{"a":1}', Done]--|

close_on_done()
    Block-ends, usage and the finish wait for ``Done``; an unidentified call is refused with ``MALFORMED_TOOL_CALL``
    after the usage, and no block-end is emitted::

        in:   --[start 0, delta]--[usage]--[Done]--|
        out:  --[start 0, delta]--[]-------[end 0, usage, pending finish]|
        in:   --[start 0 tool-call, delta id='' name=None]--[usage]--[Done]--|
        out:  --[start 0 tool-call, delta]-------------------[]------[usage, finish error MALFORMED_TOOL_CALL]|

classify_finish()
    The wire ``finish_reason`` to a FinishReason; a stop without any block is ``EMPTY_RESPONSE``::

        in:   --[usage, pending 'stop']--|     (no block opened)
        out:  --[usage, finish error EMPTY_RESPONSE]|

retry_when_retryable(policy)
    Re-subscribes after a retryable error finish, passing the attempt's usage on and emitting ``retry`` instead of
    the finish::

        attempt 1: --[usage, finish error MALFORMED_TOOL_CALL]|
        attempt 2:                                  --[start, delta, end, usage, finish stop]|
        out:       --[usage, retry 1]----(delay)----[start, delta, end, usage, finish stop]|
"""

from ._accumulate_arguments import accumulate_arguments
from ._chunks import (
    Anomaly,
    BlockEnd,
    BlockStart,
    BlockType,
    Chunk,
    Failure,
    Finish,
    FinishKind,
    FinishReason,
    ReasoningBlock,
    ReasoningDelta,
    Retry,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
    Usage,
    UsageChunk,
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
from ._parse_messages import parse_messages_sse
from ._parse_responses import parse_responses_sse
from ._parse_sse import parse_sse
from ._retry_policy import RetryPolicy, RetryPolicyError
from ._retry_when_retryable import retry_when_retryable
from ._signals import Rule, Signal
from ._stage import Batch, Operator

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
    "Usage",
    "UsageChunk",
    "accumulate_arguments",
    "chunk_from_json",
    "classify_finish",
    "close_on_done",
    "coalesce_identity",
    "detect_format",
    "parse_messages_sse",
    "parse_responses_sse",
    "parse_sse",
    "parse_stream",
    "retry_when_retryable",
]

_publish(globals())  # each name's __module__ is this face (docs/architecture.md, "One path per name")
