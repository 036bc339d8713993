"""Grading a whole class: `grade.py class` and `grade.py merge`.

    python3 harness/grade.py class CLASS_DIR --out OUT_DIR [--jobs N] [--seed S]
                                   [--mode course|self-study] [--shard I/N] [--force]
                                   [--require-sandbox] [--only NAME]... [--config FILE]
    python3 harness/grade.py merge OUT_DIR... --out DIR

CLASS_DIR holds one folder per student, named as the grade book should show the
student. Each holds any subset of the exercise files under their names in
exercises/ (at the top of the folder, or one folder down, as a zip unpacks).
Everything else is listed in the student's report and ignored. A folder holding
one .zip, Canvas's flat files and a Gradescope export are read too, and
CLASS_DIR/course.toml (or --config FILE) may hold the options: see
scanlab/class_tools.py and harness/README.md, "Grading a class".

OUT_DIR gets grades.csv (a row per student: one score column per exercise,
total, maximum, note), class.json (seed, mode, shard, harness version, maxima)
and, per student, results.json (Gradescope's format, every exercise's tests
merged, names prefixed by the exercise), report.txt (the instructor's text) and
state.json (what a rerun needs to skip an unchanged student); then canvas.csv,
gradescope.csv, summary.md, summary.csv and total-scores.png (the class's scores,
commonest mistakes and similar pairs), made from the state.json files, by merge too.

Exit status: 0 every submission was graded (whatever the scores); 1 one or more
could not be (no GPU for day31, no isolation with --require-sandbox, a grader
error, an unusable folder name, an exercise file found twice); 2 bad command
line. merge: 0 merged, every student once; 1 merged, but a student is missing,
graded twice, or not graded; 2 bad command line or shards that do not belong
together (different seed, mode, harness version or maxima).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import csv
import ctypes
import fcntl
import gc
import hashlib
import io
import json
import multiprocessing
import multiprocessing.connection
import os
import pickle
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from . import EXIT_FAIL, EXIT_PASS, EXIT_USAGE
from . import sandbox
from .sandbox import SHARED_PLACES, ipc_objects, remove_ipc
from .grading import SUBMISSION_LIMIT_BYTES, TOO_LARGE, visible
from .paths import HARNESS, REPO
from . import class_tools, dispatch, registry
from .class_tools import natural_key

# The file each of the course's exercises is submitted under (the starter's name in exercises/),
# in the order of the columns: harness/exercises.toml, without the stretch drills. A course grades
# these unless course.toml's `exercises` names others (the stretch drills among them: opt-in).
EXERCISE_FILES = registry.COURSE
ALL_FILES = registry.FILES  # every exercise a student may hand in, stretch drills too: found, and graded if chosen
FILE_EXERCISE = {name: exercise for exercise, name in ALL_FILES.items()}
OUR_FILES = {"grades.csv", "class.json", "canvas.csv", "gradescope.csv", "summary.md", "summary.csv",
             "total-scores.png", "leaderboard.csv", "leaderboard.png"}  # a student folder so named would collide
SKIPPED_FOLDERS = {"__MACOSX"}  # resource forks a macOS zip adds: never a submission
MAX_LISTED = 40  # other files listed per student; a folder of thousands is summarised

USAGE = ("usage: python3 harness/grade.py class CLASS_DIR --out OUT_DIR [--jobs N] [--seed S] "
         "[--mode course|self-study] [--shard I/N] [--force] [--require-sandbox] [--only NAME]... "
         "[--config FILE]\n"
         "       python3 harness/grade.py merge OUT_DIR... --out DIR")


class Usage(Exception):
    """A bad command line or unusable input: one line, then exit status 2."""


# ---- the harness version: what a rerun or a merge must agree on ------------------------------

def harness_files() -> list[Path]:
    """Every file that can change a verdict: graders, drivers, points, starters; not tests or docs."""
    found = [HARNESS / "grade.py"]
    for path in sorted(HARNESS.rglob("*")):
        relative = path.relative_to(HARNESS)
        top = relative.parts[0]
        if (not path.is_file() or top in {"corpus", "gradescope"} or "__pycache__" in relative.parts
                or top.startswith(".") or path.name.startswith("test_") or path.suffix in {".md", ".pyc"}
                or path.name in {"conftest.py", "pytest.ini", "requirements.txt", "grade.py"}
                or path.name.endswith(".sh")):
            continue
        found.append(path)
    found += [registry.EXERCISES[exercise].starter for exercise in ALL_FILES]
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


# ---- names as the outputs show them --------------------------------------------------------

# Characters a name may hold that a reader cannot see or that change how the text around them
# reads: besides the controls and bidi controls (scanlab.grading.visible), every format character
# (Cf: zero-width space, byte-order mark, ...), the line and paragraph separators (Zl, Zp), every
# space but the plain one (Zs: no-break space, ideographic space, ...), private-use, unassigned and
# surrogate code points, and a few letters and marks that draw nothing (Hangul fillers, the braille
# blank, the combining grapheme joiner, variation selectors, Khmer's invisible vowels).
_HIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"}
_DRAW_NOTHING = {0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x2800, 0x3164, 0xFFA0,
                 *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)}


def _escape(c: str) -> str | None:
    """How shown_name writes one character, or None when it is shown as it is."""
    code = ord(c)
    if c == "\\":
        return "\\\\"
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8, as os.fsdecode keeps it (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"  # as scanlab.grading.visible writes them
    if c == " " or (unicodedata.category(c) not in _HIDDEN_CATEGORIES and code not in _DRAW_NOTHING):
        return None
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def shown_name(name: str) -> str:
    r"""A file or folder name as every output shows it (grades.csv, report.txt, the JSON files,
    stderr): each hidden character as an escape. The escapes cannot be mistaken for one another or
    for the name's own text: \x80-\xff only ever stands for a byte that is not UTF-8, \xNN below
    0x80 for a control character, \uNNNN and \UNNNNNNNN for a code point, and \\ for a backslash."""
    if name.isascii() and name.isprintable() and "\\" not in name:
        return name
    return "".join(_escape(c) or c for c in name)


_SURROGATE = re.compile("[\ud800-\udfff]")  # one character class: linear


def _utf8(text: str) -> str:
    """`text` with every lone surrogate (a file name's undecodable byte) written as its escape: what
    is written to a file is always valid UTF-8."""
    return _SURROGATE.sub(lambda m: _escape(m.group(0)), text) if _SURROGATE.search(text) else text


def _clean(value):
    r"""A JSON value with every string passed through _utf8 (json.dumps would write \udce9 escapes,
    which a strict reader refuses)."""
    if isinstance(value, str):
        return _utf8(value)
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _json(value) -> str:
    return json.dumps(_clean(value), indent=2) + "\n"


def _why(exc: OSError) -> str:
    """An OSError in a few words (its strerror), without the path it names."""
    return exc.strerror or type(exc).__name__


# ---- finding a student's files -----------------------------------------------------------

@dataclass
class Found:
    files: dict[str, Path] = field(default_factory=dict)  # exercise -> the file to grade
    shown: dict[str, str] = field(default_factory=dict)  # exercise -> its path inside the student's folder
    ignored: list[str] = field(default_factory=list)  # everything else, as the report lists it
    problems: dict[str, str] = field(default_factory=dict)  # exercise -> why it cannot be graded
    near: dict[str, list[str]] = field(default_factory=dict)  # exercise -> files named almost like its file


def _other(name: str, entry: os.DirEntry, near: dict[str, list[str]] | None = None) -> str:
    """How the report lists a file that is not graded; a near miss of an exercise's file name is also
    put in `near` (exercise -> names as shown), for the student's own feedback."""
    shown = shown_name(name)
    try:
        if entry.is_symlink():
            return f"{shown} (a link: never followed)"
        if entry.is_dir(follow_symlinks=False):
            return f"{shown}/"
        if entry.name in FILE_EXERCISE:
            return f"{shown} (not a regular file: not graded)"
    except OSError as exc:
        return f"{shown} (cannot be looked at: {_why(exc)})"
    wanted = registry.near_miss(entry.name, ALL_FILES.values())
    if wanted and _is_file(entry):
        if near is not None:
            near.setdefault(FILE_EXERCISE[wanted], []).append(shown)
        return f"{shown} (named almost like {wanted}: rename it exactly to have it graded)"
    return shown


def _readable(path: str) -> str | None:
    """Why the grader cannot read this file, or None (opened and closed: nothing is read yet)."""
    try:
        with open(path, "rb"):
            return None
    except OSError as exc:
        return _why(exc)


def _is_file(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file(follow_symlinks=False)
    except OSError:
        return False


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def discover(folder: Path) -> Found:
    """The exercise files at the top of `folder`, or one folder down; a top-level file wins.

    Nothing a folder holds stops the search: a file or folder the grader may not read becomes a
    problem of the exercise it could hold (not graded, with the reason), and every name is kept as
    shown_name writes it. Only the student's folder itself failing to open raises OSError."""
    found = Found()
    below: dict[str, list[tuple[Path, str]]] = {}
    unread: list[str] = []  # folders one down that could not be listed
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        exercise = FILE_EXERCISE.get(entry.name)
        if exercise and _is_file(entry):
            found.files[exercise], found.shown[exercise] = Path(entry.path), entry.name
        elif _is_dir(entry) and entry.name not in SKIPPED_FOLDERS:
            try:
                inner_entries = sorted(os.scandir(entry.path), key=lambda e: e.name)
            except OSError as exc:
                unread.append(shown_name(entry.name) + "/")
                found.ignored.append(f"{shown_name(entry.name)}/ (cannot be read: {_why(exc)})")
                continue
            for inner in inner_entries:
                shown = shown_name(f"{entry.name}/{inner.name}")
                exercise = FILE_EXERCISE.get(inner.name)
                if exercise and _is_file(inner):
                    below.setdefault(exercise, []).append((Path(inner.path), shown))
                else:
                    found.ignored.append(_other(f"{entry.name}/{inner.name}", inner, found.near))
        else:
            found.ignored.append(_other(entry.name, entry, found.near))
    for exercise, candidates in below.items():
        if exercise in found.files:
            found.ignored += [f"{shown} (the one at the top of the folder was graded)" for _, shown in candidates]
        elif len(candidates) == 1:
            found.files[exercise], found.shown[exercise] = candidates[0]
        else:
            found.problems[exercise] = (f"{ALL_FILES[exercise]} is in more than one folder "
                                        f"({', '.join(shown for _, shown in candidates)}): none was graded; "
                                        "keep one and grade again")
    for exercise in list(found.files):
        why = _readable(str(found.files[exercise]))
        if why is not None:
            found.problems[exercise] = f"{found.shown[exercise]} cannot be read by the grader ({why})"
            del found.files[exercise]
    for exercise in ALL_FILES:
        if unread and exercise not in found.files and exercise not in found.problems:
            found.problems[exercise] = (f"not found, but the folder {', '.join(unread)} cannot be read by the "
                                        "grader: it may be in there")
    return found


def name_problem(name: str) -> str | None:
    """Why a student folder's name cannot be a folder in OUT_DIR and a CSV cell, or None. A name is
    used only when shown_name leaves it as it is: what the grade book shows is what the folder says."""
    if name in ("", ".", "..") or "/" in name or "\\" in name:
        return "not usable as a folder name"
    if any(unicodedata.category(c) == "Cc" for c in name) or visible(name) != name:  # controls, bidi
        return "holds control characters (a newline, a tab, an escape, a bidi override, ...)"
    if any(0xD800 <= ord(c) <= 0xDFFF for c in name):
        return "is not valid UTF-8"
    if shown_name(name) != name:
        return ("holds invisible or format characters (a zero-width space, a line separator, a byte-order mark, "
                "a no-break space, ...)")
    if name in OUR_FILES:
        return f"collides with OUT_DIR/{name}"
    return None


# ---- grading -------------------------------------------------------------------------------

NO_GPU = "no GPU"  # an Outcome's why for a GPU exercise on a machine without one: the student waits for a GPU


@dataclass
class Outcome:
    exercise: str
    status: str  # "graded", "not submitted", "not graded"
    why: str = ""  # for "not graded": the reason, one line (NO_GPU: waiting for a GPU)
    report: object = None  # scanlab.grading.Report when graded
    seconds: float = 0.0
    error: str = ""  # a grader's traceback, for report.txt and stderr
    kept: dict | None = None  # graded by an earlier run: its entry in state.json (graded_part under "part")

    @property
    def score(self) -> float:
        if self.kept is not None:
            return self.kept["score"]
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
    between: str = ""  # how students are kept apart (report.txt and class.json say it)
    points: dict = field(default_factory=dict)  # course.toml's [points] overrides (a rerun's key sees them)


def _plain_copy(path: Path, folder: Path) -> Path:
    """The submission under a path with nothing to escape, for a file whose path holds hidden
    characters or bytes that are not UTF-8 (a grader's report quotes the path it graded). Only the
    bytes a grader reads are copied, so a file too large stays too large."""
    copy = folder / "submitted" / path.name  # the exercise's own file name: plain
    copy.parent.mkdir()
    with open(path, "rb") as f:
        copy.write_bytes(f.read(SUBMISSION_LIMIT_BYTES + 1))
    return copy


def grade_one(setting: Setting, exercise: str, path: Path, gpu_lock=None) -> Outcome:
    """One exercise of one student, in the calling process (a worker's; see Workers). gpu_lock: held
    by the GPU grader around its GPU runs only (a GpuTurn in a class run)."""
    gpu = dispatch.needs_gpu(exercise)
    if gpu and setting.gpu is not None:
        return Outcome(exercise, "not graded", NO_GPU)  # the probe's reason is in class.json and report.txt
    if exercise in registry.RUNS_CODE and setting.require_sandbox:
        level, line = setting.isolation["gpu" if gpu else "cpu"]
        if level != "full":
            return Outcome(exercise, "not graded", f"no isolation ({line})")
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix=f"scanlab-class-{exercise}-") as tmp:
            if shown_name(str(path)) != str(path):
                path = _plain_copy(path, Path(tmp))
            # GPU checks take the GPU one at a time (limits and timings stay per student); the grader
            # holds the lock only while it runs kernels, so other students compile meanwhile.
            report = dispatch.grade(exercise, path, Path(tmp), setting.seed, setting.mode,
                                    gpu_lock=gpu_lock if gpu else None)
    except Exception as exc:  # noqa: BLE001 - one grader bug must not stop the class
        from .grading import NoGpu

        why = f"the grader lost the GPU ({exc})" if isinstance(exc, NoGpu) else "grader error"
        return Outcome(exercise, "not graded", why, seconds=time.monotonic() - started,
                       error=traceback.format_exc(limit=8))
    return Outcome(exercise, "graded", report=report, seconds=time.monotonic() - started)


# ---- worker processes -------------------------------------------------------------------------

# Submissions are graded in --jobs worker processes, forked from the class run once it has made
# the seed's hidden inputs (they inherit them: a fresh process per submission would make them again,
# or copy them page by page, and took 30-50 % longer), one submission at a time each. A grader step
# that runs away (a regular expression, a loop over a submission's text) then holds one worker,
# never the class (threads of one interpreter would all wait for the one holding the GIL): the
# worker is killed and a fresh one takes its place. The budget counts the grader's OWN work on one
# submission: wall-clock time outside the sandboxed runs (which have limits of their own) and
# outside waiting for the GPU. A legitimate grade spends under 3 s of it (measured, 60 students on
# 2 cores at a load of 7: drill 01 at most 2.8 s, drill 02 0.7 s, drill 03 0.02 s, and 0.1 s on a
# 1 MiB answer sheet); 60 s is 20 times that.
# TOTAL_BUDGET_S also counts the sandboxed runs: a hostile drill that hits every limit takes about
# a minute, a Day 31 one a few (its GPU waits aside).
OWN_BUDGET_S = 60.0
TOTAL_BUDGET_S = 1800.0
# Sandboxed runs draw uids from a slice of their own (see uid_slices); a drill 02 answer that exits
# in every function uses about 80 sandboxes, each with a uid never used before.
MIN_SLICE_UIDS = 100


@dataclass
class Task:
    student: str
    exercise: str
    path: Path
    uids: range | None  # the slice its sandboxed runs draw from (None: as an ordinary user, or nothing runs)


class GpuTurn:
    """`with turn:` holds the GPU for one submission's runs, across the class run's processes: an
    flock on one file, which the kernel releases when its holder ends, killed or not."""

    def __init__(self, path: Path):
        self.path = path
        self._held = threading.local()

    def __enter__(self) -> "GpuTurn":
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        self._held.fds = [*getattr(self._held, "fds", []), fd]
        return self

    def __exit__(self, *exc) -> None:
        fd = self._held.fds.pop()
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


class _Clock:
    """The worker's half of the budget: it tells the class run whenever the grader's own work stops
    (a sandboxed run, a wait for the GPU) and starts again."""

    def __init__(self, conn):
        self.conn, self.lock = conn, threading.Lock()
        self.depth = {"run": 0, "gpu": 0}
        self.state = "own"

    def send(self, message) -> None:
        with self.lock:
            self.conn.send(message)

    @contextlib.contextmanager
    def away(self, why: str):
        self._move(why, 1)
        try:
            yield
        finally:
            self._move(why, -1)

    def _move(self, why: str, by: int) -> None:
        with self.lock:
            self.depth[why] += by
            state = "gpu" if self.depth["gpu"] else "run" if self.depth["run"] else "own"
            if state != self.state:
                self.state = state
                self.conn.send(("state", state, time.monotonic()))


class _TimedTurn:
    """A GpuTurn whose wait is not the grader's own work."""

    def __init__(self, turn: GpuTurn, clock: _Clock):
        self.turn, self.clock = turn, clock

    def __enter__(self):
        with self.clock.away("gpu"):
            self.turn.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.turn.__exit__(*exc)


def _worker_loop(setting: Setting, conn, folder: Path, gpu_path: Path) -> None:
    """A worker process: grade each task the class run sends, one at a time, until told to stop."""

    # Everything the grader and its sandboxes write goes under the worker's folder, emptied after
    # every task, and removed by the class run when the worker has ended (whichever way it ended).
    os.environ["TMPDIR"] = os.environ["SCANLAB_SCRATCH"] = str(folder)
    tempfile.tempdir = str(folder)
    clock = _Clock(conn)
    run = sandbox.Sandbox.run

    def timed_run(box, *args, **kwargs):
        with clock.away("run"):
            return run(box, *args, **kwargs)

    sandbox.Sandbox.run = timed_run  # in this process only: it does nothing but grade
    turn = _TimedTurn(GpuTurn(gpu_path), clock)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message[0] != "task":
            return
        task = message[1]
        if task.uids is not None:  # this task's own slice (the module reads UID_RANGE at every draw)
            os.environ["SCANLAB_UID_RANGE"] = f"{task.uids.start}-{task.uids.stop - 1}"
            sandbox.UID_RANGE = task.uids
        outcome = grade_one(setting, task.exercise, task.path, turn)
        for entry in os.scandir(folder):  # normally nothing: the grader and its sandboxes clean up after them
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
        try:
            clock.send(("done", outcome))
        except (pickle.PicklingError, TypeError, AttributeError):  # an outcome that cannot be sent: the grader's error
            clock.send(("done", Outcome(task.exercise, "not graded", "grader error", seconds=outcome.seconds,
                                        error=traceback.format_exc(limit=8))))


@dataclass
class _Worker:
    pid: int
    conn: object  # multiprocessing.connection.Connection: tasks one way, messages the other
    folder: Path
    task: Task | None = None  # what it grades now (None: idle)
    started: float = 0.0
    state: str = "own"
    since: float = 0.0
    spent: dict = field(default_factory=dict)
    outcome: Outcome | None = None
    killed: str = ""  # why the class run ended it
    status: int | None = None  # its wait status, once it has ended

    def begin(self, task: Task) -> None:
        self.conn.send(("task", task))  # OSError, ValueError: it has ended
        now = time.monotonic()
        self.task, self.started, self.state, self.since = task, now, "own", now
        self.spent, self.outcome = {"own": 0.0, "run": 0.0, "gpu": 0.0}, None

    def seconds(self, state: str, now: float) -> float:
        return self.spent[state] + (now - self.since if self.state == state else 0.0)


class Workers:
    """At most `jobs` worker processes, forked from the class run once it has made the seed's
    inputs (they inherit them), each grading one Task at a time; one that runs past its budget
    (see above) is killed, and a fresh one takes its place."""

    def __init__(self, jobs: int, setting: Setting, root: Path):
        self.jobs, self.setting, self.root = jobs, setting, root
        self.gpu_path = root / "gpu.lock"
        self.all: list[_Worker] = []

    @property
    def busy(self) -> list[_Worker]:
        return [w for w in self.all if w.task is not None]

    def start(self, task: Task) -> None:
        for worker in [w for w in self.all if w.task is None]:
            try:
                worker.begin(task)
                return
            except (OSError, ValueError):  # it ended while idle (killed from outside?): a fresh one instead
                self._bury(worker)
        self._spawn().begin(task)

    def _spawn(self) -> _Worker:
        folder = Path(tempfile.mkdtemp(prefix="worker-", dir=self.root))
        os.chmod(folder, 0o711)  # a sandbox's uid must reach its scratch folder inside
        ours, theirs = multiprocessing.Pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()  # the class run has no other thread: nothing is half-held in the child
        if pid == 0:
            try:
                os.setpgid(0, 0)
                ours.close()
                for other in self.all:
                    other.conn.close()
                _worker_loop(self.setting, theirs, folder, self.gpu_path)
            except BaseException:  # noqa: BLE001 - whatever happens, the child never returns into the class run
                pass
            finally:
                os._exit(0)
        theirs.close()
        try:
            os.setpgid(pid, pid)
        except OSError:  # it did so itself already
            pass
        worker = _Worker(pid, ours, folder)
        self.all.append(worker)
        return worker

    def wait(self, timeout: float = 0.5) -> list[tuple[Task, Outcome]]:
        """Whatever finished within `timeout` seconds: (task, outcome) pairs."""
        busy = {w.conn: w for w in self.busy if not w.conn.closed}
        for conn in multiprocessing.connection.wait(list(busy), timeout):
            self._read(busy[conn])
        now, done = time.monotonic(), []
        for worker in self.busy:
            if worker.outcome is None and not worker.killed and not worker.conn.closed:
                own = worker.seconds("own", now)
                if own > OWN_BUDGET_S:
                    self._kill(worker, f"the grader ran past its {OWN_BUDGET_S:g} s limit")
                elif own + worker.seconds("run", now) > TOTAL_BUDGET_S:
                    self._kill(worker, f"the grader ran past its {TOTAL_BUDGET_S:g} s limit")
            if worker.outcome is not None and not worker.killed:
                done.append((worker.task, worker.outcome))
                worker.task = None
            elif worker.killed or worker.conn.closed:  # ended mid-task
                self._bury(worker)
                done.append((worker.task, self._lost(worker, now)))
        return done

    def _read(self, worker: _Worker) -> None:
        try:
            while worker.outcome is None and worker.conn.poll():
                kind, *body = worker.conn.recv()
                if kind == "state":
                    state, at = body
                    worker.spent[worker.state] += max(0.0, at - worker.since)
                    worker.state, worker.since = state, at
                elif kind == "done":
                    worker.outcome = body[0]
        except (EOFError, OSError, ValueError, pickle.UnpicklingError):  # it has ended (or was ended mid-message)
            worker.conn.close()

    def _kill(self, worker: _Worker, why: str) -> None:
        worker.killed = why
        try:
            os.killpg(worker.pid, signal.SIGKILL)
        except OSError:
            pass

    def _lost(self, worker: _Worker, now: float) -> Outcome:
        exercise, seconds = worker.task.exercise, now - worker.started
        if worker.killed:
            return Outcome(exercise, "not graded", worker.killed, seconds=seconds)
        status = worker.status or 0
        how = (f"killed by {signal.Signals(os.WTERMSIG(status)).name}" if os.WIFSIGNALED(status)
               else f"exit status {os.waitstatus_to_exitcode(status)}")
        return Outcome(exercise, "not graded", "grader error", seconds=seconds,
                       error=f"the grader's worker process ended without a result ({how})")

    def _bury(self, worker: _Worker) -> None:
        """A worker that has ended (or been ended): reaped, and what it could not clean up removed."""
        worker.conn.close()
        try:
            _, worker.status = os.waitpid(worker.pid, 0)
        except OSError:
            pass
        self.all.remove(worker)
        sweep_processes(worker.task.uids if worker.task else None)
        _unmount_under(worker.folder)
        shutil.rmtree(worker.folder, ignore_errors=True)

    def stop(self, kill: bool = False) -> None:
        """End every worker: told to stop when idle, killed when `kill` (an interrupted class run)."""
        for worker in list(self.all):
            if kill or worker.task is not None:
                self._kill(worker, "interrupted")
            else:
                try:
                    worker.conn.send(("stop",))
                except OSError:
                    pass
        for worker in list(self.all):
            self._bury(worker)


def uid_slices(outer: range, students: int, per_student: int) -> int:
    """How many uids each slice of `outer` holds: one slice for the class run's own sandboxes (its
    probes), then one per student and exercise that runs code, so that no two students' runs ever
    share a uid in a class run. 0 when the range is too small to give every slice one."""
    return len(outer) // (1 + students * per_student)


def _uid_slice(outer: range, size: int, slot: int) -> range:
    return range(outer.start + slot * size, outer.start + (slot + 1) * size)


# ---- what a run's uids leave behind without namespaces --------------------------------------------

# Without bubblewrap a run shares the machine's /tmp, /proc, abstract sockets and System V IPC with
# every other run; the class run then grades one student at a time, and after each removes what
# that student's runs left (see grade_class).


def _processes() -> list[tuple[int, set[int]]]:
    """(pid, its real, effective, saved and file-system uids) of every process."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", "rb") as f:
                status = f.read().decode(errors="replace")
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        try:
            found.append((int(entry.name), {int(uid) for uid in fields["Uid"].split()}))
        except (KeyError, ValueError, IndexError):
            continue
    return found


def sweep_processes(uids: range | set[int] | None, claims: sandbox.UidClaims | None = None) -> int:
    """Kill every process of these uids (sandbox uids: the grader is root), until none is left;
    how many were killed. A uid an open sandbox of some grader holds (another grade.py or class run
    on this machine drew it) is not this class's: left alone. As an ordinary user the runs have the
    grader's own uid: nothing to do."""
    if claims is None:
        with sandbox.UidClaims() as own:
            return sweep_processes(uids, own)
    killed = 0
    for _ in range(50 if uids is not None else 0):
        targets = [pid for pid, ids in _processes() if any(u in uids and claims.free(u) for u in ids - {0})]
        if not targets:
            break
        for pid in targets:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
        time.sleep(0.02)
    return killed


def _unmount_under(folder: Path) -> None:
    """Unmount what a killed worker left mounted under its folder (a sandbox's tmpfs scratch)."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return
    prefix = str(folder) + "/"
    points = [re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])  # \040: a space
              for line in lines if len(line.split()) > 4]
    libc = ctypes.CDLL(None, use_errno=True)
    for point in sorted((p for p in points if p.startswith(prefix)), key=len, reverse=True):
        libc.umount2(os.fsencode(point), 2)  # MNT_DETACH


@dataclass
class Snapshot:
    """What the shared places held before a student's runs (used where the runs have the grader's uid)."""
    entries: set[str]
    ipc: set[tuple[str, int]]


def snapshot() -> Snapshot:
    entries = set()
    for place in SHARED_PLACES:
        try:
            entries |= {entry.path for entry in os.scandir(place)}
        except OSError:
            pass
    return Snapshot(entries, {(kind, ident) for kind, ident, _, _ in ipc_objects()})


def _remove(path: str, info: os.stat_result) -> bool:
    try:
        if stat.S_ISDIR(info.st_mode):
            shutil.rmtree(path)  # never follows a link inside
        else:
            os.unlink(path)
        return True
    except OSError:
        return False


def remove_leftovers(uids: set[int] | range | None, before: Snapshot | None, keep: Path) -> str:
    """Remove what a student's runs left in SHARED_PLACES and in System V IPC, and say what.

    uids (the grader is root): whatever those uids own, in the shared places and in the folders
    anyone may write there (a run can make files nowhere else). Otherwise (runs had the grader's own
    uid): what appeared since `before` and is owned by the grader's uid, at the top of the shared
    places. `keep` (the class run's own folder) is never touched."""
    with sandbox.UidClaims() as claims:  # a uid some grader's open sandbox holds is not this student's
        return _remove_leftovers(uids, before, keep, claims)


def _remove_leftovers(uids: set[int] | range | None, before: Snapshot | None, keep: Path,
                      claims: sandbox.UidClaims) -> str:
    me = os.geteuid()
    by_uid, by_snapshot = me == 0 and uids is not None, me != 0 and before is not None  # never root's own files
    removed = {"files": 0, "ipc": 0, "processes": sweep_processes(uids if by_uid else None, claims)}

    def visit(folder: str, depth: int) -> None:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return
        for entry in entries:
            if entry.path == str(keep):
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if by_uid:
                if info.st_uid in uids and claims.free(info.st_uid):
                    removed["files"] += _remove(entry.path, info)
                elif stat.S_ISDIR(info.st_mode) and info.st_mode & 0o002 and depth < 3:
                    visit(entry.path, depth + 1)  # a folder anyone may write in: a run may have
            elif by_snapshot and entry.path not in before.entries and info.st_uid == me:
                removed["files"] += _remove(entry.path, info)

    for place in SHARED_PLACES:
        visit(place, 0)
    for kind, ident, owner, creator in ipc_objects():
        ours = (any(u in uids and claims.free(u) for u in (owner, creator)) if by_uid
                else by_snapshot and (kind, ident) not in before.ipc and creator == me)
        if ours:
            removed["ipc"] += remove_ipc(kind, ident)
    said = [f"{n} {what}" for n, what in (
        (removed["processes"], "process(es) killed"),
        (removed["files"], f"file(s) or folder(s) removed from {', '.join(SHARED_PLACES)}"),
        (removed["ipc"], "System V IPC object(s) removed")) if n]
    return "; ".join(said) if said else "nothing was left behind"


def _points(value: float) -> str:
    """A score as a CSV cell and a person read it: 4, 2.5, never 4.0 or 1e+06."""
    value = float(value)
    return str(int(value)) if value.is_integer() else f"{value:.3f}".rstrip("0")


def _report_text(report, instructor: bool = True) -> str:
    try:
        return report.text(instructor=instructor)
    except TypeError:  # a Report from before course mode: its text() is all instructor text anyway
        return report.text()


def graded_part(exercise: str, outcome: Outcome) -> dict:
    """What results.json and report.txt hold of one graded exercise. state.json keeps it, so a rerun
    that grades only a student's GPU exercise writes the others' parts as they were."""
    if outcome.kept is not None:
        return outcome.kept["part"]
    graded = outcome.report.gradescope()
    tests = []
    for test in graded["tests"]:
        test = dict(test)
        if not test["name"].startswith(f"{exercise}: "):
            test["name"] = f"{exercise}: {test['name']}"
        tests.append(test)
    return {"score": outcome.report.score, "tests": tests, "output": graded.get("output", ""),
            "hidden": graded.get("stdout_visibility") == "hidden",
            "leaderboard": graded.get("leaderboard", []),  # drill 05's speed, for Gradescope's leaderboard
            "report": _report_text(outcome.report, instructor=True)}


def student_results(outcomes: dict[str, Outcome], maxima: dict[str, float | None],
                    near: dict[str, list[str]] | None = None) -> dict:
    """One Gradescope results.json for every exercise: tests merged, names prefixed by the exercise.
    near (Found.near): files named almost like an exercise's, named in its "not submitted" test."""
    tests, output, hidden, board = [], [], False, []
    for exercise, outcome in outcomes.items():
        maximum = maxima.get(exercise) or 0.0
        if outcome.status == "graded":
            part = graded_part(exercise, outcome)
            hidden |= part["hidden"]
            output.append(part["output"])
            tests += part["tests"]
            board += part.get("leaderboard", [])  # a part kept from before this key came has none
            continue
        if outcome.status == "not submitted":
            name, text = (f"{exercise}: submitted",
                          f"not submitted: no {ALL_FILES[exercise]} at the top of your folder "
                          "(or one folder down); it scores 0")
            if (near or {}).get(exercise):
                text += (f"; you submitted {', '.join(near[exercise])}: rename it exactly {ALL_FILES[exercise]} "
                         "to have it graded")
        elif outcome.why == NO_GPU:  # waiting for a GPU: 0 of 0 here, as the Gradescope autograder writes it
            text = _student_why(exercise, outcome)
            output.append(f"{exercise}: {text}")
            tests.append({"name": f"{exercise}: graded on a GPU machine", "score": 0.0, "max_score": 0.0,
                          "status": "passed", "output": text, "visibility": "visible"})
            continue
        else:
            name, text = f"{exercise}: graded", _student_why(exercise, outcome)
        output.append(f"{exercise}: {text}")
        tests.append({"name": name, "score": 0.0, "max_score": maximum, "status": "failed", "output": text,
                      "visibility": "visible"})
    results = {"score": sum(test["score"] for test in tests), "output": "\n".join(output), "tests": tests,
               "execution_time": round(sum(o.seconds for o in outcomes.values()), 3)}
    if hidden:
        results["stdout_visibility"] = "hidden"
    if board:
        results["leaderboard"] = board
    return results


def _student_why(exercise: str, outcome: Outcome) -> str:
    if outcome.why == NO_GPU:
        return ("not graded here: this exercise needs a GPU; it is graded on a GPU machine, with "
                "`python3 harness/grade.py class`, by your instructor")
    if outcome.why == "grader error":
        return "not graded: the grader itself failed (not your code's fault; your instructor has the details)"
    return f"not graded: {outcome.why}"


def student_report(student: str, found: Found, outcomes: dict[str, Outcome], setting: Setting,
                   cleaned: str = "") -> str:
    lines = [f"student: {student}",
             f"seed {setting.seed}, mode {setting.mode}, harness {setting.version['files']} "
             f"(commit {setting.version['commit'] or 'unknown'})"]
    if setting.between:
        lines.append(f"isolation: {setting.between}" + (f"; after this student: {cleaned}" if cleaned else ""))
    if any(o.why == NO_GPU for o in outcomes.values()):
        lines.append(f"no usable GPU on this machine: {setting.gpu}")
    kept = [e for e, o in outcomes.items() if o.kept is not None]
    if kept:
        lines.append(f"kept as an earlier run graded them (unchanged; only the GPU part was graded now): "
                     f"{', '.join(kept)}")
    for exercise, outcome in outcomes.items():
        where = found.shown.get(exercise)
        lines.append(f"{exercise}: {outcome.status}" + (f" ({where})" if where else "")
                     + (f": {outcome.why}" if outcome.why else ""))
    if found.ignored:
        shown = found.ignored[:MAX_LISTED]
        more = len(found.ignored) - len(shown)
        lines.append("other files (ignored): " + ", ".join(shown) + (f", and {more} more" if more else ""))
    for exercise, outcome in outcomes.items():
        if outcome.status == "graded":
            lines += ["", graded_part(exercise, outcome)["report"]]
        if outcome.error:
            lines += ["", f"{exercise}: the grader failed:", outcome.error.rstrip()]
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> None:
    """Through a temporary file and a rename: a reader never sees half a file."""
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(_utf8(text))
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
    digest = hashlib.sha256(json.dumps(_clean([setting.seed, setting.mode, setting.version["files"], setting.maxima,
                                               setting.points,
                                               sorted(found.shown.items()), found.ignored,
                                               sorted(found.problems.items())])).encode())
    for exercise in sorted(found.files):
        # what the grader reads of it: at most the size limit and one byte (a larger file's verdict
        # is "too large" whatever the rest holds), so a huge file is never read in whole here either
        try:
            with open(found.files[exercise], "rb") as f:
                data = f.read(SUBMISSION_LIMIT_BYTES + 1)
        except OSError as exc:  # readable a moment ago (discover): it is not graded, and the key says why
            found.problems[exercise] = f"{found.shown[exercise]} cannot be read by the grader ({_why(exc)})"
            del found.files[exercise]
            data = _why(exc).encode()
        digest.update(exercise.encode() + b"\0" + data + b"\0")
    return digest.hexdigest()


@dataclass
class Row:
    student: str
    cells: dict[str, str]  # exercise -> score cell ("" when not graded)
    total: float
    maximum: float
    note: str
    complete: bool  # every submission graded
    waiting: list[str] = field(default_factory=list)  # GPU exercises not graded for want of a GPU (yet)
    failed: bool = False  # a submission could not be graded for another reason

    @property
    def total_cell(self) -> str:
        return _points(self.total)


def make_row(student: str, state: dict, maxima: dict[str, float | None]) -> Row:
    """A grades.csv row from a student's state.json and this run's maxima."""
    cells, total, not_submitted, not_graded, failed_build, too_large, waiting = {}, 0.0, [], {}, [], [], []
    for exercise in maxima:  # the exercises this course grades (course.toml), in the registry's order
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
        elif entry["why"] == NO_GPU:
            cells[exercise] = ""  # blank, like any exercise not graded yet
            waiting.append(exercise)
        else:
            cells[exercise] = ""  # blank, not 0: a grade-book import leaves it alone until it is graded
            not_graded.setdefault(entry["why"], []).append(exercise)
    notes = []
    if not_submitted:
        notes.append(f"not submitted: {', '.join(not_submitted)}")
    if failed_build:
        notes.append(f"compile error: {', '.join(failed_build)}")
    if too_large:
        notes.append(f"file over {SUBMISSION_LIMIT_BYTES >> 20} MiB (scored 0): {', '.join(too_large)}")
    if waiting:
        notes.append(f"waiting for a GPU: {', '.join(waiting)}")
    notes += [f"not graded: {why} ({', '.join(exercises)})" for why, exercises in not_graded.items()]
    unknown = [exercise for exercise in maxima if maxima.get(exercise) is None]
    if unknown:
        notes.append(f"maximum leaves out {', '.join(unknown)} (its maximum is unknown here)")
    maximum = sum(value for value in maxima.values() if value is not None)
    return Row(student, cells, total, maximum, "; ".join(notes), not not_graded and not waiting, waiting,
               bool(not_graded))


def waiting_for_gpu(state: dict | None, exercises: list[str]) -> list[str]:
    """The GPU exercises a student's state.json waits for, when nothing else of theirs is left to grade
    and every graded part was kept (a rerun on a GPU machine grades those alone); otherwise []."""
    entries = (state or {}).get("exercises")
    waits = (state or {}).get("waiting")
    if not isinstance(entries, dict) or not isinstance(waits, list) or not waits:
        return []
    for exercise in exercises:
        entry = entries.get(exercise)
        if not isinstance(entry, dict):
            return []
        if entry.get("status") == "graded" and not isinstance(entry.get("part"), dict):
            return []  # written before parts were kept: grade the whole student again
        if entry.get("status") not in ("graded", "not submitted") and exercise not in waits:
            return []
    return [e for e in exercises if e in waits]


def spreadsheet_safe(text: str) -> str:
    """A student folder name as a CSV cell a spreadsheet will not run: a leading =, +, -, @, tab or
    carriage return makes Excel and LibreOffice read a formula, so such a name gets a leading '."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _columns(rows: list[Row]) -> list[str]:
    graded = {e for row in rows for e in row.cells}
    return [e for e in ALL_FILES if e in graded] if rows else list(EXERCISE_FILES)


def write_csv(path: Path, rows: list[Row], columns: list[str] | None = None) -> None:
    """grades.csv: a row per student in natural order (student2 before student10, whatever the locale)."""
    columns = _columns(rows) if columns is None else columns
    table = [["student", *columns, "total", "maximum", "note"]]
    table += [[row.student, *(row.cells[e] for e in columns), _points(row.total), _points(row.maximum), row.note]
              for row in sorted(rows, key=lambda r: natural_key(r.student))]
    _write_table(path, table)


def _write_table(path: Path, table: list[list[str]]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")  # csv quotes commas, quotes and spaces as needed
    for line in table:
        writer.writerow([spreadsheet_safe(str(cell)) for cell in line])
    _write_changed(path, buffer.getvalue())


def _write_changed(path: Path, text: str) -> None:
    """_write, unless the file holds `text` already: a rerun with nothing new touches no output file."""
    try:
        if path.read_text(encoding="utf-8") == _utf8(text):
            return
    except (OSError, UnicodeDecodeError):
        pass
    _write(path, text)


_STARTER_PRINTS: dict[str, set[int]] = {}


def _prints(exercise: str, path: Path | None) -> list[int]:
    """A graded file's similarity fingerprints less its starter's (kept in state.json, so `merge`
    compares students across shards)."""
    if path is None:
        return []
    if exercise not in _STARTER_PRINTS:
        starter = registry.EXERCISES[exercise].starter
        _STARTER_PRINTS[exercise] = (class_tools.fingerprints(starter.read_text(encoding="utf-8", errors="replace"))
                                     if starter.is_file() else set())
    try:
        return class_tools.student_prints(path, _STARTER_PRINTS[exercise])
    except OSError:
        return []


def write_books(out_dir: Path, rows: list[Row], exercises: list[str], identity: dict, maxima: dict,
                stream=sys.stderr) -> None:
    """canvas.csv, gradescope.csv and the class summary, beside grades.csv."""
    ordered = sorted(rows, key=lambda r: natural_key(r.student))
    _write_table(out_dir / "canvas.csv", class_tools.canvas_rows(ordered, identity, exercises))
    _write_table(out_dir / "gradescope.csv", class_tools.gradescope_rows(ordered, identity, exercises))
    states = {}
    for row in ordered:
        state = _read_json(out_dir / row.student / "state.json")
        if state is not None and isinstance(state.get("exercises"), dict):
            states[row.student] = state
    try:
        class_tools.write_summary(out_dir, states, maxima, _write_changed)
    except Exception as exc:  # noqa: BLE001 - the grades are written; a summary's failure must not undo them
        print(f"grade class: the class summary could not be written: {type(exc).__name__}: {exc}", file=stream)


# ---- maxima ----------------------------------------------------------------------------------

def learn_maxima(version: dict, mode: str, cached: dict | None, gpu: str | None, seed: int) -> dict:
    """Each exercise's maximum, the same for every student: from harness/points.toml when the
    graders have it; otherwise by grading the untouched starter once (kept in class.json)."""
    from . import grading

    if hasattr(grading, "max_score"):
        try:
            return {exercise: grading.max_score(exercise) for exercise in ALL_FILES}
        except KeyError:
            pass
    if cached and cached.get("maxima_for") == [version["files"], mode]:
        return dict(cached["maxima"])
    maxima = {}
    for exercise in ALL_FILES:
        maxima[exercise] = None
        if dispatch.needs_gpu(exercise) and gpu is not None:
            continue
        try:
            with tempfile.TemporaryDirectory(prefix="scanlab-class-max-") as tmp:
                starter = registry.EXERCISES[exercise].starter
                maxima[exercise] = dispatch.grade(exercise, starter, Path(tmp), seed, mode).max_score
        except Exception as exc:  # noqa: BLE001
            print(f"grade class: could not learn the maximum of {exercise} from its starter: {exc}",
                  file=sys.stderr)
    return maxima


# ---- progress ---------------------------------------------------------------------------------

class Progress:
    """students done / total, failed to grade, elapsed, time left: \\r-updated on a terminal,
    otherwise a line every few seconds (a log file or a cluster's job output stays readable)."""

    def __init__(self, total: int, stream=sys.stderr):
        self.total, self.done, self.failed, self.graded, self.waiting = total, 0, 0, 0, 0
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
                + (f"{self.waiting} waiting for a GPU, " if self.waiting else "")
                + f"{elapsed:.0f} s elapsed, about {left} left")

    def step(self, complete: bool, graded: bool, waiting: bool = False) -> None:
        """One student done; `waiting`: only their GPU exercise is not graded, for want of a GPU."""
        with self.lock:
            self.done += 1
            self.failed += not complete and not waiting
            self.waiting += waiting
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


CLASS_FILES = {class_tools.CONFIG_NAME, class_tools.GRADESCOPE_METADATA}  # the course's own, never "ignored"


def list_students(class_dir: Path, out_dir: Path, plain: list[str] | None = None
                  ) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """(student folders, sorted; what was skipped, as shown; (name, why) for unusable names).
    `plain`, when given, gets the names of the regular files directly in class_dir (Canvas's flat files)."""
    students, skipped, refused = [], [], []
    try:
        entries = sorted(os.scandir(class_dir), key=lambda e: e.name)
    except OSError as exc:
        raise Usage(f"the class folder {shown_name(str(class_dir))} cannot be read: {_why(exc)}") from None
    for entry in entries:
        shown = shown_name(entry.name)
        try:
            link = entry.is_symlink()
            same = not link and _is_dir(entry) and Path(entry.path).resolve() == out_dir
        except OSError:
            link = same = False
        if entry.name.startswith(".") or entry.name in SKIPPED_FOLDERS:
            skipped.append(shown + "/" if _is_dir(entry) else shown)
        elif link:
            skipped.append(f"{shown} (a link: never followed)")
        elif not _is_dir(entry):
            if plain is not None and _is_file(entry):
                plain.append(entry.name)
            if entry.name not in CLASS_FILES:
                skipped.append(shown)
        elif same:
            skipped.append(f"{shown}/ (the output folder)")
        elif (why := name_problem(entry.name)) is not None:
            refused.append((entry.name, why))
        else:
            students.append(entry.name)
    return students, skipped, refused


def _warm(setting: Setting, exercises: set[str]) -> None:
    """What every worker would otherwise do for itself, done once before the first fork: import
    the graders, build their drivers, make the seed's hidden inputs and their references (all kept
    in memory, which the workers inherit). Grading the untouched starter does all of it: a few
    seconds here instead of in each of hundreds of workers."""
    for exercise in sorted(exercises):
        if dispatch.needs_gpu(exercise) and setting.gpu is not None:
            continue  # not graded here: no GPU
        try:
            with tempfile.TemporaryDirectory(prefix="scanlab-class-warm-") as tmp:
                dispatch.grade(exercise, registry.EXERCISES[exercise].starter, Path(tmp), setting.seed,
                               setting.mode)
        except Exception:  # noqa: BLE001 - each worker meets the same problem and reports it
            pass


def grade_class(argv: list[str]) -> int:
    parser = _Parser(prog="grade.py class", usage=USAGE, add_help=False)
    parser.add_argument("class_dir", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--jobs", type=_positive)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--mode", choices=dispatch.MODES)
    parser.add_argument("--shard", type=_shard)
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--require-sandbox", action="store_true")
    parser.add_argument("--only", action="append", metavar="NAME")
    parser.add_argument("--config", type=Path)
    if "--help" in argv or "-h" in argv:  # the usage and where the options are explained, status 0
        print(f"usage: {USAGE.removeprefix('usage: ')}\nSee harness/README.md, \"Grading a class\", for every option.")
        return EXIT_PASS
    args = parser.parse_args(argv)
    class_dir, out_dir = args.class_dir.resolve(), args.out.resolve()
    if not class_dir.is_dir():
        raise Usage(f"no class folder at {args.class_dir}")
    _configure(args, class_dir)
    if out_dir == class_dir or class_dir in out_dir.parents and out_dir.parent != class_dir:
        raise Usage(f"--out {args.out} is inside a student's folder of {args.class_dir}: put it elsewhere")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise Usage(f"--out {args.out}: cannot be made: {exc}") from None
    if not os.access(out_dir, os.W_OK | os.X_OK):
        raise Usage(f"--out {args.out}: not writable")

    started = time.monotonic()
    plain: list[str] = []
    students, skipped, refused = list_students(class_dir, out_dir, plain)
    scratch = Path(tempfile.mkdtemp(prefix="scanlab-intake-"))  # unpacked archives, Canvas's files: ours alone
    os.chmod(scratch, 0o711)  # a sandbox's uid must reach the files it compiles (they are 0644)
    try:
        return _class_run(args, class_dir, out_dir, started, plain, students, skipped, refused, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _configure(args, class_dir: Path) -> None:
    """Fill args from course.toml (CLASS_DIR's, or --config FILE's): a flag given wins."""
    from . import grading

    path = args.config if args.config is not None else class_dir / class_tools.CONFIG_NAME
    config = {}
    if args.config is not None or path.is_file():
        try:
            config = class_tools.load_config(path, dispatch.MODES, list(ALL_FILES), grading.points_table())
        except class_tools.ConfigError as exc:
            raise Usage(str(exc)) from None
    args.config_file = str(path) if config else None
    args.jobs = args.jobs or config.get("jobs") or os.cpu_count() or 1
    args.seed = args.seed if args.seed is not None else config.get("seed")
    args.mode = args.mode or config.get("mode") or "course"
    args.exercises = list(registry.course(config.get("exercises")))  # the stretch drills only when listed
    args.points = config.get("points", {})
    table = grading.points_table()
    for exercise, checks in args.points.items():  # in this process, and in the workers forked from it
        for name, points in checks.items():
            table[exercise][name] = grading.Points(float(points), table[exercise][name].visibility)


def _class_run(args, class_dir: Path, out_dir: Path, started: float, plain: list[str], students: list[str],
               skipped: list[str], refused: list[tuple[str, str]], scratch: Path) -> int:
    taken = class_tools.intake(class_dir, scratch, ALL_FILES, students, plain)
    skipped = [s for s in skipped if s not in {shown_name(n) for n in taken.used}]
    students = sorted(taken.sources)  # code-point order: which shard and uid slice a student has (outputs: natural)
    for name in [s for s in students if name_problem(s) is not None]:  # a name from Gradescope's metadata
        refused.append((name, name_problem(name)))
        students.remove(name)
    args.intake = taken
    if args.only:
        unknown = [name for name in args.only if name not in taken.sources]
        if unknown:
            raise Usage(f"--only: no student named {', '.join(repr(n) for n in unknown)} in {args.class_dir}")
    if skipped:
        print(visible(f"grade class: ignored in {args.class_dir} (not student folders): {', '.join(skipped)}"),
              file=sys.stderr)
    for name, why in refused:
        print(f"grade class: not graded: the folder name '{shown_name(name)}' {why}; rename it", file=sys.stderr)
    everyone = students
    index, count = args.shard or (1, 1)
    students = everyone[index - 1::count]

    # No two students' runs share a uid in a class run: slot 0 of the range is this process's own
    # (its probes), then each student has one slot per exercise that runs code, by the student's
    # place in the whole class (so shards graded side by side on one machine stay apart too).
    root = os.geteuid() == 0
    outer, code = sandbox.UID_RANGE, [e for e in args.exercises if e in registry.RUNS_CODE]
    size = uid_slices(outer, len(everyone), len(code))
    if root and size < MIN_SLICE_UIDS:
        what = f"the sandbox uid range {outer.start}-{outer.stop - 1} ({len(outer)} uids)"
        if size < 1:
            raise Usage(f"{what} is too small for {len(everyone)} students: set SCANLAB_UID_RANGE=LO-HI wider "
                        f"(at least {MIN_SLICE_UIDS * (1 + len(everyone) * len(code))} uids, within 100000-999999)")
        print(f"grade class: {what} leaves each submission {size} uids; one that needs more is not graded "
              f"(at least {MIN_SLICE_UIDS} each: set SCANLAB_UID_RANGE wider, within 100000-999999)", file=sys.stderr)
    place = {student: k for k, student in enumerate(everyone)}

    def uids_of(student: str, exercise: str | None = None) -> range | None:
        if not root or (exercise is not None and exercise not in code):
            return None
        first = 1 + place[student] * len(code)
        if exercise is None:  # all of the student's slots
            return range(_uid_slice(outer, size, first).start, _uid_slice(outer, size, first + len(code) - 1).stop)
        return _uid_slice(outer, size, first + code.index(exercise))

    sandbox.UID_RANGE = _uid_slice(outer, size, 0) if root else outer
    try:
        return _grade(args, class_dir, out_dir, started, students, everyone, refused, uids_of, root)
    finally:
        sandbox.UID_RANGE = outer


def _grade(args, class_dir: Path, out_dir: Path, started: float, students: list[str], everyone: list[str],
           refused: list[tuple[str, str]], uids_of, root: bool) -> int:
    index, count = args.shard or (1, 1)
    previous = _read_json(out_dir / "class.json")
    seed = args.seed
    if seed is None and previous and isinstance(previous.get("seed"), int):
        seed = previous["seed"]  # the same hidden inputs as last time, so a rerun regrades only what changed
        print(f"grade class: seed {seed} (from {args.out / 'class.json'}; --seed to change it)", file=sys.stderr)
    elif seed is None:
        seed = random.SystemRandom().randrange(1, 1_000_000)
        print(f"grade class: seed {seed} (drawn; the same for every student; pass --seed {seed} to every shard)",
              file=sys.stderr)

    taken, exercises = args.intake, args.exercises
    found = {}
    for student in students:
        if student in taken.refused:
            found[student] = Found(problems={e: f"the archive was refused: {taken.refused[student]}"
                                             for e in ALL_FILES})
            continue
        try:
            found[student] = discover(taken.sources[student])
        except OSError as exc:
            found[student] = Found(problems={e: f"the folder cannot be read by the grader ({_why(exc)})"
                                             for e in ALL_FILES})
        if student in taken.archive:  # what was graded is inside the student's archive
            here = found[student]
            zipped = shown_name(taken.archive[student])
            here.shown = {e: f"{zipped}: {where}" for e, where in here.shown.items()}
            here.ignored = [f"{zipped}: {where}" for where in here.ignored]
            here.near = {e: [f"{zipped}: {where}" for where in names] for e, names in here.near.items()}
        for exercise in [e for e in ALL_FILES if e not in exercises]:  # not this course's (course.toml)
            here = found[student]
            if exercise in here.files:
                how = ("; a stretch drill: course.toml's `exercises` can list it"
                       if exercise in registry.STRETCH else "")
                here.ignored.append(f"{here.shown.pop(exercise)} (not graded in this course{how})")
                del here.files[exercise]
            here.problems.pop(exercise, None)
    wants_gpu = any(dispatch.needs_gpu(e) for f in found.values() for e in f.files)
    gpu = None
    if wants_gpu:  # probed once: after this, nothing a submission does can turn its failure into "no GPU"
        from .grade_day31 import probe_gpu

        gpu = probe_gpu()
        if gpu is not None:
            gpu_exercises = ", ".join(e for e in exercises if dispatch.needs_gpu(e))
            print(f"grade class: no usable GPU here ({gpu}): {gpu_exercises} not graded; their students wait "
                  "for a GPU (a rerun on a GPU machine grades just those)", file=sys.stderr)
    else:
        gpu = "not probed (no GPU exercise submitted)"
    from .sandbox import isolation

    levels = {"cpu": isolation(gpu=False), "gpu": isolation(gpu=True) if wants_gpu and gpu is None
              else ("-", "not needed")}
    # Without bubblewrap's namespaces, two students' runs graded at once could meet (an abstract
    # socket, System V IPC, a file in /tmp, /proc): students are then graded one at a time, and
    # what each one's runs left in the machine's shared places is removed before the next.
    weak = [(level, line) for level, line in levels.values() if level in ("partial", "none")]
    alone = bool(weak)
    if alone:
        between = (f"{weak[0][0]} ({weak[0][1]}): students graded one at a time, and what each one's runs "
                   f"left in {', '.join(SHARED_PLACES)} and System V IPC removed after them")
        print(f"grade class: isolation {between}", file=sys.stderr)
    else:
        between = f"full (bubblewrap namespaces for every run): students graded side by side (--jobs {args.jobs})"
    version = harness_version()
    maxima = learn_maxima(version, args.mode, previous, gpu if wants_gpu else "not probed", seed)
    maxima = {e: maxima.get(e) for e in exercises}
    setting = Setting(seed, args.mode, version, maxima, gpu if wants_gpu else None, levels, args.require_sandbox,
                      between, args.points)
    if args.require_sandbox and levels["cpu"][0] != "full":
        print(f"grade class: --require-sandbox: this machine cannot isolate submissions: {levels['cpu'][1]}",
              file=sys.stderr)

    progress = Progress(len(students))
    rows: dict[str, Row] = {}

    def finish(student: str, outcomes: dict[str, Outcome], key: str, cleaned: str = "") -> None:
        folder = out_dir / student
        folder.mkdir(exist_ok=True)
        state = {"student": student, "key": key, "exercises": {
            e: o.kept if o.kept is not None else {
                "status": o.status, "score": o.score, "why": o.why,
                "report_max": o.report.max_score if o.report is not None else None,
                "build_failed": bool(o.report is not None and any(c.name == "builds" and not c.passed
                                                                  for c in o.report.checks)),
                "too_large": bool(o.report is not None and any(TOO_LARGE in c.feedback for c in o.report.checks)),
                "seconds": round(o.seconds, 2),
                # what leaderboard.csv ranks: only a submission that passed every check has it
                "speed": getattr(o.report, "speed", {}) if getattr(o.report, "leaderboard", None) else {},
                "checks": [{"name": c.name, "passed": c.passed, "causes": class_tools.likely_causes(c)}
                           for c in (o.report.checks if o.report is not None else [])],
                "fingerprints": _prints(e, found[student].files.get(e)) if o.status == "graded" else [],
                "part": graded_part(e, o) if o.status == "graded" else None}
            for e, o in outcomes.items()}}
        for outcome in outcomes.values():
            if outcome.error:
                last = outcome.error.strip().splitlines()[-1]
                print(visible(_utf8(f"grade class: {student}: {outcome.exercise}: the grader failed: {last} "
                                    f"(traceback in {folder / 'report.txt'})")), file=sys.stderr)
        _write(folder / "results.json", _json(student_results(outcomes, maxima, found[student].near)))
        _write(folder / "report.txt", visible(_utf8(student_report(student, found[student], outcomes, setting,
                                                                   cleaned))))
        state["complete"] = all(o.status != "not graded" for o in outcomes.values())
        state["waiting"] = [e for e, o in outcomes.items() if o.why == NO_GPU]  # for a GPU, nothing else
        _write(folder / "state.json", _json(state))  # last: it vouches for the others
        row = make_row(student, state, maxima)
        rows[student] = row
        progress.step(row.complete, graded=True, waiting=bool(row.waiting) and not row.failed)

    only = set(args.only or [])
    queue: collections.deque[Task] = collections.deque()
    waiting: dict[str, list] = {}  # student -> [outcomes, key, tasks not yet done]
    finished_at_once = []
    for student in students:
        here = found[student]
        key = submission_key(here, setting)
        state = _read_json(out_dir / student / "state.json")
        if only and student not in only:  # --only: everyone else is left as they are
            if state and isinstance(state.get("exercises"), dict) and all(e in state["exercises"] for e in exercises):
                rows[student] = make_row(student, state, maxima)
            progress.step(True, graded=False)
            continue
        unchanged = (not args.force and not only and state and state.get("key") == key
                     and (out_dir / student / "results.json").is_file() and (out_dir / student / "report.txt").is_file())
        if unchanged and state.get("complete"):
            rows[student] = make_row(student, state, maxima)
            progress.step(True, graded=False)
            continue
        gpu_part = waiting_for_gpu(state, exercises) if unchanged else []
        if gpu_part and setting.gpu is not None:  # still no GPU: nothing of theirs to grade here
            rows[student] = row = make_row(student, state, maxima)
            progress.step(row.complete, graded=False, waiting=True)
            continue
        outcomes: dict[str, Outcome] = {}
        for exercise in exercises:
            if gpu_part and exercise not in gpu_part:  # unchanged, and graded (or not submitted) last time
                entry = state["exercises"][exercise]
                outcomes[exercise] = (Outcome(exercise, "graded", seconds=entry.get("seconds", 0.0), kept=entry)
                                      if entry["status"] == "graded" else Outcome(exercise, entry["status"]))
            elif exercise in here.problems:
                outcomes[exercise] = Outcome(exercise, "not graded", here.problems[exercise])
            elif exercise not in here.files:
                outcomes[exercise] = Outcome(exercise, "not submitted")
            else:
                queue.append(Task(student, exercise, here.files[exercise], uids_of(student, exercise)))
        if len(outcomes) < len(exercises):
            waiting[student] = [outcomes, key, len(exercises) - len(outcomes)]
        else:  # nothing to grade: written at once
            finished_at_once.append((student, outcomes, key))

    _warm(setting, {task.exercise for task in queue})
    gc.freeze()  # what the workers inherit stays shared: no collection in them touches (copies) it
    workdir = Path(tempfile.mkdtemp(prefix="scanlab-class-", dir=os.environ.get("SCANLAB_SCRATCH") or None))
    os.chmod(workdir, 0o711)  # a sandbox's uid must reach its scratch folder inside
    workers = Workers(args.jobs, setting, workdir)
    current, before = None, None  # one student at a time: the one being graded, and what was there before
    try:
        for student, outcomes, key in finished_at_once:
            finish(student, {e: outcomes[e] for e in exercises}, key)
        while queue or workers.busy:
            while queue and len(workers.busy) < args.jobs:
                if alone and current is not None and queue[0].student != current:
                    break  # the next student starts once this one is done and cleaned up after
                task = queue.popleft()
                if alone and current is None:
                    current, before = task.student, (None if root else snapshot())
                workers.start(task)
            for task, outcome in workers.wait():
                entry = waiting[task.student]
                entry[0][task.exercise] = outcome
                entry[2] -= 1
                if entry[2]:
                    continue
                cleaned = ""
                if alone:
                    cleaned = remove_leftovers(uids_of(task.student), before, workdir)
                    current = None
                finish(task.student, {e: entry[0][e] for e in exercises}, entry[1], cleaned)
    except (KeyboardInterrupt, OSError) as exc:
        workers.stop(kill=True)
        why = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"cannot write the outputs: {exc}"
        print(f"\ngrade class: {why}; students finished so far keep their outputs", file=sys.stderr)
        return EXIT_FAIL
    finally:
        workers.stop()
        _unmount_under(workdir)
        shutil.rmtree(workdir, ignore_errors=True)
    if not students:
        progress.show()

    write_csv(out_dir / "grades.csv", list(rows.values()), exercises)
    identity = {**((previous or {}).get("identity") or {}), **taken.identity}
    write_books(out_dir, list(rows.values()), exercises, identity, maxima)
    stale = sorted(shown_name(p.name) for p in out_dir.iterdir() if p.is_dir() and (p / "state.json").is_file()
                   and p.name not in rows and (args.shard is None or p.name not in everyone))
    if stale:
        print(f"grade class: left in {args.out} but no longer in {args.class_dir} (not in grades.csv): "
              f"{', '.join(stale)}", file=sys.stderr)
    info = {
        "seed": seed, "mode": args.mode, "shard": f"{index}/{count}" if args.shard else None,
        "harness": version, "maxima": maxima, "maxima_for": [version["files"], args.mode],
        "exercises": {e: ALL_FILES[e] for e in exercises}, "class_dir": str(class_dir), "class_students": everyone,
        "students": students, "refused": [shown_name(name) for name, _ in refused],
        "layout": taken.layout, "identity": identity, "config": args.config_file, "points": args.points,
        "only": sorted(only) or None,
        "gpu": "usable" if wants_gpu and gpu is None else gpu,
        "isolation": {kind: line for kind, (_, line) in levels.items()},
        "between_students": between,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "elapsed_s": round(time.monotonic() - started, 1),
    }
    _write(out_dir / "class.json", _json(info))
    not_graded = sorted(row.student for row in rows.values() if not row.complete)
    print(f"grade class: wrote {args.out / 'grades.csv'}: {len(rows)} students" + _not_graded(rows.values()),
          file=sys.stderr)
    return EXIT_FAIL if not_graded or refused else EXIT_PASS


def _not_graded(rows) -> str:
    """The end of the closing line: who failed to grade, and who waits for a GPU (nothing else of theirs
    is left to grade: a rerun on a GPU machine grades just that)."""
    failed = sorted((row.student for row in rows if not row.complete and not (row.waiting and not row.failed)),
                    key=natural_key)
    waiting = sorted((row.student for row in rows if row.waiting and not row.failed), key=natural_key)
    return ((f"; not every submission graded for: {', '.join(failed)}" if failed else "")
            + (f"; waiting for a GPU: {', '.join(waiting)}" if waiting else ""))


# ---- merge ------------------------------------------------------------------------------------

def merge(argv: list[str]) -> int:
    parser = _Parser(prog="grade.py merge", usage=USAGE, add_help=False)
    parser.add_argument("shards", type=Path, nargs="+")
    parser.add_argument("--out", type=Path, required=True)
    if "--help" in argv or "-h" in argv:  # the usage and where the options are explained, status 0
        print(f"usage: {USAGE.removeprefix('usage: ')}\nSee harness/README.md, \"Grading a class\", for every option.")
        return EXIT_PASS
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
        for exercise in ALL_FILES:  # a GPU-less shard may not know day31's maximum: that is no conflict
            a, b = (first.get("maxima") or {}).get(exercise), (info.get("maxima") or {}).get(exercise)
            if a is not None and b is not None and a != b:
                raise Usage(f"{args.shards[0]} and {shard} give {exercise} different maxima ({a} and {b})")
    exercises = [e for e in ALL_FILES if e in (first.get("maxima") or EXERCISE_FILES)]
    maxima = {e: next((i["maxima"][e] for i in infos if (i.get("maxima") or {}).get(e) is not None), None)
              for e in exercises}
    identity = {}
    for info in infos:
        identity.update(info.get("identity") or {})

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
    write_csv(out_dir / "grades.csv", list(rows.values()), exercises)
    write_books(out_dir, list(rows.values()), exercises, identity, maxima)
    merged = {key: first.get(key) for key in ("seed", "mode", "harness", "exercises", "class_dir", "class_students",
                                              "layout", "config", "points")}
    merged.update({"shard": None, "maxima": maxima, "maxima_for": first.get("maxima_for"),
                   "students": sorted(rows, key=natural_key), "identity": identity, "merged_from": [str(s.resolve()) for s in args.shards]})
    _write(out_dir / "class.json", json.dumps(merged, indent=2) + "\n")
    not_graded = sorted(row.student for row in rows.values() if not row.complete)
    print(f"grade merge: wrote {args.out / 'grades.csv'}: {len(rows)} students from {len(args.shards)} shards"
          + _not_graded(rows.values()), file=sys.stderr)
    return EXIT_FAIL if problems or not_graded or len(rows) < len(where) else EXIT_PASS


def main(argv: list[str]) -> int:
    """argv[0] is "class" or "merge" (harness/grade.py dispatches here)."""
    try:
        return grade_class(argv[1:]) if argv[0] == "class" else merge(argv[1:])
    except Usage as exc:
        print(f"grade {argv[0]}: {exc}\n{USAGE}", file=sys.stderr)
        return EXIT_USAGE
