"""A tools module found and read: what ``ToolRegistry.from_module`` (and ``llm-stream chat --tools``) loads.

A dotted name is imported; a path to a ``.py`` file is loaded under a name of its own (its stem and a digest of its
path), kept in ``sys.modules`` while it is imported. The module exposes either ``TOOLS`` (an iterable of functions,
``Tool`` and ``CustomTool`` objects) or ``registry`` (a ``ToolRegistry``), never both; ``registry_from_module`` builds
the registry from what this module checked.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from ._custom import CustomTool
from ._errors import ToolDefinitionError
from ._quote import safe_repr
from ._tool import Tool

__all__ = ["load_module", "registry_from_module", "tool_items", "tools_module"]

_R = TypeVar("_R")


def registry_from_module(cls: type[_R], module: str | ModuleType) -> _R:
    """``ToolRegistry.from_module`` (``cls``): the module's ``registry``, or a new registry of its ``TOOLS``."""
    label, loaded = tools_module(module)
    if hasattr(loaded, "registry"):
        registry = loaded.registry
        if not isinstance(registry, cls):
            raise ToolDefinitionError(f"{label}: registry is a {type(registry).__name__}, expected a ToolRegistry")
        return registry
    built = cls()
    adder: Any = built
    for index, item in enumerate(tool_items(label, loaded.TOOLS)):
        try:
            if isinstance(item, Tool | CustomTool):
                adder.add(item)
            elif callable(item):
                adder.register(item)
            else:
                raise ToolDefinitionError(
                    f"{safe_repr(item)} is a {type(item).__name__}, expected a function, a Tool or a CustomTool"
                )
        except (TypeError, ValueError) as exc:
            raise ToolDefinitionError(f"{label}: TOOLS[{index}]: {exc}") from exc
    return built


def tools_module(module: str | ModuleType) -> tuple[str, ModuleType]:
    """The module (loaded when given by name or path) and its label for messages. A ``ToolDefinitionError`` when it
    defines both ``TOOLS`` and ``registry``, or neither."""
    loaded = module if isinstance(module, ModuleType) else load_module(module)
    label = f"tool module {loaded.__name__!r}" if isinstance(module, ModuleType) else f"tool module {module!r}"
    has_tools, has_registry = hasattr(loaded, "TOOLS"), hasattr(loaded, "registry")
    if has_tools and has_registry:
        raise ToolDefinitionError(f"{label} defines both TOOLS and registry: keep one of them")
    if not has_tools and not has_registry:
        raise ToolDefinitionError(
            f"{label} exposes no tools: define TOOLS (a list of functions or Tool objects) "
            "or registry (a ToolRegistry)"
        )
    return label, loaded


def tool_items(label: str, items: object) -> Iterable[object]:
    """A module's ``TOOLS``: an iterable that is not a string, bytes or a mapping, else a ``ToolDefinitionError``."""
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
        raise ToolDefinitionError(
            f"{label}: TOOLS is a {type(items).__name__}, expected a list of functions or Tool objects"
        )
    return items


def load_module(spec: str) -> ModuleType:
    """A dotted name imported, or a ``.py`` file loaded; a ``ToolDefinitionError`` when there is no such module."""
    if spec.endswith(".py") or "/" in spec or "\\" in spec:
        path = Path(spec).expanduser().resolve()
        if not path.is_file():
            raise ToolDefinitionError(f"tool module {spec!r}: no such file")
        digest = hashlib.sha256(str(path).encode("utf-8", "surrogatepass")).hexdigest()[:12]
        name = f"_llm_tools_{re.sub(r'[^0-9A-Za-z_]', '_', path.stem)}_{digest}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise ToolDefinitionError(f"tool module {spec!r}: cannot be loaded as a Python module")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module  # dataclasses and string annotations look their module up here
        try:
            module_spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module
    try:
        return importlib.import_module(spec)
    except ModuleNotFoundError as exc:
        if exc.name and (spec == exc.name or spec.startswith(f"{exc.name}.")):
            raise ToolDefinitionError(f"tool module {spec!r} cannot be imported: {exc}") from exc
        raise  # the module exists but one of its own imports is missing: that error is the useful one
