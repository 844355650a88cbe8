"""Google's Gemini format (``streamGenerateContent?alt=sse``, the Gemini API and Vertex AI), the sanitizer's side:
``GeminiRepair`` (its stream repaired in place, decision 0071), ``gemini_error_body`` (a failure as Google's HTTP
error body) and ``gemini_error_status`` (its HTTP status, one the google-genai SDK's retry options retry exactly when
``x-should-retry`` says so), which ``pipeline.sanitize``'s format record reads.

``GeminiRepair``'s face is ``pipeline.sanitize`` (``pipeline.sanitize.GeminiRepair``, its ``__module__``); the
repairer shares the frame of ``pipeline.sanitize``'s event repairers (``_event_repair.py``, ``_sse_events.py``,
``_repair_values.py``), this package's parent's own private modules.
"""

from operators.extend import publish as _publish

from ._errors import gemini_error_body, gemini_error_status
from ._repair import GeminiRepair

__all__ = ["GeminiRepair", "gemini_error_body", "gemini_error_status"]

_publish(globals(), ["gemini_error_body", "gemini_error_status"])  # GeminiRepair is published by pipeline.sanitize
