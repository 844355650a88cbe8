"""One recorded stream's facts for ``docs/gateways.md`` (``gen_gateways.py`` renders them, provider by provider).

Each stream is run through ``pipeline.collect(path, anomalies=True)`` (the anomalies we report, the finish and usage
we produce) and through ``parse_sse`` alone (the wire-level facts: how it ends, where the usage rides, which
reasoning field carried the reasoning, how tool-call identity was repeated, the wire's finish_reason, anything else
unusual). The provider comes from the MANIFEST (``providers``), else from the stream's ``.expected.json``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import attrs

import pipeline
from operators import Anomaly, Finish, UsageChunk, parse_sse
from operators.extend import Done, Halt
from operators.wire import UNSET, WireChunk, WireDelta

__all__ = ["StreamFacts", "stream_facts"]


@attrs.frozen
class StreamFacts:
    """What one recorded stream showed, on the wire and through the pipeline."""

    name: str
    provider: str
    model: str
    payloads: int
    anomalies: tuple[tuple[str, int, str], ...]  # (kind, count, first detail)
    end: str
    usage: str
    reasoning: str
    tool_calls: str
    wire_finish: str
    produced: str
    produced_usage: str
    other: tuple[str, ...]
    notes: tuple[str, ...]


def _split_provider(provider_model: str) -> tuple[str, str]:
    provider, _, model = provider_model.partition(" / ")
    return provider.strip(), model.strip()


def _wire_values(path: Path) -> list[Any]:
    values: list[Any] = []
    pipeline.bytes_source(path).pipe(parse_sse()).subscribe(on_next=values.extend)
    return values


def _describe_end(values: list[Any], data: bytes, harness_done: bool) -> str:
    last = values[-1] if values else None
    if isinstance(last, Done):
        if last.synthetic:
            return "no `[DONE]`: the bytes end after a finish_reason, counted as done (`missing-done`)"
        return "`[DONE]` (appended by the fixture harness)" if harness_done else "`[DONE]`"
    if isinstance(last, Halt):
        code = last.failure.code
        if re.search(rb"^event: ?error\r?$", data, re.MULTILINE):
            return f"`event: error` (no `[DONE]`): error finish `{code}`"
        after = " then `[DONE]` (not read)" if b"[DONE]" in data else ", no `[DONE]`"
        return f"in-band `error` object{after}: error finish `{code}`"
    return "no `[DONE]`"


def _usage_location(chunks: list[WireChunk]) -> str:
    places: list[str] = []
    with_usage = [chunk for chunk in chunks if chunk.usage is not None]
    for chunk in with_usage:
        choices = chunk.choices or []
        if not choices:
            place = "trailing usage-only chunk (`choices: []`)"
        elif any(choice.finish_reason is not None for choice in choices):
            place = "on the finish chunk"
        else:
            place = "on a chunk with choices and no finish_reason"
        if place not in places:
            places.append(place)
    if len(with_usage) > 1:
        places.insert(0, f"on {len(with_usage)} of {len(chunks)} chunks, cumulative (last wins, never summed)")
        places = places[:1]
    if not with_usage:
        if any(chunk.x_groq is not None and chunk.x_groq.usage is not None for chunk in chunks):
            return "only in `x_groq.usage` (used because there is no top-level usage)"
        return "none"
    return "; ".join(places)


def _deltas(chunks: list[WireChunk]) -> list[WireDelta]:
    return [
        choice.delta
        for chunk in chunks
        for choice in chunk.choices or []
        if choice.index == 0 and choice.delta is not None
    ]


def _reasoning_field(deltas: list[WireDelta]) -> str:
    fields: list[str] = []

    def seen(label: str) -> None:
        if label not in fields:
            fields.append(label)

    for delta in deltas:
        if isinstance(delta.reasoning_content, str) and delta.reasoning_content:
            seen("`reasoning_content`")
        if isinstance(delta.reasoning, str) and delta.reasoning:
            seen("`reasoning`")
        if delta.reasoning_details:
            seen("`reasoning_details[].text`")
        if isinstance(delta.content, list) and any(
            isinstance(part, dict) and part.get("type") == "thinking" for part in delta.content
        ):
            seen("`content` list with `thinking` parts")
    if not fields:
        return "none"
    if "`reasoning_details[].text`" in fields and len(fields) > 1:
        fields.remove("`reasoning_details[].text`")
        return " + ".join(fields) + " (mirrored in `reasoning_details`, counted once)"
    return " + ".join(fields)


def _identity_value(value: Any) -> str:
    if value is UNSET:
        return "absent"
    if value is None:
        return "null"
    if isinstance(value, str):
        return '""' if not value else "repeated"
    return f"non-string {type(value).__name__}"


def _tool_calls(deltas: list[WireDelta]) -> str:
    """Wire-level shape of the tool calls (correlated by index; a new non-empty id at an index is a new call)."""
    counts: list[int] = []
    by_index: dict[int | None, tuple[int, str | None]] = {}  # wire index -> (position in counts, id)
    continuation_ids: list[str] = []
    continuation_names: list[str] = []
    whole = 0
    no_index = False
    for delta in deltas:
        for call in delta.tool_calls or []:
            no_index = no_index or call.index is None
            new_id = call.id if isinstance(call.id, str) and call.id else None
            function = call.function
            name = function.name if function is not None else UNSET
            known = by_index.get(call.index)
            if known is None or (new_id is not None and known[1] is not None and new_id != known[1]):
                counts.append(1)
                by_index[call.index] = (len(counts) - 1, new_id)
                arguments = function.arguments if function is not None else None
                if isinstance(name, str) and name and new_id and isinstance(arguments, str) and arguments.endswith("}"):
                    whole += 1
                continue
            position, established = known
            counts[position] += 1
            by_index[call.index] = (position, established or new_id)
            for value, into in ((call.id, continuation_ids), (name, continuation_names)):
                label = _identity_value(value)
                if label not in into:
                    into.append(label)
    if not counts:
        return "none"
    parts = [f"{len(counts)} call(s), wire deltas per call: {', '.join(str(n) for n in counts)}"]
    if whole:
        parts.append(f"{whole} arrived whole (id, name and complete arguments in the first delta)")
    if continuation_ids:
        parts.append("continuation id: " + ", ".join(continuation_ids))
    if continuation_names:
        parts.append("continuation name: " + ", ".join(continuation_names))
    if no_index:
        parts.append("deltas without `index`")
    return "; ".join(parts)


def _wire_finish(chunks: list[WireChunk]) -> str:
    reasons = [
        choice.finish_reason
        for chunk in chunks
        for choice in chunk.choices or []
        if choice.index == 0 and choice.finish_reason is not None
    ]
    if not reasons:
        return "none (no `finish_reason` on any chunk)"
    text = f"`{reasons[-1]}`"
    if len(reasons) > 1:
        text += f" (on {len(reasons)} chunks)"
    return text


def _other(chunks: list[WireChunk], deltas: list[WireDelta]) -> tuple[str, ...]:
    facts: list[str] = []
    choice_indices = {choice.index for chunk in chunks for choice in chunk.choices or []}
    if len(choice_indices) > 1:
        facts.append(f"{len(choice_indices)} choices (n > 1): choice 0 is the message")
    if any(delta.refusal for delta in deltas):
        facts.append("the answer arrives in `delta.refusal`")
    if any(isinstance(delta.content, list) for delta in deltas):
        facts.append("`content` is sometimes a list of typed parts")
    return tuple(facts)


def stream_facts(path: Path, providers: dict[str, str] | None = None) -> StreamFacts:
    """Runs one stream through the pipeline and through ``parse_sse`` alone, and describes it."""
    expected_path = path.with_suffix(".expected.json")
    expected: dict[str, Any] = json.loads(expected_path.read_text(encoding="utf-8")) if expected_path.is_file() else {}
    source = expected.get("source") or {}
    provider_model = (providers or {}).get(path.name) or source.get("provider_model") or "unknown / unknown"
    provider, model = _split_provider(provider_model)

    data = path.read_bytes()
    values = _wire_values(path)
    wire = [value for value in values if isinstance(value, WireChunk)]
    deltas = _deltas(wire)

    chunks = pipeline.collect(path, anomalies=True)
    kinds: Counter[str] = Counter()
    first: dict[str, str] = {}
    for chunk in chunks:
        if isinstance(chunk, Anomaly):
            kinds[chunk.kind] += 1
            first.setdefault(chunk.kind, chunk.detail)
    finish = chunks[-1]
    produced = "?"
    if isinstance(finish, Finish):
        produced = f"`{finish.reason.kind}`" + (f" `{finish.reason.code}`" if finish.reason.code else "")

    usages = [json.dumps(chunk.usage.to_dict()) for chunk in chunks if isinstance(chunk, UsageChunk)]
    harness_done = source.get("repo") == "vercel/ai"
    notes = tuple(str(note) for note in expected.get("anomalies") or ())
    return StreamFacts(
        name=path.name,
        provider=provider,
        model=model,
        payloads=len(wire),
        anomalies=tuple((kind, count, first[kind]) for kind, count in kinds.items()),
        end=_describe_end(values, data, harness_done),
        usage=_usage_location(wire),
        reasoning=_reasoning_field(deltas),
        tool_calls=_tool_calls(deltas),
        wire_finish=_wire_finish(wire),
        produced=produced,
        produced_usage=f"`{usages[-1]}`" if usages else "none",
        other=_other(wire, deltas),
        notes=notes,
    )
