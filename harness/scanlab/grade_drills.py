"""Graders for the A05 drills (exercises/01-03): exact, harness-owned, CPU only.

drill01 and drill02 treat the submission as untrusted code:

- It is compiled ALONE (drill02: together with harness/drivers/drill02_shim.cpp,
  which only marshals between the student's Seg and plain integers), inside a
  `Sandbox`, under its own file name so compiler messages name the student's
  file. Its macros, pragmas and includes never reach the grader's code.
- The driver (harness/drivers/drill0N_driver.cpp) is trusted: compiled here,
  outside any sandbox, once per version of its sources, and cached outside the
  repository ($SCANLAB_CACHE or ~/.cache/scanlab). The link of driver.o with
  submission.o happens in the sandbox. A student's unguarded main() is renamed
  in submission.o (objcopy), and a submission may not define a function the
  driver itself calls (fwrite, operator new...): it could not be graded.
- Every driver run is one function on one input, in a FRESH sandbox that holds
  the linked program and only the inputs that function reads; never an
  expected output. The driver calls the function and dumps the raw storage of
  every array it handed over (guard words included); Python compares all of it
  with what it wrote and with references it computes itself. Nothing the
  submission prints is read. A crash, a limit or an early exit costs that case
  only and is a failing check; a function that times out skips its remaining
  cases.

drill03: the numbers in the student's Markdown are compared with the numbers
harness/scanlab/scan_counts.py counts (it simulates both scans and counts every
add, barrier and active thread; a port of solutions/03_scan_analysis.cpp, tested
to print the same), never with constants typed in here, and never needing
solutions/. Prose answers become notes.

Scores: every check's points come from harness/points.toml (checked against the
check names below when this module is imported). An untouched starter scores 0:
"builds" is worth nothing, and checks a stub passes by accident are gated (see
`gated`). Modes: in "course" mode no feedback holds an expected value (the
"should be" halves, the reference counts); those go into instructor-only detail.

Every grader: `grade(exercise, submission, workdir, seed, timeout=None, mode="self-study") -> Report`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
from array import array
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from itertools import accumulate
from pathlib import Path
from typing import Callable

try:
    from . import scan_counts
except ImportError:  # the student release leaves the counter out: run, it prints drill 03's answers
    scan_counts = None
from .grading import MODES, Report, require_points
from .paths import REPO
from .run import run_process
from .sandbox import COMPILE_LIMITS, Limits, Outcome, Sandbox

DRIVERS = REPO / "harness" / "drivers"
SHIM02 = DRIVERS / "drill02_shim.cpp"
CXXFLAGS = ("-std=c++17", "-O2", "-Wall", "-Wextra")
TIMEOUT_S = 5.0  # per driver run (wall and CPU seconds): one function on all its cases, or on one case.
# A right answer needs well under 0.1 s for all of them; a hang costs two runs (all cases, then case by case).
COMPILE_TIMEOUT_S = 300.0  # the grader's own programs (the drivers)
POISON = -999_999_999  # what the drivers fill outputs and guard words with (drill_io.hpp)
GUARD = 8  # guard words either side of every array handed to the submission (drill_io.hpp kGuard)
DRIVER_ERROR = 90  # the drivers' own I/O failures (drill_io.hpp)
MAX_CASES_SHOWN = 3
MAX_SUBMISSION_BYTES = 1 << 20
MAX_COMPILER_LINES = 40

# Names in the scratch folder; the submission keeps its own name unless it is odd or one of these.
SHIM_NAME = "scanlab_drill02_shim.cpp"
PREPROCESSED = "scanlab_submission.ii"  # drill02: the submission with its macros expanded and gone
SCRATCH_NAMES = {"submission.o", "driver.o", "driver", "output.bin", SHIM_NAME, PREPROCESSED}
PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,99}")
FALLBACK_NAME = "submission.cpp"

# The starter's signatures, by function name, for link and compile errors.
SIGNATURES = {
    "exclusive_to_inclusive": "exclusive_to_inclusive(const long long*, const long long*, long long*, std::size_t)",
    "inclusive_to_exclusive": "inclusive_to_exclusive(const long long*, long long*, std::size_t)",
    "total_from_exclusive": "total_from_exclusive(const long long*, const long long*, std::size_t)",
    "seg_identity": "Seg seg_identity()",
    "seg_combine": "Seg seg_combine(Seg a, Seg b)",
    "tree_scan_inclusive": "template <typename T, typename Op> void tree_scan_inclusive(T* x, std::size_t n, Op op, "
                           "T identity)",
    "segmented_scan_tile": "void segmented_scan_tile(const Seg* in, Seg* out, std::size_t n, Seg carry)",
}
# The global symbols of submission.o the driver links against; nothing else of it may meet the driver.
ENTRY_POINTS = {
    "drill01": {"_Z22exclusive_to_inclusivePKxS0_Pxm", "_Z22inclusive_to_exclusivePKxPxm",
                "_Z20total_from_exclusivePKxS0_m"},
    "drill02": {"scanlab_seg_identity", "scanlab_seg_combine", "scanlab_segmented_scan_tile",
                "scanlab_tree_scan_inclusive"},
}
STUDENT_MAIN = "scanlab_student_main"


def run_limits(timeout: float) -> Limits:
    """One driver run: `timeout` seconds of wall and of CPU time, the sandbox's other defaults."""
    return Limits(cpu_s=timeout, wall_s=timeout)


# ---- tools ---------------------------------------------------------------------------

def compiler() -> list[str] | None:
    """$CXX (may carry flags) or g++; None when neither is on PATH."""
    words = shlex.split(os.environ.get("CXX", "")) or ["g++"]
    found = shutil.which(words[0])
    return [found, *words[1:]] if found else None


def tool(name: str) -> str | None:
    """A binutils program by absolute path (the sandbox has no PATH search of ours)."""
    return shutil.which(name)


@dataclass
class Built:
    """A program of the grader's own, built outside the sandbox."""
    ok: bool
    exe: Path
    command: list[str]
    output: str

    @property
    def reproduce(self) -> str:
        return shlex.join(self.command)


def compile_cxx(source: Path, exe: Path, include_dirs: tuple[Path, ...] = (), extra: tuple[str, ...] = ()) -> Built:
    """Compile trusted harness code on the host (never a submission)."""
    exe.parent.mkdir(parents=True, exist_ok=True)
    cxx = compiler()
    command = [*(cxx or ["g++"]), *CXXFLAGS, *(f"-I{d}" for d in include_dirs), *extra, "-o", str(exe), str(source)]
    if cxx is None:
        return Built(False, exe, command, "no C++ compiler: g++ is not on PATH (set CXX to choose one)")
    try:
        proc = run_process(command, capture_output=True, text=True, errors="replace", timeout=COMPILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Built(False, exe, command, f"the compiler did not finish within {COMPILE_TIMEOUT_S:g} s")
    except OSError as exc:
        return Built(False, exe, command, f"the compiler could not be started: {exc}")
    return Built(proc.returncode == 0 and exe.exists(), exe, command, proc.stdout + proc.stderr)


# ---- the trusted driver objects, cached outside the repository ----------------------

def cache_dir() -> Path:
    named = os.environ.get("SCANLAB_CACHE")
    return Path(named) if named else Path.home() / ".cache" / "scanlab"


@dataclass
class DriverObject:
    path: Path | None
    undefined: frozenset[str] = frozenset()  # what driver.o calls from elsewhere (libc, libstdc++, the submission)
    strong: frozenset[str] = frozenset()  # what it defines (main, scanlab_traced_combine)
    weak: frozenset[str] = frozenset()  # inline and template code it carries (COMDAT)
    problem: str = ""


_DRIVER_LOCK = threading.Lock()
_DRIVERS: dict[str, DriverObject] = {}


def driver_key(drill: str, cxx: list[str]) -> str:
    digest = hashlib.sha256()
    for source in (DRIVERS / f"{drill}_driver.cpp", DRIVERS / "drill_io.hpp"):
        digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    real = Path(cxx[0]).resolve()
    info = real.stat()
    digest.update(json.dumps([str(real), info.st_size, info.st_mtime_ns, cxx[1:], CXXFLAGS]).encode())
    return digest.hexdigest()[:32]


def driver_object(drill: str) -> DriverObject:
    """The compiled driver for `drill` and its symbols: built once per version and kept in the cache.

    Written atomically (a temporary file, then a rename), so graders running at
    the same time never see half an object file."""
    cxx, nm = compiler(), tool("nm")
    if cxx is None or nm is None:
        return DriverObject(None, problem="no C++ compiler or no nm on PATH (g++ and binutils are needed)")
    key = f"{drill}-{driver_key(drill, cxx)}"
    with _DRIVER_LOCK:
        if key in _DRIVERS:
            return _DRIVERS[key]
        folder = cache_dir() / "drivers"
        obj, syms = folder / f"{key}.o", folder / f"{key}.symbols.json"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if not (obj.is_file() and syms.is_file()):
                fd, tmp = tempfile.mkstemp(prefix=f".{key}-", suffix=".o", dir=folder)
                os.close(fd)
                try:
                    built = compile_cxx(DRIVERS / f"{drill}_driver.cpp", Path(tmp), (DRIVERS,), ("-c",))
                    if not built.ok:
                        return DriverObject(None, problem=f"$ {built.reproduce}\n{built.output.strip()}")
                    table = host_symbols(nm, Path(tmp))
                    write_atomically(syms, json.dumps(table).encode())
                    os.replace(tmp, obj)
                finally:
                    Path(tmp).unlink(missing_ok=True)
            table = json.loads(syms.read_text())
        except (OSError, ValueError) as exc:
            return DriverObject(None, problem=f"the driver cache {folder} is not usable: {exc} (set SCANLAB_CACHE)")
        found = DriverObject(obj, frozenset(table["U"]), frozenset(table["strong"]), frozenset(table["weak"]))
        _DRIVERS[key] = found
        return found


def write_atomically(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def parse_nm(text: str) -> dict[str, list[str]]:
    """`nm -P` lines -> {"U": [...], "strong": [...], "weak": [...]} of the global symbols."""
    table: dict[str, list[str]] = {"U": [], "strong": [], "weak": []}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2 or len(parts[1]) != 1:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            table["U"].append(name)
        elif kind in "WVu":
            table["weak"].append(name)
        elif kind.isupper() or kind == "i":
            table["strong"].append(name)
    return table


def host_symbols(nm: str, obj: Path) -> dict[str, list[str]]:
    """Symbols of OUR object file (trusted), read on the host."""
    proc = run_process([nm, "-P", "-g", str(obj)], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise OSError(f"nm failed on {obj}: {proc.stderr.strip()}")
    return parse_nm(proc.stdout)


# ---- building a submission, inside a sandbox ------------------------------------------

@dataclass
class Submission:
    """What the student's file is called in the scratch folder, and its bytes."""
    name: str
    data: bytes

    @staticmethod
    def read(path: Path) -> "Submission":
        name = path.name if PLAIN_NAME.fullmatch(path.name) and path.name not in SCRATCH_NAMES else FALLBACK_NAME
        with open(path, "rb") as f:
            data = f.read(MAX_SUBMISSION_BYTES + 1)
        return Submission(name, data)


@dataclass
class Linked:
    ok: bool
    exe: Path | None = None  # the linked driver, on the host: never run outside a sandbox
    problem: str = ""  # the 'builds' feedback when not ok
    notes: list[str] = field(default_factory=list)


def compile_command(cxx: list[str], drill: str, sub: Submission) -> list[str]:
    source = sub.name
    extra: list[str] = []
    if drill == "drill02":
        source = SHIM_NAME
        extra = [f'-DSCANLAB_SUBMISSION_FILE="{PREPROCESSED}"']
    return [*cxx, *CXXFLAGS, "-x", "c++", "-c", "-DSCANLAB_GRADER", *extra, source, "-o", "submission.o"]


def preprocess_command(cxx: list[str], sub: Submission) -> list[str]:
    """drill02's first step: expand the submission's macros, so none of them reaches the shim that follows it
    (its line markers keep every later message pointing at the student's own file and line)."""
    return [*cxx, "-std=c++17", "-x", "c++", "-E", "-DSCANLAB_GRADER", sub.name, "-o", PREPROCESSED]


def cut(text: str, lines: int = MAX_COMPILER_LINES) -> str:
    rows = text.strip().splitlines()
    return "\n".join(rows[:lines]) + (f"\n... ({len(rows) - lines} more lines)" if len(rows) > lines else "")


BLOCK_START = re.compile(r"^(In file included from |\S[^:]*: (In |At global scope)|\S[^:]*:\d+:\d+: (fatal )?(error|warning):)")
CONTEXT = re.compile(r"^(In file included from |\s+from |\S[^:]*: (In |At global scope))")


def student_first(output: str, name: str) -> str:
    """Compiler output with the diagnostics about the student's own file first, cut to a readable length.

    A diagnostic block starts at an error, a warning or its context line ("In
    function ...", "In file included from ..."); notes stay with their error."""
    blocks: list[list[str]] = []
    for line in output.strip().splitlines():
        if not blocks or (BLOCK_START.match(line) and not CONTEXT.match(blocks[-1][-1])):
            blocks.append([])
        blocks[-1].append(line)
    located = re.compile(rf"^{re.escape(name)}:\d+:\d+: (fatal )?error:")
    mine = [b for b in blocks if any(located.match(line) for line in b)]
    rest = [b for b in blocks if not any(located.match(line) for line in b)]
    return cut("\n".join(line for b in mine + rest for line in b))


def build_submission(drill: str, submission: Path, workdir: Path) -> Linked:
    """Compile the submission alone and link it with the cached driver, all in one sandbox."""
    driver = driver_object(drill)
    if driver.path is None:
        return Linked(False, problem="the grader could not build its own driver (a harness problem, not yours; "
                                     f"tell your instructor):\n{driver.problem}")
    cxx, nm, objcopy = compiler(), tool("nm"), tool("objcopy")
    if cxx is None or nm is None or objcopy is None:
        return Linked(False, problem="the grader needs g++, nm and objcopy on PATH (a harness problem, not yours)")
    sub = Submission.read(submission)
    if len(sub.data) > MAX_SUBMISSION_BYTES:
        return Linked(False, problem=f"your file is larger than {MAX_SUBMISSION_BYTES >> 20} MiB; a drill answer "
                                     "is a few kilobytes")
    notes = []
    if sub.name != submission.name:
        notes.append(f"your file was compiled as {sub.name} (its own name has characters the grader does not "
                     "pass to a compiler)")
    with Sandbox(gpu=False) as box:
        box.put(sub.name, sub.data)
        if drill == "drill02":
            box.put(SHIM_NAME, SHIM02.read_bytes())
            command = preprocess_command(cxx, sub)
            compiled = box.run(command, COMPILE_LIMITS)
        if drill != "drill02" or compiled.ok:
            command = compile_command(cxx, drill, sub)
            compiled = box.run(command, COMPILE_LIMITS)
        output = (compiled.stdout + compiled.stderr).strip()
        shown_command = "$ " + shlex.join(["g++", *command[1:]] if Path(cxx[0]).name == "g++" else command)
        if not compiled.ok:
            why = compiled.limit or ("" if compiled.returncode > 0 else compiled.describe())
            text = (f"your file did not compile{f' ({why})' if why else ''}:\n{shown_command}\n"
                    f"{student_first(output, sub.name)}")
            return Linked(False, problem=text + compile_hints(drill, output, sub.name))
        warnings = [line for line in output.splitlines() if "warning:" in line]
        if warnings:
            notes.append("compiled with warnings (worth fixing; they do not fail the build):\n"
                         + cut("\n".join(warnings), 20))

        symbols = box.run([nm, "-P", "-g", "--defined-only", "submission.o"], Limits(output_bytes=8 << 20))
        if not symbols.ok or symbols.output_dropped:
            return Linked(False, problem=f"the grader could not list the symbols of your compiled file "
                                         f"({symbols.describe()}); is it unusually large?")
        defined = parse_nm(symbols.stdout)
        clash = sorted(((set(defined["strong"]) | set(defined["weak"])) & (driver.undefined | driver.strong)
                        | set(defined["strong"]) & driver.weak) - ENTRY_POINTS[drill] - {"main"})
        if clash:
            return Linked(False, problem=(
                "your file defines functions or objects that the grader's own driver uses, so the driver could not "
                "trust its own calls: " + ", ".join(demangle(box, clash)[:8])
                + ". Rename them (or make them static); a drill answer needs none of them."))
        if "main" in defined["strong"] or "main" in defined["weak"]:
            renamed = box.run([objcopy, "--redefine-sym", f"main={STUDENT_MAIN}", "submission.o"], COMPILE_LIMITS)
            if not renamed.ok:
                return Linked(False, problem=f"the grader could not set your main() aside ({renamed.describe()}): "
                                             "keep it inside #ifndef SCANLAB_GRADER, as the starter does")
            notes.append("your main() is not used: the grader brings its own (it was renamed in your compiled "
                         "file; keep main inside #ifndef SCANLAB_GRADER, as the starter does)")

        box.put("driver.o", driver.path)
        linked = box.run([*cxx, "-o", "driver", "driver.o", "submission.o"], COMPILE_LIMITS)
        data = box.get("driver") if linked.ok else None
        if data is None:
            return Linked(False, problem=link_problem(drill, linked))
    workdir.mkdir(parents=True, exist_ok=True)
    exe = workdir / f"{drill}_driver"
    exe.unlink(missing_ok=True)
    exe.write_bytes(data)
    exe.chmod(0o755)
    return Linked(True, exe, notes=notes)


def demangle(box: Sandbox, names: list[str]) -> list[str]:
    """Readable names for the message (c++filt runs in the sandbox: the names are the student's)."""
    cxxfilt = tool("c++filt")
    if cxxfilt is None:
        return names
    out = box.run([cxxfilt, *names[:8]], Limits())
    readable = out.stdout.splitlines() if out.ok else []
    return readable if len(readable) == len(names[:8]) else names


def compile_hints(drill: str, output: str, name: str) -> str:
    hints = []
    if re.search(rf"^{re.escape(SHIM_NAME)}:\d+:\d+: error", output, re.M):
        hints.append("the grader's adapter (harness/drivers/drill02_shim.cpp, compiled after your file) could not "
                     "use your code as the starter declares it. Keep struct Seg { bool flag; long long value; } "
                     "and these signatures:\n  " + "\n  ".join(SIGNATURES[f] for f in (
                         "seg_identity", "seg_combine", "tree_scan_inclusive", "segmented_scan_tile")))
    if "scanlab_traced" in output:
        hints.append("tree_scan_inclusive must work for any T and Op: inside it call op(a, b), never seg_combine by "
                     "name, and use only copies, assignment and `identity` on T values. The grader calls it with its "
                     "own opaque element type (scanlab_traced).")
    return ("\nhint: " + "\nhint: ".join(hints)) if hints else ""


def link_problem(drill: str, linked: Outcome) -> str:
    output = (linked.stdout + linked.stderr).strip()
    if linked.limit or linked.signal:
        return f"linking your file with the grader's driver failed ({linked.describe()}):\n{cut(output)}"
    missing = []
    for name in re.findall(r"undefined reference to [`']([A-Za-z_][A-Za-z0-9_]*)", output):
        if name in SIGNATURES and name not in missing:
            missing.append(name)
    lines = [f"your file does not define {SIGNATURES[name]} (the starter's signature)" for name in missing]
    if re.search(r"multiple definition of [`'](scanlab_|main)", output):
        lines.append("your file defines a name the grader's driver defines (scanlab_...)")
    head = "\n".join(lines) if lines else "your file compiled but did not link with the grader's driver"
    return f"{head}:\n{cut(output)}"


# ---- running the driver: one function's cases per fresh sandbox ----------------------------

@dataclass
class Ran:
    ok: bool
    problem: str = ""
    timed_out: bool = False
    words: array | None = None  # this case's dump, when the run reached its end
    dropped: int = 0  # bytes of output the sandbox discarded


SIGNAL_MEANING = {
    "SIGSEGV": "a read or write outside the memory the program owns",
    "SIGABRT": "abort(): an uncaught exception (std::vector::at out of range?), a failed assert, or a heap error",
    "SIGFPE": "an arithmetic fault (a division by zero?)",
    "SIGBUS": "a misaligned or impossible memory access",
    "SIGILL": "an illegal instruction (a function that falls off its end without returning?)",
}

LIMIT_MEANING = {
    "time limit": "an endless loop, such as a loop variable that never grows, or far more work than a scan needs?",
    "memory": "memory that grows without bound, or far more than n elements need?",
    "process": "does your code start processes (fork, system)? A drill needs none",
    "file size": "does your code write files? A drill writes only into the arrays it is given",
}


@dataclass
class Job:
    """One case of one function: the driver's mode, the case (an input file's bytes, or for
    tree a size on the command line), and the number of words its dump must have."""
    group: str  # the function (a check): its cases share a run
    index: int  # the case's place in its group
    mode: str
    expected_words: int
    data: bytes | None = None
    arg: str | None = None


def run_driver(exe: Path, jobs: list[Job], timeout: float) -> list[Ran]:
    """Run the driver once, in a fresh sandbox holding it and these cases' inputs only, on the
    cases in order (`driver MODE output.bin CASE...`); one Ran per case. When the run does not
    reach its end (a crash, a limit, an exit inside the submission), every case gets its problem."""
    with Sandbox(gpu=False) as box:
        box.put("driver", exe, executable=True)
        args = []
        for k, job in enumerate(jobs):
            if job.data is None:
                args.append(job.arg)
            else:
                args.append(box.put(f"case{k}.bin", job.data))
        outcome = box.run(["./driver", jobs[0].mode, "output.bin", *args], run_limits(timeout))
        data = box.get("output.bin")
    return interpret(outcome, data, [job.expected_words for job in jobs])


def interpret(out: Outcome, data: bytes | None, expected_words: list[int]) -> list[Ran]:
    stderr = out.stderr.strip().splitlines()
    tail = ("\n    stderr: " + "\n    stderr: ".join(stderr[-4:])) if stderr else ""

    def each(problem: str, timed: bool = False) -> list[Ran]:
        return [Ran(False, problem, timed, dropped=out.output_dropped if k == 0 else 0)
                for k in range(len(expected_words))]

    if out.limit:
        key = next((k for k in LIMIT_MEANING if k in out.limit), "")
        timed = "time limit" in out.limit
        return each(f"{'did not finish' if timed else 'stopped'}: {out.limit}"
                    + (f" ({LIMIT_MEANING[key]})" if key else "") + tail, timed)
    if out.signal or out.returncode < 0:
        name = out.signal or f"signal {-out.returncode}"
        return each(f"crashed: killed by {name} ({SIGNAL_MEANING.get(name, 'a fatal signal')}){tail}")
    if out.returncode == 0:
        dumps = split_dumps(data, expected_words)
        if dumps is None:
            return each("the program ended before the grader's driver wrote its results (exit(), quick_exit() or "
                        "_exit() in your code?)")
        return [Ran(True, words=words, dropped=out.output_dropped if k == 0 else 0) for k, words in enumerate(dumps)]
    if out.returncode == DRIVER_ERROR:
        return each("exit status 90: the grader's driver could not read its input or write its results (a harness "
                    "problem, unless your code exits with status 90 or touches files)" + tail)
    return each(f"the program stopped with exit status {out.returncode} inside your code (an exit() or a failed "
                f"check of your own?){tail}")


def split_dumps(data: bytes | None, expected_words: list[int]) -> list[array] | None:
    """The driver's output file cut into one dump per case, or None unless every case's word
    count is the expected one and nothing follows the last."""
    if data is None or len(data) != 8 * sum(1 + w for w in expected_words):
        return None
    words = array("q")
    words.frombytes(data)
    dumps, at = [], 0
    for want in expected_words:
        if words[at] != want:
            return None
        dumps.append(words[at + 1:at + 1 + want])
        at += 1 + want
    return dumps


def run_jobs(exe: Path, jobs: list[Job], timeout: float) -> dict[tuple[str, int], Ran]:
    """Every function's cases in one run of their own, as many functions at once as there are cores.

    A run that does not reach its end is repeated case by case, in order, each case in a fresh
    sandbox, so the verdict names the case that failed; the cases of a function after its first
    timeout are skipped (missing from the result)."""
    groups: dict[str, list[Job]] = {}
    for job in jobs:
        groups.setdefault(job.group, []).append(job)

    def one(group: list[Job]) -> list[tuple[Job, Ran]]:
        together = run_driver(exe, group, timeout)
        if all(ran.ok for ran in together):
            return list(zip(group, together))
        alone = []
        for job in group:
            ran, = run_driver(exe, [job], timeout)
            alone.append((job, ran))
            if ran.timed_out:
                break
        return alone

    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2), thread_name_prefix="drill-run") as pool:
        results = list(pool.map(one, groups.values()))
    return {(job.group, job.index): ran for done in results for job, ran in done}


def words_bytes(words) -> bytes:
    return array("q", words).tobytes()


def dropped_note(runs) -> list[str]:
    total = sum(r.dropped for r in runs)
    if not total:
        return []
    return [f"your code printed more than the grader keeps: {total} bytes of output were discarded (the checks "
            "were still graded on the results; printing is not needed)"]


def random_values(n: int, seed: int, salt: str, low: int = -15, high: int = 15) -> list[int]:
    """Seeded small integers, zeros and negatives included, so no wrong answer hides in monotone data."""
    rng = random.Random(f"{seed}/{salt}")
    span = high - low + 1
    return [b % span + low for b in rng.randbytes(n)]


def big_values(n: int, seed: int, salt: str) -> list[int]:
    """Seeded integers in -2^33 .. 2^34, mostly positive: prefix sums pass 2^40 within a few hundred
    elements (an int accumulator wraps at 2^31), and stay far from the int64 limits."""
    rng = random.Random(f"{seed}/{salt}/big")
    return [rng.randint(-(1 << 33), 1 << 34) for _ in range(n)]


def cycle8(n: int) -> list[int]:
    return [i % 8 + 1 for i in range(n)]


def near_poison(value: int, small: bool) -> bool:
    """A value that holds the poison plus a little: read from outside the arrays. Only said on
    cases whose own values are small (on the large-value cases, big numbers are normal)."""
    return small and value != POISON and abs(value) >= abs(POISON) // 2


def shown(value: int, small: bool = True) -> str:
    if value == POISON:
        return f"{POISON} (the grader's poison: never written)"
    if near_poison(value, small):
        return f"{value} (holds the grader's poison: read from outside the arrays)"
    return str(value)


def first_mismatch(expected, actual) -> tuple[int, int] | None:
    """(count, first index) of the elements that differ, or None."""
    if len(expected) == len(actual) and expected == actual:
        return None
    bad = [i for i, (e, a) in enumerate(zip(expected, actual)) if e != a]
    bad += list(range(min(len(expected), len(actual)), max(len(expected), len(actual))))
    return len(bad), bad[0]


def n_of(case) -> int:
    return len(case.values)


def shown_path(submission: Path) -> str:
    """The submission's path relative to the repository root when it lies inside, else absolute."""
    path = Path(os.path.abspath(submission))
    try:
        return str(path.relative_to(REPO.resolve()))
    except ValueError:
        try:
            return str(path.resolve().relative_to(REPO.resolve()))
        except ValueError:
            return str(path)


def reproduce_line(drill: str, submission: Path, seed: int) -> str:
    """A shell-quoted command that runs from the repository root."""
    return "reproduce: " + shlex.join(["python3", "harness/grade.py", drill, shown_path(submission),
                                       "--seed", str(seed)])


def builds_check(report: Report, linked: Linked, names: list[str]) -> bool:
    """The 'builds' check; when it fails, every other check fails as 'not run'."""
    report.notes.extend(linked.notes)
    if linked.ok:
        report.add("builds", True)
        return True
    report.add("builds", False, linked.problem)
    for name in names:  # listed, so the maximum is the same whatever the outcome
        report.add(name, False, "not run: the submission did not build (see 'builds')")
    return False


def gated(report: Report, name: str, passed: bool, feedback: str, counts: bool, why: str) -> None:
    """Add a check that a stub can pass by accident: it passes only when `counts` (its
    precondition) holds too; otherwise it fails with `why`, so a starter earns nothing."""
    if passed and not counts:
        report.add(name, False, f"not counted yet: {why}")
    else:
        report.add(name, passed, feedback)


@dataclass
class Failure:
    case_label: str
    text: str  # what went wrong, with indices and values
    diagnosis: str = ""
    n: int | None = None  # the case's size, for the one-line list of further failures
    student: str | None = None  # course mode: `text` without the expected values (None: text is safe)


def summarise(failures: list[Failure], cases_total: int, reproduce: str, student: bool = False) -> str:
    """The failing cases as one check's feedback; student=True: the course-mode text."""
    lines = []
    said = ""
    for f in failures[:MAX_CASES_SHOWN]:
        lines.append(f"{f.case_label}:")
        text = f.student if student and f.student is not None else f.text
        lines += [f"  {line}" for line in text.splitlines()]
        if f.diagnosis and f.diagnosis != said:
            lines.append(f"  likely cause: {f.diagnosis}")
            said = f.diagnosis
    if len(failures) > MAX_CASES_SHOWN:
        more = failures[MAX_CASES_SHOWN:]
        sizes = ", ".join(f"n={f.n}" for f in more if f.n is not None)
        lines.append(f"... and {len(more)} more failing case(s)" + (f": {sizes}" if sizes else ""))
    lines.append(f"{len(failures)} of {cases_total} cases failed. {reproduce}")
    return "\n".join(lines)


def add_cases(report: Report, name: str, failures: list[Failure], cases_total: int, reproduce: str,
              head: str = "") -> None:
    """One check from its failing cases (none, and no `head`: it passes), in both modes' words."""
    if not failures and not head:
        report.add(name, True)
        return
    tail = [summarise(failures, cases_total, reproduce)] if failures else []
    safe_tail = [summarise(failures, cases_total, reproduce, student=True)] if failures else []
    report.add(name, False, "\n".join([t for t in (head,) if t] + tail),
               student="\n".join([t for t in (head,) if t] + safe_tail))


# ---- drill 01: exclusive <-> inclusive and the total ----------------------------------

@dataclass(eq=False)
class Case01:
    """One input of drill 01. The cases of a seed are made once and shared by every submission
    graded with it (a class), so what is derived from them is kept here too."""
    label: str
    values: list[int]
    inputs: dict[str, bytes] = field(default_factory=dict, repr=False)  # mode -> input file
    dumps: dict[str, array] = field(default_factory=dict, repr=False)  # mode -> a right run's dump

    @cached_property
    def inclusive(self) -> list[int]:
        return list(accumulate(self.values))

    @cached_property
    def exclusive(self) -> list[int]:
        return ([0] + self.inclusive[:-1]) if self.values else []

    @cached_property
    def small(self) -> bool:
        """Every value and prefix far below the poison: a number near it was read from outside."""
        return all(abs(v) < abs(POISON) // 4 for v in (*self.values, *self.inclusive))


@lru_cache(maxsize=4)
def drill01_cases(seed: int) -> list[Case01]:
    """The public inputs, then seeded random inputs of sizes the starter never shows (made once per
    seed: treat them as read-only)."""
    cases = [
        Case01("page example: n=8, in = 3 1 7 0 4 1 6 3", [3, 1, 7, 0, 4, 1, 6, 3]),
        Case01("lesson input: n=256, in[i] = (i % 8) + 1", cycle8(256)),
        Case01("empty: n=0 (nothing to convert; the total of nothing is the identity 0)", []),
        Case01("one element: n=1, in = 5", [5]),
    ]
    drawn = random.Random(f"{seed}/drill01-size").randrange(2001, 5000, 2)
    for n, why in ((2, "the smallest shift"), (255, "a 256-tile minus one"), (257, "a 256-tile plus one"),
                   (1000, "not a power of two"), (drawn, "a size drawn from the seed")):
        cases.append(Case01(f"hidden (seed {seed}): n={n}, {why}, random integers -15..15",
                            random_values(n, seed, f"drill01/{n}")))
    cases.append(Case01(f"hidden (seed {seed}): n=1001, values -2^33..2^34 whose prefix sums pass 2^40: a 32-bit "
                        "(int) accumulator or temporary overflows; long long does not",
                        big_values(1001, seed, "drill01/1001")))
    cases.append(Case01(f"hidden (seed {seed}): n=1000003, large and odd, random integers -15..15",
                        random_values(1_000_003, seed, "drill01/1000003")))
    return cases


# What each mode's run is given, in the order of the function's parameters, and what it writes.
DRILL01_INPUTS = {"e2i": ("in", "excl"), "i2e": ("incl",), "total": ("in", "excl")}


def drill01_arrays(case: Case01) -> dict[str, list[int]]:
    return {"in": case.values, "incl": case.inclusive, "excl": case.exclusive}


def drill01_input(mode: str, case: Case01) -> bytes:
    """The input file of one case: n, then only the arrays the function reads (never its answer)."""
    if mode not in case.inputs:
        arrays = drill01_arrays(case)
        words = [len(case.values)]
        for name in DRILL01_INPUTS[mode]:
            words += arrays[name]
        case.inputs[mode] = words_bytes(words)
    return case.inputs[mode]


def right_dump01(mode: str, case: Case01) -> array:
    """The dump of a run that read its inputs only, wrote every output slot right and nothing else:
    a run whose dump equals it word for word passes without further judging."""
    if mode not in case.dumps:
        arrays = drill01_arrays(case)
        dump = array("q")
        for name in DRILL01_INPUTS[mode]:
            dump += guarded(arrays[name])
        if mode == "total":
            dump.append(case.inclusive[-1] if case.values else 0)
        else:
            dump += guarded(case.inclusive if mode == "e2i" else case.exclusive)
        case.dumps[mode] = dump
    return case.dumps[mode]


def drill01_output_words(mode: str, n: int) -> int:
    return (len(DRILL01_INPUTS[mode]) + (mode != "total")) * (n + 2 * GUARD) + (mode == "total")


def guarded(values: list[int]) -> array:
    """An array's storage as the driver lays it out: poisoned guard words either side."""
    return array("q", [POISON] * GUARD + list(values) + [POISON] * GUARD)


def changed_input(name: str, written: array, dumped: array) -> str:
    """Where the submission wrote into a read-only input (guard words included), or ""."""
    if dumped == written:
        return ""
    k = next(k for k in range(len(written)) if dumped[k] != written[k])
    return (f"changed its input {name}[{k - GUARD}]: the conversion must only read its inputs "
            "(no shifting in place, not even in an input buffer)")


def guard_written(out_name: str, storage: array, n: int) -> str:
    """The first guard word around the output that no longer holds the poison, or ""."""
    k = next((k for k in (*range(GUARD), *range(GUARD + n, n + 2 * GUARD)) if storage[k] != POISON), None)
    if k is None:
        return ""
    index, value = k - GUARD, storage[k]
    if index < 0:
        where = "before the start (valid indices are 0..n-1): a loop that writes index i - 1 must start at i = 1"
    elif index == n:
        where = "one past the end (valid indices are 0..n-1): a loop that writes index i + 1 must stop at i = n - 2"
    else:
        where = "past the end (valid indices are 0..n-1)"
    return f"wrote {out_name}[{index}] = {value}, {where}"


def judge_drill01(mode: str, out_name: str | None, case: Case01, words: array) -> tuple[list[str], list[int] | int]:
    """(what went wrong with the side effects, the result) of one run's raw dump."""
    n = len(case.values)
    size = n + 2 * GUARD
    arrays = drill01_arrays(case)
    lines = []
    for k, name in enumerate(DRILL01_INPUTS[mode]):
        changed = changed_input(name, guarded(arrays[name]), words[k * size:(k + 1) * size])
        if changed:
            lines.append(changed)
            break  # the first changed input is enough
    at = len(DRILL01_INPUTS[mode]) * size
    if out_name is None:
        return lines, words[at]
    storage = words[at:at + size]
    written = guard_written(out_name, storage, n)
    if written:
        lines.append(written)
    return lines, storage[GUARD:GUARD + n].tolist()


def diagnose_e2i(case: Case01, actual: list[int]) -> str:
    values, excl, expected = case.values, case.exclusive, case.inclusive
    n = len(values)
    if n and all(a == POISON for a in actual):
        return "incl was never written: every element still holds the grader's poison."
    if actual == excl:
        return "incl is excl copied unchanged: add each element's own value, incl[i] = excl[i] + in[i]."
    if n >= 2 and actual[:-1] == excl[1:] and actual[-1] != expected[-1]:
        return ("incl[i] = excl[i + 1] is right everywhere but the last element, where excl[n] does not exist: "
                "that is the total, which the exclusive scan dropped. Add in[i] instead of shifting.")
    if n >= 2 and all(actual[i] == excl[i] + values[i + 1] for i in range(n - 1)):
        return "adds in[i + 1] instead of in[i]: an off-by-one index."
    if n >= 2 and all(actual[i] == excl[i] + values[i - 1] for i in range(1, n)):
        return "adds in[i - 1] instead of in[i]: an off-by-one index."
    bad = [i for i in range(n) if actual[i] != expected[i]]
    if bad == [0]:
        return ("only incl[0] is wrong. This direction has no boundary case: incl[0] = excl[0] + in[0] = in[0]"
                + (" (you wrote the identity 0 there)." if actual[0] == 0 else "."))
    if bad == [n - 1]:
        return "only the last element is wrong: does the loop stop one element early?"
    return ""


def diagnose_i2e(case: Case01, actual: list[int]) -> str:
    incl, expected = case.inclusive, case.exclusive
    n = len(incl)
    if n and all(a == POISON for a in actual):
        return "excl was never written: every element still holds the grader's poison."
    bad = [i for i in range(n) if actual[i] != expected[i]]
    if bad == [0]:
        if actual[0] == POISON:
            return "excl[0] was never written: it must be the identity 0, the sum of nothing."
        if actual[0] == incl[0]:
            return (f"excl[0] is incl[0] = {incl[0]}, but it must be the identity 0: nothing precedes "
                    "element 0.")
        return f"excl[0] should be the identity 0 (the sum of nothing), not {shown(actual[0], case.small)}."
    if actual == incl:
        return "excl is incl unchanged: shift it right by one, excl[i] = incl[i - 1], with excl[0] = 0."
    if n >= 2 and actual[:-1] == incl[1:]:
        return ("the inclusive scan shifted the wrong way (excl[i] = incl[i + 1]): the exclusive scan is "
                "incl moved one place to the RIGHT, excl[i] = incl[i - 1].")
    if n >= 3 and len(set(actual[1:])) == 1 and len(set(expected[1:])) > 1:
        return (f"every element from excl[1] on is {shown(actual[1], case.small)}: a shift done front to back inside one "
                "buffer reads the slot it has just overwritten, so one value smears down the array. Read "
                "from incl and write to excl (never in place).")
    if bad == [n - 1]:
        return "only the last element is wrong: does the loop stop one element early?"
    if bad and actual[0] == expected[0] and all(actual[i] == POISON for i in bad):
        return "some elements were never written (they still hold the poison): the loop misses part of 1..n-1."
    return ""


def diagnose_total(case: Case01, actual: int) -> str:
    values, excl = case.values, case.exclusive
    n = len(values)
    if actual == POISON or near_poison(actual, case.small):
        return (("n = 0: excl[n - 1] reads excl[SIZE_MAX], which is excl[-1] (n - 1 wraps for an unsigned n), "
                 "outside the array. The total of nothing is the identity 0: return it when n == 0.")
                if n == 0 else "the total holds the grader's poison: it read an element outside in or excl.")
    if n == 0:
        return f"n = 0: the total of nothing is the identity 0, not {actual}."
    if actual == 0 and excl[n - 1] != 0:
        return "returned 0 for a non-empty input: nothing was computed (the starter's stub returns 0)."
    if actual == excl[n - 1]:
        return ("returned excl[n - 1]: that is the sum of everything BEFORE the last element; the total "
                "is excl[n - 1] + in[n - 1].")
    if actual == values[n - 1]:
        return "returned in[n - 1] alone: the total is excl[n - 1] + in[n - 1]."
    if n >= 2 and actual == excl[n - 1] + values[n - 2]:
        return "added in[n - 2]: the element that fell off the end is in[n - 1]."
    if n >= 2 and actual == excl[n - 2] + values[n - 1]:
        return "used excl[n - 2]: the last prefix is excl[n - 1]."
    if n >= 2 and actual == excl[n - 2] + values[n - 2]:
        return "used excl[n - 2] + in[n - 2], which is excl[n - 1]: the last element is still missing."
    return ""


DRILL01_CHECKS = {
    # check name -> (driver mode, output array name or None for the total)
    "exclusive_to_inclusive": ("e2i", "incl"),
    "inclusive_to_exclusive": ("i2e", "excl"),
    "total_from_exclusive": ("total", None),
}


def grade_drill01(submission: Path, workdir: Path, seed: int, timeout: float,
                  grading_mode: str = "self-study") -> Report:
    # grading_mode, not mode: below, `mode` is the driver's mode of each function (e2i, i2e, total)
    report = Report("drill01", submission.name, mode=grading_mode)
    reproduce = reproduce_line("drill01", submission, seed)
    report.notes.append(f"hidden inputs drawn with seed {seed}; {reproduce}")
    with ThreadPoolExecutor(max_workers=1) as background:  # the inputs are made while the compiler works
        building = background.submit(build_submission, "drill01", submission, workdir)
        cases = drill01_cases(seed)
        jobs = [Job(check, number, mode, drill01_output_words(mode, len(case.values)), drill01_input(mode, case))
                for check, (mode, _) in DRILL01_CHECKS.items() for number, case in enumerate(cases)]
        linked = building.result()
    if not builds_check(report, linked, list(DRILL01_CHECKS)):
        return report
    runs = run_jobs(linked.exe, jobs, timeout)
    report.notes.extend(dropped_note(runs.values()))

    for check, (mode, out_name) in DRILL01_CHECKS.items():
        failures: list[Failure] = []
        for number, case in enumerate(cases):
            n = len(case.values)
            ran = runs.get((check, number))
            if ran is None:
                break  # skipped: an earlier case of this function timed out
            if not ran.ok:
                failures.append(Failure(case.label, ran.problem, n=n))
                if ran.timed_out:
                    failures[-1].text += "\n(the remaining cases of this function were not run)"
                    break
                continue
            if ran.words == right_dump01(mode, case):
                continue
            lines, actual = judge_drill01(mode, out_name, case, ran.words)
            safe = list(lines)  # what the submission did, never what it should have done
            diagnosis = ""
            if out_name is None:
                expected = case.inclusive[-1] if case.values else 0
                if actual != expected:
                    safe.append(f"returned {shown(actual, case.small)}")
                    lines.append(f"{safe[-1]}, should be {expected}")
                    diagnosis = diagnose_total(case, actual) if len(failures) < MAX_CASES_SHOWN else ""
            else:
                expected = case.inclusive if mode == "e2i" else case.exclusive
                mismatch = first_mismatch(expected, actual)
                if mismatch:
                    count, i = mismatch
                    safe.append(f"{count} element(s) wrong; first at index {i}: {out_name}[{i}] is "
                                f"{shown(actual[i], case.small)}")
                    lines.append(f"{safe[-1]}, should be {expected[i]}")
                    if len(failures) < MAX_CASES_SHOWN:  # only the shown ones get a diagnosis
                        diagnosis = (diagnose_e2i if mode == "e2i" else diagnose_i2e)(case, actual)
            if lines:
                failures.append(Failure(case.label, "\n".join(lines), diagnosis, n_of(case), "\n".join(safe)))
        add_cases(report, check, failures, len(cases), reproduce)
    return report


# ---- drill 02: segmented scan through a tree ------------------------------------------

Pair = tuple[int, int]  # (flag 0/1, value)
IDENTITY: Pair = (0, 0)


def seg_op(a: Pair, b: Pair) -> Pair:
    """The reference operator: a head in b cuts a off; otherwise b continues a's run."""
    return b if b[0] else (a[0], a[1] + b[1])


def segmented_reference(flags: list[int], values: list[int], carry: Pair = IDENTITY) -> list[Pair]:
    """The sequential loop that resets at every head (written independently of seg_op)."""
    flag, running = carry
    out = []
    for f, v in zip(flags, values):
        if f:
            flag, running = 1, 0
        running += v
        out.append((flag, running))
    return out


@dataclass(eq=False)
class Case02:
    """One input of drill 02; like Case01, made once per seed and shared, with what derives from it."""
    label: str
    flags: list[int]
    values: list[int]
    carry: Pair = IDENTITY

    @cached_property
    def reference(self) -> list[Pair]:
        """The right inclusive segmented scan, without the carry (the schedules get none)."""
        return segmented_reference(self.flags, self.values)

    @cached_property
    def reference_carried(self) -> list[Pair]:
        """The same, continuing the carry (segmented_scan_tile)."""
        return segmented_reference(self.flags, self.values, self.carry)

    @cached_property
    def schedule_input(self) -> bytes:
        return words_bytes([len(self.flags), *self.flags, *self.values])

    @cached_property
    def tile_input(self) -> bytes:
        return words_bytes([len(self.flags), *self.carry, *self.flags, *self.values])

    @cached_property
    def schedule_dump(self) -> array:
        """What a schedule run of a right seg_combine dumps: flags, then values."""
        return array("q", [p[0] for p in self.reference] + [p[1] for p in self.reference])

    @cached_property
    def tile_dump(self) -> array:
        """What a right segmented_scan_tile run dumps: in untouched, out right, every guard intact."""
        ones = [1] * GUARD
        return array("q", ones + self.flags + ones) + guarded(self.values) + array(
            "q", ones + [p[0] for p in self.reference_carried] + ones) + guarded(
            [p[1] for p in self.reference_carried])

    @property
    def pairs(self) -> list[Pair]:
        return list(zip(self.flags, self.values))

    @cached_property
    def small(self) -> bool:
        """Every value and prefix far below the poison: a number near it was read from outside."""
        prefixes = self.reference_carried
        return all(abs(v) < abs(POISON) // 4 for v in (*self.values, *(p[1] for p in prefixes), self.carry[1]))


def heads(n: int, at) -> list[int]:
    flags = [0] * n
    for i in at:
        flags[i] = 1
    return flags


def from_lengths(lengths: list[int]) -> list[int]:
    """Head flags of consecutive segments; a zero-length segment has no element, so no flag."""
    flags = []
    for length in lengths:
        flags += [1] + [0] * (length - 1) if length else []
    return flags


def random_flags(n: int, seed: int, salt: str, one_in: int) -> list[int]:
    rng = random.Random(f"{seed}/{salt}/flags")
    return [1 if b % one_in == 0 else 0 for b in rng.randbytes(n)]


@lru_cache(maxsize=4)
def drill02_cases(seed: int) -> list[Case02]:
    """The public inputs, then seeded random ones (made once per seed: treat them as read-only)."""
    rng = random.Random(f"{seed}/drill02")
    cases = [
        Case02("page example: n=8, 3 1 7 | 0 4 | 1 6 3", [1, 0, 0, 1, 0, 1, 0, 0], [3, 1, 7, 0, 4, 1, 6, 3]),
        Case02("one segment, no heads: n=100", heads(100, []), cycle8(100)),
        Case02("a segment per element: n=33, every flag set", heads(33, range(33)), cycle8(33)),
        Case02("heads at 0 and n-1: n=257", heads(257, (0, 256)), cycle8(257)),
        Case02("empty: n=0", [], []),
        Case02("carry into an open first segment: n=16, heads at 5 and 11, carry (0,100)",
               heads(16, (5, 11)), cycle8(16), (0, 100)),
        Case02("a head at 0 stops the carry: n=16, heads at 0 and 9, carry (0,100)",
               heads(16, (0, 9)), cycle8(16), (0, 100)),
    ]
    lengths = [rng.choice((0, 0, 1, 2, 3, 7, 15)) for _ in range(60)]
    flags = from_lengths(lengths)
    cases.append(Case02(f"hidden (seed {seed}): ragged lengths with empty segments (they have no element and "
                        f"so no flag), n={len(flags)}",
                        flags, random_values(len(flags), seed, "drill02/ragged"), (0, rng.randint(-50, 50))))
    cases.append(Case02(f"hidden (seed {seed}): one element with a head, carry (1,9)", [1], [4], (1, 9)))
    cases.append(Case02(f"hidden (seed {seed}): a head at n-1 only, n=255, carry (0,-7)",
                        heads(255, (254,)), random_values(255, seed, "drill02/255"), (0, -7)))
    drawn = rng.randrange(2001, 5000, 2)
    for n, why, one_in in ((1000, "not a power of two", 8), (4097, "a power of two plus one", 8),
                           (drawn, "a size drawn from the seed", 5)):
        carry = (rng.randint(0, 1), rng.randint(-50, 50))
        cases.append(Case02(f"hidden (seed {seed}): random heads (about 1 in {one_in}), n={n}, {why}, "
                            f"carry {carry}",
                            random_flags(n, seed, f"drill02/{n}", one_in), random_values(n, seed, f"drill02/{n}"),
                            carry))
    carry = (0, rng.randint(1 << 34, 1 << 35))
    cases.append(Case02(f"hidden (seed {seed}): n=1001, long segments (heads about 1 in 256), values -2^33..2^34 "
                        f"and carry {carry}: the sums pass 2^40, so a 32-bit (int) accumulator or temporary "
                        "overflows; long long does not",
                        random_flags(1001, seed, "drill02/1001", 256), big_values(1001, seed, "drill02/1001"), carry))
    carry = (rng.randint(0, 1), rng.randint(-50, 50))
    cases.append(Case02(f"hidden (seed {seed}): random heads (about 1 in 64), n=100003, large, sparse heads, "
                        f"carry {carry}",
                        random_flags(100_003, seed, "drill02/100003", 64),
                        random_values(100_003, seed, "drill02/100003"), carry))
    return cases


def schedule_input(case: Case02) -> bytes:
    """The input file of a schedule case: n, flags, values. The carry is not used there, and no answer is given."""
    return case.schedule_input


def tile_input(case: Case02) -> bytes:
    """The input file of a segmented_scan_tile case: n, the carry, flags, values."""
    return case.tile_input


def pairs_from(words, at: int, n: int) -> list[Pair]:
    flags, values = words[at:at + n].tolist(), words[at + n:at + 2 * n].tolist()
    return list(zip(flags, values))


def pair_text(p: Pair, small: bool = True) -> str:
    flag, value = p
    text = f"({flag},{value})"
    if value == POISON:
        return text + " (the grader's poison: never written)"
    if near_poison(value, small):
        return text + " (holds the grader's poison: read from outside the arrays)"
    return text


def first_pair_mismatch(expected: list[Pair], actual: list[Pair], small: bool = True,
                        with_expected: bool = True) -> str:
    """with_expected=False (course mode): where and what, without what it should be."""
    mismatch = first_mismatch(expected, actual)
    if not mismatch:
        return ""
    count, i = mismatch
    text = f"{count} element(s) wrong; first at index {i}: out[{i}] is {pair_text(actual[i], small)}"
    return f"{text}, should be {pair_text(expected[i], small)}" if with_expected else text


SCHEDULES = {
    "sequential fold of seg_combine": "fold",
    "Hillis-Steele schedule of seg_combine": "hillis-steele",
    "Blelloch schedule of seg_combine": "blelloch",
}
CHECK_OPERATOR = "seg_combine agrees with the segmented operator"
CHECK_IDENTITY = "seg_identity is an identity for seg_combine"
CHECK_ASSOCIATIVE = "seg_combine is associative"
CHECK_TREE_ORDER = "tree_scan_inclusive combines adjacent ranges in order"
CHECK_TREE_DEPTH = "tree_scan_inclusive is a tree (log depth, n log n work)"
CHECK_TILE = "segmented_scan_tile"
DRILL02_CHECKS = [CHECK_OPERATOR, CHECK_IDENTITY, CHECK_ASSOCIATIVE, *SCHEDULES, CHECK_TREE_ORDER,
                  CHECK_TREE_DEPTH, CHECK_TILE]


def operator_samples(cases: list[Case02], seed: int):
    """Pairs, triples and elements drawn from the test inputs, their prefixes and carries.

    The pool holds what a tree actually combines: single elements and partial
    results. Every combination of flags appears in the pairs and the triples.
    """
    rng = random.Random(f"{seed}/drill02/operator")
    pool: set[Pair] = set()
    for case in cases:
        pool.update(case.pairs[:3000])
        pool.update(case.reference[:3000])
        pool.add(case.carry)
    by_flag = {0: sorted(p for p in pool if p[0] == 0), 1: sorted(p for p in pool if p[0] == 1)}
    everything = sorted(pool)
    pairs, triples = [], []
    for fa in (0, 1):
        for fb in (0, 1):
            pairs += [(rng.choice(by_flag[fa]), rng.choice(by_flag[fb])) for _ in range(8)]
            for fc in (0, 1):
                triples += [(rng.choice(by_flag[fa]), rng.choice(by_flag[fb]), rng.choice(by_flag[fc]))
                            for _ in range(8)]
    pairs += [(rng.choice(everything), rng.choice(everything)) for _ in range(400)]
    triples += [tuple(rng.choice(everything) for _ in range(3)) for _ in range(400)]
    elements = [IDENTITY, *rng.sample(everything, min(200, len(everything)))]
    return pairs, triples, elements


@lru_cache(maxsize=4)
def drill02_samples(seed: int):
    """operator_samples of the seed's cases, made once per seed."""
    return operator_samples(drill02_cases(seed), seed)


def explain_operator(a: Pair, b: Pair, got: Pair) -> str:
    want = seg_op(a, b)
    if b[0]:
        if got[1] != want[1]:
            return "b contains a head, so nothing of a survives past it: the result is b itself."
        return "b contains a head, so the result is b, flag included."
    if got[0] != want[0]:
        return ("the flag of the result says whether a head lies ANYWHERE in the span: a.flag | b.flag. "
                "Dropping a's flag loses a head that a tree will still need when it regroups.")
    return "b has no head, so it continues a's run: value a.value + b.value."


def ops_job(samples) -> Job:
    """The run of seg_combine and seg_identity on the sample pairs, triples and elements."""
    pairs, triples, elements = samples
    words = [len(pairs)]
    for a, b in pairs:
        words += [*a, *b]
    words.append(len(triples))
    for a, b, c in triples:
        words += [*a, *b, *c]
    words.append(len(elements))
    for a in elements:
        words += a
    return Job("ops", 0, "ops", 2 + 2 * len(pairs) + 4 * len(triples) + 4 * len(elements), words_bytes(words))


def grade_drill02_operator(report: Report, ran: Ran, samples, reproduce: str) -> None:
    pairs, triples, elements = samples
    values = [v for pair in (*(p for ab in pairs for p in ab), *(p for abc in triples for p in abc), *elements)
              for v in pair]
    small = all(abs(v) < abs(POISON) // 4 for v in values)

    def pt(p: Pair) -> str:
        return pair_text(p, small)

    if not ran.ok:
        for name in (CHECK_OPERATOR, CHECK_IDENTITY, CHECK_ASSOCIATIVE):
            report.add(name, False, f"calling seg_combine and seg_identity on sample pairs: {ran.problem}")
        return
    # Identity and associativity count only for the right operator: the starter's `return b`
    # is associative, and any constant operator has an identity of sorts.
    operator_right = True
    gate_why = ("seg_combine must first agree with the segmented operator (see that check); an identity and "
                "associativity only count for the right operator.")
    out = ran.words.tolist()
    got = [(out[k], out[k + 1]) for k in range(0, len(out), 2)]
    identity, got = got[0], got[1:]
    combined, got = got[:len(pairs)], got[len(pairs):]
    regrouped, got = got[:2 * len(triples)], got[2 * len(triples):]
    with_identity = got

    bad = [(a, b, r) for (a, b), r in zip(pairs, combined) if r != seg_op(a, b)]
    if bad:
        a, b, r = bad[0]
        operator_right = False
        said = (f"{len(bad)} of {len(pairs)} pairs drawn from the test inputs are wrong; first: "
                f"seg_combine(a, b) with a = {pt(a)}, b = {pt(b)} returned {pt(r)}")
        cause = f"\n  likely cause: {explain_operator(a, b, r)}\n{reproduce}"
        report.add(CHECK_OPERATOR, False, f"{said}, should be {pt(seg_op(a, b))}.{cause}",
                   student=f"{said}.{cause}")
    else:
        report.add(CHECK_OPERATOR, True)

    broken = []
    for k, a in enumerate(elements):
        left, right = with_identity[2 * k], with_identity[2 * k + 1]
        if left != a or right != a:
            broken.append((a, left, right))
    if broken:
        a, left, right = broken[0]
        report.add(CHECK_IDENTITY, False,  # "both must be a": the property, with a the submission was given
                   f"seg_identity() is {pt(identity)}; for a = {pt(a)}: seg_combine(identity, a) "
                   f"= {pt(left)} and seg_combine(a, identity) = {pt(right)}; both must be a "
                   f"({len(broken)} of {len(elements)} elements fail). Blelloch pads the tree with the identity "
                   f"and seeds the root with it, so it must change nothing on either side.\n{reproduce}")
    else:
        gated(report, CHECK_IDENTITY, True, "", operator_right, gate_why)

    broken_triples = []
    for k, (a, b, c) in enumerate(triples):
        left, right = regrouped[2 * k], regrouped[2 * k + 1]
        if left != right:
            broken_triples.append((a, b, c, left, right))
    if broken_triples:
        a, b, c, left, right = broken_triples[0]
        report.add(CHECK_ASSOCIATIVE, False,
                   f"seg_combine is not associative: {len(broken_triples)} of {len(triples)} triples drawn from "
                   f"the test inputs break it; first: a = {pt(a)}, b = {pt(b)}, c = {pt(c)}: "
                   f"seg_combine(seg_combine(a, b), c) = {pt(left)} but seg_combine(a, seg_combine(b, c)) "
                   f"= {pt(right)}. A tree scan brackets the same "
                   f"terms differently for every n and every schedule, so a non-associative operator gives "
                   f"answers that depend on the schedule.\n{reproduce}")
    else:
        gated(report, CHECK_ASSOCIATIVE, True, "", operator_right, gate_why)


def schedule_jobs(cases: list[Case02]) -> list[Job]:
    return [Job(mode, number, mode, 2 * n_of(case), schedule_input(case))
            for mode in SCHEDULES.values() for number, case in enumerate(cases)]


def grade_drill02_schedules(report: Report, runs: dict[tuple[str, int], Ran], cases: list[Case02],
                            reproduce: str) -> None:
    operator_broken = not (report.check(CHECK_OPERATOR).passed and report.check(CHECK_ASSOCIATIVE).passed)
    for name, mode in SCHEDULES.items():
        failures: list[Failure] = []
        for number, case in enumerate(cases):
            ran = runs.get((mode, number))
            if ran is None:
                break  # skipped: an earlier case timed out
            if not ran.ok:
                failures.append(Failure(case.label, ran.problem, n=n_of(case)))
                if ran.timed_out:
                    failures[-1].text += "\n(the remaining cases were not run)"
                    break
                continue
            if ran.words == case.schedule_dump:
                continue
            actual = pairs_from(ran.words, 0, len(case.flags))
            reference = case.reference
            text = first_pair_mismatch(reference, actual, case.small)
            if text:
                diagnosis = ("seg_combine itself is wrong or not associative (see those checks); this schedule "
                             "only applies it." if operator_broken else "")
                if mode == "blelloch" and not report.check(CHECK_IDENTITY).passed:
                    diagnosis = "Blelloch pads with seg_identity() and seeds the root with it: see that check."
                failures.append(Failure(case.label + " (the carry is not used here)", text, diagnosis, n_of(case),
                                        first_pair_mismatch(reference, actual, case.small, with_expected=False)))
        add_cases(report, name, failures, len(cases), reproduce)


# The driver's trace of tree_scan_inclusive (drill02_driver.cpp, enum Kind and enum Bad).
KIND_UNSET, KIND_EMPTY, KIND_RANGE, KIND_BROKEN, KIND_OUTSIDE, KIND_FORGED, KIND_UNTRACED = range(7)
BAD_OVERLAP, BAD_SWAPPED, BAD_GAP, BAD_UNSET, BAD_OUTSIDE, BAD_FORGED = range(1, 7)
TRACE_CAP = 1 << 23  # combines the driver traces (kTraceCap)


def traced_text(kind: int, lo: int, hi: int) -> str:
    return {KIND_UNSET: "a default-constructed T that never held an input",
            KIND_EMPTY: "the identity",
            KIND_RANGE: f"inputs {lo}..{hi}",
            KIND_BROKEN: "an already broken value",
            KIND_OUTSIDE: f"x[{lo}], outside x[0..n-1]",
            KIND_FORGED: "a value the grader never issued (made up, or memory that never held a T)",
            KIND_UNTRACED: f"a value made after the grader stopped tracing ({TRACE_CAP} combines: far more work "
                           "than a scan needs)"}.get(kind, f"kind {kind}")


def explain_bad_combine(bad: int, a: tuple[int, int, int], b: tuple[int, int, int]) -> str:
    first = f"op(a, b) with a = {traced_text(*a)} and b = {traced_text(*b)}"
    if bad == BAD_OVERLAP:
        return (f"{first}: the ranges overlap, so some inputs are counted twice. In place, a level read a value "
                "that this same level had already updated (the CPU twin of the GPU read-write race). Read one "
                "buffer and write another, or walk from the top index down.")
    if bad == BAD_SWAPPED:
        return (f"{first}: the operands are swapped. Keep the earlier span on the left, op(x[i - offset], x[i]); "
                "+ does not care, but the segmented operator is not commutative.")
    if bad == BAD_GAP:
        return f"{first}: the ranges are not adjacent, so the inputs between them are missing."
    if bad == BAD_UNSET:
        return (f"{first}: one operand was default-constructed and never assigned. Initialise every temporary "
                "from x or from `identity`.")
    if bad == BAD_OUTSIDE:
        return f"{first}: it read outside x[0..n-1]. Check the bounds of every index."
    if bad == BAD_FORGED:
        return (f"{first}: an operand is not a T value the grader handed out or op returned. tree_scan_inclusive "
                "may only copy T values, assign them, and combine them with op; it must not make them up.")
    return first


def tree_sizes(seed: int) -> list[tuple[int, str]]:
    drawn = random.Random(f"{seed}/drill02/tree").randrange(5001, 9000, 2)
    return [(0, "empty"), (1, "one element"), (2, "two"), (3, "three: not a power of two"), (8, "the page's 8"),
            (255, "a 256-tile minus one"), (256, "a power of two"), (257, "a 256-tile plus one"),
            (1000, "not a power of two"), (4097, "a power of two plus one"), (drawn, f"drawn from seed {seed}"),
            (65_537, "large: 2^16 + 1")]


def depth_bound(n: int) -> int:
    """Blelloch: 2 log2 n levels plus the exclusive-to-inclusive combine, and one spare."""
    return 2 * math.ceil(math.log2(n)) + 2 if n > 1 else 2


def work_bound(n: int) -> int:
    """Hillis-Steele does under n ceil(log2 n) combines; Blelloch padded to P < 2n about 2P + n."""
    return n * math.ceil(math.log2(n)) + 4 * n if n > 1 else 4


def tree_jobs(seed: int) -> list[Job]:
    """tree_scan_inclusive runs: the size is the whole input (the driver makes the traced elements)."""
    return [Job("tree", number, "tree", 8 + 4 * (n + 2 * GUARD), arg=str(n))
            for number, (n, _) in enumerate(tree_sizes(seed))]


def moved_guard(kinds: array, los: array, n: int) -> int | None:
    """The first guard slot (relative index) that no longer holds its own guard value, or None."""
    for k in (*range(GUARD), *range(GUARD + n, n + 2 * GUARD)):
        if kinds[k] != KIND_OUTSIDE or los[k] != k - GUARD:
            return k - GUARD
    return None


def grade_drill02_tree(report: Report, runs: dict[tuple[str, int], Ran], seed: int, reproduce: str) -> None:
    order_failures: list[Failure] = []
    depth_failures: list[Failure] = []
    sizes = tree_sizes(seed)
    for number, (n, why) in enumerate(sizes):
        label = f"n={n} ({why})"
        ran = runs.get(("tree", number))
        if ran is None:
            break  # skipped: an earlier size timed out
        if not ran.ok:
            order_failures.append(Failure(label, ran.problem, n=n))
            if ran.timed_out:
                order_failures[-1].text += "\n(the remaining sizes were not run)"
                break
            continue
        w = ran.words
        total = n + 2 * GUARD
        combines, bad = w[0], w[1]
        a, b = tuple(w[2:5]), tuple(w[5:8])
        all_kinds, all_los, all_his, all_depths = (w[8 + k * total:8 + (k + 1) * total] for k in range(4))
        kinds, los, his, depths = (x[GUARD:GUARD + n] for x in (all_kinds, all_los, all_his, all_depths))
        lines, diagnosis = [], ""
        guard = moved_guard(all_kinds, all_los, n)
        if guard is not None:
            lines.append(f"wrote x[{guard}], outside x[0..n-1]")
        safe = list(lines)
        ok = (kinds == array("q", [KIND_RANGE]) * n and los == array("q", bytes(8 * n))
              and his == array("q", range(n)))
        if not ok:
            i = next(i for i in range(n) if (kinds[i], los[i], his[i]) != (KIND_RANGE, 0, i))
            safe.append(f"x[{i}] holds {traced_text(kinds[i], los[i], his[i])}")
            lines.append(f"{safe[-1]}, should hold inputs 0..{i}")
            if bad:
                diagnosis = explain_bad_combine(bad, a, b)
            elif kinds[i] == KIND_RANGE and los[i] == his[i] == i:
                diagnosis = "x[i] was never combined with anything: is the scan running at all?"
        elif bad:
            lines.append(explain_bad_combine(bad, a, b))
            safe.append(lines[-1])
        if lines:
            order_failures.append(Failure(label, "\n".join(lines), diagnosis, n, "\n".join(safe)))
        if n == 1000:
            # No comparison with Hillis-Steele's or Blelloch's counts here: those are drill 03's answers.
            report.note(f"tree_scan_inclusive did {combines} combines at n = 1000 (a sequential loop does "
                        "n - 1 = 999; drill 03 counts what the two trees do)")
        deepest = max(range(n), key=lambda i: depths[i], default=None)
        if deepest is not None and depths[deepest] > depth_bound(n):
            sequential = " That is a left-to-right loop (each x[i] waits for x[i-1]): correct, but not the " \
                         "parallel scan this drill asks for." if depths[deepest] >= n - 1 else ""
            depth_failures.append(Failure(label, f"the longest chain of combines is {depths[deepest]} deep (at "
                                                 f"x[{deepest}]); a tree needs at most 2*ceil(log2 n) + 2 = "
                                                 f"{depth_bound(n)}.{sequential}", n=n))
        elif combines > work_bound(n):
            depth_failures.append(Failure(label, f"{combines} combines for n = {n}; a tree scan needs at most "
                                                 f"n*ceil(log2 n) + 4n = {work_bound(n)} (Hillis-Steele: "
                                                 "n log2 n, Blelloch: about 2n). Is every output summing its "
                                                 "own prefix, or a level repeating work?", n=n))
    add_cases(report, CHECK_TREE_ORDER, order_failures, len(sizes), reproduce)
    if order_failures:
        # Depth is a property of a working scan: a stub that does nothing is 0 deep.
        add_cases(report, CHECK_TREE_DEPTH, depth_failures, len(sizes), reproduce,
                  head="not measured: tree_scan_inclusive must first produce the right ranges (see the check above)")
    else:
        add_cases(report, CHECK_TREE_DEPTH, depth_failures, len(sizes), reproduce)


def diagnose_tile(case: Case02, actual: list[Pair]) -> str:
    n = len(case.flags)
    expected = segmented_reference(case.flags, case.values, case.carry)
    if n and all(p[1] == POISON for p in actual):
        return "out was never written: every element still holds the grader's poison."
    first_head_after_0 = next((i for i in range(1, n) if case.flags[i]), n)
    first_segment = range(first_head_after_0)
    carry_value = case.carry[1]
    if n and case.flags[0] and carry_value and all(
            actual[i][1] - expected[i][1] == carry_value for i in first_segment):
        return (f"the carry-in (value {carry_value}) leaked into the segment that starts at index 0: a head at "
                "in[0] starts a new segment, so carry (+) in[0] = in[0] and the carry must be dropped. The flag "
                "at index 0 was ignored.")
    if n and not case.flags[0] and carry_value and all(
            expected[i][1] - actual[i][1] == carry_value for i in first_segment):
        return (f"the carry-in (value {carry_value}) is missing from the open first segment: with no head at "
                "in[0], out[i] = carry (+) in[0] (+) ... (+) in[i] must include it.")
    plain = list(accumulate(case.values, initial=carry_value))[1:]
    if n and [p[1] for p in actual] == plain and any(case.flags[1:]):
        return "the scan never restarts: it is a plain prefix sum, and the heads are ignored."
    if [p[1] for p in actual] == [p[1] for p in expected]:
        return ("the values are right but some flags are not: out[i].flag must say whether a head lies in carry, "
                "in[0..i]; the next tile's carry depends on it.")
    return ""


def tile_jobs(cases: list[Case02]) -> list[Job]:
    return [Job("tile", number, "tile", 4 * (n_of(case) + 2 * GUARD), tile_input(case))
            for number, case in enumerate(cases)]


def judge_tile(case: Case02, words: array) -> tuple[list[str], list[Pair]]:
    """(side effects, result) from the raw storage of in and out, guards included."""
    n = n_of(case)
    total = n + 2 * GUARD
    lines = []
    in_flags, in_values = words[:total], words[total:2 * total]
    out_flags, out_values = words[2 * total:3 * total], words[3 * total:]
    written_flags = array("q", [1] * GUARD + case.flags + [1] * GUARD)
    written_values = guarded(case.values)
    if in_flags != written_flags or in_values != written_values:
        k = next(k for k in range(total) if (in_flags[k], in_values[k]) != (written_flags[k], written_values[k]))
        lines.append(f"changed its input in[{k - GUARD}]: in is read-only (scan a copy)")
    k = next((k for k in (*range(GUARD), *range(GUARD + n, total)) if (out_flags[k], out_values[k]) != (1, POISON)),
             None)
    if k is not None:
        lines.append(f"wrote out[{k - GUARD}], outside out[0..n-1]")
    return lines, list(zip(out_flags[GUARD:GUARD + n].tolist(), out_values[GUARD:GUARD + n].tolist()))


def grade_drill02_tile(report: Report, runs: dict[tuple[str, int], Ran], cases: list[Case02],
                       reproduce: str) -> None:
    failures: list[Failure] = []
    for number, case in enumerate(cases):
        ran = runs.get(("tile", number))
        if ran is None:
            break  # skipped: an earlier case timed out
        if not ran.ok:
            failures.append(Failure(case.label, ran.problem, n=n_of(case)))
            if ran.timed_out:
                failures[-1].text += "\n(the remaining cases were not run)"
                break
            continue
        if ran.words == case.tile_dump:
            continue
        lines, actual = judge_tile(case, ran.words)
        safe = list(lines)
        reference = case.reference_carried
        text = first_pair_mismatch(reference, actual, case.small)
        diagnosis = ""
        if text:
            lines.append(text)
            safe.append(first_pair_mismatch(reference, actual, case.small, with_expected=False))
            diagnosis = diagnose_tile(case, actual) if len(failures) < MAX_CASES_SHOWN else ""
        if lines:
            failures.append(Failure(case.label, "\n".join(lines), diagnosis, n_of(case), "\n".join(safe)))
    add_cases(report, CHECK_TILE, failures, len(cases), reproduce)


def grade_drill02(submission: Path, workdir: Path, seed: int, timeout: float, mode: str = "self-study") -> Report:
    report = Report("drill02", submission.name, mode=mode)
    reproduce = reproduce_line("drill02", submission, seed)
    report.notes.append(f"hidden inputs drawn with seed {seed}; {reproduce}")
    with ThreadPoolExecutor(max_workers=1) as background:  # the inputs are made while the compiler works
        building = background.submit(build_submission, "drill02", submission, workdir)
        cases = drill02_cases(seed)
        samples = drill02_samples(seed)
        # In case order within each function: a timeout skips that function's later cases.
        jobs = [ops_job(samples), *tree_jobs(seed), *tile_jobs(cases), *schedule_jobs(cases)]
        linked = building.result()
    if not builds_check(report, linked, DRILL02_CHECKS):
        return report
    runs = run_jobs(linked.exe, jobs, timeout)
    report.notes.extend(dropped_note(runs.values()))
    grade_drill02_operator(report, runs[("ops", 0)], samples, reproduce)
    grade_drill02_schedules(report, runs, cases, reproduce)
    grade_drill02_tree(report, runs, seed, reproduce)
    grade_drill02_tile(report, runs, cases, reproduce)
    return report


# ---- drill 03: the work-and-depth analysis ---------------------------------------------

# Every numeric slot of exercises/03_scan_analysis.md, in order, with what it is.
SLOTS03 = {
    "serial_adds_1024": "adds of the sequential loop at n = 1024",
    "hs_threads_1024": "Hillis-Steele threads in the block",
    "hs_levels_1024": "Hillis-Steele levels",
    "hs_adds_1024": "Hillis-Steele adds",
    "hs_barriers_1024": "Hillis-Steele barriers, double-buffered: one per level",
    "bl_threads_1024": "Blelloch threads in the block",
    "bl_levels_1024": "Blelloch levels (up-sweep and down-sweep)",
    "bl_adds_1024": "Blelloch adds",
    "bl_barriers_1024": "Blelloch barriers",
    "extra_work_factor_1024": "Hillis-Steele adds / Blelloch adds",
    "hs_avg_utilisation_pct_1024": "Hillis-Steele adds / (levels x threads), in percent",
    "bl_avg_utilisation_pct_1024": "Blelloch adds / (levels x threads), in percent",
    "hs_levels_under_25pct_1024": "Hillis-Steele levels with active / threads strictly below 25 %",
    "bl_levels_under_25pct_1024": "Blelloch levels with active / threads strictly below 25 %",
    "hs_adds_per_byte_1024": "Hillis-Steele adds / 8n bytes",
    "bl_adds_per_byte_1024": "Blelloch adds / 8n bytes",
    "hs_levels_1000": "Hillis-Steele levels at n = 1000",
    "hs_adds_1000": "Hillis-Steele adds at n = 1000",
    "bl_padded_n_1000": "the power of two Blelloch pads n = 1000 to",
    "bl_levels_1000": "Blelloch levels at n = 1000",
    "bl_adds_1000": "Blelloch adds at n = 1000, every add of the padded tree",
    "warp_scan_steps_32": "shuffle steps of a 32-lane warp scan",
    "warp_scan_steps_64": "shuffle steps of a 64-lane wavefront scan",
    "shfl_block_barriers_1024": "barriers of the warp-shuffle block scan",
    "shfl_block_adds_1024": "adds of the warp-shuffle block scan",
}

# Two ways to count barriers: the drill (and the page) count one barrier per level of the tree;
# Lab 1's "barriers/tile" column counts every __syncthreads() the kernel runs, the one after
# loading the tile included (and Blelloch's after clearing the root).
LAB1_BARRIERS = ("that counts the way Lab 1's barriers/tile column does, every __syncthreads() including "
                 "the one after loading the tile; this drill counts one barrier per level of the tree and "
                 "leaves the load's barrier out (see the definitions at the top).")

# Wrong answers worth a sentence: slot -> {wrong value: why}.
HINTS03 = {
    "serial_adds_1024": {1024: "the first element needs no add: n - 1."},
    "hs_adds_1024": {10240: "n log2 n gives every thread an add at every level, but threads tid < d have nothing "
                            "to their left and only copy."},
    "hs_barriers_1024": {20: "20 is the register-staged variant (two barriers a level); the model is "
                             "double-buffered, one barrier a level.",
                         11: LAB1_BARRIERS + " 11 is Lab 1's count for the double-buffered kernel.",
                         21: LAB1_BARRIERS + " 21 is Lab 1's count for the register-staged kernel, which the model "
                                             "is not."},
    "bl_threads_1024": {1024: "Blelloch's block has one thread per PAIR: n/2."},
    "bl_levels_1024": {10: "that is one sweep; the up-sweep and the down-sweep have log2 n levels each."},
    "bl_barriers_1024": {10: "one barrier per level, and there are levels in both sweeps.",
                         22: LAB1_BARRIERS + " 22 is Lab 1's count, which adds the barriers after the load and "
                                             "after clearing the root."},
    "bl_adds_1024": {1023: "that is the up-sweep alone; the down-sweep does as many again.",
                     2048: "each sweep touches the n - 1 internal nodes of the tree: 2(n - 1)."},
    "bl_levels_under_25pct_1024": {16: "16 is what 1024 threads would give; Blelloch runs n/2 = 512 threads, "
                                       "one per pair."},
    "bl_adds_1000": {1998: "Blelloch pads to 1024, and every add of the padded tree is executed and counted."},
    "bl_levels_1000": {19: "the padded tree has 1024 leaves: log2 1024 levels per sweep."},
}

# The same wrong answers, in course mode: the same idea, without a number or a closed form that
# is the count itself (or another slot's count). Every key of HINTS03 has one.
HINTS03_COURSE = {
    "serial_adds_1024": {1024: "the first element needs no add."},
    "hs_adds_1024": {10240: HINTS03["hs_adds_1024"][10240]},
    "hs_barriers_1024": {20: "that is the register-staged variant (two barriers a level); the model is "
                             "double-buffered, one barrier a level.",
                         11: LAB1_BARRIERS, 21: LAB1_BARRIERS + " It is also the register-staged kernel's count."},
    "bl_threads_1024": {1024: "Blelloch's block has one thread per PAIR of elements."},
    "bl_levels_1024": {10: "that is one sweep; the down-sweep walks the tree back and has its own levels."},
    "bl_barriers_1024": {10: HINTS03["bl_barriers_1024"][10], 22: LAB1_BARRIERS},
    "bl_adds_1024": {1023: HINTS03["bl_adds_1024"][1023],
                     2048: "each sweep adds only at the internal nodes of the tree, not at every element."},
    "bl_levels_under_25pct_1024": {16: "that is what a block of one thread per element would give; Blelloch runs "
                                       "one thread per pair."},
    "bl_adds_1000": {1998: "Blelloch pads the tile to the next power of two, and every add of the padded tree is "
                           "executed and counted."},
    "bl_levels_1000": {19: "count the levels of the padded tree (the next power of two), in both sweeps."},
}

PROSE_PLACEHOLDER = "_(write your answer here)_"


def parse_slots(text: str) -> dict[str, str]:
    """name -> the raw text after `=`, for every known slot line (the first one wins)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        m = re.match(r"^\s*`?([a-z][a-z0-9_]*)\s*=\s*(.*?)`?\s*$", line)
        if m and m.group(1) not in found:
            found[m.group(1)] = m.group(2)
    return found


def parse_number(raw: str) -> float | None:
    """None when unanswered; raises ValueError when not a number."""
    text = raw.split("#")[0].strip().strip("`").strip()
    text = re.sub(r"\s*(%|x|X|×)$", "", re.sub(r"^(~|≈|about)\s*", "", text))
    if not text.replace("_", "").strip():
        return None
    return float(text.replace(",", "").replace("_", ""))


def prose_answers(text: str) -> list[tuple[str, str]]:
    """(question heading, answer text) for every question that asks for prose."""
    answers = []
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        heading, _, body = section.partition("\n")
        if "**Answer:**" not in body:
            continue
        answer = body.split("**Answer:**", 1)[1].strip()
        answers.append((heading.strip(), "" if answer in ("", PROSE_PLACEHOLDER) else answer))
    return answers


COUNTED_BY = "counted by the harness (harness/scanlab/scan_counts.py)"
NO_COUNTER_SHORT = "this copy of the harness has no reference counts; your instructor's grader checks the value."
NO_COUNTER = ("drill 03: this is the student release, which leaves out the harness's counter (it would print the "
              "answers): each number is checked for its form only (answered, and a number), and every check says "
              "'not checked here'. Your instructor's grader checks the values.")


def grade_drill03(submission: Path, workdir: Path, seed: int, timeout: float, mode: str = "self-study") -> Report:
    del seed, workdir, timeout  # nothing random, nothing built, nothing run: the answers are counts
    report = Report("drill03", submission.name, mode=mode)
    text = submission.read_text(encoding="utf-8", errors="replace")
    # harness-owned: grading never needs solutions/. The student release has no counter (it would
    # print the answers), so there only the form of each answer is checked.
    reference = scan_counts.reference_slots() if scan_counts is not None else None
    if reference is None:
        report.notes.append(NO_COUNTER)

    answers = parse_slots(text)
    for slot, what in SLOTS03.items():
        counted = reference[slot] if reference is not None else None
        if slot not in answers:
            report.add(slot, False, f"missing: the line `{slot} = ____` is not in the file ({what}).")
            continue
        try:
            value = parse_number(answers[slot])
        except ValueError:
            report.add(slot, False, f"not a number: {answers[slot]!r} ({what}; {COUNTED_BY}: {counted}).",
                       student=f"not a number: {answers[slot]!r} ({what}).")
            continue
        if value is None:
            report.add(slot, False, f"not answered: the line still reads `{slot} = ____` ({what}).")
            continue
        if counted is None:
            report.add(slot, False, f"answered ({answers[slot].strip()}), not checked here: {NO_COUNTER_SHORT}")
            continue
        decimal = "." in counted
        right = abs(value - float(counted)) <= 0.01 + 1e-9 if decimal else value == float(counted)
        if right:
            report.add(slot, True)
            continue
        shown_value = f"{value:g}" if not decimal else answers[slot].strip()
        rule = "accepted within 0.01" if decimal else "exact"
        feedback = f"you wrote {shown_value}; {COUNTED_BY}: {counted} ({what}, {rule})."
        student = (f"you wrote {shown_value}: not the count ({what}; "
                   + ("decimals are accepted within 0.01 of it)." if decimal else "whole numbers must be exact)."))
        hint = HINTS03.get(slot, {}).get(value)
        if hint:
            feedback += f"\n  likely cause: {hint}"
            student += f"\n  likely cause: {HINTS03_COURSE[slot][value]}"
        report.add(slot, False, feedback, student=student)

    for heading, answer in prose_answers(text):
        if answer:
            flat = " ".join(answer.split())
            report.notes.append(f"{heading} (prose, for the instructor): "
                                f"{flat if len(flat) <= 1200 else flat[:1200] + ' ...'}")
        else:
            report.notes.append(f"{heading}: prose answer not written yet")
    return report


# ---- entry point ---------------------------------------------------------------------------

GRADERS: dict[str, Callable[..., Report]] = {
    "drill01": grade_drill01,
    "drill02": grade_drill02,
    "drill03": grade_drill03,
}

# harness/points.toml must name exactly these checks: checked here, at import, so the file cannot drift.
require_points("drill01", ["builds", *DRILL01_CHECKS])
require_points("drill02", ["builds", *DRILL02_CHECKS])
require_points("drill03", list(SLOTS03))


def grade(exercise: str, submission: Path, workdir: Path, seed: int, timeout: float | None = None,
          mode: str = "self-study") -> Report:
    """Grade one drill submission; `timeout` bounds each driver run (default TIMEOUT_S); mode is
    "self-study" (full feedback) or "course" (no expected value shown to the student)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    return GRADERS[exercise](Path(submission), Path(workdir), seed, TIMEOUT_S if timeout is None else timeout,
                             mode)
