"""What one request through the proxy came to (``Report``) and its access-log line (``access_line``: one per
request on stderr, ``--log-format text|json``); the same report feeds the metrics (``_metrics.py``).

The sanitizing transport hands the report each attempt's ``StreamRepair`` (``Report.observe``, given as the request's
``OBSERVER_EXTENSION``); once the response is over, ``settle`` reads its finish, its failure and, where the repairer
counts them, its repairs by kind. A line never holds a key or a
body: the path is logged without its query, each of its values is redacted (any key, or a cut of one) and the line
passes the redacting filter of the ``llm_stream`` loggers, which then keeps its field names and format
(``VALUES_REDACTED``; docs/decisions/0020-environment-and-logging.md).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

from .._logging import redact_secrets

__all__ = ["Report", "access_line"]

_FINISH_REASONS = {"stop": "stop", "tool-calls": "tool_calls", "max-tokens": "length"}


class Report:
    """One request's outcome, filled in as it goes (the proxy's state for that request, not a value)."""

    __slots__ = ("_repair", "bytes_out", "cut", "finish", "method", "path", "repairs", "responded", "started",
                 "status", "ttfb_s", "upstream_s", "upstream_status")

    def __init__(self, method: str, path: str) -> None:
        self.method, self.path = method, path
        self.started = time.perf_counter()
        self.status = 0
        self.upstream_status: int | None = None
        self.finish: str | None = None
        """The finish of a sanitized stream: ``stop``, ``tool_calls``, ``length`` or a failure's code."""
        self.repairs: Counter[str] = Counter()
        self.bytes_out = 0
        self.cut: str | None = None
        """Why the response was cut before its end (``client``, ``deadline``, ``upstream``, ``shutdown``,
        ``error``), if it was."""
        self.responded = False
        """The response's head went to the client (after that, a failure can only cut it)."""
        self.ttfb_s: float | None = None
        self.upstream_s: float | None = None
        self._repair: Any = None

    def observe(self, repair: Any) -> None:
        """The sanitizing transport hands over each attempt's ``StreamRepair`` (the last one stands)."""
        self._repair = repair

    def fail_stream(self, failure: Any) -> bytes:
        """The rest of a repaired stream ended by ``failure``: its format's in-band error event (``b""`` for a
        response that is no repaired stream, or one already over)."""
        repair = self._repair
        if repair is None or repair.finish is not None or repair.failure is not None:
            return b""
        try:
            return bytes(repair.fail(failure))
        except Exception:  # a repairer that cannot say it: the cut alone tells the client
            return b""

    def settle(self) -> None:
        """Reads the finish, the failure and the repairs of the stream's last attempt, once it is over."""
        repair, self._repair = self._repair, None
        if repair is None:
            return
        finish, failure = repair.finish, repair.failure
        if failure is not None:
            self.finish = str(failure.code)
        elif finish is not None:
            self.finish = finish.reason.code or _FINISH_REASONS.get(finish.reason.kind, finish.reason.kind)
        for kind, count in (getattr(repair, "repairs", None) or {}).items():
            self.repairs[kind] += count

    def elapsed_s(self) -> float:
        return time.perf_counter() - self.started


def access_line(report: Report, log_format: str) -> str:
    """One line: method, path, status, upstream status, finish, repairs, duration, bytes (and why it was cut).

    Each value that is text is redacted here (``redact_secrets``: any registered key, or a cut of one); the line's own
    field names and format are never touched, so the line is logged with ``VALUES_REDACTED``."""
    method, path, finish = (redact_secrets(value) if value else value
                            for value in (report.method, report.path, report.finish))
    repaired = {redact_secrets(kind): count for kind, count in sorted(report.repairs.items())}
    repairs = ",".join(f"{kind}:{count}" for kind, count in repaired.items())
    duration_ms = round(report.elapsed_s() * 1000, 1)
    if log_format == "json":
        record = {
            "method": method, "path": path, "status": report.status,
            "upstream_status": report.upstream_status, "finish": finish,
            "repairs": repaired, "duration_ms": duration_ms, "bytes": report.bytes_out,
        }
        if report.cut:
            record["cut"] = report.cut
        return json.dumps(record, separators=(",", ":"))
    upstream = report.upstream_status if report.upstream_status is not None else "-"
    cut = f" cut={report.cut}" if report.cut else ""
    return (f'"{method} {path}" {report.status} upstream={upstream} finish={finish or "-"} '
            f"repairs={repairs or '-'} {duration_ms}ms {report.bytes_out}B{cut}")


