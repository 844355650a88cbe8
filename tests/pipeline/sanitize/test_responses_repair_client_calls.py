"""``ResponsesRepair`` on the calls a client runs (decision 0072): the held-out set ``tests/corpus/client-calls`` and
the recorded ``responses/03`` (custom tool), ``06`` (MCP approval), ``08`` (local shell), at every split size. The
identity rules of function calls hold for every kind: a sound stream passes byte for byte, an identity blanked or
changed on ``.done`` or in ``response.completed`` keeps the first, a call never identified or a built-in call never
finished is ``MALFORMED_TOOL_CALL``, a cut inside a custom input is ``STREAM_CLOSED``; and the library reads the
repaired bytes as it reads the upstream's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from corpus import CLIENT_CALL_STREAMS, RESPONSES_STREAMS
from repair_helpers import SPLITS, ending, named_events, repaired

import pipeline
from pipeline.sanitize import ResponsesRepair

HELD_OUT = sorted(CLIENT_CALL_STREAMS.glob("*.sse"))
RECORDED = [next(RESPONSES_STREAMS.glob(f"{n}-*.sse")) for n in ("03", "06", "08")]
SOUND = [p for p in HELD_OUT if p.name[:2] in ("01", "05", "06", "07", "08", "10")] + RECORDED
"""The streams the openai SDK reads as they come: nothing to repair."""


def stream(number: str) -> bytes:
    return next(CLIENT_CALL_STREAMS.glob(f"{number}-*.sse")).read_bytes()


def read(body: bytes) -> tuple[Any, ...]:
    """The library's reading: ``("error", code)`` or (text, calls as (id, name, kind, arguments), finish kind)."""
    message = pipeline.assemble(pipeline.collect(body, format="responses"))
    if message.finish.kind == "error":
        return ("error", message.finish.failure.code if message.finish.failure else None)
    return (message.text, [(c.id, c.name, c.kind, c.arguments) for c in message.tool_calls], message.finish.kind)


def expectation(path: Path) -> tuple[Any, ...]:
    expected = json.loads(path.with_suffix(".expected.json").read_text())
    finish = expected.get("finish") or {"kind": "tool-calls", "code": None}
    if finish["kind"] == "error":
        return ("error", finish["code"])
    calls = [(c["id"], c["name"], c.get("kind", "function"), c["arguments"]) for c in expected["tool_calls"]]
    return (expected["text"], calls, finish["kind"])


def items(out: bytes, kind: str) -> list[dict[str, Any]]:
    """The items of every ``kind`` event (``output_item.added`` / ``.done``), or of ``response.completed``'s output."""
    found: list[dict[str, Any]] = []
    for _, data in named_events(out):
        if isinstance(data, dict) and data.get("type") == kind:
            found.extend(data["response"]["output"] if kind == "response.completed" else [data["item"]])
    return found


@pytest.mark.parametrize("size", SPLITS)
@pytest.mark.parametrize("path", HELD_OUT + RECORDED, ids=lambda p: p.stem[:40])
def test_each_stream_reads_through_the_repairer_as_its_expectation(path: Path, size: int) -> None:
    raw = path.read_bytes()
    out, repair = repaired(ResponsesRepair, raw, size)
    assert read(out) == read(raw) == expectation(path)
    wanted = expectation(path)
    if wanted[0] == "error":
        assert ending(repair) == ("error", wanted[1])
    else:
        assert ending(repair) == (wanted[2], None)


@pytest.mark.parametrize("size", SPLITS)
@pytest.mark.parametrize("path", SOUND, ids=lambda p: p.stem[:40])
def test_a_sound_stream_of_client_run_calls_passes_byte_for_byte(path: Path, size: int) -> None:
    out, repair = repaired(ResponsesRepair, path.read_bytes(), size)
    assert out == path.read_bytes()
    assert not repair.repairs


@pytest.mark.parametrize("size", SPLITS)
def test_a_custom_call_identity_blanked_on_done_and_changed_in_completed_keeps_the_first(size: int) -> None:
    out, repair = repaired(ResponsesRepair, stream("02"), size)
    (done,) = items(out, "response.output_item.done")
    (final,) = items(out, "response.completed")
    for item in (done, final):
        assert (item["id"], item["call_id"], item["name"]) == ("ctc_02", "call_patch_1", "apply_diff")
    assert final["input"] == done["input"] == "*** Begin Patch\n*** Update File: a.py\n-x = 1\n+x = 2\n*** End Patch"
    assert repair.repairs["item-identity"] == 2


@pytest.mark.parametrize("size", SPLITS)
def test_a_custom_call_never_identified_fails_before_any_byte_of_it(size: int) -> None:
    out, repair = repaired(ResponsesRepair, stream("04"), size)
    assert [name for name, _ in named_events(out)] == ["response.created", "response.in_progress", "error"]
    assert repair.failure is not None
    assert repair.failure.code == "MALFORMED_TOOL_CALL"
    assert "custom_tool_call at output_index 0 was never identified (call_id None, name 'write_sql')" in (
        repair.failure.message)


@pytest.mark.parametrize("size", SPLITS)
def test_a_cut_inside_a_custom_input_is_an_error_never_half_the_input(size: int) -> None:
    out, repair = repaired(ResponsesRepair, stream("03"), size)
    events = named_events(out)
    assert events[-1][0] == "error"
    assert events[-1][1]["code"] == "STREAM_CLOSED"
    assert "response.completed" not in [name for name, _ in events]
    assert ending(repair) == ("error", "STREAM_CLOSED")


@pytest.mark.parametrize("size", SPLITS)
def test_a_built_in_call_never_finished_is_malformed_tool_call_at_the_terminal_event(size: int) -> None:
    out, repair = repaired(ResponsesRepair, stream("09"), size)
    assert repair.failure is not None
    assert repair.failure.code == "MALFORMED_TOOL_CALL"
    assert repair.failure.message.startswith("apply_patch_call at output_index 0: never finished")
    assert [name for name, _ in named_events(out)][-1] == "error"


@pytest.mark.parametrize("size", SPLITS)
@pytest.mark.parametrize(("number", "blanked", "field", "value"), [
    ("06", b'"call_id":"call_ap_6","status":"in_progress"', "call_id", "call_ap_6"),  # apply_patch_call
    ("05", b'"env":{}},"call_id":"call_ls_5"', "call_id", "call_ls_5"),  # local_shell_call
    ("10", b'"id":"mcpr_10","server_label":"deepwiki","name":"ask_question","arguments":"{\\"repoName\\":'
           b'\\"openai/codex\\",\\"question\\":\\"What is apply_patch?\\"}"}}\n\nevent: response.output_item.done',
     "id", "mcpr_10"),
])
def test_a_built_in_call_identified_only_on_done_is_held_and_its_added_written_with_it(
    number: str, blanked: bytes, field: str, value: str, size: int
) -> None:
    raw = stream(number)
    assert raw.count(blanked) == 1
    late = raw.replace(blanked, blanked.replace(f'"{field}":"{value}"'.encode(), f'"{field}":""'.encode()))
    out, repair = repaired(ResponsesRepair, late, size)
    added = [item for item in items(out, "response.output_item.added") if item.get(field) in ("", value)]
    assert [item[field] for item in added][-1:] == [value]
    assert repair.repairs["tool-call-identity"] == 1
    assert read(out) == read(raw)


@pytest.mark.parametrize("size", SPLITS)
def test_a_local_shell_call_id_changed_on_done_keeps_the_first_everywhere(size: int) -> None:
    raw = stream("05")
    changed = raw.replace(b'"working_directory":"/repo"},"call_id":"call_ls_5"}',
                          b'"working_directory":"/repo"},"call_id":"call_other"}')
    out, _ = repaired(ResponsesRepair, changed, size)
    assert changed.count(b"call_other") == 2  # on .done and in response.completed
    calls = [item for item in items(out, "response.output_item.done") if item["type"] == "local_shell_call"]
    assert [item["call_id"] for item in calls] == ["call_ls_5"]
    assert {item["call_id"] for item in items(out, "response.completed") if "call_id" in item} == {"call_ls_5"}
    assert read(out) == read(raw)


@pytest.mark.parametrize("size", SPLITS)
def test_a_hosted_shell_call_is_no_call_held_or_conformed_and_stays_informational(size: int) -> None:
    raw = stream("08")
    blank = raw.replace(b'"call_id":"call_sh_8","status":"in_progress"', b'"call_id":"","status":"in_progress"', 1)
    changed = raw.replace(b'"call_id":"call_sh_8","status":"completed","action"',
                          b'"call_id":"call_sh_other","status":"completed","action"', 1)
    for body in (blank, changed):
        assert body != raw
        out, repair = repaired(ResponsesRepair, body, size)
        assert out == body  # the provider's own item: its call_id as sent, nothing held
        assert ending(repair) == ("stop", None)
        assert read(out) == read(raw)


def _reordered(raw: bytes) -> bytes:
    """Stream 05 with the local shell call's ``output_item.done`` before its ``added``."""
    events = raw.split(b"\n\n")
    added = next(i for i, e in enumerate(events) if b"output_item.added" in e and b"local_shell_call" in e)
    done = next(i for i, e in enumerate(events) if b"output_item.done" in e and b"local_shell_call" in e)
    events[added], events[done] = events[done], events[added]
    return b"\n\n".join(events)


@pytest.mark.parametrize("size", SPLITS)
@pytest.mark.parametrize("shape", ["done-before-added", "second-name-line", "named-as-a-delta"])
def test_a_built_in_calls_done_is_read_where_the_library_reads_it(shape: str, size: int) -> None:
    raw = stream("05")
    done_line = b"event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"sequence_number\":5"
    body = {
        "done-before-added": _reordered(raw),
        "second-name-line": raw.replace(done_line, b"event: ping\n" + done_line),
        "named-as-a-delta": raw.replace(done_line, done_line.replace(
            b"event: response.output_item.done", b"event: response.custom_tool_call_input.delta")),
    }[shape]
    assert body != raw
    out, repair = repaired(ResponsesRepair, body, size)
    assert read(out) == read(body) == expectation(next(CLIENT_CALL_STREAMS.glob("05-*.sse")))
    assert ending(repair) == ("tool-calls", None)


def test_strict_counts_a_client_run_call_as_an_answer() -> None:
    for number in ("01", "05", "07", "10"):
        out, repair = repaired(lambda: ResponsesRepair(strict=True), stream(number), 17)
        assert ending(repair) == ("tool-calls", None), number
        assert out == stream(number)
