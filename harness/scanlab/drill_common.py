"""What the graders of drills 01 and 02 share: the sandboxed build of a submission, the trusted
drivers, running them (one function's cases per fresh sandbox), and the wording of reports.

How a C++ drill is graded, and why, is told in grade_drills.py; each drill's own cases,
references and diagnoses are in grade_drill01.py and grade_drill02.py.
"""

from __future__ import annotations

import hashlib
import json
import operator
import os
import random
import re
import shlex
import shutil
import tempfile
import threading
from array import array
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .build import CXX_FLAGS, Program, compile_program, compiler_warnings
from .build import cxx as find_cxx
from .grading import NO_SEED, SEED_WORDS, TOO_LARGE, Report, hidden_note, read_submission, reproduce_line, student_reproduce
from .paths import REPO
from .run import run_process
from .sandbox import COMPILE_LIMITS, Limits, Outcome, Sandbox

DRIVERS = REPO / "harness" / "drivers"
SHIM02 = DRIVERS / "drill02_shim.cpp"
# What each trusted program is built from (its cache key hashes all of them): the drivers,
# and drill 02's judge, which never meets submission code (drill02_judge.cpp says why).
SOURCES = {
    "drill01": ("drill01_driver.cpp", "drill_io.hpp"),
    "drill02": ("drill02_driver.cpp", "drill_io.hpp", "drill02_trace.hpp"),
    "drill02_judge": ("drill02_judge.cpp", "drill_io.hpp", "drill02_trace.hpp"),
}
TIMEOUT_S = 3.0  # seconds of CPU, and of wall, per driver run (one function on all its cases, or on one case)
RUN_MEMORY_BYTES = 1 << 30  # address space per driver run
# A right answer needs under 0.1 s and 100 MB for all of them (drill 01's largest function, 2.5 million elements,
# 0.07 s on a 2-core machine, 2026-12). A file that fills the memory limit page by page needs about 0.7 s of CPU
# and must meet that limit, not a time limit: on a loaded machine (CI runs three test shards on two cores) its wall
# time went past 3 s and then 6 s, so a wall limit leaves out the time a run waits for a CPU (sandbox.WALL_CAP). A
# hang costs two runs (all cases, then case by case): a spin meets the CPU limit, a sleep the wall limit.
COMPILE_TIMEOUT_S = 300.0  # the grader's own programs (the drivers)
POISON = -999_999_999  # what the drivers fill outputs and guard words with (drill_io.hpp)
GUARD = 8  # guard words either side of every array handed to the submission (drill_io.hpp kGuard)
DRIVER_ERROR = 90  # the drivers' own I/O failures (drill_io.hpp)
TRACE_FULL = 92  # drill02_driver.cpp: a tree run of several cases logged its whole budget
MAX_CASES_SHOWN = 3
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
    """One driver run: `timeout` seconds of CPU time and of wall time (not counting waits for a CPU), RUN_MEMORY_BYTES of address
    space, the sandbox's other defaults."""
    return Limits(cpu_s=timeout, wall_s=timeout, memory_bytes=RUN_MEMORY_BYTES)


# ---- tools ---------------------------------------------------------------------------

def tool(name: str) -> str | None:
    """A binutils program by absolute path (the sandbox has no PATH search of ours)."""
    return shutil.which(name)


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
    """A hash of everything the program `drill` (a key of SOURCES) is built from, and of the compiler."""
    digest = hashlib.sha256()
    for source in (DRIVERS / name for name in SOURCES[drill]):
        digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    real = Path(cxx[0]).resolve()
    info = real.stat()
    digest.update(json.dumps([str(real), info.st_size, info.st_mtime_ns, cxx[1:], CXX_FLAGS]).encode())
    return digest.hexdigest()[:32]


def driver_object(drill: str) -> DriverObject:
    """The compiled driver for `drill` and its symbols: built once per version and kept in the cache.

    Written atomically (a temporary file, then a rename), so graders running at
    the same time never see half an object file."""
    cxx, nm = find_cxx(), tool("nm")
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
                    driver = Program(f"{drill}_driver.o", (str(DRIVERS / f"{drill}_driver.cpp"),), compiler="c++",
                                     extra_flags=("-c",), include_dirs=(str(DRIVERS),))
                    built = compile_program(driver, folder, Path(tmp), COMPILE_TIMEOUT_S)
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


_PROGRAMS: dict[str, DriverObject] = {}


def harness_program(name: str) -> DriverObject:
    """A harness-only executable (a key of SOURCES, e.g. "drill02_judge"), built and cached exactly as the
    drivers are: outside any sandbox, once per version of its sources, renamed into place. Never linked
    with submission code; run only inside a Sandbox, since what it reads comes from a submission's run.
    `path` is the executable (the symbol fields stay empty)."""
    cxx = find_cxx()
    if cxx is None:
        return DriverObject(None, problem="no C++ compiler on PATH (g++ is needed)")
    key = f"{name}-{driver_key(name, cxx)}"
    with _DRIVER_LOCK:
        if key in _PROGRAMS:
            return _PROGRAMS[key]
        folder = cache_dir() / "drivers"
        exe = folder / key
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if not exe.is_file():
                fd, tmp = tempfile.mkstemp(prefix=f".{key}-", dir=folder)
                os.close(fd)
                try:
                    program = Program(name, (str(DRIVERS / SOURCES[name][0]),), compiler="c++",
                                      include_dirs=(str(DRIVERS),))
                    built = compile_program(program, folder, Path(tmp), COMPILE_TIMEOUT_S)
                    if not built.ok:
                        return DriverObject(None, problem=f"$ {built.reproduce}\n{built.output.strip()}")
                    os.chmod(tmp, 0o755)
                    os.replace(tmp, exe)
                finally:
                    Path(tmp).unlink(missing_ok=True)
        except OSError as exc:
            return DriverObject(None, problem=f"the driver cache {folder} is not usable: {exc} (set SCANLAB_CACHE)")
        found = DriverObject(exe)
        _PROGRAMS[key] = found
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
    data: bytes | None  # None: larger than SUBMISSION_LIMIT_BYTES, not read

    @staticmethod
    def read(path: Path) -> "Submission":
        name = path.name if PLAIN_NAME.fullmatch(path.name) and path.name not in SCRATCH_NAMES else FALLBACK_NAME
        return Submission(name, read_submission(path))  # None: over the limit


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
    return [*cxx, *CXX_FLAGS, "-x", "c++", "-c", "-DSCANLAB_GRADER", *extra, source, "-o", "submission.o"]


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
    cxx, nm, objcopy = find_cxx(), tool("nm"), tool("objcopy")
    if cxx is None or nm is None or objcopy is None:
        return Linked(False, problem="the grader needs g++, nm and objcopy on PATH (a harness problem, not yours)")
    sub = Submission.read(submission)
    if sub.data is None:
        return Linked(False, problem=TOO_LARGE)
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
        warnings = compiler_warnings(output)
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
    printed: str = ""  # what the run printed (its first lines; never read for a verdict)


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
    expected_words: int | None  # None: a trace of any length, which a judge then checks word by word
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


def interpret(out: Outcome, data: bytes | None, expected_words: list[int | None]) -> list[Ran]:
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
        printed = (out.stdout + out.stderr).strip()
        return [Ran(True, words=words, dropped=out.output_dropped if k == 0 else 0, printed=printed if k == 0 else "")
                for k, words in enumerate(dumps)]
    if out.returncode == TRACE_FULL and len(expected_words) > 1:
        # Not the student's doing, and never shown: run_jobs runs each case alone next.
        return each("the run's trace budget was spent; the cases are run one by one" + tail)
    if out.returncode == DRIVER_ERROR:
        return each("exit status 90: the grader's driver could not read its input or write its results (a harness "
                    "problem, unless your code exits with status 90 or touches files)" + tail)
    return each(f"the program stopped with exit status {out.returncode} inside your code (an exit() or a failed "
                f"check of your own?){tail}")


def split_dumps(data: bytes | None, expected_words: list[int | None]) -> list[array] | None:
    """The driver's output file cut into one dump per case, or None unless every case's word
    count is the expected one (any that fits, for None) and nothing follows the last."""
    if data is None or len(data) % 8:
        return None
    raw = memoryview(data)  # no copy: each dump is copied out once, below
    words = raw.cast("q")
    dumps, at = [], 0
    for want in expected_words:
        if at >= len(words):
            return None
        count = words[at]
        if not 0 <= count <= len(words) - at - 1 or (want is not None and count != want):
            return None
        dump = array("q")
        dump.frombytes(raw[8 * (at + 1):8 * (at + 1 + count)])
        dumps.append(dump)
        at += 1 + count
    return dumps if at == len(words) else None


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


# A judge of a trace (drill02_judge.cpp) is harness code, but what it reads came out of a submission's
# process: it runs in a fresh sandbox, with the usual limits. It is linear in its input, so these are
# never reached by a trace the driver wrote.
JUDGE_LIMITS = Limits(cpu_s=20, wall_s=30, memory_bytes=2 << 30, file_bytes=64 << 20, processes=8)
JUDGE_MALFORMED = 93  # drill02_judge.cpp: the trace is not one the driver writes
JUDGE_GET_BYTES = 80 << 20  # what a judge may be handed or return; the sandbox caps a file at 64 MiB


def run_judge(judge: Path, dumps: list[array], args: list[str], expected_words: list[int]) -> list[Ran]:
    """Run `judge` once, in a FRESH sandbox holding only it and trace.bin (the dumps, each after its word
    count, as the driver wrote them), after the run that made them has ended: `judge trace.bin judged.bin
    ARG...`. One Ran per dump, with the judge's words; when the judge does not end well (a malformed
    trace, a limit), every dump gets its problem (the caller may judge each alone to find which)."""
    trace = array("q")
    for words in dumps:
        trace.append(len(words))
        trace.extend(words)
    data = trace.tobytes()
    if len(data) > JUDGE_GET_BYTES:
        return [Ran(False, "the trace is larger than any the grader's driver writes") for _ in dumps]
    with Sandbox(gpu=False) as box:
        box.put("judge", judge, executable=True)
        box.put("trace.bin", data)
        out = box.run(["./judge", "trace.bin", "judged.bin", *args], JUDGE_LIMITS)
        judged = box.get("judged.bin", limit=JUDGE_GET_BYTES) if out.ok else None
    if out.ok:
        split = split_dumps(judged, expected_words)
        if split is not None:
            return [Ran(True, words=words) for words in split]
    said = (out.stderr.strip().splitlines() or [out.describe()])[-1]
    if out.returncode == JUDGE_MALFORMED and not out.limit:
        problem = (f"the trace this run left is not one the grader's driver writes ({said}): something in the "
                   "program wrote over the driver's log or its results file")
    else:
        problem = f"the grader's judge of the trace failed ({said}; a harness problem unless the trace was forged)"
    return [Ran(False, problem) for _ in dumps]


def words_bytes(words) -> bytes:
    return array("q", words).tobytes()


def dropped_note(runs, count: bool = True) -> list[str]:
    """The note on output the sandbox discarded; count=False leaves out how many bytes (course mode:
    a submission that prints as many bytes as a hidden size would learn that size from the count)."""
    total = sum(r.dropped for r in runs)
    if not total:
        return []
    how_much = f"{total} bytes of output were discarded" if count else "the rest of its output was discarded"
    return [f"your code printed more than the grader keeps: {how_much} (the checks were still graded on the "
            "results; printing is not needed)"]


PRINTED_LINES = 20


def note_dropped(report: Report, runs) -> None:
    """dropped_note in both modes' words (Report.note: the byte count is the instructor's in course mode),
    and what the functions printed: shown in self-study, the instructor's in course mode (a function
    that prints its input would show the student the hidden inputs)."""
    runs = list(runs)
    for full, safe in zip(dropped_note(runs), dropped_note(runs, count=False)):
        report.note(full, student=safe)
    printed = [line for r in runs for line in r.printed.splitlines()]
    if printed:
        shown = "\n".join(printed[:PRINTED_LINES]) + (f"\n... ({len(printed) - PRINTED_LINES} more lines)"
                                                      if len(printed) > PRINTED_LINES else "")
        report.note(f"your functions printed (never read for a verdict):\n{shown}",
                    student="your functions printed something; in course mode it is not shown (it could carry "
                            "the hidden inputs): run the grader yourself (`reproduce:`) to see it")


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
    common = min(len(expected), len(actual))
    count, first = max(len(expected), len(actual)) - common, common
    for at in range(0, common, 4096):  # chunks compared at C speed; element by element only where they differ
        e, a = expected[at:at + 4096], actual[at:at + 4096]
        if e != a:
            count += sum(map(operator.ne, e, a))
            first = min(first, next((at + i for i, (x, y) in enumerate(zip(e, a)) if x != y), common))
    return count, first


def n_of(case) -> int:
    return len(case.values)


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


HIDDEN = "hidden"  # a case label that starts with this names a hidden input (its size, its seed)
IN_WORDS = ("the result is wrong on this case (its size, values and the seed that made them are your "
            "instructor's)")


@dataclass
class Failure:
    """One failing case of a check, as its grader describes it.

    A hidden case (`hidden` set, or a label that starts with HIDDEN) is, in course mode, shown to
    the student by `hidden` alone ("hidden case 3 of 7 (a large odd size)") with `in_words` and
    `diagnosis_in_words`: what went wrong in words that name no size, index or value. The full
    label and text, size and seed included, become the instructor's detail (Report.add)."""
    case_label: str  # the full label: the size, how the values were made, the seed
    text: str  # what went wrong, with indices and values
    diagnosis: str = ""
    n: int | None = None  # the case's size, for the one-line list of further failures
    student: str | None = None  # course mode: `text` without the expected values (None: text is safe)
    hidden: str | None = None  # a hidden case: its course-mode name, never its size (None: a public case)
    in_words: str | None = None  # hidden, course mode: what went wrong (None: IN_WORDS)
    diagnosis_in_words: str = ""  # hidden, course mode: the likely cause ("": none is shown)

    def __post_init__(self):
        if self.hidden is None and self.case_label.startswith(HIDDEN):
            self.hidden = "a hidden case"  # a grader that names none still never shows the label


def problem_in_words(problem: str) -> str:
    """A run's problem (Ran.problem) for a hidden case in course mode: without the submission's own
    stderr and exit status, which it could have set to a hidden size or value."""
    head = problem.split("\n    stderr: ", 1)[0]
    return re.sub(r"exit status \d+ inside your code", "an exit status of its own inside your code", head)


def summarise(failures: list[Failure], cases_total: int, reproduce: str, student: bool = False) -> str:
    """The failing cases as one check's feedback; student=True: the course-mode text, where a hidden
    case shows only its course-mode name and words and the reproduce line has no seed."""
    lines = []
    said = ""
    for f in failures[:MAX_CASES_SHOWN]:
        if student and f.hidden is not None:
            label, text, diagnosis = f.hidden, f.in_words or IN_WORDS, f.diagnosis_in_words
        else:
            label, diagnosis = f.case_label, f.diagnosis
            text = f.student if student and f.student is not None else f.text
        lines.append(f"{label}:")
        lines += [f"  {line}" for line in text.splitlines()]
        if diagnosis and diagnosis != said:
            lines.append(f"  likely cause: {diagnosis}")
            said = diagnosis
    if len(failures) > MAX_CASES_SHOWN:
        more = failures[MAX_CASES_SHOWN:]
        named = [f for f in more if not (student and f.hidden is not None)]
        sizes = ", ".join([f"n={f.n}" for f in named if f.n is not None]
                          + ([f"{len(more) - len(named)} hidden"] if len(named) < len(more) else []))
        lines.append(f"... and {len(more)} more failing case(s)" + (f": {sizes}" if sizes else ""))
    lines.append(f"{len(failures)} of {cases_total} cases failed. "
                 + (student_reproduce(reproduce) if student else reproduce))
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


def guarded(values: list[int]) -> array:
    """An array's storage as the driver lays it out: poisoned guard words either side."""
    return array("q", [POISON] * GUARD + list(values) + [POISON] * GUARD)
