"""``benchmarks.proxy`` runs every pass end to end on a tiny load (each path delivers every event, or the run fails),
and judges the proxy's goals from its report (issue 34)."""

from __future__ import annotations

import argparse

import pytest

from benchmarks import _proxy_report, proxy

pytestmark = [pytest.mark.slow, pytest.mark.server]  # tests/tiers.py: an emulator and a proxy in child processes


def test_every_pass_runs_and_the_goals_are_judged(capsys: pytest.CaptureFixture[str]) -> None:
    args = argparse.Namespace(warmup=1, first_runs=3, runs=1, events=5, drip_ms=1.0, concurrent=3, concurrent_runs=1,
                              big=300, big_event=50, rounds=1, loop="auto")
    report = proxy.measure(args)
    assert set(report["first_event"]) == {"direct", "transport", "proxy"}
    assert all(p50 > 0 for p50, _ in report["first_event"].values())
    assert report["throughput"]["proxy"][1] == 300
    assert report["per_read"]["proxy"][1] == 50
    _proxy_report.print_report(report, args)
    shown = capsys.readouterr().out
    assert shown.count("PASS") + shown.count("MISS") == 3


def _report(first_added_ms: float, cpu_us: float, p99_ratio: float) -> dict[str, object]:
    return {
        "first_event": {"direct": (2.0, 5.0), "proxy": (2.0 + first_added_ms, 9.0)},
        "throughput": {"direct": (1.0, 1000, 0.0005, 0.0), "proxy": (1.0, 1000, 0.0005, cpu_us / 1000)},
        "latency_100": {"direct": (10.0, 100.0), "proxy": (12.0, 100.0 * p99_ratio)},
    }


@pytest.mark.parametrize(("report", "met"), [
    (_report(0.9, 0.9, 1.9), [True, True, True]),
    (_report(1.1, 0.9, 1.9), [False, True, True]),
    (_report(0.9, 1.1, 1.9), [True, False, True]),
    (_report(0.9, 0.9, 2.1), [True, True, False]),
])
def test_each_goal_is_missed_past_its_bound(report: dict[str, object], met: list[bool]) -> None:
    assert [ok for _, _, ok in _proxy_report.goals(report, 100)] == met
