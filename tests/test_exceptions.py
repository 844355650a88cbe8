"""One exception root: every exception class defined in operators or pipeline derives from LlmStreamError."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import warnings

import pytest

import operators
import pipeline
from operators import LlmStreamError


def _modules() -> list[str]:
    names = []
    for package in (operators, pipeline):
        names.append(package.__name__)
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
            if not info.name.endswith(".__main__"):  # running it is the CLI, not a definition
                names.append(info.name)
    return names


def _exception_classes() -> list[type[BaseException]]:
    found: list[type[BaseException]] = []
    for name in _modules():
        try:
            module = importlib.import_module(name)
        except ImportError:  # an optional extra that is not installed
            continue
        for _, value in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(value, BaseException)
                and not issubclass(value, Warning)
                and value.__module__ == module.__name__
            ):
                found.append(value)
    return found


def test_the_library_defines_exception_classes() -> None:
    assert len(_exception_classes()) >= 5


@pytest.mark.parametrize("cls", _exception_classes(), ids=lambda cls: f"{cls.__module__}.{cls.__qualname__}")
def test_every_exception_class_derives_from_the_root(cls: type[BaseException]) -> None:
    assert issubclass(cls, LlmStreamError), f"{cls.__module__}.{cls.__qualname__} does not derive from LlmStreamError"


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (operators.RetryPolicyError, ValueError),
        (pipeline.ConfigError, ValueError),
        (pipeline.ToolDefinitionError, TypeError),
        (pipeline.ToolDefinitionError, ValueError),
        (pipeline.ToolKindError, ValueError),
    ],
)
def test_the_root_keeps_the_builtin_bases_callers_catch(cls: type[BaseException], builtin: type[BaseException]) -> None:
    assert issubclass(cls, LlmStreamError)
    assert issubclass(cls, builtin)


def test_every_exported_exception_of_pipeline_derives_from_the_root() -> None:
    exported = [getattr(pipeline, name) for name in pipeline.__all__]
    errors = [value for value in exported if isinstance(value, type) and issubclass(value, BaseException)]
    assert errors
    for value in errors:
        if issubclass(value, Warning):
            continue
        assert issubclass(value, LlmStreamError), value


def test_star_import_of_pipeline_works() -> None:
    namespace: dict[str, object] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec("from pipeline import *", namespace)
    assert "translate" in namespace
    assert "LlmStreamError" in namespace
