#!/usr/bin/env python3
"""Gradescope's autograder: grade every exercise in one submission, write one results.json.

    python3 harness/gradescope/run_autograder.py [--root /autograder] [--seed S]
    python3 harness/gradescope/run_autograder.py --prepare     (setup.sh: warm the caches, check the graders)

Called by the `run_autograder` script at the top of build/autograder.zip; the
root is $SCANLAB_AUTOGRADER_ROOT (default /autograder), laid out as Gradescope
lays it out: ROOT/submission (the student's upload), ROOT/results (where
results.json goes). See harness/README.md, "Gradescope".

Each exercise is looked for by its file name (the starter's name in
exercises/), at the top of the submission or one folder down, and graded in
course mode through grade.py's `grade()`, exactly as `grade.py EXERCISE FILE
--mode course` would. Every exercise appears in results.json whatever
happens to it, always with the same maximum: graded (its checks, named
"EXERCISE: check"), not submitted, not a usable file, needs a GPU this machine
does not have, or not graded because the grader failed. Students see the
tests' outputs; the instructor-only text (full reports, seeds, tracebacks) goes
to standard output, which results.json marks hidden.

Exit status: 0 results.json written and every submitted exercise graded (the
scores are whatever they are); 4 results.json written, but something could not
be graded (the tests say what); 2 bad command line. On any other status the
calling script writes a fallback results.json itself.
"""

from __future__ import annotations

import argparse
import os
import random
import stat
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

HARNESS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HARNESS))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import grade as grade_cli  # noqa: E402  harness/grade.py: GRADERS, grade()
from results_schema import problems as schema_problems  # noqa: E402
from scanlab.grading import Report, max_score, visible, write_results_atomically  # noqa: E402  max_score: points.toml

EXIT_WRITTEN = 0
EXIT_USAGE = 2
EXIT_NOT_ALL_GRADED = 4

# The file a student submits for each exercise: the starter's name in exercises/
# (test_gradescope.py checks that each exists and that every grader has one).
EXERCISE_FILES = {
    "day31": "day31_shift_then_scan.cu",
    "drill01": "01_exclusive_to_inclusive.cpp",
    "drill02": "02_segmented_scan.cpp",
    "drill03": "03_scan_analysis.md",
}
STARTERS = HARNESS.parent / "exercises"

MAX_READ_BYTES = 16 << 20  # bounds what is copied; the graders apply their own (smaller) size limits
MAX_LISTED = 20  # ignored files named in the output, then a count
STUDENT_VISIBLE = "visible"
GPU_MESSAGE = ("{exercise} needs an NVIDIA GPU, and this grading machine has none ({why}). Your file was "
               "received ({name}) and is graded on a GPU machine with `grade.py class` by your instructor, "
               "whose score replaces this 0.")
CRASH_MESSAGE = ("not graded: the grader itself failed (not your code's fault; tell your instructor, "
                 "who sees the details)")


@dataclass
class Found:
    """What the submission holds for one exercise."""
    exercise: str
    path: Path | None = None  # the file to grade, as found (never followed if a link)
    shown: str = ""  # its path inside the submission, as the student sees it
    problem: str = ""  # why it cannot be graded ("" when it can, or when nothing was found)
    also: tuple[str, ...] = ()  # other candidates, not graded


# ---- finding the files ----------------------------------------------------------------------

def _entries(folder: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []


def _unusable(path: Path, shown: str) -> str:
    """Why the entry at `path` is not a file we grade, or "" (never follows a link)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError as exc:
        return f"not graded: {shown} cannot be read ({exc.strerror})"
    if stat.S_ISLNK(mode):
        return f"not graded: {shown} is a symbolic link; submit the file itself"
    if stat.S_ISDIR(mode):
        return f"not graded: {shown} is a folder, not a file"
    if not stat.S_ISREG(mode):
        return f"not graded: {shown} is not a regular file"
    return ""


def find_submissions(folder: Path) -> tuple[dict[str, Found], list[str]]:
    """Each exercise's file at the top of `folder` or one folder down (by name), and the other
    entries, ignored. Links are never followed, not even to a folder."""
    by_name = {name: exercise for exercise, name in EXERCISE_FILES.items()}
    candidates: dict[str, list[tuple[Path, str]]] = {exercise: [] for exercise in EXERCISE_FILES}
    ignored: list[str] = []
    top = _entries(folder)
    for depth in (0, 1):  # every top-level candidate before any one folder down
        for entry in top:
            if depth == 0:
                if entry.name in by_name:
                    candidates[by_name[entry.name]].append((Path(entry.path), entry.name))
                elif not entry.is_dir(follow_symlinks=False):
                    ignored.append(entry.name)
                continue
            if entry.name in by_name or not entry.is_dir(follow_symlinks=False):
                continue
            inside = _entries(Path(entry.path))
            if not inside:
                ignored.append(entry.name + "/")
            for sub in inside:
                shown = f"{entry.name}/{sub.name}"
                if sub.name in by_name:
                    candidates[by_name[sub.name]].append((Path(sub.path), shown))
                else:
                    ignored.append(shown + ("/" if sub.is_dir(follow_symlinks=False) else ""))
    found = {}
    for exercise, options in candidates.items():
        if not options:
            found[exercise] = Found(exercise)
            continue
        problems = [(path, shown, _unusable(path, shown)) for path, shown in options]
        usable = [p for p in problems if not p[2]]
        path, shown, problem = usable[0] if usable else problems[0]
        found[exercise] = Found(exercise, path, shown, problem,
                                tuple(s for _, s, _ in problems if s != shown))
    return found, ignored


def copy_private(found: Found, into: Path) -> Path:
    """The submitted file's bytes in a folder only we can read, under the exercise's name.
    O_NOFOLLOW and O_NONBLOCK: a link or a FIFO swapped in after the check is refused, not
    followed or waited on. Raises OSError (with a student-readable message) on failure."""
    fd = os.open(found.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{found.shown} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_READ_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_READ_BYTES:
        raise OSError(f"{found.shown} is over {MAX_READ_BYTES >> 20} MiB")
    target = into / EXERCISE_FILES[found.exercise]
    target.write_bytes(data)
    return target


# ---- one exercise's tests -----------------------------------------------------------------

def test_entry(name: str, score: float, max_score: float, output: str, passed: bool = False,
               visibility: str = STUDENT_VISIBLE) -> dict:
    return {"name": name, "score": score, "max_score": max_score, "status": "passed" if passed else "failed",
            "output": output, "visibility": visibility}


def instructor_text(report: Report) -> str:
    """The full report, instructor detail included once course mode provides it."""
    try:
        return report.text(instructor=True)
    except TypeError:  # a Report without the instructor switch: its text is all there is
        return report.text()


def maximum(exercise: str) -> float:
    """The exercise's points whatever the outcome (the sum of its entries in harness/points.toml,
    the graders' own table), so a test for an exercise that was not graded weighs what a graded
    one would."""
    return float(max_score(exercise))


def grade_one(found: Found, gpu_problem: str | None, seed: int, private: Path, log) -> tuple[list[dict], str, bool]:
    """(tests, a line for the summary, graded) for one exercise."""
    exercise = found.exercise
    name = EXERCISE_FILES[exercise]
    if found.path is None:
        points = maximum(exercise)
        return ([test_entry(f"{exercise}: submitted", 0.0, points,
                            f"not submitted: no file named {name} at the top of your submission or one folder "
                            "down")], f"{exercise}: not submitted (0/{points:g})", True)
    if found.problem:
        points = maximum(exercise)
        return ([test_entry(f"{exercise}: submitted", 0.0, points, found.problem)],
                f"{exercise}: {found.problem} (0/{points:g})", True)
    if grade_cli.GRADERS[exercise][2] and gpu_problem is not None:
        points = maximum(exercise)
        message = GPU_MESSAGE.format(exercise=exercise, why=gpu_problem, name=found.shown)
        return ([test_entry(f"{exercise}: graded on a GPU machine", 0.0, points, message)],
                f"{exercise}: {found.shown} received; graded on a GPU machine later (0/{points:g} here)", True)
    try:
        folder = private / exercise
        folder.mkdir()
        try:
            copy = copy_private(found, folder)
        except OSError as exc:
            points = maximum(exercise)
            why = exc.strerror or str(exc)
            return ([test_entry(f"{exercise}: submitted", 0.0, points, f"not graded: {why}")],
                    f"{exercise}: not graded: {why} (0/{points:g})", True)
        with tempfile.TemporaryDirectory(prefix=f"scanlab-{exercise}-") as work:
            report = grade_cli.grade(exercise, copy, Path(work), seed, "course")
        log(instructor_text(report))
        tests = []
        for test in report.gradescope()["tests"]:
            test = dict(test)
            if not test["name"].startswith(f"{exercise}: "):  # the report's own hidden test carries it already
                test["name"] = f"{exercise}: {test['name']}"
            tests.append(test)
        if not tests:  # a report with no checks would silently drop the exercise's points
            raise RuntimeError(f"the {exercise} grader returned a report with no checks")
        line = f"{exercise}: {found.shown}: {report.score:g}/{report.max_score:g}"
        for note in report.notes:  # student-safe in course mode; the private copy's path means nothing to them
            line += "\n  " + note.replace(str(copy), found.shown).replace("\n", "\n  ")
        return tests, line, True
    except Exception:  # noqa: BLE001 - any grader bug still leaves this exercise in results.json
        log(f"{exercise}: internal error while grading {found.shown}:\n{traceback.format_exc(limit=8)}")
        points = maximum(exercise)
        return ([test_entry(f"{exercise}: graded", 0.0, points, CRASH_MESSAGE)],
                f"{exercise}: {CRASH_MESSAGE} (0/{points:g})", False)


# ---- the whole submission ---------------------------------------------------------------------

def gpu_check(found: dict[str, Found], log) -> str | None:
    """The Day 31 grader's own GPU probe, made only if a GPU exercise was submitted."""
    wanted = [f for f in found.values() if grade_cli.GRADERS[f.exercise][2] and f.path is not None and not f.problem]
    if not wanted:
        return None
    try:
        from scanlab.grade_day31 import probe_gpu

        return probe_gpu()
    except Exception as exc:  # noqa: BLE001 - a failing probe means no usable GPU, said plainly
        log(f"GPU probe raised:\n{traceback.format_exc(limit=4)}")
        return f"the GPU check failed: {exc}"


def isolation_line() -> str:
    try:
        from scanlab.sandbox import isolation

        level, line = isolation(gpu=False)
        return f"isolation: {line}" if level == "full" else f"isolation (not full; {level}): {line}"
    except Exception as exc:  # noqa: BLE001
        return f"isolation: unknown ({exc})"


def build_results(root: Path, seed: int, started: float, log) -> tuple[dict, bool]:
    found, ignored = find_submissions(root / "submission")
    isolation = isolation_line()
    log(isolation)
    log(f"seed {seed} for every exercise's hidden inputs")
    gpu_problem = gpu_check(found, log)
    if gpu_problem:
        log(f"no usable GPU: {gpu_problem}")
    tests: list[dict] = []
    lines: list[str] = []
    all_graded = True
    with tempfile.TemporaryDirectory(prefix="scanlab-autograder-") as private:
        os.chmod(private, 0o700)
        for exercise in EXERCISE_FILES:  # the course's exercises: the stretch drills are not part of it
            got, line, graded = grade_one(found[exercise], gpu_problem, seed, Path(private), log)
            tests += got
            lines.append(line)
            all_graded &= graded
            if found[exercise].also:
                lines.append(f"  also found, not graded: {', '.join(found[exercise].also)}")
    if ignored:
        shown = ", ".join(ignored[:MAX_LISTED]) + (f" and {len(ignored) - MAX_LISTED} more"
                                                    if len(ignored) > MAX_LISTED else "")
        lines.append(f"ignored (not an exercise file): {shown}")
    score = sum(t["score"] for t in tests)
    out_of = sum(t["max_score"] for t in tests)
    output = "\n".join([f"scan-lab autograder: {score:g}/{out_of:g}", isolation, *lines])
    results = {"score": score, "execution_time": round(time.monotonic() - started, 3), "output": output,
               "stdout_visibility": "hidden", "tests": tests}
    return results, all_graded


def not_graded_results(why: str, started: float) -> dict:
    """The results.json of a run that could not grade: every exercise 0, saying so."""
    tests = []
    for exercise in EXERCISE_FILES:
        try:
            points = maximum(exercise)
        except Exception:  # noqa: BLE001 - the table itself may be what failed; 0 of 1 still says "not graded"
            points = 1.0
        tests.append(test_entry(f"{exercise}: graded", 0.0, points, f"not graded: {why}"))
    return {"score": 0.0, "execution_time": round(time.monotonic() - started, 3),
            "output": f"scan-lab autograder: not graded: {why}", "stdout_visibility": "hidden", "tests": tests}


def write_atomically(results: dict, path: Path) -> None:
    """results.json with every text a submission could have put there (its notes, its file names)
    shown with its control characters escaped (scanlab.grading.visible)."""
    results = {**results, "output": visible(results.get("output", "")),
               "tests": [{**test, "name": visible(test["name"]), "output": visible(test["output"])}
                         for test in results.get("tests", [])]}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_results_atomically(results, path)


def prepare(seed: int) -> int:
    """setup.sh's check: grade every CPU exercise's untouched starter (building and caching the
    drivers on the way) so a missing tool fails the image build, not a student's submission."""
    print(isolation_line())
    failed = 0
    for exercise in EXERCISE_FILES:
        needs_gpu = grade_cli.GRADERS[exercise][2]
        if needs_gpu:
            print(f"{exercise}: needs a GPU, graded elsewhere; worth {maximum(exercise):g} here")
            continue
        try:
            with tempfile.TemporaryDirectory(prefix="scanlab-starter-") as work:
                report = grade_cli.grade(exercise, STARTERS / EXERCISE_FILES[exercise], Path(work), seed, "course")
        except Exception:  # noqa: BLE001
            failed += 1
            print(f"{exercise}: the grader failed on the untouched starter:\n{traceback.format_exc(limit=8)}")
            continue
        print(f"{exercise}: the untouched starter scores {report.score:g}/{report.max_score:g}")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    started = time.monotonic()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path,
                        default=Path(os.environ.get("SCANLAB_AUTOGRADER_ROOT") or "/autograder"),
                        help="Gradescope's folder (default $SCANLAB_AUTOGRADER_ROOT, else /autograder)")
    parser.add_argument("--seed", type=int, help="seed for the hidden inputs (default: drawn, printed)")
    parser.add_argument("--prepare", action="store_true", help="check the graders on the starters (setup.sh)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return EXIT_WRITTEN if exc.code == 0 else EXIT_USAGE
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 1_000_000)
    if args.prepare:
        return prepare(seed)

    def log(text: str) -> None:  # standard output: the instructor's, hidden from students
        print(text, flush=True)

    target = args.root / "results" / "results.json"
    try:
        results, all_graded = build_results(args.root, seed, started, log)
    except Exception:  # noqa: BLE001 - still a valid results.json, never an empty one
        log(f"internal error:\n{traceback.format_exc(limit=8)}")
        results, all_graded = not_graded_results("the autograder itself failed (tell your instructor)", started), False
    found = schema_problems(results)
    if found:  # our own bug; the student still gets a file Gradescope accepts
        log("results.json would not match results.schema.json:\n" + "\n".join(found))
        results, all_graded = not_graded_results("the autograder produced an invalid results file (tell your "
                                                 "instructor)", started), False
    write_atomically(results, target)
    log(f"score {results['score']:g}/{sum(t['max_score'] for t in results['tests']):g}; wrote {target}")
    return EXIT_WRITTEN if all_graded else EXIT_NOT_ALL_GRADED


if __name__ == "__main__":
    sys.exit(main())
