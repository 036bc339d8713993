"""Running a submission's kernels by plan: the trusted GPU path of every graded GPU exercise.

The Day 31 grader and the stretch drills' graders (04 warp scan, 05 look-back scan,
06 copy_if and partition) grade device code only: the submission is compiled to a
fatbin (none of its host code exists there), and the harness-owned runner,
harness/drivers/gpu_runner.cpp, loads it through the CUDA driver API inside a GPU
sandbox. What to run is a Plan written here: per task, the buffers (each with
poisoned guard words), the launches by mangled kernel name, and the buffers to copy
back; and, read once before any kernel runs, the module's __device__ globals the
grader names (Day 31's compile-time answers). The runner compares nothing; every
verdict is made in Python from the raw words.

    plan = Plan()
    task = plan.task("n=1000, 256 threads")
    task.buffer("in", "f32", 1000, guard=256, data=values_bytes)
    task.buffer("out", "f32", 1000, guard=256)                      # poisoned
    task.launch("_Z4scanPKfPfm", grid=4, block=256, args=["@in", "@out", "u64:1000"])
    task.dump("in", "out")
    results, module = run_plan(fatbin, plan)
    results[0].dumps["out"]   # bytes: guard + 1000 + guard words

One runner process takes every task (a CUDA context costs more to make than the
tasks take); a CUDA error spoils the context, so the runner stops and a fresh
process takes the tasks left. A launch past LAUNCH_LIMIT_S ends the process
(the runner's own limit: it runs no student host code); the tasks that use that
kernel are then not run again. What a task's error says is `Words`' to choose: a
grader may keep its own (Day 31 does).

A timed task (`Task.time`, drill 05's speed check) runs its one launch many times,
interleaved with CUB's scan of the same fresh input and a copy, and leaves one
"timing" dump: the record scanlab/speed.py parses and judges. Its CUB and its
input and hash kernels are the harness's timing library, drivers/timing_lib.cu,
built here by nvcc (`build_timing_library`) and handed to the runner beside it.

The runner is host C++ built here with g++ (cached by its source's bytes, the
compiler and the flags: `build_runner`); `probe` runs its `--probe` mode, the
graders' check for a usable GPU.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import shlex
import shutil
import struct
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from . import env
from .paths import HARNESS
from .run import run_process
from .sandbox import GPU_LIMITS, Outcome, Sandbox

RUNNER_NAME = "gpu_runner"
RUNNER_SOURCE = HARNESS / "drivers" / "gpu_runner.cpp"
LIBRARY_NAME = "libscanlab_timing.so"
LIBRARY_SOURCE = HARNESS / "drivers" / "timing_lib.cu"
LAUNCH_LIMIT_S = 2.0
RUNNER_HUNG = 5
RUN_LIMITS = dataclasses.replace(GPU_LIMITS, cpu_s=30, wall_s=60)
WIDTH = {"u8": 1, "i32": 4, "u32": 4, "f32": 4, "i64": 8, "u64": 8, "f64": 8}
STARTED, FINISHED, CUDA_ERROR, NO_SUCH_KERNEL, HARNESS_FAILED = 0, 1, 2, 3, 4
TIMING = "timing"  # a timed task's one dump


@dataclass
class Buffer:
    name: str
    type: str
    count: int
    guard: int = 0
    init: str = "poison"  # poison | zero | file (then `data`)
    data: bytes | None = None


@dataclass
class Task:
    label: str
    buffers: list[Buffer] = field(default_factory=list)
    launches: list[str] = field(default_factory=list)  # plan lines
    dumps: list[str] = field(default_factory=list)
    kernels: set[str] = field(default_factory=set)
    key: object = None  # the grader's own name for the task, for its Words (Day 31: (input, block, kernel))
    timing: str = ""  # a timed task: its `time` line (Task.time)

    def buffer(self, name: str, type: str, count: int, guard: int = 0, data: bytes | None = None,
               init: str = "poison") -> "Task":
        if type not in WIDTH:
            raise ValueError(f"unknown buffer type {type!r}")
        if data is not None:
            if len(data) != count * WIDTH[type]:
                raise ValueError(f"buffer {name}: {len(data)} bytes for {count} words of {type}")
            init = "file"
        self.buffers.append(Buffer(name, type, count, guard, init, data))
        return self

    def launch(self, kernel: str, grid: int, block: int, args: list[str], shared: int = 0) -> "Task":
        names = {b.name for b in self.buffers}
        for arg in args:
            if arg.startswith("@") and arg[1:] not in names:
                raise ValueError(f"launch of {kernel}: no buffer {arg[1:]}")
        self.launches.append(f"launch {kernel} {grid} {block} {shared} {' '.join(args)}".rstrip())
        self.kernels.add(kernel)
        return self

    def dump(self, *names: str) -> "Task":
        if self.timing:
            raise ValueError("a timed task dumps its timing record only")
        self.dumps.extend(names)
        return self

    def time(self, input: str, output: str, seed: int, high: int, inclusive: bool, warmup: int, least: int,
             most: int, spread: float) -> "Task":
        """Make this a timed task (its buffers zero or poison, one launch): see gpu_runner.cpp, "timed tasks"."""
        names = {b.name: b for b in self.buffers}
        for name in (input, output):
            if name not in names or WIDTH[names[name].type] != 4:
                raise ValueError(f"timed task: no buffer {name} of 4-byte words")
        if any(b.init == "file" for b in self.buffers) or len(self.launches) != 1 or self.dumps:
            raise ValueError("a timed task has zero or poison buffers, one launch and no dumps")
        if not (0 <= seed < 1 << 64 and 1 <= least <= most and 0 <= spread < 1):
            raise ValueError("timed task: seed is a u64, 1 <= least <= most, 0 <= spread < 1")
        self.timing = (f"time {input} {output} {seed} {high} {'inclusive' if inclusive else 'exclusive'} {warmup} "
                       f"{least} {most} {spread:g}")
        self.dumps = [TIMING]
        return self


@dataclass
class Plan:
    tasks: list[Task] = field(default_factory=list)
    globals: dict[str, int] = field(default_factory=dict)  # __device__ variable -> its size in bytes

    def task(self, label: str, key: object = None) -> Task:
        self.tasks.append(Task(label, key=key))
        return self.tasks[-1]

    def read_global(self, name: str, size: int) -> "Plan":
        """Have the runner copy back the module's __device__ variable `name` (`size` bytes) before any kernel runs."""
        self.globals[name] = size
        return self

    @property
    def timed(self) -> bool:
        return any(task.timing for task in self.tasks)

    def text(self, module: str) -> tuple[str, dict[str, bytes]]:
        """The plan file and the input files it names."""
        lines, files = [f"module {module}"], {}
        lines += [f"global {name} {size}" for name, size in self.globals.items()]
        if self.timed:
            lines.append(f"library {LIBRARY_NAME}")
        for k, task in enumerate(self.tasks):
            lines.append(f"{'timed' if task.timing else 'task'}  # {k}: {task.label}".replace("\n", " "))
            for b in task.buffers:
                init = b.init
                if b.init == "file":
                    name = f"in-{k}-{b.name}.bin"
                    files[name] = b.data
                    init = f"file:{name}"
                lines.append(f"buffer {b.name} {b.type} {b.count} {b.guard} {init}")
            lines += task.launches
            if task.timing:
                lines.append(task.timing)
            elif task.dumps:
                lines.append("dump " + " ".join(task.dumps))
            lines.append("end")
        return "\n".join(lines) + "\n", files


@dataclass
class TaskResult:
    """What one task left: the dumped buffers' raw bytes (guards included), or why there are none."""
    label: str
    dumps: dict[str, bytes] = field(default_factory=dict)
    error: str = ""  # non-empty: no dumps, and why, in run_plan's Words
    reached: int = 0  # launches that finished
    hung: bool = False
    state: int | None = None  # as the runner's task file says (STARTED ... NO_SUCH_KERNEL); None: no file
    step: str = ""  # CUDA_ERROR: the step that failed; NO_SUCH_KERNEL: the kernel the module lacks
    cuda_error: tuple[str, str] = ("", "")  # CUDA_ERROR: the error's name and text


@dataclass
class ModuleInfo:
    load_error: str = ""
    kernels: list[tuple[str, str]] = field(default_factory=list)  # (mangled, demangled)
    globals: dict[str, bytes | None] = field(default_factory=dict)  # the plan's globals; None: not found


# ---- reading what the runner leaves --------------------------------------------------------

class Reader:
    """The runner's records: little-endian u32, i32, u64 and u32-length strings."""

    def __init__(self, data: bytes, what: str):
        self.data, self.at, self.what = data, 0, what

    def take(self, count: int) -> bytes:
        if count < 0 or self.at + count > len(self.data):
            raise ValueError(f"the runner's {self.what} is truncated")
        chunk = self.data[self.at:self.at + count]
        self.at += count
        return chunk

    def u32(self) -> int:
        return struct.unpack("<I", self.take(4))[0]

    def u64(self) -> int:
        return struct.unpack("<Q", self.take(8))[0]

    def text(self) -> str:
        return self.take(self.u32()).decode("utf-8", "replace")


def parse_module(data: bytes) -> ModuleInfo:
    r = Reader(data, "module.bin")
    if r.take(8) != b"GPRMOD02":
        raise ValueError("the runner's module.bin has the wrong header")
    result, name, text = r.u32(), r.text(), r.text()
    if result != 0:
        return ModuleInfo(load_error=f"{name} ({text})")
    info = ModuleInfo()
    for _ in range(r.u32()):
        info.kernels.append((r.text(), r.text()))
    for _ in range(r.u32()):
        name, found, size = r.text(), r.u32(), r.u64()
        info.globals[name] = r.take(size) if found else None
    return info


def parse_task(data: bytes, task: Task) -> TaskResult:
    """What one task-I.bin says, unworded: the dumps, or the state and step that ended the task."""
    r = Reader(data, "task file")
    if r.take(8) != b"GPRTSK01":
        raise ValueError("the runner's task file has the wrong header")
    state, reached, _, name, text, step = r.u32(), r.u32(), r.u32(), r.text(), r.text(), r.text()
    result = TaskResult(task.label, reached=reached, state=state, step=step, cuda_error=(name, text))
    if state == FINISHED:
        for dumped in task.dumps:
            result.dumps[dumped] = r.take(r.u64())
    return result


class Words:
    """What run_plan says when a task has no dumps (the stretch drills' words). A grader that words
    these its own way (Day 31) overrides them; `ran` sees every runner process's outcome."""

    def crashed(self, task: Task, result: TaskResult) -> str:
        name, text = result.cuda_error
        return f"{name} while {result.step} ({text})" if name else result.step

    def missing(self, task: Task, kernel: str, module: ModuleInfo | None) -> str:
        return f"kernel not found in your module: {kernel}"

    def unfinished(self, task: Task, kernel: str, outcome: Outcome) -> tuple[str, str | None]:
        """(the error, and why the tasks left that launch `kernel` are not run; None: they are run)."""
        if outcome.returncode == RUNNER_HUNG and not outcome.limit:
            said = f"time limit {LAUNCH_LIMIT_S:g} s per launch exceeded"
        else:
            said = outcome.describe()
        return (f"did not finish: {said} (a hang: a barrier some threads never reach, a wait on a flag nobody "
                "sets, or a loop that never ends?)", f"{kernel} did not finish earlier ({said}, {task.label})")

    def skipped(self, task: Task, why: str) -> str:
        return f"not run: {why}"

    def stopped(self, task: Task, why: str) -> str:
        return f"the grader's runner stopped: {why}"

    def ran(self, outcome: Outcome) -> None:
        pass


def run_plan(fatbin: bytes, plan: Plan, gpu_lock: threading.Lock | None = None, *,
             limits=RUN_LIMITS, words: Words | None = None) -> tuple[list[TaskResult], ModuleInfo | None]:
    """Every task of the plan, in one fresh GPU sandbox (fresh processes after a CUDA error)."""
    words = words or Words()
    runner = build_runner()
    library = build_timing_library() if plan.timed else None
    text, files = plan.text("module.fatbin")
    results: list[TaskResult | None] = [None] * len(plan.tasks)
    pending = list(range(len(plan.tasks)))
    hung: dict[str, str] = {}
    module: ModuleInfo | None = None
    with gpu_lock or contextlib.nullcontext(), Sandbox(gpu=True) as box:
        box.put(RUNNER_NAME, runner, executable=True)
        box.put("module.fatbin", fatbin)
        box.put("plan.txt", text.encode())
        if library is not None:
            box.put(LIBRARY_NAME, library, executable=True)
        for name, data in files.items():
            box.put(name, data)
        while pending:
            for k in [k for k in pending if plan.tasks[k].kernels & hung.keys()]:
                kernel = sorted(plan.tasks[k].kernels & hung.keys())[0]
                results[k] = TaskResult(plan.tasks[k].label, error=words.skipped(plan.tasks[k], hung[kernel]),
                                        hung=True)
            pending = [k for k in pending if results[k] is None]
            if not pending:
                break
            outcome = box.run([f"./{RUNNER_NAME}", "--plan", "plan.txt", "--tasks", ",".join(map(str, pending)),
                               "--launch-limit", f"{LAUNCH_LIMIT_S:g}"], limits)
            words.ran(outcome)
            raw = box.get("module.bin")
            info = parse_module(raw) if raw else None
            module = module or info
            if info is not None and info.load_error:
                for k in pending:
                    results[k] = TaskResult(plan.tasks[k].label, error=f"your module did not load: {info.load_error}")
                break
            done = []
            for k in pending:
                task = plan.tasks[k]
                raw = box.get(f"task-{k}.bin")
                if raw is None:
                    break
                result = parse_task(raw, task)
                if result.state == STARTED:  # the process ended inside this task
                    launches = task.launches  # the runner marks the launch it was in
                    launch = launches[min(result.reached, len(launches) - 1)].split()[1]
                    result.error, why = words.unfinished(task, launch, outcome)
                    if why is not None:
                        result.hung = True
                        hung[launch] = why
                elif result.state == CUDA_ERROR:
                    result.error = words.crashed(task, result)
                elif result.state == NO_SUCH_KERNEL:
                    result.error = words.missing(task, result.step, info)
                elif result.state == HARNESS_FAILED:  # the runner's own part of a timed task
                    result.error = f"the grader's timing harness failed (not your code's fault): {result.step}"
                results[k] = result
                done.append(k)
            if not done:  # the runner stopped before its first task: a harness problem
                said = outcome.stderr.strip().splitlines()
                why = said[-1] if said else outcome.describe()
                for k in pending:
                    results[k] = TaskResult(plan.tasks[k].label, error=words.stopped(plan.tasks[k], why))
                break
            pending = [k for k in pending if k not in done]
    for k, result in enumerate(results):
        if result is None:  # not reached: a task before it stopped the run in a way that said nothing
            results[k] = TaskResult(plan.tasks[k].label, error="not run: the grader's runner stopped before it")
    return results, module


# ---- the GPU probe -------------------------------------------------------------------

def probe(probe_module) -> str | None:
    """None when the runner loads and runs the scanlab_probe kernel of the module `probe_module()` builds
    (drivers/day31_probe.cu) in a GPU sandbox; otherwise one line saying why not. Runs no student code."""
    try:
        runner = build_runner()
        module = probe_module()
    except HarnessBuildError as exc:
        return f"the grader could not build its GPU runner: {str(exc).splitlines()[-1]}"
    with Sandbox(gpu=True) as box:
        box.put(RUNNER_NAME, runner, executable=True)
        box.put("probe.fatbin", module)
        outcome = box.run([f"./{RUNNER_NAME}", "--probe", "probe.fatbin"], GPU_LIMITS)
    if outcome.ok:
        return None
    said = [line for line in outcome.stderr.splitlines() if line.startswith(f"{RUNNER_NAME}: ")]
    if said:
        return said[-1].removeprefix(f"{RUNNER_NAME}: ")
    if "libcuda.so" in outcome.stderr:  # the loader's words for a machine with no NVIDIA driver
        return "no NVIDIA driver on this machine (libcuda.so.1 is not installed)"
    return f"the GPU probe failed ({outcome.describe()}): {outcome.stderr.strip()[-300:] or 'no message'}"


# ---- building the harness's own programs (outside the sandbox, cached) ---------------

class HarnessBuildError(RuntimeError):
    """The grader could not build its own runner or probe module (not the submission's fault)."""


def cache_dir() -> Path:
    named = os.environ.get("SCANLAB_CACHE")
    return Path(named) if named else Path.home() / ".cache" / "scanlab"


def _tool_identity(path: str) -> str:
    info = os.stat(path)
    return f"{os.path.realpath(path)}:{info.st_size}:{info.st_mtime_ns}"


def cached_build(name: str, sources: list[Path], command: list[str], out_flag_at: int) -> Path:
    """Build `name` with `command` (whose argument at out_flag_at is replaced by the output path), once.

    The key is the sources' bytes, the compiler's identity and the flags. A
    build lands in the cache by a rename, so a grader running at the same time
    sees either nothing or the whole file.
    """
    key = hashlib.sha256()
    for source in sources:
        key.update(source.read_bytes())
    key.update(_tool_identity(command[0]).encode())
    key.update("\0".join(command[1:]).encode())
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{name}-{key.hexdigest()[:20]}"
        if target.is_file():
            return target
        work = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=folder))
    except OSError:  # no writable cache: build into a private temporary folder every time
        target = None
        work = Path(tempfile.mkdtemp(prefix=f"scanlab-{name}-"))
    built = work / name
    command = [*command[:out_flag_at], str(built), *command[out_flag_at + 1:]]
    try:
        proc = run_process(command, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HarnessBuildError(f"$ {shlex.join(command)}\n{exc}") from None
    if proc.returncode != 0 or not built.is_file():
        raise HarnessBuildError(f"$ {shlex.join(command)}\n{(proc.stdout + proc.stderr).strip()}")
    if target is None:
        return built
    os.replace(built, target)
    shutil.rmtree(work, ignore_errors=True)
    return target


def cuda_root() -> Path | None:
    nvcc = env.nvcc()
    return Path(nvcc).resolve().parent.parent if nvcc else None


def runner_command(source: Path = RUNNER_SOURCE) -> list[str]:
    """How the runner is built: host C++ against the driver API only (cuda.h, -lcuda)."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        raise HarnessBuildError("no C++ compiler (g++) on PATH to build the grader's GPU runner")
    flags = ["-std=c++17", "-O2", "-Wall", "-Wextra"]
    root = cuda_root()
    if root is not None:
        for include in (root / "include", root / "targets" / "x86_64-linux" / "include"):
            if (include / "cuda.h").is_file():
                flags.append(f"-I{include}")
                break
        # Link against the toolkit's stub when the driver's own libcuda.so is not there;
        # at run time the loader finds the real libcuda.so.1 (the stub's soname).
        for stubs in (root / "lib64" / "stubs", root / "lib" / "stubs",
                      root / "targets" / "x86_64-linux" / "lib" / "stubs"):
            if stubs.is_dir():
                flags.append(f"-L{stubs}")
                break
    return [cxx, *flags, "-o", "OUT", str(source), "-lcuda", "-ldl"]


def build_runner() -> Path:
    command = runner_command()
    return cached_build(RUNNER_NAME, [RUNNER_SOURCE], command, command.index("-o") + 1)


def timing_library_command() -> list[str]:
    """How the timing library is built: nvcc, CUB from the toolkit, the CUDA runtime linked in
    statically; for the GPU here only when there is one (CUB's scan for every target is slow to build)."""
    from .build import cuda_gencode

    nvcc = env.nvcc()
    if nvcc is None:
        raise HarnessBuildError("nvcc not found on PATH or in /usr/local/cuda/bin: the timing library needs it")
    gpu, _ = env.nvidia_gpu()
    gencode = ["-gencode", f"arch=compute_{gpu.sm[3:]},code={gpu.sm}"] if gpu is not None else cuda_gencode()
    return [nvcc, "-std=c++17", "-O3", "-shared", "-Xcompiler", "-fPIC", *gencode, "-o", "OUT", str(LIBRARY_SOURCE)]


def build_timing_library() -> Path:
    command = timing_library_command()
    return cached_build(LIBRARY_NAME, [LIBRARY_SOURCE], command, command.index("-o") + 1)
