"""The ``llm-stream`` command line (``main``), its commands and the terminal renderer."""

from ._demo import naive_assemble
from ._main import main

__all__ = ["main", "naive_assemble"]
