"""``llm-stream session check|repair FILE``: inspect or recover a session log."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.session import check, repair

from ._errors import EXIT_FAILURE, EXIT_OK, CliError

__all__ = ["add_parser"]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = commands.add_parser("session", help="check or repair a session log")
    p.add_argument("action", choices=["check", "repair"], help="check: list every violation; repair: recover")
    p.add_argument("file", help="the session log (.jsonl)")
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.exists():
        raise CliError(f"cannot read {args.file}: No such file or directory")
    if args.action == "check":
        problems = check(path)
        for problem in problems:
            print(problem)
        print(f"{path}: {len(problems)} violation(s)" if problems else f"{path}: ok, loadable")
        return EXIT_FAILURE if problems else EXIT_OK
    report = repair(path)
    for problem in report.problems:
        print(f"fixed: {problem}")
    where = f" into {report.quarantine_path}" if report.quarantine_path else ""
    turns = f" (turns {', '.join(map(str, report.turns_quarantined))})" if report.turns_quarantined else ""
    print(f"{path}: kept {report.kept} events, quarantined {report.quarantined}{turns}{where}; the log loads")
    return EXIT_OK
