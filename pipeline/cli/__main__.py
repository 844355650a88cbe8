"""``python -m pipeline.cli``: the same as ``llm-stream``."""

from ._main import main

raise SystemExit(main())
