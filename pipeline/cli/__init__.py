"""The ``llm-stream`` command line (``main``), its commands and the terminal renderer."""

from ._main import main

__all__ = ["main"]

main.__module__ = __name__  # its public face (docs/architecture.md, "One path per name"), set here: the CLI imports
# no private module outside itself (tests/pipeline/cli/test_cli_layout.py), so not pipeline._faces.publish
