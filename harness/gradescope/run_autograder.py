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
course mode through `grade()` (scanlab/dispatch.py), exactly as `grade.py EXERCISE FILE
--mode course` would. Every exercise appears in results.json whatever
happens to it, always with the same maximum: graded (its checks, named
"EXERCISE: check"), not submitted (naming a file called almost like it, to be
renamed), not a usable file, needs a GPU this machine does not have, or not
graded because the grader failed. The exercises are the zip's course.txt
(make_autograder.py --exercises: the stretch drills only when named there). Students see the
tests' outputs; the instructor-only text (full reports, seeds, tracebacks) goes
to standard output, which results.json marks hidden.

Each exercise is graded in a child process of its own with a wall-clock
budget, EXERCISE_BUDGET_S (100 s; $SCANLAB_EXERCISE_BUDGET_S sets another):
a grader that runs past it (a pathological submission can make the grader's
own Python run for hours) is stopped with every process it started, and a
grader that crashes (Python itself included) costs only its exercise: "not
graded: the grader ran past its N s limit", or "the grader itself failed".
The calling script bounds the whole run at TOTAL_BUDGETS budgets (500 s), so
Gradescope's own timeout must be longer than that (harness/README.md).

Partial isolation (no bubblewrap: runs get a uid of their own but can read
the machine's files) is what Gradescope's container usually gives, so before
grading, this autograder closes its own files to every other uid (`protect`):
ROOT/source (the harness, scan_counts.py, the drivers and the driver cache)
and ROOT/results belong to root with mode 0700 (folders) or 0600 (files), and
it grades with umask 077. A run needs none of them: the sandbox copies what it
runs into the run's own scratch folder (0700, the run's uid's), whose parents
in the grader's scratch (`Scratch`) are 0711: passable, not listable; the
submitted file's copy and the grader's work are in 0700 folders beside them.

Every string of results.json is valid UTF-8 (`strict`): a byte of a file name
that is not UTF-8 is shown as \\xNN, and a backslash in a file name as \\\\.

Exit status: 0 results.json written and every submitted exercise graded (the
scores are whatever they are); 4 results.json written, but something could not
be graded (the tests say what); 2 bad command line. On any other status the
calling script writes a fallback results.json itself.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import random
import re
import select
import shutil
import signal
import stat
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

HARNESS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HARNESS))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_schema import problems as schema_problems  # noqa: E402
from scanlab import dispatch, registry, sandbox  # noqa: E402  dispatch.grade(): grade.py's, exactly
from scanlab.grading import Report, max_score, visible, write_results_atomically  # noqa: E402

EXIT_WRITTEN = 0
EXIT_USAGE = 2
EXIT_NOT_ALL_GRADED = 4

# The exercises this autograder grades, one id a line: written into the zip by make_autograder.py
# (its --exercises, which may add stretch drills; by default the course). Read from here only.
COURSE_FILE = Path(__file__).resolve().parent / "course.txt"


def course_exercises(path: Path = COURSE_FILE) -> dict[str, str]:
    """id -> the file a student submits it under (the starter's name in exercises/), in the registry's
    order: the zip's course.txt, else harness/exercises.toml without the stretch drills."""
    try:
        chosen = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except OSError:
        return registry.course()
    return registry.course(chosen)  # RegistryError on a name it does not know: the run's fallback says so


EXERCISE_FILES = course_exercises()

# One exercise's grading, wall clock. A complete drill grades in under 10 s on two cores; a
# submission that runs into every per-run limit of the sandbox (each compile step 20 s, each
# driver run 5 s) still fits. $SCANLAB_EXERCISE_BUDGET_S (whole seconds) sets another.
EXERCISE_BUDGET_S = 100
# The whole run: `run_autograder` stops Python after this many budgets (one per exercise, and one
# for the autograder's own work) and writes its fallback results.json; test_gradescope.py checks
# that the script says the same.
TOTAL_BUDGETS = len(EXERCISE_FILES) + 1
KILL_WAIT_S = 10  # after a stop: how long a child may take to be reaped before it is given up on

MAX_READ_BYTES = 16 << 20  # bounds what is copied; the graders apply their own (smaller) size limits
MAX_LISTED = 20  # ignored files named in the output, then a count
STUDENT_VISIBLE = "visible"
# One workflow for the GPU exercises on a machine without a GPU (Gradescope's standard ones): they
# weigh nothing in this assignment (0 of 0, submitted or not), so its maximum is what students can
# earn here; the instructor grades them on a GPU machine (`grade.py class`) into an assignment of
# their own ("Day 31 (GPU)"). harness/README.md, "Day 31 needs a GPU", says the same.
GPU_MESSAGE = ("{exercise} needs an NVIDIA GPU, and this grading machine has none ({why}). Your file was "
               "received ({name}). It is not scored in this assignment: your instructor grades it on a GPU "
               "machine (`grade.py class`) and posts that score as an assignment of its own.")
GPU_NOT_SUBMITTED = ("{exercise} needs an NVIDIA GPU and is not scored in this assignment; no file named {name} "
                     "was found (your instructor grades it on a GPU machine from the file you submit here).")
CRASH_MESSAGE = ("not graded: the grader itself failed (not your code's fault; tell your instructor, "
                 "who sees the details)")
OVERTIME_MESSAGE = ("not graded: the grader ran past its {budget} s limit (a correct answer grades in seconds; "
                    "your instructor sees the details)")


@dataclass
class Found:
    """What the submission holds for one exercise."""
    exercise: str
    path: Path | None = None  # the file to grade, as found (never followed if a link)
    shown: str = ""  # its path inside the submission, as the student sees it (`shown_name`)
    problem: str = ""  # why it cannot be graded ("" when it can, or when nothing was found)
    also: tuple[str, ...] = ()  # other candidates, not graded
    near: tuple[str, ...] = ()  # files named almost like this exercise's (02_Segmented_Scan.cpp), as shown


# ---- text that strict JSON readers accept ---------------------------------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogate(match: re.Match) -> str:
    code = ord(match.group(0))
    # os.fsdecode keeps an undecodable byte b as the lone surrogate U+DC00 + b (b >= 0x80)
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def strict(value):
    """`value` (a str, or dicts and lists of them) with every lone surrogate, which UTF-8 cannot
    carry and strict JSON readers refuse, written as an escape: \\xNN for an undecodable byte of a
    file name (what os.fsdecode keeps it as), \\uDXXX for any other."""
    if isinstance(value, str):
        return _SURROGATE.sub(_escape_surrogate, value)
    if isinstance(value, dict):
        return {strict(k): strict(v) for k, v in value.items()}
    if isinstance(value, list):
        return [strict(v) for v in value]
    return value


def shown_name(name: str) -> str:
    """A name from the submission as results.json shows it, unambiguously: a backslash doubled,
    then each byte that is not UTF-8 as \\xNN (control characters become \\x1b... when written,
    scanlab.grading.visible). So a name that holds a real backslash never reads like one that
    holds an escaped byte."""
    return strict(name.replace("\\", "\\\\"))


# ---- closing the autograder's own files to the runs ------------------------------------------

def cache_folder(root: Path) -> Path:
    """Where the drivers are compiled and cached: $SCANLAB_CACHE, else ROOT/source/cache (inside the
    folder `protect` closes; setup.sh's --prepare fills it once, when the image is built)."""
    named = os.environ.get("SCANLAB_CACHE")
    return Path(named) if named else root / "source" / "cache"


def protect(paths: list[Path]) -> list[str]:
    """Every folder (0700) and file (0600, 0700 if executable) under each path: owned by root (when we
    are root), no access for anyone else. Links are left alone (never followed). What could not be
    changed, said in a line each (nothing on success)."""
    problems = []
    owner = os.geteuid() == 0

    def close(path: str, folder: bool) -> None:
        try:
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                return
            if owner and (info.st_uid, info.st_gid) != (0, 0):
                os.chown(path, 0, 0, follow_symlinks=False)
            mode = 0o700 if folder else (0o700 if info.st_mode & stat.S_IXUSR else 0o600)
            if stat.S_IMODE(info.st_mode) != mode:
                os.chmod(path, mode)
        except OSError as exc:
            problems.append(f"{path}: {exc.strerror or exc}")

    for top in paths:
        if not os.path.lexists(top) or os.path.islink(top):
            continue
        close(str(top), top.is_dir())
        for folder, dirs, files in os.walk(top, onerror=lambda exc: problems.append(str(exc))):
            for name in dirs:
                close(os.path.join(folder, name), True)
            for name in files:
                close(os.path.join(folder, name), False)
    return problems


def passable(folder: Path) -> bool:
    """Every folder from / down to `folder` lets other uids pass (x), so a run reaches its scratch."""
    try:
        return all(os.stat(p).st_mode & stat.S_IXOTH for p in (folder, *folder.parents))
    except OSError:
        return False


class Scratch:
    """The grader's scratch folder for one submission, removed after (mounts left by a stopped
    grader included):

        scanlab-autograder-XXXX/   0711, in $SCANLAB_SCRATCH or the temporary folder
          private/EXERCISE/        0700: the submitted file's copy, the grader's work and temporaries
          boxes/EXERCISE/          0711: the sandboxes' folders ($SCANLAB_SCRATCH of that grader), each
                                   0700 and owned by its run's uid
    """

    def __init__(self):
        self.base = Path(tempfile.mkdtemp(prefix="scanlab-autograder-", dir=os.environ.get("SCANLAB_SCRATCH") or None))
        os.chmod(self.base, 0o711)
        for name, mode in (("private", 0o700), ("boxes", 0o711)):
            (self.base / name).mkdir()
            os.chmod(self.base / name, mode)

    def folders(self, exercise: str) -> tuple[Path, Path]:
        """(private, boxes) of one exercise."""
        private, boxes = self.base / "private" / exercise, self.base / "boxes" / exercise
        for folder, mode in ((private, 0o700), (boxes, 0o711)):
            folder.mkdir()
            os.chmod(folder, mode)
        (private / "tmp").mkdir(mode=0o700)
        return private, boxes

    def remove(self) -> None:
        boxes = self.base / "boxes"
        for folder in boxes.glob("*/*"):  # a sandbox's tmpfs, when its grader was stopped mid-run
            if os.path.ismount(folder):
                _unmount(folder)
        shutil.rmtree(self.base, ignore_errors=True)


def _unmount(folder: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.umount2(os.fsencode(folder), 2)  # MNT_DETACH


# ---- one grader in a child process, with a budget -------------------------------------------

def _process_table() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, uid) of every process."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            table[int(entry.name)] = (int(fields[1]), os.stat(f"/proc/{entry.name}").st_uid)
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
    return table


def stop_tree(pid: int, uids: range) -> None:
    """SIGKILL a grader child, its process group, every process below it (in whatever session or uid:
    a sandboxed run is in a session of its own), and every process of a run's uid seen among them.
    The tree is frozen first (SIGSTOP, which nothing can refuse), so nothing forks or escapes to
    init while it is killed."""
    frozen: dict[int, int] = {}
    for _ in range(100):
        table = _process_table()
        below: dict[int, list[int]] = {}
        for child, (parent, _) in table.items():
            below.setdefault(parent, []).append(child)
        tree, todo = [], [pid] if pid in table else []
        while todo:
            p = todo.pop()
            tree.append(p)
            todo += below.get(p, [])
        new = [p for p in tree if p not in frozen]
        if not new:
            break
        for p in new:
            frozen[p] = table[p][1]
            try:
                os.kill(p, signal.SIGSTOP)
            except OSError:
                pass
        time.sleep(0.01)
    for p in frozen:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    for uid in sorted({u for u in frozen.values() if u in uids}):
        sandbox.kill_uid(uid)


def _reap(pid: int, wait_s: float) -> int | None:
    """The child's wait status, waiting at most `wait_s`; None if it has not ended."""
    until = time.monotonic() + wait_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() > until:
            return None
        time.sleep(0.02)


def _described(status: int | None) -> str:
    if status is None:
        return "did not end"
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        return f"exit status {code}"
    try:
        return f"killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"


def in_child(job: Callable[[Callable[[str], None]], object], budget_s: float, uids: range,
             log: Callable[[str], None]) -> tuple[str, object]:
    """Run `job(log)` in a forked child (a session of its own) for at most `budget_s` seconds.
    ("done", what it returned) | ("overtime", None) | ("crashed", how it ended). The child's log
    lines reach `log` as they come (through a pipe, as JSON lines), so they are kept even when it
    is stopped; what it returns must be JSON (strings, numbers, lists, dicts)."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()  # nothing buffered here is printed twice by the child
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: grades, reports, and never returns into the caller
        code = 70
        try:
            os.close(read_fd)
            os.setsid()
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            with os.fdopen(write_fd, "w", encoding="utf-8") as pipe:
                def send(kind: str, value) -> None:
                    pipe.write(json.dumps({kind: value}) + "\n")
                    pipe.flush()
                try:
                    send("result", job(lambda text: send("log", text)))
                    code = 0
                except BaseException:  # noqa: BLE001 - said to the parent, which decides
                    send("log", f"the grader's process failed:\n{traceback.format_exc(limit=8)}")
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:  # noqa: BLE001
                    pass
            os._exit(code)
    os.close(write_fd)
    deadline = time.monotonic() + budget_s
    pending, result, overtime = b"", None, False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                overtime = True
                break
            ready, _, _ = select.select([read_fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                break  # the child has ended (or closed its end: it is about to)
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                try:
                    message = json.loads(line)
                except ValueError:
                    log(f"(an unreadable line from the grader's process: {line[:200]!r})")
                    continue
                if "log" in message:
                    log(message["log"])
                elif "result" in message:
                    result = message
    except BaseException:
        stop_tree(pid, uids)
        _reap(pid, KILL_WAIT_S)
        raise
    finally:
        os.close(read_fd)
    if overtime:
        stop_tree(pid, uids)
        _reap(pid, KILL_WAIT_S)
        return "overtime", None
    status = _reap(pid, KILL_WAIT_S)
    if status is None:
        stop_tree(pid, uids)
        status = _reap(pid, KILL_WAIT_S)
    if result is None:
        return "crashed", _described(status)
    return "done", result["result"]


def uid_slice(index: int, count: int) -> range:
    """The `index`-th of `count` equal parts of the sandbox's uids: each exercise's grader draws
    from its own, so no two graders of one submission ever hand out the same uid."""
    size = len(sandbox.UID_RANGE) // count
    return sandbox.UID_RANGE[index * size:(index + 1) * size] if size else sandbox.UID_RANGE


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
    entries, ignored, by their `shown_name`. Links are never followed, not even to a folder."""
    by_name = {name: exercise for exercise, name in EXERCISE_FILES.items()}
    candidates: dict[str, list[tuple[Path, str]]] = {exercise: [] for exercise in EXERCISE_FILES}
    near: dict[str, list[str]] = {}
    ignored: list[str] = []

    def other(name: str, shown: str) -> str:  # how a file that is not graded is listed
        if name in registry.FILES.values():  # a stretch drill this assignment does not grade
            return f"{shown} (not graded in this assignment)"
        meant = registry.near_miss(name, EXERCISE_FILES.values())
        if meant is None:
            return shown
        near.setdefault(by_name[meant], []).append(shown)
        return f"{shown} (named almost like {meant}: rename it exactly to have it graded)"

    top = _entries(folder)
    for depth in (0, 1):  # every top-level candidate before any one folder down
        for entry in top:
            if depth == 0:
                if entry.name in by_name:
                    candidates[by_name[entry.name]].append((Path(entry.path), entry.name))
                elif not entry.is_dir(follow_symlinks=False):
                    ignored.append(other(entry.name, shown_name(entry.name)))
                continue
            if entry.name in by_name or not entry.is_dir(follow_symlinks=False):
                continue
            inside = _entries(Path(entry.path))
            if not inside:
                ignored.append(shown_name(entry.name) + "/")
            for sub in inside:
                shown = f"{shown_name(entry.name)}/{shown_name(sub.name)}"
                if sub.name in by_name:
                    candidates[by_name[sub.name]].append((Path(sub.path), shown))
                else:
                    ignored.append(shown + "/" if sub.is_dir(follow_symlinks=False) else other(sub.name, shown))
    found = {}
    for exercise, options in candidates.items():
        if not options:
            found[exercise] = Found(exercise, near=tuple(near.get(exercise, ())))
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
    """The exercise's points whatever the outcome (the sum of its entries in harness/exercises.toml,
    the graders' own table), so a test for an exercise that was not graded weighs what a graded
    one would."""
    return float(max_score(exercise))


def rename_hint(found: Found) -> str:
    """For an exercise not found: the files named almost like its file, and what to do."""
    if found.path is not None or not found.near:
        return ""
    return (f"; you submitted {', '.join(found.near)}: rename it exactly {EXERCISE_FILES[found.exercise]} "
            "to have it graded")


def quick_result(found: Found, gpu_problem: str | None) -> tuple[list[dict], str, bool] | None:
    """(tests, a line for the summary, graded) of an exercise with nothing to grade here: not
    submitted, not a usable file, or needing a GPU this machine lacks. None: it is to be graded."""
    exercise = found.exercise
    name = EXERCISE_FILES[exercise]
    points = maximum(exercise)
    if dispatch.needs_gpu(exercise) and gpu_problem is not None:
        message = (GPU_MESSAGE.format(exercise=exercise, why=gpu_problem, name=found.shown) if found.path
                   and not found.problem else
                   GPU_NOT_SUBMITTED.format(exercise=exercise, name=name).rstrip(".") + rename_hint(found) + ".")
        return ([test_entry(f"{exercise}: graded on a GPU machine", 0.0, 0.0, message, passed=True)],
                f"{exercise}: graded on a GPU machine, not here (0 of 0 points here)", True)
    if found.path is None:
        return ([test_entry(f"{exercise}: submitted", 0.0, points,
                            f"not submitted: no file named {name} at the top of your submission or one folder "
                            "down" + rename_hint(found))], f"{exercise}: not submitted (0/{points:g})", True)
    if found.problem:
        return ([test_entry(f"{exercise}: submitted", 0.0, points, found.problem)],
                f"{exercise}: {found.problem} (0/{points:g})", True)
    return None


def grade_found(found: Found, seed: int, private: Path, log) -> tuple[list[dict], str, bool]:
    """(tests, a line for the summary, graded) of a submitted file, graded by its exercise's grader;
    `private` is a folder only we can read (the file's copy and the grader's work go there)."""
    exercise = found.exercise
    try:
        try:
            copy = copy_private(found, private)
        except OSError as exc:
            points = maximum(exercise)
            why = exc.strerror or str(exc)
            return ([test_entry(f"{exercise}: submitted", 0.0, points, f"not graded: {why}")],
                    f"{exercise}: not graded: {why} (0/{points:g})", True)
        work = private / "work"
        work.mkdir(mode=0o700)
        report = dispatch.grade(exercise, copy, work, seed, "course")
        log(instructor_text(report))
        tests = []
        graded = report.gradescope()
        for test in graded["tests"]:
            test = dict(test)
            if not test["name"].startswith(f"{exercise}: "):  # the report's own hidden test carries it already
                test["name"] = f"{exercise}: {test['name']}"
            tests.append(test)
        if graded.get("leaderboard") and tests:  # carried out of the child in a test's extra_data; see build_results
            tests[0]["extra_data"] = {"leaderboard": graded["leaderboard"]}
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


def grade_one(found: Found, gpu_problem: str | None, seed: int, scratch: Scratch, budget_s: int, uids: range,
              log) -> tuple[list[dict], str, bool]:
    """(tests, a line for the summary, graded) for one exercise; a submitted file is graded in a child
    process with `budget_s` seconds of wall clock, its sandboxes drawing their uids from `uids`."""
    quick = quick_result(found, gpu_problem)
    if quick is not None:
        return quick
    exercise = found.exercise
    private, boxes = scratch.folders(exercise)

    def job(child_log):  # in the child: its scratch, temporaries and uids are its own
        os.environ["SCANLAB_SCRATCH"] = str(boxes)
        os.environ["TMPDIR"] = tempfile.tempdir = str(private / "tmp")
        os.environ["SCANLAB_UID_RANGE"] = f"{uids.start}-{uids.stop - 1}"
        sandbox.UID_RANGE = uids
        return list(grade_found(found, seed, private, child_log))

    how, value = in_child(job, budget_s, uids, log)
    if how == "done":
        tests, line, graded = value
        return tests, line, graded
    points = maximum(exercise)
    if how == "overtime":
        log(f"{exercise}: the grader ran past its {budget_s} s limit on {found.shown}; it was stopped with every "
            "process it had started")
        message = OVERTIME_MESSAGE.format(budget=budget_s)
    else:
        log(f"{exercise}: the grader's process ended ({value}) before it reported on {found.shown}")
        message = CRASH_MESSAGE
    return [test_entry(f"{exercise}: graded", 0.0, points, message)], f"{exercise}: {message} (0/{points:g})", False


# ---- the whole submission ---------------------------------------------------------------------

def gpu_check(found: dict[str, Found], log) -> str | None:
    """The Day 31 grader's own GPU probe: made always (a GPU exercise weighs 0 here without a GPU,
    submitted or not, so the assignment's maximum must not depend on what was submitted)."""
    if not any(dispatch.needs_gpu(f.exercise) for f in found.values()):
        return None
    try:
        from scanlab.grade_day31 import probe_gpu

        return probe_gpu()
    except Exception as exc:  # noqa: BLE001 - a failing probe means no usable GPU, said plainly
        log(f"GPU probe raised:\n{traceback.format_exc(limit=4)}")
        return f"the GPU check failed: {exc}"


def isolation_line(closed: list[str] | None = None) -> str:
    """What sandboxed runs get here, in one line; `closed`: what `protect` could not close ([]: all of
    it closed, None: not asked), said when the runs can read the machine's files."""
    try:
        level, line = sandbox.isolation(gpu=False)
    except Exception as exc:  # noqa: BLE001
        return f"isolation: unknown ({exc})"
    if level == "full":
        return f"isolation: {line}"
    text = f"isolation (not full; {level}): {line}"
    if closed == [] and os.geteuid() == 0:
        text += ("; of this autograder's own files they can read none (source/ with the harness and its driver "
                 "cache, results/ and the grader's scratch are root's, mode 0700)")
    elif closed:
        text += f"; WARNING: {len(closed)} of this autograder's files could not be closed to them: {closed[0]}"
    return text


def budget() -> int:
    """One exercise's wall-clock seconds: $SCANLAB_EXERCISE_BUDGET_S when it is a whole number of
    seconds (1-999999, no leading zero, as `run_autograder` reads it too), else EXERCISE_BUDGET_S."""
    text = os.environ.get("SCANLAB_EXERCISE_BUDGET_S", "")
    return int(text) if re.fullmatch(r"[1-9][0-9]{0,5}", text) else EXERCISE_BUDGET_S


def build_results(root: Path, seed: int, started: float, log, closed: list[str] | None = None) -> tuple[dict, bool]:
    found, ignored = find_submissions(root / "submission")
    isolation = isolation_line(closed)
    log(isolation)
    log(f"seed {seed} for every exercise's hidden inputs")
    gpu_problem = gpu_check(found, log)
    if gpu_problem:
        log(f"no usable GPU: {gpu_problem}")
    tests: list[dict] = []
    lines: list[str] = []
    all_graded = True
    seconds = budget()
    scratch = Scratch()
    if not passable(scratch.base):
        log(f"warning: {scratch.base.parent} is closed to other uids: sandboxed runs may not reach their scratch "
            "folders (set SCANLAB_SCRATCH to a folder every uid may pass through)")
    try:
        for index, exercise in enumerate(EXERCISE_FILES):  # the zip's course: stretch drills only if built with them
            got, line, graded = grade_one(found[exercise], gpu_problem, seed, scratch, seconds,
                                          uid_slice(index, len(EXERCISE_FILES)), log)
            tests += got
            lines.append(line)
            all_graded &= graded
            if found[exercise].also:
                lines.append(f"  also found, not graded: {', '.join(found[exercise].also)}")
    finally:
        scratch.remove()
    if ignored:
        shown = ", ".join(ignored[:MAX_LISTED]) + (f" and {len(ignored) - MAX_LISTED} more"
                                                    if len(ignored) > MAX_LISTED else "")
        lines.append(f"ignored (not an exercise file): {shown}")
    score = sum(t["score"] for t in tests)
    out_of = sum(t["max_score"] for t in tests)
    output = "\n".join([f"scan-lab autograder: {score:g}/{out_of:g}", isolation, *lines])
    board = [entry for t in tests for entry in t.pop("extra_data", {}).get("leaderboard", [])]
    results = {"score": score, "execution_time": round(time.monotonic() - started, 3), "output": output,
               "stdout_visibility": "hidden", "tests": tests}
    if board:  # Gradescope's leaderboard (drill 05's speed, when the course grades it on a GPU machine)
        results["leaderboard"] = board
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
    shown with its control characters escaped (scanlab.grading.visible), and every string valid
    UTF-8 (`strict`), so strict JSON readers take it."""
    results = {**results, "output": visible(results.get("output", "")),
               "tests": [{**test, "name": visible(test["name"]), "output": visible(test["output"])}
                         for test in results.get("tests", [])]}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_results_atomically(strict(results), path)
    os.chmod(path, 0o600)  # root's, like the rest of the autograder's files (Gradescope reads it as root)


def private_paths(root: Path) -> list[Path]:
    """What `protect` closes: ROOT/source (this zip, unpacked), ROOT/results and the driver cache."""
    return [root / "source", root / "results", cache_folder(root)]


def prepare(root: Path, seed: int) -> int:
    """setup.sh's check: grade every CPU exercise's untouched starter (building and caching the
    drivers on the way) so a missing tool fails the image build, not a student's submission; then
    close the autograder's files to other uids."""
    print(isolation_line())
    failed = 0
    for exercise in EXERCISE_FILES:
        needs_gpu = dispatch.needs_gpu(exercise)
        if needs_gpu:
            print(f"{exercise}: needs a GPU, graded elsewhere; worth {maximum(exercise):g} here")
            continue
        try:
            with tempfile.TemporaryDirectory(prefix="scanlab-starter-") as work:
                report = dispatch.grade(exercise, registry.EXERCISES[exercise].starter, Path(work), seed, "course")
        except Exception:  # noqa: BLE001
            failed += 1
            print(f"{exercise}: the grader failed on the untouched starter:\n{traceback.format_exc(limit=8)}")
            continue
        print(f"{exercise}: the untouched starter scores {report.score:g}/{report.max_score:g}")
    closed = protect(private_paths(root))
    for problem in closed:
        print(f"could not close to other uids: {problem}")
    return 1 if failed or closed else 0


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
    umask = os.umask(0o077)  # what the grader writes (caches, copies, bytecode) is its own
    cache = os.environ.get("SCANLAB_CACHE")
    os.environ["SCANLAB_CACHE"] = str(cache_folder(args.root))
    try:
        return prepare(args.root, seed) if args.prepare else grade_submission(args.root, seed, started)
    finally:  # as they were, for a caller in the same process (the tests)
        os.umask(umask)
        if cache is None:
            os.environ.pop("SCANLAB_CACHE", None)
        else:
            os.environ["SCANLAB_CACHE"] = cache


def grade_submission(root: Path, seed: int, started: float) -> int:
    """Grade ROOT/submission into ROOT/results/results.json; main's exit status."""
    def log(text: str) -> None:  # standard output: the instructor's, hidden from students
        print(text, flush=True)

    target = root / "results" / "results.json"
    try:
        closed = protect(private_paths(root))
        for problem in closed:
            log(f"could not close to other uids: {problem}")
        results, all_graded = build_results(root, seed, started, log, closed)
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


def _stopped(signum, frame):
    """run_autograder's time limit (SIGTERM): unwind, so that in_child stops its grader child on the way."""
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _stopped)
    sys.exit(main())
