"""Lines that carry nothing (comments, blank lines that end no event, ``retry:`` and unknown fields) cost no object
unless comment anomalies are asked for, and past ``Limits.max_ignored_lines`` end the response with
``LIMIT_EXCEEDED`` (docs/decisions/0039-ignored-lines.md); a long read is framed in slices; detection is linear.
The scenarios' numbers (16 MiB in 2.5 s and 300 MiB; a 1 MiB head at 256-byte reads in 4 s) are generous bounds.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import pytest
import reactivex

from operators import Anomaly, Limits, parse_sse, parse_stream
from operators.extend import Done, Halt
from operators.wire import WireChunk

TEXT = b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
DONE = b"data: [DONE]\n\n"
SLICE = 64 * 1024  # the framing's slice (operators/_sse_framing.py)


def run(operator: Any, *reads: bytes) -> list[Any]:
    out: list[Any] = []
    reactivex.from_iterable(reads).pipe(operator).subscribe(on_next=out.extend)
    return out


def test_comment_lines_cost_no_object_unless_asked_for() -> None:
    data = b": keep-alive\n" * 1000 + TEXT + DONE

    assert [type(item) for item in run(parse_sse(), data)] == [WireChunk, Done]
    assert sum(type(item) is Anomaly for item in run(parse_sse(comments=True), data)) == 1000


@pytest.mark.parametrize(
    "line", [b": x\n", b"\n", b"retry: 10\n", b"foo: bar\n"], ids=["comment", "blank", "retry", "unknown-field"]
)
def test_lines_carrying_nothing_past_max_ignored_lines_end_with_limit_exceeded(line: bytes) -> None:
    limits = Limits(max_ignored_lines=10)

    within = run(parse_sse(limits), line * 10 + TEXT + DONE)
    over = run(parse_sse(limits), line * 11 + TEXT + DONE)

    assert [type(item) for item in within] == [WireChunk, Done]
    assert [type(item) for item in over] == [Halt]
    assert over[0].failure.code == "LIMIT_EXCEEDED"
    assert over[0].failure.message.endswith("reached 11, over max_ignored_lines=10")


def test_data_event_and_id_lines_and_the_blank_line_ending_an_event_are_not_counted() -> None:
    event = b"event: x\nid: 7\n" + TEXT
    out = run(parse_sse(Limits(max_ignored_lines=1)), event * 50 + DONE)

    assert [type(item) for item in out] == [WireChunk] * 50 + [Done]


def test_the_ignored_line_limit_is_the_same_whatever_the_split() -> None:
    data = b": x\n" * 300 + TEXT + DONE
    limits = Limits(max_ignored_lines=200)
    whole = run(parse_sse(limits), data)

    for size in (1, 3, 7, 64, 4096):
        pieces = [data[i : i + size] for i in range(0, len(data), size)]
        assert run(parse_sse(limits), *pieces) == whole


def test_a_read_longer_than_a_slice_gives_what_its_slices_give_as_separate_reads() -> None:
    data = (b": padding\n" * 5000 + TEXT) * 5 + DONE
    assert len(data) > 3 * SLICE
    limits = Limits(max_ignored_lines=10**6)
    slices = [data[i : i + SLICE] for i in range(0, len(data), SLICE)]

    assert run(parse_sse(limits, comments=True), data) == run(parse_sse(limits, comments=True), *slices)


@pytest.mark.parametrize("format", ["chat", "messages", "responses", None])
def test_every_format_counts_ignored_lines(format: str | None) -> None:
    out = run(parse_stream(format, Limits(max_ignored_lines=5)), b": x\n" * 6 + TEXT)  # type: ignore[arg-type]

    assert type(out[-1]) is Halt
    assert "max_ignored_lines=5" in out[-1].failure.message


_MEASURE = """
import json, resource, sys, time, reactivex
from pipeline import collect
data = b": x\\n" * (4 * 1024 * 1024)
started = time.process_time()  # CPU time: what a quadratic scan would grow, and not another process's load
out = {call}
took = time.process_time() - started
# this process's own peak: the memory map's high-water mark, new at exec (ru_maxrss keeps the forking parent's peak,
# so a big pytest process would fail the bound), where /proc has it
try:
    with open("/proc/self/status") as status:
        peak = int(next(line for line in status if line.startswith("VmHWM:")).split()[1])
except OSError:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"took": took, "rss_mib": peak / 1024,
                  "last": repr(out[-1])}}))
"""


def _measure(call: str) -> dict[str, Any]:
    script = _MEASURE.format(call=call)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.server
@pytest.mark.parametrize("anomalies", [False, True], ids=["plain", "anomalies"])
def test_one_16_mib_read_of_comment_lines_ends_within_2_5_s_and_300_mib(anomalies: bool) -> None:
    result = _measure(f"collect(reactivex.just(data), anomalies={anomalies})")

    assert "LIMIT_EXCEEDED" in result["last"]
    assert result["took"] < 2.5
    assert result["rss_mib"] < 300


def test_detection_over_a_1_mib_comment_head_at_256_byte_reads_ends_within_4_s() -> None:
    head = b": " + b"x" * 1020 + b"\n"  # 1 KiB comment lines: 1,024 of them, under the ignored-line limit
    data = head * 1024 + (
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        b'"content_block":{"type":"text","text":""}}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"hi"}}\n\n'
    )
    reads = [data[i : i + 256] for i in range(0, len(data), 256)]
    limits = Limits(max_event_bytes=2 * 1024 * 1024)

    started = time.process_time()  # CPU time: what a quadratic scan would grow, and not another process's load
    out = run(parse_stream(None, limits), *reads)
    took = time.process_time() - started

    assert took < 4
    assert not any(type(item) is Halt and "max_event_bytes" in item.failure.message for item in out)
    assert any(type(item) is WireChunk for item in out)  # read as Messages: its text delta
