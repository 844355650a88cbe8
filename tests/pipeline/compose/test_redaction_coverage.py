"""Every string field of every chunk class is redacted: the classes' ``attrs`` fields are enumerated (nested values,
each member of the block union included), each string field is filled with the key, and nothing that comes out of
``redact_key`` carries it. A field added later is filled and checked the same way; a field of a type this builder
does not know fails the test rather than escaping it. docs/decisions/0040-redaction-coverage.md.
"""

from __future__ import annotations

import itertools
import json
import types
import typing
from typing import Any, Literal

import attrs
import pytest
import reactivex as rx
from leaky_gateway import KEY

from operators import Chunk, FinishReason
from operators.extend import CHUNK_TYPES
from pipeline.compose import redact_key

SECRET_TEXT = f"before {KEY} after"


def _variants(annotation: Any, seen: set[tuple[str, str]], owner: str, name: str) -> list[Any]:
    """Every value to try for a field of this type: the key in each string, each member of a union of classes."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return [value for member in members for value in _variants(member, seen, owner, name)]
    if origin is Literal:
        return [typing.get_args(annotation)[0]]
    if annotation is str:
        seen.add((owner, name))
        return [SECRET_TEXT]
    if annotation in (int, float, bool):
        return [1]
    if annotation is FinishReason:  # its kind decides whether a failure is carried: the failing kind carries one
        failures = _instances(typing.get_type_hints(FinishReason)["failure"], seen)
        return [FinishReason("error", failure) for failure in failures if failure is not None]
    if attrs.has(annotation):
        return _instances(annotation, seen)
    raise AssertionError(f"{owner}.{name}: a field of type {annotation!r} this test cannot fill; teach it")


def _instances(cls: Any, seen: set[tuple[str, str]]) -> list[Any]:
    if typing.get_origin(cls) in (typing.Union, types.UnionType):
        members = [arg for arg in typing.get_args(cls) if arg is not type(None)]
        return [value for member in members for value in _instances(member, seen)]
    hints = typing.get_type_hints(cls)
    fields = attrs.fields(cls)
    choices = [_variants(hints[field.name], seen, cls.__name__, field.name) for field in fields]
    return [cls(**dict(zip([f.name for f in fields], values, strict=True))) for values in itertools.product(*choices)]


def _all_chunks() -> tuple[list[Chunk], set[tuple[str, str]]]:
    seen: set[tuple[str, str]] = set()
    chunks = [chunk for cls in CHUNK_TYPES for chunk in _instances(cls, seen)]
    return chunks, seen


def _redacted(chunk: Chunk) -> list[Chunk]:
    out: list[Chunk] = []
    redact_key(KEY)(rx.of(chunk)).subscribe(on_next=out.append)
    return out


def test_every_string_field_of_every_chunk_class_is_filled_with_the_key() -> None:
    chunks, seen = _all_chunks()

    assert {type(chunk) for chunk in chunks} == set(CHUNK_TYPES)
    assert {("ReasoningBlock", "signature"), ("ReasoningBlock", "encrypted"), ("ReasoningBlock", "item_id")} <= seen
    assert all(KEY in repr(chunk) for chunk in chunks if any(owner == type(chunk).__name__ for owner, _ in seen))


@pytest.mark.parametrize("chunk", _all_chunks()[0], ids=lambda chunk: repr(chunk)[:60])
def test_no_string_field_of_any_chunk_carries_the_key_out_of_redact_key(chunk: Chunk) -> None:
    out = _redacted(chunk)

    assert out, "a chunk was swallowed"
    for item in out:
        assert KEY not in repr(item)
        assert KEY not in json.dumps(item.to_dict())
        assert KEY.upper() not in repr(item).upper()
