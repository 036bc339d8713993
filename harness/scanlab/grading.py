"""Grading reports: per-check feedback for students, JSON for instructors.

A grader (the module harness/exercises.toml names for an exercise) builds the
submission into a harness-owned driver, feeds it inputs the harness made, reads
back the raw outputs, and compares them with references the harness computed
itself. Nothing the submission prints is read. The result is a `Report`: a list
of `Check`s, printed as text and written as Gradescope's results.json format
(`score`, `output`, and `tests` with `name`, `score`, `max_score`, `status`,
`output`, `visibility`).

Points and visibility per check come from harness/exercises.toml, the registry
of exercises (scanlab/registry.py; `points_table()`); each grader calls
`require_points` for its own checks when it is imported, so a missing or stale
entry stops it at once.

Two modes. "self-study" shows everything, expected values included.
"course" never shows a student an expected value: a grader passes both texts
to `Report.add(feedback=FULL, student=SAFE)`, the student sees SAFE, and FULL
becomes the check's instructor-only `detail`. `Report.text(instructor=False)`
and every test `output` of `Report.gradescope()` hold only what a student may
see; instructor detail goes into one extra test, visibility "hidden", worth 0.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from .paths import REPO
from .registry import EXERCISES, REGISTRY_FILE, VISIBILITIES, Points, RegistryError, tomllib  # noqa: F401 - re-exported


class NoGpu(Exception):
    """The submission could not be run: no usable GPU (exit status 3)."""


# ---- the submission file ------------------------------------------------------------------

# Every exercise's answer is a few kilobytes. A larger file is not graded, and is never read in
# whole: a student's 5 GB "source" must not become the grader's 5 GB of memory.
SUBMISSION_LIMIT_BYTES = 1 << 20
TOO_LARGE = (f"your file is larger than {SUBMISSION_LIMIT_BYTES >> 20} MiB; an answer to this exercise is a few "
             "kilobytes, so it was not read (scored 0)")


def read_submission(path: Path) -> bytes | None:
    """The submission's bytes, or None when it is larger than SUBMISSION_LIMIT_BYTES (reads at most one byte more)."""
    with open(path, "rb") as f:
        data = f.read(SUBMISSION_LIMIT_BYTES + 1)
    return None if len(data) > SUBMISSION_LIMIT_BYTES else data


# ---- what a report may print -------------------------------------------------------------

# A report carries text a submission controls: its prose answers, its compiler's messages, its
# program's output. Printed raw, an escape sequence could clear the instructor's terminal and draw
# a verdict of its own, and a bidirectional override could reorder a line. Every control
# character but newline and tab, and every bidi control, is shown as its escape instead.
_INVISIBLE = {c: f"\\x{c:02x}" for c in [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]}
_INVISIBLE.update({c: f"\\u{c:04x}" for c in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))})


def visible(text: str) -> str:
    """`text` with every control character except newline and tab written as an escape (\\x1b, \\u202e)."""
    return text.translate(_INVISIBLE)


# ---- points: harness/exercises.toml ([ID.checks], read by scanlab/registry.py) ------------

MODES = ("self-study", "course")  # course: what a student sees never holds an expected value
POINTS_FILE = REGISTRY_FILE
INSTRUCTOR_TEST = "instructor detail"  # the one extra, hidden, 0-point test of a course-mode results.json
PointsError = RegistryError  # the registry's points are malformed or do not match a grader's checks

_POINTS: dict[str, dict[str, Points]] | None = None
_DECLARED: dict[str, list[str]] = {}  # exercise -> the check names its grader declared (require_points)


def points_table() -> dict[str, dict[str, Points]]:
    """exercise -> check name -> Points: every exercise's [ID.checks] in harness/exercises.toml, read
    and checked when scanlab.registry is imported, so a broken file stops the graders loudly before
    anything is graded."""
    global _POINTS
    if _POINTS is None:
        _POINTS = {e.id: dict(e.checks) for e in EXERCISES.values()}
    return _POINTS


def require_points(exercise: str, names, table: dict[str, dict[str, Points]] | None = None) -> None:
    """A grader's import-time promise: exercises.toml has exactly these checks for `exercise`."""
    if table is None:  # the grader's own promise, kept for test_registry.py (the report's order)
        table = points_table()
        _DECLARED[exercise] = list(names)
    have = table.get(exercise, {})
    missing = [n for n in names if n not in have]
    extra = [n for n in have if n not in set(names)]
    if missing or extra:
        raise PointsError(f"{POINTS_FILE}: [{exercise}.checks] does not match its grader: "
                          + "; ".join(([f"no entry for {missing}"] if missing else [])
                                      + ([f"entries for checks it does not have: {extra}"] if extra else [])))


def declared_checks(exercise: str) -> list[str]:
    """The check names `exercise`'s grader declared when it was imported ([] before that)."""
    return list(_DECLARED.get(exercise, []))


def max_score(exercise: str) -> float:
    """An exercise's maximum, whatever the outcome: the sum of its checks' points."""
    return sum(p.points for p in points_table()[exercise].values())


# ---- checks and reports -----------------------------------------------------------------

@dataclass
class Check:
    name: str
    passed: bool
    feedback: str = ""  # shown to the student (student-safe in course mode)
    max_score: float = 1.0
    detail: str = ""  # instructor-only: never shown to a student, never in a visible test's output
    visibility: str = "visible"
    unchecked: bool = False  # answered, but this copy cannot check it (the student release): no fault, no score
    earned: float | None = None  # a passed check worth part of its points (drill 05's speed): what it earned

    @property
    def score(self) -> float:
        if not self.passed or self.unchecked:
            return 0.0
        return self.max_score if self.earned is None else min(self.max_score, max(0.0, self.earned))


@dataclass
class Report:
    exercise: str
    submission: str
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # shown to the student and the instructor, not scored
    mode: str = "self-study"
    instructor_notes: list[str] = field(default_factory=list)  # course mode: what only the instructor sees
    not_graded: str = ""  # why this submission could not be graded here (no GPU): no checks, no score
    # Gradescope's top-level leaderboard entries ({"name", "value"[, "order"]}), written into
    # results.json when there are any (drill 05's speed; grade.py class ranks by them too)
    leaderboard: list[dict] = field(default_factory=list)
    speed: dict = field(default_factory=dict)  # drill 05: per timed size, the GB/s of the submission, CUB, the copy

    @property
    def course(self) -> bool:
        return self.mode == "course"

    def add(self, name: str, passed: bool, feedback: str = "", max_score: float | None = None, *,
            student: str | None = None, detail: str = "", visibility: str | None = None,
            unchecked: bool = False, earned: float | None = None) -> Check:
        """Add a check; its points and visibility come from exercises.toml unless given.

        `feedback` is the full text (self-study). `student`, when given, is the
        course-mode text without expected values: in course mode it is what the
        student sees, and the full text becomes instructor-only detail."""
        if max_score is None:  # an explicit max_score (grade.py's "not graded" check) needs no entry
            entry = points_table().get(self.exercise)
            if entry is not None:
                if name not in entry:  # the import-time check makes this a grader bug, never a student's
                    raise PointsError(f"{POINTS_FILE}: [{self.exercise}.checks] has no entry for the check {name!r}")
                max_score = entry[name].points
                visibility = entry[name].visibility if visibility is None else visibility
        if self.course and student is not None:
            feedback, detail = student, "\n".join(t for t in (detail, feedback) if t and t != student)
        check = Check(name, passed, feedback, 1.0 if max_score is None else max_score, detail,
                      visibility or "visible", unchecked, earned)
        self.checks.append(check)
        return check

    def note(self, full: str, student: str | None = None) -> None:
        """A note for everyone; in course mode, `student` is shown and `full` kept for the instructor."""
        if self.course and student is not None:
            if student:
                self.notes.append(student)
            self.instructor_notes.append(full)
        else:
            self.notes.append(full)

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

    def text(self, instructor: bool = True) -> str:
        """The report as a person reads it; instructor=False leaves out every instructor-only line."""
        lines = [f"{self.exercise}: {self.submission}"]

        def indented(label: str, text: str) -> None:
            first, *rest = text.splitlines() or [""]
            lines.append(f"  {label}: {first}")
            lines.extend(f"{' ' * (len(label) + 4)}{line}" for line in rest)

        for note in self.notes:
            indented("note", note)
        if instructor:
            for note in self.instructor_notes:
                indented("instructor note", note)
        if self.not_graded:
            lines += [f"  NOT GRADED  {self.not_graded}", "not graded (no score): " + self.not_graded.split(":")[0]]
            return visible("\n".join(lines))
        for c in self.checks:
            points = " (not scored)" if c.max_score == 0 else f" ({c.max_score:g} points)" if c.max_score != 1 else ""
            if c.earned is not None and c.passed:
                points = f" ({c.score:.2f} of {c.max_score:g} points)"
            label = "ANSWERED" if c.unchecked else "PASS" if c.passed else "FAIL"
            lines.append(f"  {label}  {c.name}{points}")
            lines += [f"        {line}" for line in c.feedback.splitlines()]
            if instructor and c.detail:
                lines += [f"        instructor: {line}" for line in c.detail.splitlines()]
        verdict = "every check passed" if self.passed else f"{len(self.failed())} of {len(self.checks)} checks failed"
        unchecked = sum(c.unchecked for c in self.checks)
        if unchecked:  # no score can be given here: say what was done and who checks the rest
            rest = "" if unchecked == len(self.checks) else \
                "; the others: " + ("passed" if self.passed else f"{len(self.failed())} failed")
            lines.append(f"{unchecked} of {len(self.checks)} answered, checked by your instructor (no score "
                         f"here: this copy has no reference values){rest}")
        else:
            lines.append(f"score {self.score:g}/{self.max_score:g}: {verdict}")
        return visible("\n".join(lines))

    def instructor_text(self) -> str:
        """Everything only the instructor may see, or "" when there is none (always, in self-study)."""
        parts = [f"note: {note}" for note in self.instructor_notes]
        parts += [f"{c.name}:\n" + "\n".join(f"  {line}" for line in c.detail.splitlines())
                  for c in self.checks if c.detail]
        return visible("\n".join(parts))

    def gradescope(self, execution_time: float | None = None) -> dict:
        """Gradescope's results.json. A test's `output` is its student feedback, never instructor
        detail; that goes, when there is any, into one extra test visible to instructors only."""
        tests = [
            {
                "name": c.name,
                "score": c.score,
                "max_score": c.max_score,
                "status": "passed" if c.passed else "failed",
                "output": visible(c.feedback),
                "visibility": c.visibility,
            }
            for c in self.checks
        ]
        if self.not_graded:  # no score at all: a grade book leaves it alone, and nobody reads it as a 0
            results = {"output": visible("\n".join([f"{self.exercise}: {self.submission}", *self.notes,
                                                    f"not graded: {self.not_graded}"])),
                       "tests": [{"name": f"{self.exercise}: not graded", "output": visible(self.not_graded),
                                  "visibility": "visible"}]}
            if execution_time is not None:
                results["execution_time"] = round(execution_time, 3)
            return results
        hidden = self.instructor_text()
        if hidden:
            # Worth 0 and "passed" (0 of 0 is full marks), so it changes no score and no verdict.
            tests.append({"name": f"{self.exercise}: {INSTRUCTOR_TEST}", "score": 0.0, "max_score": 0.0,
                          "status": "passed", "output": hidden, "visibility": "hidden"})
        results = {
            "score": self.score,
            "output": visible("\n".join([f"{self.exercise}: {self.submission}", *self.notes])),
            "tests": tests,
        }
        if execution_time is not None:
            results["execution_time"] = round(execution_time, 3)
        if self.leaderboard:
            results["leaderboard"] = [dict(entry) for entry in self.leaderboard]
        return results

    def write_json(self, path) -> None:
        write_json_atomically(self, Path(path))


def write_json_atomically(report: Report, path: Path, execution_time: float | None = None) -> None:
    """results.json through a temporary file and a rename (see write_results_atomically)."""
    write_results_atomically(report.gradescope(execution_time), Path(path))


def write_results_atomically(results: dict, path: Path) -> None:
    """JSON through a temporary file and a rename: whatever was at `path` (a file, a link, a
    forgery left by a submission) is replaced whole and never read or followed."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    fd, temporary = tempfile.mkstemp(prefix=".results-", suffix=".json", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)
            f.write("\n")
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def shown_path(submission: Path | str) -> str:
    """The submission's path relative to the repository root when it lies inside, else absolute."""
    path = Path(os.path.abspath(submission))
    try:
        return str(path.relative_to(REPO.resolve()))
    except ValueError:
        try:
            return str(path.resolve().relative_to(REPO.resolve()))
        except ValueError:
            return str(path)


def reproduce_line(exercise: str, submission: Path | str, seed: int) -> str:
    """The command that grades the same inputs again, shell-quoted, to run from the repository root."""
    return "reproduce: " + shlex.join(["python3", "harness/grade.py", exercise, shown_path(submission),
                                       "--seed", str(seed)])


SEED_WORDS = re.compile(r" --seed \d+$")
NO_SEED = "(with no seed it draws fresh hidden inputs; the seed of this grade is your instructor's)"


def student_reproduce(reproduce: str) -> str:
    """A course-mode student's copy of a reproduce_line: the same command without `--seed S`, naming
    the file as the student has it (its base name: the grading machine's folders mean nothing to them).
    The seed stays with the instructor: with it, a file could be fitted to the very inputs that grade it."""
    words = shlex.split(SEED_WORDS.sub("", reproduce).removeprefix("reproduce: "))
    if len(words) >= 4:
        words[3] = Path(words[3]).name
    return f"reproduce: {shlex.join(words)} {NO_SEED}"


def hidden_note(report: Report, seed: int, reproduce: str) -> None:
    """The note every seeded grader starts with: the seed and the reproduce line; in course mode the
    student's copy has neither the seed nor `--seed`, and the full note is the instructor's."""
    report.note(f"hidden inputs drawn with seed {seed}; {reproduce}",
                student=f"hidden inputs drawn from a seed your instructor keeps; {student_reproduce(reproduce)}")


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

    def describe(self, what: str = "out", expected: bool = True) -> str:
        """expected=False (course mode): where and what the submission produced, not what it should be."""
        text = (f"{self.count} element(s) wrong; first at index {self.index}: "
                f"{what}[{self.index}] is {show(self.actual)}")
        return f"{text}, should be {show(self.expected)}" if expected else text


def compare_exact(expected: Sequence[float], actual: Sequence[float]) -> Mismatch | None:
    """Exact comparison (`!=`; NaN never equals). None when everything matches."""
    if len(expected) != len(actual):
        return Mismatch(abs(len(expected) - len(actual)), min(len(expected), len(actual)), float("nan"), float("nan"))
    bad = [i for i, (e, a) in enumerate(zip(expected, actual)) if e != a]
    if not bad:
        return None
    i = bad[0]
    return Mismatch(len(bad), i, expected[i], actual[i])
