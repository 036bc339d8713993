"""Grading reports: per-check feedback for students, JSON for instructors.

A grader (one module per exercise, registered in harness/grade.py) builds the
submission into a harness-owned driver, feeds it inputs the harness made, reads
back the raw outputs, and compares them with references the harness computed
itself. Nothing the submission prints is read. The result is a `Report`: a list
of `Check`s, printed as text and written as Gradescope's results.json format
(`score`, `output`, and `tests` with `name`, `score`, `max_score`, `status`,
`output`, `visibility`).
"""

from __future__ import annotations

import json
import math
import os
import shlex
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from .paths import REPO


class NoGpu(Exception):
    """The submission could not be run: no usable GPU (exit status 3)."""


@dataclass
class Check:
    name: str
    passed: bool
    feedback: str = ""
    max_score: float = 1.0

    @property
    def score(self) -> float:
        return self.max_score if self.passed else 0.0


@dataclass
class Report:
    exercise: str
    submission: str
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # shown to the student and the instructor, not scored

    def add(self, name: str, passed: bool, feedback: str = "", max_score: float = 1.0) -> Check:
        check = Check(name, passed, feedback, max_score)
        self.checks.append(check)
        return check

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def score(self) -> float:
        return sum(c.score for c in self.checks)

    @property
    def max_score(self) -> float:
        return sum(c.max_score for c in self.checks)

    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def check(self, name: str) -> Check:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(f"no check named {name!r}; checks: {[c.name for c in self.checks]}")

    def text(self) -> str:
        lines = [f"{self.exercise}: {self.submission}"]
        for note in self.notes:
            first, *rest = note.splitlines() or [""]
            lines.append(f"  note: {first}")
            lines += [f"        {line}" for line in rest]
        for c in self.checks:
            lines.append(f"  {'PASS' if c.passed else 'FAIL'}  {c.name}")
            lines += [f"        {line}" for line in c.feedback.splitlines()]
        verdict = "every check passed" if self.passed else f"{len(self.failed())} of {len(self.checks)} checks failed"
        lines.append(f"score {self.score:g}/{self.max_score:g}: {verdict}")
        return "\n".join(lines)

    def gradescope(self, execution_time: float | None = None) -> dict:
        results = {
            "score": self.score,
            "output": "\n".join([f"{self.exercise}: {self.submission}", *self.notes]),
            "tests": [
                {
                    "name": c.name,
                    "score": c.score,
                    "max_score": c.max_score,
                    "status": "passed" if c.passed else "failed",
                    "output": c.feedback,
                    "visibility": "visible",
                }
                for c in self.checks
            ],
        }
        if execution_time is not None:
            results["execution_time"] = round(execution_time, 3)
        return results

    def write_json(self, path) -> None:
        write_json_atomically(self, Path(path))


def write_json_atomically(report: Report, path: Path, execution_time: float | None = None) -> None:
    """results.json through a temporary file and a rename: whatever was at `path` (a file, a
    link, a forgery left by a submission) is replaced whole and never read or followed."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    fd, temporary = tempfile.mkstemp(prefix=".results-", suffix=".json", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(report.gradescope(execution_time), f, indent=2)
            f.write("\n")
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def reproduce_line(exercise: str, submission: Path | str, seed: int) -> str:
    """The command that grades the same inputs again, shell-quoted, to run from the repository root."""
    path = Path(submission)
    try:
        shown = str(path.resolve().relative_to(REPO))
    except ValueError:
        shown = str(path.resolve())
    return f"reproduce: {shlex.join(['python3', 'harness/grade.py', exercise, shown, '--seed', str(seed)])}"


def show(value: float) -> str:
    """A value as a student should read it: integers plainly, NaN as never written."""
    if isinstance(value, float) and math.isnan(value):
        return "nan (never written)"
    if float(value).is_integer():
        return str(int(value))
    return repr(value)


@dataclass
class Mismatch:
    count: int
    index: int
    expected: float
    actual: float

    def describe(self, what: str = "out") -> str:
        return (f"{self.count} element(s) wrong; first at index {self.index}: "
                f"{what}[{self.index}] is {show(self.actual)}, should be {show(self.expected)}")


def compare_exact(expected: Sequence[float], actual: Sequence[float]) -> Mismatch | None:
    """Exact comparison (`!=`; NaN never equals). None when everything matches."""
    if len(expected) != len(actual):
        return Mismatch(abs(len(expected) - len(actual)), min(len(expected), len(actual)), float("nan"), float("nan"))
    bad = [i for i, (e, a) in enumerate(zip(expected, actual)) if e != a]
    if not bad:
        return None
    i = bad[0]
    return Mismatch(len(bad), i, expected[i], actual[i])
