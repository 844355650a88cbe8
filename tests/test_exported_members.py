"""One path per name: every public class and function shows its public face, as httpx does.

Modelled on httpx's ``tests/test_exported_members.py`` (a face's ``__all__`` is exactly what it holds), plus what
``__module__`` promises (docs/architecture.md, "One path per name"):

- each class and function a face exports has a public face as its ``__module__``, and that face holds it under its
  ``__qualname__`` (so pickle, ``help()`` and tracebacks name a path a user can import);
- a class or function is exported by one face only, except that ``pipeline`` re-exports what an application meets
  (its canonical face is then a subpackage or ``operators``), ``operators.extend`` re-exports the four types an
  extension's signatures use (``Batch``, ``Operator``, ``Rule``, ``Signal``), ``operators`` re-exports each wire
  format package's parser (``operators.parse_messages_sse`` is ``operators.messages.parse_messages_sse``), and a
  pipeline format package's face (``pipeline.sanitize.messages``: a subpackage named after a wire format) holds what
  its parent face exports of it (``MessagesRepair``, whose face is ``pipeline.sanitize``);
- the values keep working under their public name: pickle round-trips attrs values, enums, exceptions and msgspec
  structs; ``typing.get_type_hints`` and ``help()`` resolve every class; a fresh msgspec decoder decodes a struct.
"""

from __future__ import annotations

import importlib
import itertools
import pickle
import pkgutil
import pydoc
import sys
import types
import typing
from collections.abc import Iterator

import msgspec
import pytest

import operators
import pipeline
import pipeline.formats
from operators.wire import WireChunk


def _faces() -> tuple[str, ...]:
    """Every public module of the two packages: the packages, and each submodule without a ``_`` in its path."""
    names = []
    for package in (operators, pipeline):
        names.append(package.__name__)
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                names.append(info.name)
    return tuple(names)


FACES = _faces()
FORMAT_FACES = frozenset(
    name for name in FACES
    if name.startswith("pipeline.") and name.rpartition(".")[2] in operators.FORMATS
)
"""The faces of the pipeline's format packages (``pipeline.sanitize.messages``, ...): internal faces over one format's
modules, which hold what their parent face reads of the format (``operators.messages`` is a canonical face instead)."""
EXTEND_TYPES = frozenset({"Batch", "Operator", "Rule", "Signal"})  # operators' types, re-exported by extend
FORMAT_PACKAGES = frozenset(  # one per wire format but chat
    {"operators.messages", "operators.responses", "operators.gemini"}
)
FORMAT_PARSERS = frozenset(  # their parsers, re-exported by operators
    {"parse_messages_sse", "parse_responses_sse", "parse_gemini_sse"}
)
LIBRARY = frozenset({"operators", "pipeline"})  # operators.wire.DecodeError is msgspec's own
NOT_MEMBERS = frozenset({"annotations", "TYPE_CHECKING"})  # from __future__ / typing, in the lazily importing faces


def format_faces_of(parent: str) -> frozenset[str]:
    """The faces of ``parent``'s format packages: ``pipeline.sanitize`` -> ``pipeline.sanitize.messages``, ..."""
    return frozenset(name for name in FORMAT_FACES if name.rpartition(".")[0] == parent)


def face(name: str) -> types.ModuleType:
    return importlib.import_module(name)


def exported(face_name: str) -> Iterator[tuple[str, object]]:
    module = face(face_name)
    for name in module.__all__:
        yield name, getattr(module, name)


def classes_and_functions() -> list[tuple[str, str, object]]:
    return [
        (face_name, name, value)
        for face_name in FACES
        for name, value in exported(face_name)
        if isinstance(value, (type, types.FunctionType)) and value.__module__.partition(".")[0] in LIBRARY
    ]


def test_the_faces_are_the_documented_ones() -> None:
    assert set(FACES) == {
        "operators", "operators.wire", "operators.extend", "operators.messages", "operators.responses",
        "operators.gemini",
        "pipeline", "pipeline.agent", "pipeline.cli", "pipeline.client", "pipeline.compose", "pipeline.emulator",
        "pipeline.formats", "pipeline.proxy", "pipeline.sanitize", "pipeline.session",
        "pipeline.emulator.gemini", "pipeline.emulator.messages", "pipeline.emulator.responses",
        "pipeline.formats.gemini", "pipeline.formats.messages", "pipeline.formats.responses",
        "pipeline.sanitize.gemini", "pipeline.sanitize.messages", "pipeline.sanitize.responses",
    }


@pytest.mark.parametrize("face_name", FACES)
def test_all_imports_are_exported(face_name: str) -> None:
    module = face(face_name)
    members = {
        member
        for member, value in vars(module).items()
        if not member.startswith("_") and not isinstance(value, types.ModuleType) and member not in NOT_MEMBERS
    }
    lazy = set(module.__all__) - members
    for name in lazy:  # imported on first use (the emulator and proxy servers need the "emulator" extra)
        getattr(module, name)

    assert set(module.__all__) == members | lazy
    assert len(module.__all__) == len(set(module.__all__))


def _param_id(value: object) -> str:
    """A face, a name, or the kind of the value: no address in an id (pytest-xdist's workers must agree on them)."""
    return value if isinstance(value, str) else type(value).__name__


@pytest.mark.parametrize(("face_name", "name", "value"), classes_and_functions(), ids=_param_id)
def test_each_class_and_function_names_a_public_face_that_holds_it(face_name: str, name: str, value: object) -> None:
    module_name = getattr(value, "__module__")  # noqa: B009 (the value is a class or a function)
    qualname = getattr(value, "__qualname__")  # noqa: B009

    assert module_name in FACES, f"{face_name}.{name}.__module__ is {module_name!r}, not a public face"
    assert getattr(sys.modules[module_name], qualname) is value


def test_each_class_and_function_has_one_face() -> None:
    faces_of: dict[int, set[str]] = {}
    for face_name, _, value in classes_and_functions():
        faces_of.setdefault(id(value), set()).add(face_name)
    for face_name, name, value in classes_and_functions():
        canonical = getattr(value, "__module__")  # noqa: B009 (the value is a class or a function)
        others = faces_of[id(value)] - {canonical, "pipeline"} - format_faces_of(canonical)
        if canonical in FORMAT_PACKAGES and name in FORMAT_PARSERS:
            others -= {"operators"}  # the parser of a wire format, re-exported where it always was
        assert not others, f"{canonical}.{name} is also exported by {sorted(others)}"
        if face_name == "pipeline":
            assert canonical != "pipeline", f"pipeline.{name} is a re-export: its face is a subpackage or operators"


def test_no_name_is_in_two_faces_but_pipeline_and_the_extension_types() -> None:
    for first, second in itertools.combinations([name for name in FACES if name != "pipeline"], 2):
        shared = set(face(first).__all__) & set(face(second).__all__)
        allowed = EXTEND_TYPES if {first, second} == {"operators", "operators.extend"} else frozenset()
        if first == "operators" and second in FORMAT_PACKAGES:
            allowed = FORMAT_PARSERS
        for parent, package in ((first, second), (second, first)):
            if package in format_faces_of(parent):
                allowed = frozenset(face(package).__all__)  # what the parent face exports of its format package
        assert shared <= allowed, f"{first} and {second} both export {sorted(shared - allowed)}"


def test_pipeline_re_exports_the_application_names_from_their_faces() -> None:
    for name in pipeline.__all__:
        value = getattr(pipeline, name)
        canonical = [other for other in FACES if other != "pipeline" and name in face(other).__all__]
        assert canonical, f"pipeline.{name} is exported by no other face"
        assert all(getattr(face(other), name) is value for other in canonical)


@pytest.mark.parametrize(
    "value",
    [
        operators.TextDelta(0, "hé"),
        operators.Code.TIMEOUT,
        operators.Finish(operators.FinishReason("stop")),
        operators.RetryPolicy(max_retries=2),
        pipeline.ConfigError("no model"),
        pipeline.formats.RequestOptions(max_tokens=5, stop=["END"]),
        msgspec.json.decode(b'{"id": "c", "choices": []}', type=WireChunk),
    ],
    ids=lambda v: type(v).__name__,
)
def test_values_round_trip_through_pickle_under_their_public_name(value: object) -> None:
    data = pickle.dumps(value)

    assert f"{type(value).__module__}".encode() in data
    again = pickle.loads(data)
    assert type(again) is type(value)
    assert repr(again) == repr(value)


@pytest.mark.parametrize(("face_name", "name", "value"), classes_and_functions(), ids=_param_id)
def test_help_renders_every_class_and_function(face_name: str, name: str, value: object) -> None:
    text = pydoc.render_doc(value, renderer=pydoc.plaintext)  # type: ignore[attr-defined]

    assert name in text
    if isinstance(value, type):
        typing.get_type_hints(value)  # resolves in the face named by __module__


def test_a_fresh_msgspec_decoder_reads_a_struct_named_by_its_face() -> None:
    line = b'{"seq":1,"type":"user/message","id":"u1","role":"user","source":{"kind":"user"},"content":[]}'

    event = msgspec.json.Decoder(pipeline.session.UserMessageEvent).decode(line)

    assert (event.id, event.source.kind, event.content) == ("u1", "user", ())
    assert msgspec.json.decode(msgspec.json.encode(event), type=pipeline.session.UserMessageEvent) == event
