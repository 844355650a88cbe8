"""The ``llm-stream`` command line (``main``), its commands and the terminal renderer."""

from operators.extend import publish as _publish

from ._main import main

__all__ = ["main"]

_publish(globals())  # each name's __module__ is this face (docs/architecture.md, "One path per name")
