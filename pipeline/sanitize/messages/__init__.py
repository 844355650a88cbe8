"""The Anthropic Messages API, the sanitizer's side: ``MessagesRepair`` (its stream repaired in place, decision 0036)
and ``messages_error_body`` (a failure as its HTTP error body), which ``pipeline.sanitize``'s format record reads.

``MessagesRepair``'s face is ``pipeline.sanitize`` (``pipeline.sanitize.MessagesRepair``, its ``__module__``); the
repairer shares the frame of ``pipeline.sanitize``'s event repairers (``_event_repair.py``, ``_sse_events.py``,
``_repair_values.py``), this package's parent's own private modules.
"""

from operators.extend import publish as _publish

from ._repair import MessagesRepair, messages_error_body

__all__ = ["MessagesRepair", "messages_error_body"]

_publish(globals(), ["messages_error_body"])  # MessagesRepair is published by its face, pipeline.sanitize
