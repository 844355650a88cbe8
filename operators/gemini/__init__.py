"""Google's Gemini stream (``streamGenerateContent?alt=sse``, Gemini API and Vertex AI): its parser and its record in
the wire-format registry.

``parse_gemini_sse`` (also ``operators.parse_gemini_sse``) reads the stream into the signals ``parse_sse`` emits, so
the same rules repair it; ``GEMINI_PARSER`` is the format's record that ``operators/_parse_format.py`` lists (its
name, detection, parser, fast path). Inside: ``_parse.py`` (the rule, the factory, the record, detection's payload
predicate), ``_stage.py`` (the parsing stage), ``_fast.py`` (the default chain's fast path, decision 0050),
``_calls.py`` (a function call's identity, signature and arguments, Vertex's streamed ones included), ``_events.py``
(the format's typed vocabulary). The format: docs/formats/gemini.md; docs/decisions/0071-gemini-format.md.
"""

from .._faces import publish as _publish
from ._parse import GEMINI_PARSER, parse_gemini_sse

__all__ = ["GEMINI_PARSER", "parse_gemini_sse"]

_publish(globals())  # each name's __module__ is this face (docs/architecture.md, "One path per name")
