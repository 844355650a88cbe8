"""The OpenAI Responses API, the sanitizer's side: ``ResponsesRepair`` (its stream repaired in place, decision 0036)
and ``responses_error_body`` (a failure as its HTTP error body), which ``pipeline.sanitize``'s format record reads.

``ResponsesRepair``'s face is ``pipeline.sanitize`` (``pipeline.sanitize.ResponsesRepair``, its ``__module__``); the
repairer shares the frame of ``pipeline.sanitize``'s event repairers (``_event_repair.py``, ``_sse_events.py``,
``_repair_values.py``), this package's parent's own private modules.
"""

from operators.extend import publish as _publish

from ._repair import ResponsesRepair, responses_error_body

__all__ = ["ResponsesRepair", "responses_error_body"]

_publish(globals(), ["responses_error_body"])  # ResponsesRepair is published by its face, pipeline.sanitize
