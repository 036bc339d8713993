"""Grading a whole class: `grade.py class` and `grade.py merge`.

    python3 harness/grade.py class CLASS_DIR --out OUT_DIR [--jobs N] [--seed S]
                                   [--mode course|self-study] [--shard I/N] [--force]
                                   [--require-sandbox]
    python3 harness/grade.py merge OUT_DIR... --out DIR

CLASS_DIR holds one folder per student, named as the grade book should show the
student. Each holds any subset of the exercise files under their names in
exercises/ (at the top of the folder, or one folder down, as a zip unpacks).
Everything else is listed in the student's report and ignored.

OUT_DIR gets grades.csv (a row per student: one score column per exercise,
total, maximum, note), class.json (seed, mode, shard, harness version, maxima)
and, per student, results.json (Gradescope's format, every exercise's tests
merged, names prefixed by the exercise), report.txt (the instructor's text) and
state.json (what a rerun needs to skip an unchanged student).

Exit status: 0 every submission was graded (whatever the scores); 1 one or more
could not be (no GPU for day31, no isolation with --require-sandbox, a grader
error, an unusable folder name, an exercise file found twice); 2 bad command
line. merge: 0 merged, every student once; 1 merged, but a student is missing,
graded twice, or not graded; 2 bad command line or shards that do not belong
together (different seed, mode, harness version or maxima).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import hashlib
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from . import EXIT_FAIL, EXIT_PASS, EXIT_USAGE
from .grading import SUBMISSION_LIMIT_BYTES, TOO_LARGE, visible
from .paths import HARNESS, REPO

# The file each exercise is submitted under: the starter's name in exercises/.
EXERCISE_FILES = {
    "day31": "day31_shift_then_scan.cu",
    "drill01": "01_exclusive_to_inclusive.cpp",
    "drill02": "02_segmented_scan.cpp",
    "drill03": "03_scan_analysis.md",
}
FILE_EXERCISE = {name: exercise for exercise, name in EXERCISE_FILES.items()}
OUR_FILES = {"grades.csv", "class.json"}  # a student folder so named would collide with them in OUT_DIR
SKIPPED_FOLDERS = {"__MACOSX"}  # resource forks a macOS zip adds: never a submission
MAX_LISTED = 40  # other files listed per student; a folder of thousands is summarised

USAGE = ("usage: python3 harness/grade.py class CLASS_DIR --out OUT_DIR [--jobs N] [--seed S] "
         "[--mode course|self-study] [--shard I/N] [--force] [--require-sandbox]\n"
         "       python3 harness/grade.py merge OUT_DIR... --out DIR")


class Usage(Exception):
    """A bad command line or unusable input: one line, then exit status 2."""


def _cli():
    """harness/grade.py, imported lazily: it imports this module's caller."""
    import grade  # harness/ is on sys.path whenever grade.py or the test suite runs

    return grade


# ---- the harness version: what a rerun or a merge must agree on ------------------------------

def harness_files() -> list[Path]:
    """Every file that can change a verdict: graders, drivers, points, starters; not tests or docs."""
    found = [HARNESS / "grade.py"]
    for path in sorted(HARNESS.rglob("*")):
        relative = path.relative_to(HARNESS)
        top = relative.parts[0]
        if (not path.is_file() or top in {"corpus", "planted", "gradescope"} or "__pycache__" in relative.parts
                or top.startswith(".") or path.name.startswith("test_") or path.suffix in {".md", ".pyc"}
                or path.name in {"conftest.py", "pytest.ini", "requirements.txt", "grade.py"}
                or path.name.endswith(".sh")):
            continue
        found.append(path)
    found += [REPO / "exercises" / name for name in EXERCISE_FILES.values()]
    return [path for path in found if path.is_file()]


def harness_version() -> dict:
    digest = hashlib.sha256()
    for path in harness_files():
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    version = {"files": f"sha256:{digest.hexdigest()[:20]}", "commit": None}
    try:  # the commit is for people; the file hash is what must match (it sees uncommitted edits)
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "harness", "exercises"],
                               capture_output=True, text=True, timeout=10)
        if head.returncode == 0:
            version["commit"] = head.stdout.strip() + ("+uncommitted" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return version


# ---- finding a student's files -----------------------------------------------------------

@dataclass
class Found:
    files: dict[str, Path] = field(default_factory=dict)  # exercise -> the file to grade
    shown: dict[str, str] = field(default_factory=dict)  # exercise -> its path inside the student's folder
    ignored: list[str] = field(default_factory=list)  # everything else, as the report lists it
    problems: dict[str, str] = field(default_factory=dict)  # exercise -> why it cannot be graded


def _other(name: str, entry: os.DirEntry) -> str:
    if entry.is_symlink():
        return f"{name} (a link: never followed)"
    if entry.is_dir(follow_symlinks=False):
        return f"{name}/"
    wanted = {n.lower(): n for n in EXERCISE_FILES.values()}.get(entry.name.lower())
    if wanted and wanted != entry.name:
        return f"{name} (named almost like {wanted}: rename it exactly to have it graded)"
    return name


def discover(folder: Path) -> Found:
    """The exercise files at the top of `folder`, or one folder down; a top-level file wins."""
    found = Found()
    below: dict[str, list[tuple[Path, str]]] = {}
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        exercise = FILE_EXERCISE.get(entry.name)
        if exercise and entry.is_file(follow_symlinks=False):
            found.files[exercise], found.shown[exercise] = Path(entry.path), entry.name
        elif entry.is_dir(follow_symlinks=False) and entry.name not in SKIPPED_FOLDERS:
            for inner in sorted(os.scandir(entry.path), key=lambda e: e.name):
                shown = f"{entry.name}/{inner.name}"
                exercise = FILE_EXERCISE.get(inner.name)
                if exercise and inner.is_file(follow_symlinks=False):
                    below.setdefault(exercise, []).append((Path(inner.path), shown))
                else:
                    found.ignored.append(_other(shown, inner))
        else:
            found.ignored.append(_other(entry.name, entry))
    for exercise, candidates in below.items():
        if exercise in found.files:
            found.ignored += [f"{shown} (the one at the top of the folder was graded)" for _, shown in candidates]
        elif len(candidates) == 1:
            found.files[exercise], found.shown[exercise] = candidates[0]
        else:
            found.problems[exercise] = (f"{EXERCISE_FILES[exercise]} is in more than one folder "
                                        f"({', '.join(shown for _, shown in candidates)}): none was graded; "
                                        "keep one and grade again")
    return found


def name_problem(name: str) -> str | None:
    """Why a student folder's name cannot be a folder in OUT_DIR and a CSV cell, or None."""
    if name in ("", ".", "..") or "/" in name or "\\" in name:
        return "not usable as a folder name"
    if "\t" in name or "\n" in name or visible(name) != name:  # C0 and C1 controls, bidi overrides
        return "holds control characters (a newline, a tab, an escape, a bidi override, ...)"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid UTF-8"
    if name in OUR_FILES:
        return f"collides with OUT_DIR/{name}"
    return None


# ---- grading -------------------------------------------------------------------------------

@dataclass
class Outcome:
    exercise: str
    status: str  # "graded", "not submitted", "not graded"
    why: str = ""  # for "not graded": the reason, one line
    report: object = None  # scanlab.grading.Report when graded
    seconds: float = 0.0
    error: str = ""  # a grader's traceback, for report.txt and stderr

    @property
    def score(self) -> float:
        return self.report.score if self.report is not None else 0.0


@dataclass
class Setting:
    seed: int
    mode: str
    version: dict
    maxima: dict[str, float | None]
    gpu: str | None  # None: a usable GPU; otherwise why not (probed once, only if a day31 is submitted)
    isolation: dict[str, tuple[str, str]]  # "cpu"/"gpu" -> (level, line)
    require_sandbox: bool


def grade_one(setting: Setting, exercise: str, path: Path, gpu_lock: threading.Lock) -> Outcome:
    cli = _cli()
    gpu = cli.GRADERS[exercise][2]
    if gpu and setting.gpu is not None:
        return Outcome(exercise, "not graded", "no GPU")  # the probe's reason is in class.json and report.txt
    if exercise in cli.RUNS_CODE and setting.require_sandbox:
        level, line = setting.isolation["gpu" if gpu else "cpu"]
        if level != "full":
            return Outcome(exercise, "not graded", f"no isolation ({line})")
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix=f"scanlab-class-{exercise}-") as tmp:
            # GPU checks take the GPU one at a time (limits and timings stay per student); the grader
            # holds the lock only while it runs kernels, so other students compile meanwhile.
            report = cli.grade(exercise, path, Path(tmp), setting.seed, setting.mode,
                               gpu_lock=gpu_lock if gpu else None)
    except Exception as exc:  # noqa: BLE001 - one grader bug must not stop the class
        from .grading import NoGpu

        why = f"the grader lost the GPU ({exc})" if isinstance(exc, NoGpu) else "grader error"
        return Outcome(exercise, "not graded", why, seconds=time.monotonic() - started,
                       error=traceback.format_exc(limit=8))
    return Outcome(exercise, "graded", report=report, seconds=time.monotonic() - started)


def _points(value: float) -> str:
    """A score as a CSV cell and a person read it: 4, 2.5, never 4.0 or 1e+06."""
    value = float(value)
    return str(int(value)) if value.is_integer() else f"{value:.3f}".rstrip("0")


def _report_text(report, instructor: bool = True) -> str:
    try:
        return report.text(instructor=instructor)
    except TypeError:  # a Report from before course mode: its text() is all instructor text anyway
        return report.text()


def student_results(outcomes: dict[str, Outcome], maxima: dict[str, float | None]) -> dict:
    """One Gradescope results.json for every exercise: tests merged, names prefixed by the exercise."""
    tests, output, hidden = [], [], False
    for exercise, outcome in outcomes.items():
        maximum = maxima.get(exercise) or 0.0
        if outcome.status == "graded":
            graded = outcome.report.gradescope()
            hidden |= graded.get("stdout_visibility") == "hidden"
            output.append(graded.get("output", ""))
            for test in graded["tests"]:
                test = dict(test)
                if not test["name"].startswith(f"{exercise}: "):
                    test["name"] = f"{exercise}: {test['name']}"
                tests.append(test)
            continue
        if outcome.status == "not submitted":
            name, text = (f"{exercise}: submitted",
                          f"not submitted: no {EXERCISE_FILES[exercise]} at the top of your folder "
                          "(or one folder down); it scores 0")
        else:
            name, text = f"{exercise}: graded", _student_why(exercise, outcome)
        output.append(f"{exercise}: {text}")
        tests.append({"name": name, "score": 0.0, "max_score": maximum, "status": "failed", "output": text,
                      "visibility": "visible"})
    results = {"score": sum(test["score"] for test in tests), "output": "\n".join(output), "tests": tests,
               "execution_time": round(sum(o.seconds for o in outcomes.values()), 3)}
    if hidden:
        results["stdout_visibility"] = "hidden"
    return results


def _student_why(exercise: str, outcome: Outcome) -> str:
    if outcome.why == "no GPU":
        return ("not graded here: this exercise needs a GPU; it is graded on a GPU machine, with "
                "`python3 harness/grade.py class`, by your instructor")
    if outcome.why == "grader error":
        return "not graded: the grader itself failed (not your code's fault; your instructor has the details)"
    return f"not graded: {outcome.why}"


def student_report(student: str, found: Found, outcomes: dict[str, Outcome], setting: Setting) -> str:
    lines = [f"student: {student}",
             f"seed {setting.seed}, mode {setting.mode}, harness {setting.version['files']} "
             f"(commit {setting.version['commit'] or 'unknown'})"]
    if any(o.why == "no GPU" for o in outcomes.values()):
        lines.append(f"no usable GPU on this machine: {setting.gpu}")
    for exercise, outcome in outcomes.items():
        where = found.shown.get(exercise)
        lines.append(f"{exercise}: {outcome.status}" + (f" ({where})" if where else "")
                     + (f": {outcome.why}" if outcome.why else ""))
    if found.ignored:
        shown = found.ignored[:MAX_LISTED]
        more = len(found.ignored) - len(shown)
        lines.append("other files (ignored): " + ", ".join(shown) + (f", and {more} more" if more else ""))
    for exercise, outcome in outcomes.items():
        if outcome.report is not None:
            lines += ["", _report_text(outcome.report, instructor=True)]
        if outcome.error:
            lines += ["", f"{exercise}: the grader failed:", outcome.error.rstrip()]
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> None:
    """Through a temporary file and a rename: a reader never sees half a file."""
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _read_json(path: Path) -> dict | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def submission_key(found: Found, setting: Setting) -> str:
    """What decides a student's outputs: their files' contents and places, the seed, mode, harness, maxima."""
    digest = hashlib.sha256(json.dumps([setting.seed, setting.mode, setting.version["files"], setting.maxima,
                                        sorted(found.shown.items()), found.ignored,
                                        sorted(found.problems.items())]).encode())
    for exercise in sorted(found.files):
        # what the grader reads of it: at most the size limit and one byte (a larger file's verdict
        # is "too large" whatever the rest holds), so a huge file is never read in whole here either
        with open(found.files[exercise], "rb") as f:
            digest.update(exercise.encode() + b"\0" + f.read(SUBMISSION_LIMIT_BYTES + 1) + b"\0")
    return digest.hexdigest()


@dataclass
class Row:
    student: str
    cells: dict[str, str]  # exercise -> score cell ("" when not graded)
    total: float
    maximum: float
    note: str
    complete: bool  # every submission graded


def make_row(student: str, state: dict, maxima: dict[str, float | None]) -> Row:
    """A grades.csv row from a student's state.json and this run's maxima."""
    cells, total, not_submitted, not_graded, failed_build, too_large = {}, 0.0, [], [], [], []
    for exercise in EXERCISE_FILES:
        entry = state["exercises"][exercise]
        if entry["status"] == "graded":
            cells[exercise] = _points(entry["score"])
            total += entry["score"]
            if entry.get("too_large"):
                too_large.append(exercise)
            elif entry.get("build_failed"):
                failed_build.append(exercise)
        elif entry["status"] == "not submitted":
            cells[exercise] = "0"
            not_submitted.append(exercise)
        else:
            cells[exercise] = ""  # blank, not 0: a grade-book import leaves it alone until it is graded
            not_graded.append(f"{entry['why']} ({exercise})")
    notes = []
    if not_submitted:
        notes.append(f"not submitted: {', '.join(not_submitted)}")
    if failed_build:
        notes.append(f"compile error: {', '.join(failed_build)}")
    if too_large:
        notes.append(f"file over {SUBMISSION_LIMIT_BYTES >> 20} MiB (scored 0): {', '.join(too_large)}")
    notes += [f"not graded: {why}" for why in not_graded]
    unknown = [exercise for exercise in EXERCISE_FILES if maxima.get(exercise) is None]
    if unknown:
        notes.append(f"maximum leaves out {', '.join(unknown)} (its maximum is unknown here)")
    maximum = sum(value for value in maxima.values() if value is not None)
    return Row(student, cells, total, maximum, "; ".join(notes), not not_graded)


def spreadsheet_safe(text: str) -> str:
    """A student folder name as a CSV cell a spreadsheet will not run: a leading =, +, -, @, tab or
    carriage return makes Excel and LibreOffice read a formula, so such a name gets a leading '."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def write_csv(path: Path, rows: list[Row]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")  # csv quotes commas, quotes and spaces as needed
    writer.writerow(["student", *EXERCISE_FILES, "total", "maximum", "note"])
    for row in sorted(rows, key=lambda r: r.student):
        writer.writerow([spreadsheet_safe(row.student), *(row.cells[e] for e in EXERCISE_FILES), _points(row.total),
                         _points(row.maximum), row.note])
    try:
        if path.read_text(encoding="utf-8") == buffer.getvalue():
            return  # unchanged: left alone, so a rerun with nothing new touches no grade file
    except (OSError, UnicodeDecodeError):
        pass
    _write(path, buffer.getvalue())


# ---- maxima ----------------------------------------------------------------------------------

def learn_maxima(version: dict, mode: str, cached: dict | None, gpu: str | None, seed: int) -> dict:
    """Each exercise's maximum, the same for every student: from harness/points.toml when the
    graders have it; otherwise by grading the untouched starter once (kept in class.json)."""
    from . import grading

    if hasattr(grading, "max_score"):
        try:
            return {exercise: grading.max_score(exercise) for exercise in EXERCISE_FILES}
        except KeyError:
            pass
    if cached and cached.get("maxima_for") == [version["files"], mode]:
        return dict(cached["maxima"])
    cli, maxima = _cli(), {}
    for exercise, name in EXERCISE_FILES.items():
        maxima[exercise] = None
        if cli.GRADERS[exercise][2] and gpu is not None:
            continue
        try:
            with tempfile.TemporaryDirectory(prefix="scanlab-class-max-") as tmp:
                maxima[exercise] = cli.grade(exercise, REPO / "exercises" / name, Path(tmp), seed, mode).max_score
        except Exception as exc:  # noqa: BLE001
            print(f"grade class: could not learn the maximum of {exercise} from its starter: {exc}",
                  file=sys.stderr)
    return maxima


# ---- progress ---------------------------------------------------------------------------------

class Progress:
    """students done / total, failed to grade, elapsed, time left: \\r-updated on a terminal,
    otherwise a line every few seconds (a log file or a cluster's job output stays readable)."""

    def __init__(self, total: int, stream=sys.stderr):
        self.total, self.done, self.failed, self.graded = total, 0, 0, 0
        self.stream = stream
        self.tty = getattr(stream, "isatty", lambda: False)()
        self.started = self.last = time.monotonic()
        self.lock = threading.Lock()

    def line(self) -> str:
        elapsed = time.monotonic() - self.started
        remaining = self.total - self.done
        # The rate counts only students actually graded: skipped (unchanged) ones take no time.
        left = "0 s" if not remaining else f"{elapsed / self.graded * remaining:.0f} s" if self.graded else "-"
        return (f"grade class: {self.done}/{self.total} students done, {self.failed} failed to grade, "
                f"{elapsed:.0f} s elapsed, about {left} left")

    def step(self, complete: bool, graded: bool) -> None:
        with self.lock:
            self.done += 1
            self.failed += not complete
            self.graded += graded
            now = time.monotonic()
            if now - self.last >= (0.2 if self.tty else 5.0) or self.done == self.total:
                self.last = now
                self.show()

    def show(self) -> None:
        if self.tty:
            self.stream.write("\r" + self.line() + ("\n" if self.done == self.total else ""))
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()


# ---- the class command -------------------------------------------------------------------------

def _shard(text: str) -> tuple[int, int]:
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard wants I/N with 1 <= I <= N, not {text!r}") from None
    if not 1 <= index <= count:
        raise argparse.ArgumentTypeError(f"--shard wants I/N with 1 <= I <= N, not {text!r}")
    return index, count


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"--jobs wants a whole number >= 1, not {text!r}")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and the usage, then status 2 (argparse would exit itself)
        raise Usage(message)


def list_students(class_dir: Path, out_dir: Path) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """(student folders, sorted; what was skipped; (name, why) for unusable names)."""
    students, skipped, refused = [], [], []
    for entry in sorted(os.scandir(class_dir), key=lambda e: e.name):
        if entry.name.startswith(".") or entry.name in SKIPPED_FOLDERS:
            skipped.append(entry.name + "/" if entry.is_dir(follow_symlinks=False) else entry.name)
        elif entry.is_symlink():
            skipped.append(f"{entry.name} (a link: never followed)")
        elif not entry.is_dir():
            skipped.append(entry.name)
        elif Path(entry.path).resolve() == out_dir:
            skipped.append(f"{entry.name}/ (the output folder)")
        elif (why := name_problem(entry.name)) is not None:
            refused.append((entry.name, why))
        else:
            students.append(entry.name)
    return students, skipped, refused


def grade_class(argv: list[str]) -> int:
    cli = _cli()
    parser = _Parser(prog="grade.py class", usage=USAGE, add_help=False)
    parser.add_argument("class_dir", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--jobs", type=_positive, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--mode", choices=cli.MODES, default="course")
    parser.add_argument("--shard", type=_shard)
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--require-sandbox", action="store_true")
    args = parser.parse_args(argv)
    class_dir, out_dir = args.class_dir.resolve(), args.out.resolve()
    if not class_dir.is_dir():
        raise Usage(f"no class folder at {args.class_dir}")
    if out_dir == class_dir or class_dir in out_dir.parents and out_dir.parent != class_dir:
        raise Usage(f"--out {args.out} is inside a student's folder of {args.class_dir}: put it elsewhere")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise Usage(f"--out {args.out}: cannot be made: {exc}") from None
    if not os.access(out_dir, os.W_OK | os.X_OK):
        raise Usage(f"--out {args.out}: not writable")

    started = time.monotonic()
    students, skipped, refused = list_students(class_dir, out_dir)
    if skipped:
        print(visible(f"grade class: ignored in {args.class_dir} (not student folders): {', '.join(skipped)}"),
              file=sys.stderr)
    for name, why in refused:
        print(f"grade class: not graded: the folder name {name!r} {why}; rename it", file=sys.stderr)
    everyone = students
    index, count = args.shard or (1, 1)
    students = everyone[index - 1::count]

    previous = _read_json(out_dir / "class.json")
    seed = args.seed
    if seed is None and previous and isinstance(previous.get("seed"), int):
        seed = previous["seed"]  # the same hidden inputs as last time, so a rerun regrades only what changed
        print(f"grade class: seed {seed} (from {args.out / 'class.json'}; --seed to change it)", file=sys.stderr)
    elif seed is None:
        seed = random.SystemRandom().randrange(1, 1_000_000)
        print(f"grade class: seed {seed} (drawn; the same for every student; pass --seed {seed} to every shard)",
              file=sys.stderr)

    found = {}
    for student in students:
        try:
            found[student] = discover(class_dir / student)
        except OSError as exc:
            found[student] = Found(problems={e: f"the folder cannot be read: {exc}" for e in EXERCISE_FILES})
    wants_gpu = any(cli.GRADERS[e][2] for f in found.values() for e in f.files)
    gpu = None
    if wants_gpu:  # probed once: after this, nothing a submission does can turn its failure into "no GPU"
        from .grade_day31 import probe_gpu

        gpu = probe_gpu()
        if gpu is not None:
            print(f"grade class: no usable GPU here ({gpu}): day31 submissions are not graded", file=sys.stderr)
    else:
        gpu = "not probed (no day31 submitted)"
    from .sandbox import isolation

    levels = {"cpu": isolation(gpu=False), "gpu": isolation(gpu=True) if wants_gpu and gpu is None
              else ("-", "not needed")}
    version = harness_version()
    maxima = learn_maxima(version, args.mode, previous, gpu if wants_gpu else "not probed", seed)
    setting = Setting(seed, args.mode, version, maxima, gpu if wants_gpu else None, levels, args.require_sandbox)
    if args.require_sandbox and levels["cpu"][0] != "full":
        print(f"grade class: --require-sandbox: this machine cannot isolate submissions: {levels['cpu'][1]}",
              file=sys.stderr)

    progress = Progress(len(students))
    rows: dict[str, Row] = {}
    rows_lock, gpu_lock = threading.Lock(), threading.Lock()
    cpu_pool = concurrent.futures.ThreadPoolExecutor(args.jobs, thread_name_prefix="class")

    def finish(student: str, outcomes: dict[str, Outcome], key: str) -> None:
        folder = out_dir / student
        folder.mkdir(exist_ok=True)
        state = {"student": student, "key": key, "exercises": {
            e: {"status": o.status, "score": o.score, "why": o.why,
                "report_max": o.report.max_score if o.report is not None else None,
                "build_failed": bool(o.report is not None and any(c.name == "builds" and not c.passed
                                                                  for c in o.report.checks)),
                "too_large": bool(o.report is not None and any(TOO_LARGE in c.feedback for c in o.report.checks)),
                "seconds": round(o.seconds, 2)}
            for e, o in outcomes.items()}}
        for outcome in outcomes.values():
            if outcome.error:
                print(f"grade class: {student}: {outcome.exercise}: the grader failed: "
                      f"{outcome.error.strip().splitlines()[-1]} (traceback in {folder / 'report.txt'})",
                      file=sys.stderr)
        _write(folder / "results.json", json.dumps(student_results(outcomes, maxima), indent=2) + "\n")
        _write(folder / "report.txt", visible(student_report(student, found[student], outcomes, setting)))
        state["complete"] = all(o.status != "not graded" for o in outcomes.values())
        _write(folder / "state.json", json.dumps(state, indent=2) + "\n")  # last: it vouches for the others
        row = make_row(student, state, maxima)
        with rows_lock:
            rows[student] = row
        progress.step(row.complete, graded=True)

    pending = []
    for student in students:
        here = found[student]
        key = submission_key(here, setting)
        state = _read_json(out_dir / student / "state.json")
        if (not args.force and state and state.get("key") == key and state.get("complete")
                and (out_dir / student / "results.json").is_file() and (out_dir / student / "report.txt").is_file()):
            rows[student] = make_row(student, state, maxima)
            progress.step(True, graded=False)
            continue
        outcomes: dict[str, Outcome] = {}
        futures: dict[str, concurrent.futures.Future] = {}
        for exercise in EXERCISE_FILES:
            if exercise in here.problems:
                outcomes[exercise] = Outcome(exercise, "not graded", here.problems[exercise])
            elif exercise not in here.files:
                outcomes[exercise] = Outcome(exercise, "not submitted")
            else:
                futures[exercise] = cpu_pool.submit(grade_one, setting, exercise, here.files[exercise], gpu_lock)
        pending.append((student, outcomes, futures, key))

    try:
        # Students finish in the order they were queued: a student's files are written once all of
        # their exercises are in, while the pools keep grading the students after them.
        for student, outcomes, futures, key in pending:
            for exercise, future in futures.items():
                outcomes[exercise] = future.result()
            finish(student, {e: outcomes[e] for e in EXERCISE_FILES}, key)
    except (KeyboardInterrupt, OSError) as exc:
        cpu_pool.shutdown(wait=False, cancel_futures=True)
        why = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"cannot write the outputs: {exc}"
        print(f"\ngrade class: {why}; students finished so far keep their outputs", file=sys.stderr)
        return EXIT_FAIL
    cpu_pool.shutdown()
    if not students:
        progress.show()

    write_csv(out_dir / "grades.csv", list(rows.values()))
    stale = sorted(p.name for p in out_dir.iterdir() if p.is_dir() and (p / "state.json").is_file()
                   and p.name not in rows and (args.shard is None or p.name not in everyone))
    if stale:
        print(f"grade class: left in {args.out} but no longer in {args.class_dir} (not in grades.csv): "
              f"{', '.join(stale)}", file=sys.stderr)
    info = {
        "seed": seed, "mode": args.mode, "shard": f"{index}/{count}" if args.shard else None,
        "harness": version, "maxima": maxima, "maxima_for": [version["files"], args.mode],
        "exercises": EXERCISE_FILES, "class_dir": str(class_dir), "class_students": everyone,
        "students": students, "refused": [name for name, _ in refused],
        "gpu": "usable" if wants_gpu and gpu is None else gpu,
        "isolation": {kind: line for kind, (_, line) in levels.items()},
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "elapsed_s": round(time.monotonic() - started, 1),
    }
    _write(out_dir / "class.json", json.dumps(info, indent=2) + "\n")
    not_graded = sorted(row.student for row in rows.values() if not row.complete)
    print(f"grade class: wrote {args.out / 'grades.csv'}: {len(rows)} students"
          + (f"; not every submission graded for: {', '.join(not_graded)}" if not_graded else ""), file=sys.stderr)
    return EXIT_FAIL if not_graded or refused else EXIT_PASS


# ---- merge ------------------------------------------------------------------------------------

def merge(argv: list[str]) -> int:
    parser = _Parser(prog="grade.py merge", usage=USAGE, add_help=False)
    parser.add_argument("shards", type=Path, nargs="+")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    infos = []
    for shard in args.shards:
        info = _read_json(shard / "class.json")
        if info is None or not (shard / "grades.csv").is_file():
            raise Usage(f"{shard}: not an output of grade.py class (no class.json or grades.csv)")
        infos.append(info)
    first = infos[0]
    for shard, info in zip(args.shards[1:], infos[1:]):
        for what, value in (("seed", lambda i: i.get("seed")), ("mode", lambda i: i.get("mode")),
                            ("harness version", lambda i: (i.get("harness") or {}).get("files")),
                            ("class", lambda i: i.get("class_students"))):
            if value(info) != value(first):
                shown = "" if what == "class" else f" ({value(first)} and {value(info)})"
                raise Usage(f"{args.shards[0]} and {shard} were graded with different {what}s{shown}: "
                            "grade every shard with the same --seed, --mode, harness and class folder")
        for exercise in EXERCISE_FILES:  # a GPU-less shard may not know day31's maximum: that is no conflict
            a, b = (first.get("maxima") or {}).get(exercise), (info.get("maxima") or {}).get(exercise)
            if a is not None and b is not None and a != b:
                raise Usage(f"{args.shards[0]} and {shard} give {exercise} different maxima ({a} and {b})")
    maxima = {e: next((i["maxima"][e] for i in infos if (i.get("maxima") or {}).get(e) is not None), None)
              for e in EXERCISE_FILES}

    out_dir = args.out.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    rows: dict[str, Row] = {}
    where: dict[str, list[str]] = {}
    for shard, info in zip(args.shards, infos):
        for student in info.get("students", []):
            where.setdefault(student, []).append(str(shard))
            state = _read_json(shard / student / "state.json")
            if state is None:
                print(f"grade merge: {shard}/{student}: no state.json (that shard did not finish)", file=sys.stderr)
                continue
            rows.setdefault(student, make_row(student, state, maxima))
            if shard.resolve() != out_dir and student in rows and where[student] == [str(shard)]:
                target = out_dir / student
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(shard / student, target)
    problems = 0
    for student, shards in sorted(where.items()):
        if len(shards) > 1:
            problems += 1
            print(f"grade merge: {student} was graded in more than one shard ({', '.join(shards)}): "
                  f"the first is kept", file=sys.stderr)
    missing = [s for s in first.get("class_students", []) if s not in where]
    if missing:
        problems += 1
        print(f"grade merge: not in any shard: {', '.join(missing)} (a shard is missing or did not finish)",
              file=sys.stderr)
    write_csv(out_dir / "grades.csv", list(rows.values()))
    merged = {key: first.get(key) for key in ("seed", "mode", "harness", "exercises", "class_dir", "class_students")}
    merged.update({"shard": None, "maxima": maxima, "maxima_for": first.get("maxima_for"),
                   "students": sorted(rows), "merged_from": [str(s.resolve()) for s in args.shards]})
    _write(out_dir / "class.json", json.dumps(merged, indent=2) + "\n")
    not_graded = sorted(row.student for row in rows.values() if not row.complete)
    print(f"grade merge: wrote {args.out / 'grades.csv'}: {len(rows)} students from {len(args.shards)} shards"
          + (f"; not every submission graded for: {', '.join(not_graded)}" if not_graded else ""), file=sys.stderr)
    return EXIT_FAIL if problems or not_graded or len(rows) < len(where) else EXIT_PASS


def main(argv: list[str]) -> int:
    """argv[0] is "class" or "merge" (harness/grade.py dispatches here)."""
    try:
        return grade_class(argv[1:]) if argv[0] == "class" else merge(argv[1:])
    except Usage as exc:
        print(f"grade {argv[0]}: {exc}\n{USAGE}", file=sys.stderr)
        return EXIT_USAGE
