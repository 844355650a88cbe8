"""The OpenAI Responses API stream: its parser and its record in the wire-format registry.

``parse_responses_sse`` (also ``operators.parse_responses_sse``) reads the stream into the signals ``parse_sse``
emits, so the same rules repair it; ``RESPONSES_PARSER`` is the format's record that ``operators/_parse_format.py``
lists (its name, detection, parser and fast path). Inside: ``_parse.py`` (the rule, the factory, the record),
``_stage.py`` (the parsing stage: one handler per event), ``_events.py`` (the typed events), ``_fast.py`` (its fast
path, docs/decisions/0050-fast-path.md). The format: docs/formats/responses.md; docs/decisions/0025-responses-format.md.

``responses_call_shape`` says how a raw output item (decoded JSON) is read as a call the client runs
(``ResponsesCallShape``: its kind, identity field, name and argument fields; ``_calls.py``,
docs/decisions/0072-client-run-tool-calls.md), for a reader of the raw events such as the transport's repairer.
"""

from .._faces import publish as _publish
from ._calls import ResponsesCallShape, responses_call_shape
from ._parse import RESPONSES_PARSER, parse_responses_sse

__all__ = ["RESPONSES_PARSER", "ResponsesCallShape", "parse_responses_sse", "responses_call_shape"]

_publish(globals())  # each name's __module__ is this face (docs/architecture.md, "One path per name")
