"""Running a submission's kernels by plan: the trusted GPU path of the stretch drills.

The stretch drills' graders (04 warp scan, 05 look-back scan, 06 copy_if and
partition) grade device code the way the Day 31 grader does: the submission is
compiled to a fatbin (device code only: none of its host code exists there), and a
harness-owned runner, harness/drivers/gpu_runner.cpp, loads it through the CUDA
driver API inside a GPU sandbox. What to run is a Plan written here: per task, the
buffers (each with poisoned guard words), the launches by mangled kernel name, and
the buffers to copy back. The runner compares nothing; every verdict is made in
Python from the raw words.

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
kernel are then not run again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from dataclasses import dataclass, field
from pathlib import Path

# The Day 31 runner's record reader (u32, u64, u32-length strings) and build cache serve this runner too.
from .grade_day31 import Reader, _cached_build, runner_command
from .sandbox import GPU_LIMITS, Sandbox

RUNNER_NAME = "gpu_runner"
RUNNER_SOURCE = Path(__file__).resolve().parent.parent / "drivers" / "gpu_runner.cpp"
LAUNCH_LIMIT_S = 2.0
RUNNER_HUNG = 5
RUN_LIMITS = dataclasses.replace(GPU_LIMITS, cpu_s=30, wall_s=60)
WIDTH = {"u8": 1, "i32": 4, "u32": 4, "f32": 4, "i64": 8, "u64": 8, "f64": 8}
STARTED, FINISHED, CUDA_ERROR, NO_SUCH_KERNEL = 0, 1, 2, 3


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
        self.dumps.extend(names)
        return self


@dataclass
class Plan:
    tasks: list[Task] = field(default_factory=list)

    def task(self, label: str) -> Task:
        self.tasks.append(Task(label))
        return self.tasks[-1]

    def text(self, module: str) -> tuple[str, dict[str, bytes]]:
        """The plan file and the input files it names."""
        lines, files = [f"module {module}"], {}
        for k, task in enumerate(self.tasks):
            lines.append(f"task  # {k}: {task.label}".replace("\n", " "))
            for b in task.buffers:
                init = b.init
                if b.init == "file":
                    name = f"in-{k}-{b.name}.bin"
                    files[name] = b.data
                    init = f"file:{name}"
                lines.append(f"buffer {b.name} {b.type} {b.count} {b.guard} {init}")
            lines += task.launches
            if task.dumps:
                lines.append("dump " + " ".join(task.dumps))
            lines.append("end")
        return "\n".join(lines) + "\n", files


@dataclass
class TaskResult:
    """What one task left: the dumped buffers' raw bytes (guards included), or why there are none."""
    label: str
    dumps: dict[str, bytes] = field(default_factory=dict)
    error: str = ""  # non-empty: no dumps
    reached: int = 0  # launches that finished
    hung: bool = False


@dataclass
class ModuleInfo:
    load_error: str = ""
    kernels: list[tuple[str, str]] = field(default_factory=list)  # (mangled, demangled)


def parse_module(data: bytes) -> ModuleInfo:
    r = Reader(data, "module.bin")
    if r.take(8) != b"GPRMOD01":
        raise ValueError("the runner's module.bin has the wrong header")
    result, name, text = r.u32(), r.text(), r.text()
    if result != 0:
        return ModuleInfo(load_error=f"{name} ({text})")
    info = ModuleInfo()
    for _ in range(r.u32()):
        info.kernels.append((r.text(), r.text()))
    return info


def parse_task(data: bytes, task: Task) -> tuple[int, TaskResult, str]:
    """(state, result, the step or kernel named) of one task-I.bin."""
    r = Reader(data, "task file")
    if r.take(8) != b"GPRTSK01":
        raise ValueError("the runner's task file has the wrong header")
    state, reached, code, name, text, step = r.u32(), r.u32(), r.u32(), r.text(), r.text(), r.text()
    result = TaskResult(task.label, reached=reached)
    if state == FINISHED:
        for dumped in task.dumps:
            result.dumps[dumped] = r.take(r.u64())
    elif state == CUDA_ERROR:
        result.error = f"{name} while {step} ({text})" if code else step
    elif state == NO_SUCH_KERNEL:
        result.error = f"kernel not found in your module: {step}"
    return state, result, step


def build_runner() -> Path:
    command = runner_command(RUNNER_SOURCE)
    return _cached_build(RUNNER_NAME, [RUNNER_SOURCE], command, command.index("-o") + 1)


def run_plan(fatbin: bytes, plan: Plan, gpu_lock: threading.Lock | None = None
             ) -> tuple[list[TaskResult], ModuleInfo | None]:
    """Every task of the plan, in one fresh GPU sandbox (fresh processes after a CUDA error)."""
    runner = build_runner()
    text, files = plan.text("module.fatbin")
    results: list[TaskResult | None] = [None] * len(plan.tasks)
    pending = list(range(len(plan.tasks)))
    hung: dict[str, str] = {}
    module: ModuleInfo | None = None
    with gpu_lock or contextlib.nullcontext(), Sandbox(gpu=True) as box:
        box.put(RUNNER_NAME, runner, executable=True)
        box.put("module.fatbin", fatbin)
        box.put("plan.txt", text.encode())
        for name, data in files.items():
            box.put(name, data)
        while pending:
            for k in [k for k in pending if plan.tasks[k].kernels & hung.keys()]:
                kernel = sorted(plan.tasks[k].kernels & hung.keys())[0]
                results[k] = TaskResult(plan.tasks[k].label, error=f"not run: {hung[kernel]}", hung=True)
            pending = [k for k in pending if results[k] is None]
            if not pending:
                break
            outcome = box.run([f"./{RUNNER_NAME}", "--plan", "plan.txt", "--tasks", ",".join(map(str, pending)),
                               "--launch-limit", f"{LAUNCH_LIMIT_S:g}"], RUN_LIMITS)
            raw = box.get("module.bin")
            info = parse_module(raw) if raw else None
            module = module or info
            if info is not None and info.load_error:
                for k in pending:
                    results[k] = TaskResult(plan.tasks[k].label, error=f"your module did not load: {info.load_error}")
                break
            done = []
            for k in pending:
                raw = box.get(f"task-{k}.bin")
                if raw is None:
                    break
                state, result, _ = parse_task(raw, plan.tasks[k])
                if state == STARTED:  # the process ended inside this task
                    launches = plan.tasks[k].launches  # the runner marks the launch it was in
                    launch = launches[min(result.reached, len(launches) - 1)].split()[1]
                    if outcome.returncode == RUNNER_HUNG and not outcome.limit:
                        said = f"time limit {LAUNCH_LIMIT_S:g} s per launch exceeded"
                    else:
                        said = outcome.describe()
                    result.error = (f"did not finish: {said} (a hang: a barrier some threads never reach, a "
                                    "wait on a flag nobody sets, or a loop that never ends?)")
                    result.hung = True
                    hung[launch] = f"{launch} did not finish earlier ({said}, {plan.tasks[k].label})"
                results[k] = result
                done.append(k)
            if not done:  # the runner stopped before its first task: a harness problem
                said = outcome.stderr.strip().splitlines()
                why = said[-1] if said else outcome.describe()
                for k in pending:
                    results[k] = TaskResult(plan.tasks[k].label, error=f"the grader's runner stopped: {why}")
                break
            pending = [k for k in pending if k not in done]
    for k, result in enumerate(results):
        if result is None:  # not reached: a task before it stopped the run in a way that said nothing
            results[k] = TaskResult(plan.tasks[k].label, error="not run: the grader's runner stopped before it")
    return results, module
