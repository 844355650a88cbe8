"""Each public name shows its public face, as httpx does: ``operators.TextDelta.__module__ == "operators"``.

A face (``operators``, ``operators.wire``, ``operators.extend``, and each face of ``pipeline``, which imports it as
the public ``operators.extend.publish``) ends with ``publish(globals())``: every class and function of its ``__all__``
that a private module of its package defines (``operators._chunks``, ``pipeline.compose._translate``, ...; a private
module of a format package within it too: ``pipeline.sanitize.messages._repair``) gets the face as its
``__module__``, so tracebacks, reprs, ``help()`` and pickle name the path users import. A name another face already
claimed keeps that face (docs/architecture.md, "One path per name").
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["publish"]


def publish(namespace: Mapping[str, Any], names: Iterable[str] | None = None) -> None:
    """Sets to ``namespace["__name__"]`` the ``__module__`` of each class and function among ``names`` (default
    ``__all__``) that a private module within the face's package defines (its own ``_x``, or a subpackage's
    ``sub._x``: a name no face has claimed yet)."""
    face: str = namespace["__name__"]
    package = namespace["__package__"] or face
    for name in namespace["__all__"] if names is None else names:
        value = namespace.get(name)  # a lazily imported name is published when first imported
        if isinstance(value, (type, types.FunctionType)) and _is_private_within(value.__module__, package):
            if isinstance(value, type):
                _resolve_annotations(value)
            value.__module__ = face


def _is_private_within(module: str, package: str) -> bool:
    """``module`` is a private module within ``package``: below it, with a ``_``-named part (``package._x``,
    ``package.sub._x``); a public face below it (``package.sub``) has claimed its names already."""
    prefix = f"{package}."
    return module.startswith(prefix) and any(part.startswith("_") for part in module.removeprefix(prefix).split("."))


def _resolve_annotations(cls: type) -> None:
    """The class's own annotations as the objects they name, evaluated while ``__module__`` still names the module
    that defines them: ``typing.get_type_hints``, attrs, msgspec and ``help()`` look names up in the module
    ``__module__`` names, and the face does not hold the private names a string annotation may use."""
    own = inspect.get_annotations(cls)
    if not own:
        return
    hints = typing.get_type_hints(cls, include_extras=True)
    cls.__annotations__ = {name: hints.get(name, hint) for name, hint in own.items()}
