"""The Anthropic-style Messages API stream: its parser and its record in the wire-format registry.

``parse_messages_sse`` (also ``operators.parse_messages_sse``) reads the stream into the signals ``parse_sse`` emits,
so the same rules repair it; ``MESSAGES_PARSER`` is the format's record that ``operators/_parse_format.py`` lists
(its name, detection, parser and fast path). Inside: ``_parse.py`` (the rule, the factory, the record), ``_stage.py``
(the parsing stage: one handler per event), ``_events.py`` (the format's vocabulary), ``_fast.py`` (its fast path,
docs/decisions/0050-fast-path.md). The format: docs/formats/messages.md; docs/decisions/0024-messages-format.md.
"""

from .._faces import publish as _publish
from ._parse import MESSAGES_PARSER, parse_messages_sse

__all__ = ["MESSAGES_PARSER", "parse_messages_sse"]

_publish(globals())  # each name's __module__ is this face (docs/architecture.md, "One path per name")
