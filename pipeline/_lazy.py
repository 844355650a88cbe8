"""A face's names that need an optional extra, imported on their first use (``pipeline.emulator``'s server names,
``pipeline.proxy``'s): one loader, so both faces say the same thing when the extra is missing."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from operators.extend import publish

__all__ = ["load_serving_name"]


def load_serving_name(face: dict[str, Any], name: str, serving: Mapping[str, str], extra: frozenset[str],
                      needs: str, install: str) -> object:
    """``name`` of the face whose ``globals()`` is ``face``, imported from its private module in ``serving`` and
    kept (and published) there; ``AttributeError`` for a name not in ``serving``. When a package of the extra
    (``extra``: top-level module names) is missing, an ``ImportError`` says what the name ``needs`` and how to
    ``install`` it."""
    module_name = serving.get(name)
    if module_name is None:
        raise AttributeError(f"module {face['__name__']!r} has no attribute {name!r}")
    try:
        module = importlib.import_module(module_name, face["__name__"])
    except ImportError as exc:
        if (exc.name or "").partition(".")[0] not in extra:
            raise
        raise ImportError(f"{face['__name__']}.{name} {needs}, which are not installed ({exc}). {install}",
                          name=exc.name) from exc
    value = getattr(module, name)
    face[name] = value
    publish(face, [name])
    return value

