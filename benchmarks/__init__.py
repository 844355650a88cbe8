"""Benchmarks of llm-stream-pipeline: ``python -m benchmarks.run`` (see README.md)."""
