"""The extension kit: item helpers among the rules, and what the type checker says about ordinary operators there.

Between two rule operators the Observable carries ``Batch[Signal]``. Every case below places one operator between
``coalesce_identity`` and ``accumulate_arguments`` and states what happens: it either works (``mypy --strict`` accepts
it and the chunks are the same as without it) or ``mypy --strict`` refuses it. The test runs both checks.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from builders import source_of
from reactivex import operators as ops

import pipeline
from operators import (
    Anomaly,
    Finish,
    Signal,
    TextDelta,
    accumulate_arguments,
    classify_finish,
    close_on_done,
    coalesce_identity,
    parse_sse,
)
from operators.extend import filter_items, map_items

SEED = pipeline.example_path().read_bytes()

HELPERS = '''
def same(item: Signal) -> Signal:
    return item


def not_anomaly(item: Signal) -> bool:
    return not isinstance(item, Anomaly)


def text_of(chunk: TextDelta) -> str:
    return chunk.text


def is_text(chunk: Chunk) -> bool:
    return isinstance(chunk, TextDelta)


def not_finish(chunk: Chunk) -> bool:
    return not isinstance(chunk, Finish)


def count(total: int, chunk: Chunk) -> int:
    return total + 1
'''

# (the operator as written between two rules, what happens: "works" or "refused")
CASES = [
    ("map_items(same)", "works"),
    ("filter_items(not_anomaly)", "works"),
    ("ops.do_action(print)", "works"),
    ("ops.filter(bool)", "works"),
    ("ops.share()", "works"),
    ("ops.map(lambda chunk: chunk.text)", "refused"),
    ("ops.map(text_of)", "refused"),
    ("ops.filter(is_text)", "refused"),
    ("ops.filter(lambda chunk: chunk.type == 'text-delta')", "refused"),
    ("ops.take_while(not_finish)", "refused"),
    ("ops.scan(count, 0)", "refused"),
]


def _module() -> tuple[str, dict[int, int]]:
    """A module with one function per case; returns its text and the case each line number belongs to."""
    lines = [
        "from __future__ import annotations",
        "import reactivex as rx",
        "from reactivex import operators as ops",
        "from operators import Anomaly, Chunk, Finish, Signal, TextDelta, accumulate_arguments, classify_finish,"
        " close_on_done, coalesce_identity, parse_sse",
        "from operators.extend import filter_items, map_items",
        "from pipeline import to_chunks",
        *HELPERS.splitlines(),
    ]
    where: dict[int, int] = {}
    for number, (operator, _) in enumerate(CASES):
        lines += [
            "",
            "",
            f"def case_{number}(source: rx.Observable[bytes]) -> rx.Observable[Chunk]:",
            "    batches = source.pipe(parse_sse(), coalesce_identity())",
            f"    between = batches.pipe({operator})",
        ]
        lines += [
            "    return between.pipe(accumulate_arguments(), close_on_done(), classify_finish(), to_chunks())",
        ]
        where[len(lines) - 1] = where[len(lines)] = number  # an error on either line belongs to the case
    return "\n".join(lines) + "\n", where


@pytest.fixture(scope="module")
def refused(tmp_path_factory: pytest.TempPathFactory) -> dict[int, list[str]]:
    """The mypy --strict errors of each case, by case number."""
    text, where = _module()
    folder = tmp_path_factory.mktemp("typed")
    path = folder / "cases.py"
    path.write_text(text)
    root = Path(__file__).resolve().parents[2]
    # In a child process: mypy's API raises the interpreter's recursion limit for good.
    stdout = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent", "--config-file=",
         str(path)],
        capture_output=True, text=True, cwd=root, check=False,
    ).stdout
    errors: dict[int, list[str]] = {number: [] for number in range(len(CASES))}
    for line in stdout.splitlines():
        head, _, message = line.partition(": error: ")
        if not message:
            continue
        line_number = int(head.rsplit(":", 1)[1])
        if line_number in where:
            errors[where[line_number]].append(message)
        else:
            pytest.fail(f"mypy reported an error outside the cases (line {line_number}): {message}\n{root}")
    return errors


def _chunks_with(operator: Any) -> list[Any]:
    out: list[Any] = []
    observable: Any = pipeline.bytes_source(SEED)
    for step in [parse_sse(), coalesce_identity(), operator, accumulate_arguments(), close_on_done(),
                 classify_finish(), pipeline.to_chunks()]:
        observable = step(observable)
    observable.subscribe(on_next=out.append)
    return out


def _operator(text: str) -> Any:
    helpers: dict[str, Any] = {"Anomaly": Anomaly, "Finish": Finish, "TextDelta": TextDelta, "Signal": Signal,
                               "Chunk": object}
    exec(textwrap.dedent(HELPERS), helpers)
    return eval(text, {**helpers, "ops": ops, "map_items": map_items, "filter_items": filter_items})


@pytest.mark.server
@pytest.mark.parametrize(("operator", "verdict"), CASES, ids=[case for case, _ in CASES])
def test_an_ordinary_operator_between_rules_works_or_is_refused_by_the_type_checker(
    operator: str, verdict: str, refused: dict[int, list[str]]
) -> None:
    number = [case for case, _ in CASES].index(operator)
    if verdict == "refused":
        assert refused[number], f"mypy --strict accepted {operator} between two rules"
    else:
        assert refused[number] == [], f"mypy --strict refused {operator}: {refused[number]}"
        assert _chunks_with(_operator(operator)) == pipeline.collect(SEED)


def test_map_items_applies_the_function_to_every_item_and_keeps_the_batches() -> None:
    out: list[Any] = []
    source_of([TextDelta(0, "a"), TextDelta(0, "b")], [TextDelta(0, "c")]).pipe(
        map_items(lambda item: TextDelta(item.index, item.text.upper()) if isinstance(item, TextDelta) else item)
    ).subscribe(on_next=out.append)
    assert out == [[TextDelta(0, "A"), TextDelta(0, "B")], [TextDelta(0, "C")]]


def test_filter_items_drops_rejected_items_and_never_emits_an_empty_batch() -> None:
    out: list[Any] = []
    source_of([TextDelta(0, "a"), Anomaly("comment", None, "x")], [Anomaly("comment", None, "y")]).pipe(
        filter_items(lambda item: not isinstance(item, Anomaly))
    ).subscribe(on_next=out.append)
    assert out == [[TextDelta(0, "a")]]


def test_a_custom_rule_built_with_map_items_changes_what_the_pipeline_emits() -> None:
    def shout(item: Signal) -> Signal:
        return TextDelta(item.index, item.text.upper()) if isinstance(item, TextDelta) else item

    rules = pipeline.protocol_rules()
    rules.insert(1, map_items(shout))
    message = pipeline.assemble(pipeline.collect(b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n',
                                                 rules=rules))
    assert message.text == "HI"
