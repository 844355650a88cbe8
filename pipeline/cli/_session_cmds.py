"""``llm-stream session check|repair FILE``: inspect or recover a session log.

``check`` lists every violation (a torn last line, an interrupted write, included) and exits 1 when there is one,
naming ``session repair`` as the fix; 0 prints ``ok, loadable``."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.session import SessionError, check, repair

from ._errors import EXIT_FAILURE, EXIT_OK, CliError
from ._render import plural

__all__ = ["add_parser"]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = commands.add_parser("session", help="check or repair a session log")
    p.add_argument("action", choices=["check", "repair"], help="check: list every violation; repair: recover")
    p.add_argument("file", help="the session log (.jsonl)")
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    """A file that is not a session log, a directory, an unreadable or read-only file, a held lock: one line."""
    path = Path(args.file)
    if not path.exists():
        raise CliError(f"cannot read {args.file}: No such file or directory")
    try:
        return _act(args.action, path)
    except SessionError as exc:
        raise CliError(str(exc)) from exc


def _act(action: str, path: Path) -> int:
    if action == "check":
        problems = check(path)
        for problem in problems:
            print(problem)
        if not problems:
            print(f"{path}: ok, loadable")
            return EXIT_OK
        torn = [p for p in problems if "torn last line" in p]
        summary = plural(len(problems), "violation") if len(problems) > len(torn) else "a torn last line"
        print(f"{path}: {summary}; repairable: llm-stream session repair {path}")
        return EXIT_FAILURE
    report = repair(path)
    for problem in report.problems:
        print(f"fixed: {problem}")
    where = f" into {report.quarantine_path}" if report.quarantine_path else ""
    turns = f" (turns {', '.join(map(str, report.turns_quarantined))})" if report.turns_quarantined else ""
    print(f"{path}: kept {report.kept} events, quarantined {report.quarantined}{turns}{where}; the log loads")
    return EXIT_OK
