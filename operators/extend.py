"""The kit for extending the rule chain itself, and for writing a byte source.

Most extensions belong *after* the rules, on the public chunk stream: ``pipeline.translate(src)`` is an
``Observable[Chunk]``, one chunk per ``on_next``, and any ordinary reactivex operator composes there
(``ops.filter``, ``ops.map``, ``ops.take_while``, ``rx.defer`` for state). Reach for this module only to place an
operator *among* the rules, where the Observable carries ``Batch[Signal]`` (decision 0008):

- ``map_items`` / ``filter_items`` lift an item function to a batch operator;
- ``Stage`` / ``BaseStage`` / ``stage_operator`` build a stateful rule (fresh state per subscription, exceptions
  contained, the items appended before a failure still emitted);
- ``default_rules(limits)`` are the default rules (``pipeline.protocol_rules``); ``default_chain(format, limits)`` is
  the format's parser and those rules as one operator, with a fast path (docs/decisions/0050-fast-path.md): what
  ``pipeline.translate`` runs when no ``rules=`` is given (its ``FusedChain`` gives ``pipeline.to_chunks`` the chunks
  straight from its reads, ``ChunkEnds`` being ``to_chunks``' ends);
- the signals (``Done``, ``Halt``, ``ToolFragment``, ...) are what travels between the rules besides the chunks
  (``Signal`` is their union; ``Rule`` the type of a rule operator). Pass on what you do not understand.

A package's public face (an ``__init__`` with ``__all__`` over private ``_x`` modules) ends with
``publish(globals())``: each class and function of its ``__all__`` that one of its private modules defines reports the
face as its ``__module__``, so tracebacks, reprs, ``help()`` and pickle name the path users import
(docs/architecture.md, "One path per name"); ``pipeline``'s faces use it.

A byte source (a custom transport) raises ``StreamFailure(failure)`` through ``on_error`` to end the response with a
classified error finish; ``classify_http_error``, ``parse_retry_after``, ``retry_after_from`` and
``request_id_from`` classify an HTTP error; ``foreign_format`` / ``format_mismatch`` name a payload of another wire
format than the one read (decision 0045).
"""

from ._block_texts import BlockTexts
from ._chain import default_rules
from ._chunks import CHUNK_TYPES
from ._faces import publish
from ._format_mismatch import foreign_format, format_mismatch
from ._fused import ChunkEnds, FusedChain, default_chain
from ._items import filter_items, map_items
from ._limits import limit_exceeded
from ._provider_errors import OWN_ERROR_TYPE, classify_http_error, classify_inband_error
from ._provider_headers import parse_retry_after, request_id_from, retry_after_from
from ._signals import (
    Done,
    FinishSeen,
    Halt,
    PendingFinish,
    ReasoningEnd,
    ReasoningSeal,
    RefusalSeen,
    Rule,
    Signal,
    StreamFailure,
    ToolCallSignature,
    ToolCallState,
    ToolFragment,
    UsageSeen,
)
from ._stage import BaseStage, Batch, Operator, Stage, stage_operator, subscribing_stages

__all__ = [
    "CHUNK_TYPES",
    "OWN_ERROR_TYPE",
    "BaseStage",
    "Batch",
    "BlockTexts",
    "ChunkEnds",
    "Done",
    "FinishSeen",
    "FusedChain",
    "Halt",
    "Operator",
    "PendingFinish",
    "ReasoningEnd",
    "ReasoningSeal",
    "RefusalSeen",
    "Rule",
    "Signal",
    "Stage",
    "StreamFailure",
    "ToolCallSignature",
    "ToolCallState",
    "ToolFragment",
    "UsageSeen",
    "classify_http_error",
    "classify_inband_error",
    "default_chain",
    "default_rules",
    "filter_items",
    "foreign_format",
    "format_mismatch",
    "limit_exceeded",
    "map_items",
    "parse_retry_after",
    "publish",
    "request_id_from",
    "retry_after_from",
    "stage_operator",
    "subscribing_stages",
]

publish(globals())  # each name's __module__ is this face (docs/architecture.md, "One path per name")
