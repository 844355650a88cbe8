"""What a new ``SanitizingTransport`` costs: a client (and a transport) per request, against the plain SDK doing the
same, over loopback ``http://`` to the emulator in a child process (issue 35: each new transport used to pay a CA
bundle load, ~20-80 ms, on its first request; now one process builds one verifying context, on its first
``https://`` request, and none for ``http://``).

    python -m benchmarks.transport_setup [--rounds 15]

Rows, each a whole request (``chat.completions.create(stream=True)`` on the emulator's ``clean`` profile, read to
its end, the client closed), the median of ``--rounds`` interleaved rounds (one run of each row per round):

- ``plain SDK, client per request``: ``openai.OpenAI(...)`` built per request (the SDK builds its own transport,
  and with it a TLS context);
- ``plain SDK, one client``: one ``openai.OpenAI`` reused (the floor: connection kept alive);
- ``transport per request``: ``openai.OpenAI(http_client=openai.DefaultHttpxClient(transport=SanitizingTransport()))``
  built per request;
- ``transport per request, own context``: the same with ``SanitizingTransport(verify=hx.create_ssl_context())``,
  a context built per transport as before issue 35 (the cost the shared context removes);
- ``transport, one client``: one client with the transport, reused.

Also printed: the first request of the process through a new transport (before any row), and the same for an
``https://`` transport's shared context (its one-off build, timed alone).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx2
import openai

from pipeline import SanitizingTransport
from pipeline._tls import verifying_context

from ._emulator_proc import EmulatorProcess

MESSAGES: list[openai.types.chat.ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]


def _ask(client: openai.OpenAI) -> int:
    stream = client.chat.completions.create(model="clean", messages=MESSAGES, stream=True)
    return sum(1 for _ in stream)


def _rows(base_url: str) -> dict[str, Callable[[], int]]:
    def fresh(http: Callable[[], httpx2.Client] | None) -> Callable[[], int]:
        def run() -> int:
            with openai.OpenAI(base_url=base_url, api_key="sk-x", max_retries=0,
                               http_client=None if http is None else http()) as client:
                return _ask(client)
        return run

    plain = openai.OpenAI(base_url=base_url, api_key="sk-x", max_retries=0)
    kept = openai.OpenAI(base_url=base_url, api_key="sk-x", max_retries=0,
                         http_client=openai.DefaultHttpxClient(transport=SanitizingTransport()))
    return {
        "plain SDK, client per request": fresh(None),
        "plain SDK, one client": lambda: _ask(plain),
        "transport per request": fresh(lambda: openai.DefaultHttpxClient(transport=SanitizingTransport())),
        "transport per request, own context": fresh(lambda: openai.DefaultHttpxClient(
            transport=SanitizingTransport(verify=httpx2.create_ssl_context()))),
        "transport, one client": lambda: _ask(kept),
    }


def _timed(run: Callable[[], int]) -> float:
    started = time.perf_counter()
    assert run() > 0
    return (time.perf_counter() - started) * 1000


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (default 15)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, EmulatorProcess(Path(tmp)) as emulator:
        base_url = emulator.base_url
        first = _timed(lambda: _ask(openai.OpenAI(base_url=base_url, api_key="sk-x", max_retries=0, http_client=(
            openai.DefaultHttpxClient(transport=SanitizingTransport())))))
        started = time.perf_counter()
        verifying_context(httpx2)  # the one-off https:// context, built alone
        https_once = (time.perf_counter() - started) * 1000
        rows = _rows(base_url)
        for run in rows.values():
            run()  # warm: imports, the emulator's first answers
        timings: dict[str, list[float]] = {name: [] for name in rows}
        for _ in range(args.rounds):
            for name, run in rows.items():
                timings[name].append(_timed(run))
    print(f"one request per run, median ms of {args.rounds} interleaved rounds (loopback http://, openai on httpx2)")
    plain = statistics.median(timings["plain SDK, client per request"])
    for name, values in timings.items():
        median = statistics.median(values)
        print(f"  {name:<36} {median:8.2f} ms   vs plain SDK, client per request {median - plain:+8.2f} ms")
    print(f"first request of the process through a new transport: {first:.2f} ms (imports included)")
    print(f"the shared https:// context, built once per process: {https_once:.2f} ms")


if __name__ == "__main__":
    main()
