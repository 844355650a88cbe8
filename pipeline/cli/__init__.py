"""The ``llm-stream`` command line."""

from .._cli import main

__all__ = ["main"]
