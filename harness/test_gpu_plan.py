"""The GPU runner (drivers/gpu_runner.cpp, scanlab/gpu_plan.py) Day 31 and the stretch drills grade with.

CPU: the plan text, the runner's refusal of a bad plan (status 2, one line, before
any CUDA call) and its probe's "no usable GPU" (status 3, one line), the parsing of
what the runner leaves, run_plan's handling of every way a runner process ends (on
gpu_fakes' stand-in), and the runner's build cache. GPU: a module of the test's own
kernels run by plan: a copy whose dump is exact and whose guards stay poisoned, a
stray store past the end that shows in the guard, a trap (a CUDA error: the next
tasks still run, in a fresh process), a kernel that never ends (the per-launch
limit, and the tasks that use it are not run again), and a kernel name the module
does not have; no task sees a __device__ variable an earlier task changed, and the
globals a plan names are read before any kernel runs.
"""

from __future__ import annotations

import stat
import struct
import subprocess
from array import array
from pathlib import Path

import pytest

from scanlab import gpu_plan
from scanlab.gpu_fakes import FakeGpuBox, run_on_the_stub
from scanlab.gpu_plan import Plan

KERNELS = r"""
extern "C" __global__ void copy(const float* in, float* out, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}
extern "C" __global__ void copy_one_past(const float* in, float* out, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i <= n) out[i] = i < n ? in[i] : 7.0f;
}
extern "C" __global__ void trap(float*) { __trap(); }
extern "C" __global__ void spin(volatile int* flag) { while (*flag == 0) {} }
extern "C" __global__ void add(int* x, int k) { x[threadIdx.x] += k; }
__device__ int g_launches = 0;  // what a kernel could carry from one graded task to the next
__device__ int g_answer = 42;  // a compile-time answer, as Day 31's exports leave one
__device__ long long g_wide = 7;  // read as 4 bytes: the wrong size, so not found
extern "C" __global__ void remember(int* out) { out[0] = atomicAdd(&g_launches, 1); }
"""


def test_plan_text_names_every_buffer_launch_and_dump():
    plan = Plan()
    values = array("f", [1, 2, 3]).tobytes()
    plan.task("first").buffer("in", "f32", 3, guard=2, data=values) \
        .buffer("out", "f32", 3, guard=2).launch("copy", 1, 32, ["@in", "@out", "u64:3"]).dump("out")
    plan.task("second").buffer("x", "i32", 4, init="zero").launch("add", 1, 4, ["@x", "i32:-5"]).dump("x")
    plan.read_global("g_answer", 4)
    text, files = plan.text("module.fatbin")
    assert text.splitlines() == [
        "module module.fatbin", "global g_answer 4",
        "task  # 0: first", "buffer in f32 3 2 file:in-0-in.bin", "buffer out f32 3 2 poison",
        "launch copy 1 32 0 @in @out u64:3", "dump out", "end",
        "task  # 1: second", "buffer x i32 4 0 zero", "launch add 1 4 0 @x i32:-5", "dump x", "end"]
    assert files == {"in-0-in.bin": values}
    with pytest.raises(ValueError, match="no buffer y"):
        plan.task("bad").buffer("x", "i32", 1).launch("add", 1, 1, ["@y"])
    with pytest.raises(ValueError, match="12 bytes for 4 words"):
        plan.task("bad").buffer("x", "f32", 4, data=bytes(12))


def task_bytes(state: int, reached: int = 0, dumps: list[bytes] = (), code: int = 0, step: str = "") -> bytes:
    def text(s: str) -> bytes:
        return struct.pack("<I", len(s)) + s.encode()
    out = b"GPRTSK01" + struct.pack("<III", state, reached, code)
    out += text("CUDA_ERROR_X" if code else "") + text("what it means" if code else "") + text(step)
    for d in dumps:
        out += struct.pack("<Q", len(d)) + d
    return out


def test_task_files_parse_into_dumps_or_errors():
    task = Plan().task("t").buffer("a", "u8", 2).buffer("b", "u8", 3).launch("k", 1, 1, ["@a"]).dump("a", "b")
    result = gpu_plan.parse_task(task_bytes(1, 1, [b"\x01\x02", b"\x03\x04\x05"]), task)
    assert result.state == gpu_plan.FINISHED and result.dumps == {"a": b"\x01\x02", "b": b"\x03\x04\x05"}
    assert result.reached == 1
    result = gpu_plan.parse_task(task_bytes(2, 0, code=700, step="running k"), task)
    assert result.state == gpu_plan.CUDA_ERROR and not result.dumps
    assert (result.step, result.cuda_error) == ("running k", ("CUDA_ERROR_X", "what it means"))
    assert gpu_plan.Words().crashed(task, result) == "CUDA_ERROR_X while running k (what it means)"
    result = gpu_plan.parse_task(task_bytes(3, step="k"), task)
    assert result.state == gpu_plan.NO_SUCH_KERNEL and result.step == "k"
    assert gpu_plan.Words().missing(task, result.step, None) == "kernel not found in your module: k"
    assert gpu_plan.parse_task(task_bytes(0, 0), task).state == gpu_plan.STARTED  # the runner died inside it
    with pytest.raises(ValueError, match="truncated"):
        gpu_plan.parse_task(task_bytes(1, 1, [b"\x01\x02"]), task)
    with pytest.raises(ValueError, match="wrong header"):
        gpu_plan.parse_task(b"D31TSK01" + bytes(40), task)


def text_bytes(s: str) -> bytes:
    return struct.pack("<I", len(s.encode())) + s.encode()


def module_bytes(result=0, kernels=(), globals=()) -> bytes:
    data = b"GPRMOD02" + struct.pack("<I", result) + text_bytes("CUDA_ERROR_OUT_OF_MEMORY" if result else "")
    data += text_bytes("out of memory" if result else "")
    if result:
        return data
    data += struct.pack("<I", len(kernels)) + b"".join(text_bytes(m) + text_bytes(p) for m, p in kernels)
    data += struct.pack("<I", len(globals))
    for name, value in globals:
        data += text_bytes(name) + struct.pack("<IQ", value is not None, len(value or b"")) + (value or b"")
    return data


def test_the_module_record_parses_with_its_kernels_and_globals():
    info = gpu_plan.parse_module(module_bytes(kernels=[("_Z1kv", "k()")],
                                              globals=[("g_answer", b"\x02\0\0\0"), ("g_missing", None)]))
    assert info.load_error == "" and info.kernels == [("_Z1kv", "k()")]
    assert info.globals == {"g_answer": b"\x02\0\0\0", "g_missing": None}
    assert gpu_plan.parse_module(module_bytes(result=2)).load_error == "CUDA_ERROR_OUT_OF_MEMORY (out of memory)"
    with pytest.raises(ValueError, match="truncated"):
        gpu_plan.parse_module(module_bytes(globals=[("g_answer", b"\x02\0\0\0")])[:-3])
    with pytest.raises(ValueError, match="wrong header"):
        gpu_plan.parse_module(b"GPRMOD01" + module_bytes()[8:])


# ---- run_plan on the runner's stand-in: every way a process ends -----------------------------

def copy(args, grid, block):
    source, target, _ = args
    target.set(source.get())


def fake_runs(monkeypatch, box: FakeGpuBox, plan: Plan, words=None):
    monkeypatch.setattr(gpu_plan, "Sandbox", box)
    monkeypatch.setattr(gpu_plan, "build_runner", lambda: Path("gpu_runner"))
    return gpu_plan.run_plan(b"fatbin", plan, words=words)


def copy_task(plan: Plan, label: str, kernel: str = "copy"):
    data = array("f", [1, 2, 3]).tobytes()
    plan.task(label).buffer("in", "f32", 3, guard=1, data=data).buffer("out", "f32", 3, guard=1) \
        .launch(kernel, 1, 32, ["@in", "@out", "u64:3"]).dump("out")


def test_a_crash_costs_its_task_and_a_fresh_process_takes_the_tasks_left(monkeypatch):
    plan = Plan()
    for label in ("first", "crashes", "after"):
        copy_task(plan, label)
    box = FakeGpuBox({"copy": copy}, fate=lambda k, kernel: "crash" if k == 1 else "ok")
    (first, crashed, after), info = fake_runs(monkeypatch, box, plan)
    poison = b"\xff" * 4
    assert first.dumps["out"] == after.dumps["out"] == poison + array("f", [1, 2, 3]).tobytes() + poison
    assert crashed.error == ("CUDA_ERROR_ILLEGAL_ADDRESS while running copy (an illegal memory access was "
                             "encountered)") and not crashed.dumps
    assert [run[run.index("--tasks") + 1] for run in box.runs] == ["0,1,2", "2"]
    assert info.kernels == [("copy", "copy")]


def test_a_hang_is_not_launched_again_and_a_missing_kernel_costs_its_task_only(monkeypatch):
    plan = Plan()
    for label, kernel in (("spins", "spin"), ("missing", "no_such_kernel"), ("spins again", "spin"),
                          ("copies", "copy")):
        copy_task(plan, label, kernel)
    box = FakeGpuBox({"copy": copy, "spin": copy}, fate=lambda k, kernel: "hang" if kernel == "spin" else "ok")
    (spin, missing, again, copied), _ = fake_runs(monkeypatch, box, plan)
    assert spin.hung and spin.error.startswith("did not finish: time limit 2 s per launch exceeded (a hang"), spin
    assert missing.error == "kernel not found in your module: no_such_kernel" and not missing.hung
    assert again.hung and again.error == ("not run: spin did not finish earlier (time limit 2 s per launch "
                                          "exceeded, spins)"), again
    assert copied.dumps["out"][4:16] == array("f", [1, 2, 3]).tobytes()
    assert [run[run.index("--tasks") + 1] for run in box.runs] == ["0,1,2,3", "1,3"]


@pytest.mark.parametrize("fate, said", [("limit", "wall-clock limit 20 s exceeded"), ("signal", "killed by SIGSEGV")])
def test_a_process_ended_from_outside_marks_the_task_it_was_in(monkeypatch, fate, said):
    plan = Plan()
    for label in ("ended", "same kernel"):
        copy_task(plan, label)
    box = FakeGpuBox({"copy": copy}, fate=lambda k, kernel: fate if k == 0 else "ok")
    (ended, again), _ = fake_runs(monkeypatch, box, plan)
    assert ended.hung and ended.error.startswith(f"did not finish: {said} (a hang"), ended
    assert again.error == f"not run: copy did not finish earlier ({said}, ended)"


def test_a_module_that_does_not_load_and_a_runner_that_stops_fail_every_task(monkeypatch):
    plan = Plan()
    for label in ("a", "b"):
        copy_task(plan, label)
    results, info = fake_runs(monkeypatch, FakeGpuBox({"copy": copy}, load_error="bad image"), plan)
    assert info.load_error == "CUDA_ERROR_INVALID_IMAGE (bad image)"
    assert [r.error for r in results] == ["your module did not load: CUDA_ERROR_INVALID_IMAGE (bad image)"] * 2

    class Dead(FakeGpuBox):
        def run(self, command, limits=None):
            self.runs.append(command)
            return gpu_plan.Outcome(command, 1, "", "gpu_runner: cuInit failed: CUDA_ERROR_NO_DEVICE (no device)\n")

    results, info = fake_runs(monkeypatch, Dead({}), plan)
    assert info is None
    assert [r.error for r in results] == ["the grader's runner stopped: gpu_runner: cuInit failed: "
                                          "CUDA_ERROR_NO_DEVICE (no device)"] * 2


def test_a_graders_words_replace_run_plans(monkeypatch):
    class Mine(gpu_plan.Words):
        def __init__(self):
            self.seen = []

        def crashed(self, task, result):
            return f"{task.key}: {result.step}"

        def ran(self, outcome):
            self.seen.append(outcome.stdout)

    plan = Plan()
    copy_task(plan, "crashes")
    plan.tasks[0].key = ("mine", 0)
    words = Mine()
    (crashed,), _ = fake_runs(monkeypatch, FakeGpuBox({"copy": copy}, fate=lambda k, kernel: "crash",
                                                      printed="hi"), plan, words)
    assert crashed.error == "('mine', 0): running copy" and words.seen == ["hi"]


@pytest.mark.parametrize("plan, said", [
    ("task\nend\n", "a task without a launch"),
    ("module m\ntask\nbuffer x f33 1 0 zero\nlaunch k 1 1 0 @x\nend\n", "unknown type f33"),
    ("module m\ntask\nbuffer x f32 1 0 zero\nlaunch k 1 1 0 @y\nend\n", "no buffer y declared"),
    ("module m\ntask\nbuffer x f32 1 0 zero\nlaunch k 1 2000 0 @x\nend\n", "not a whole number up to 1024"),
    ("module m\ntask\nbuffer x f32 1 0 zero\nlaunch k 1 1 0 u64:-1\nend\n", "bad u64 -1"),
    ("module m\ntask\nbuffer x f32 1 0 junk\nlaunch k 1 1 0 @x\nend\n", "INIT is zero, poison or file:PATH"),
    ("module m\ntask\nlaunch k 1 1 0\n", "the last task has no end"),
    ("module m\n", "the plan has no task"),
    ("module m\ntask\nbuffer x f32 1 0 zero\nlaunch k 1 1 0 @x\nend\nglobal g 4\n", "before the first task"),
    ("global g 4\nmodule m\n", "after the module"),
    ("module m\nglobal g 0\n", "a global of 0 bytes"),
])
def test_the_runner_refuses_a_bad_plan_before_touching_the_gpu(plan, said, tmp_path):
    (tmp_path / "plan.txt").write_text(plan)
    proc = run_on_the_stub(tmp_path, ["--plan", "plan.txt"])
    assert proc.returncode == 2 and said in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr


def test_the_probe_without_a_gpu_says_why_in_one_line_with_status_3(tmp_path):
    (tmp_path / "probe.fatbin").write_bytes(b"not reached")
    proc = run_on_the_stub(tmp_path, ["--probe", "probe.fatbin"])
    assert proc.returncode == 3 and proc.stderr.startswith("gpu_runner: cuInit failed: "), proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr


@pytest.mark.parametrize("args", [[], ["--probe", "p.fatbin", "--plan", "plan.txt"], ["--plan"], ["--frobnicate", "1"]])
def test_a_bad_command_line_is_status_2(tmp_path, args):
    proc = run_on_the_stub(tmp_path, args)
    assert proc.returncode == 2 and proc.stderr.startswith("gpu_runner: "), proc.stderr


@pytest.mark.cuda
def test_the_runner_builds_once_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SCANLAB_CACHE", str(tmp_path / "cache"))
    first = gpu_plan.build_runner()
    assert first.is_file() and first.stat().st_mode & stat.S_IXUSR
    assert first.parent == tmp_path / "cache"
    assert gpu_plan.build_runner() == first and [p.name for p in (tmp_path / "cache").iterdir()] == [first.name]


@pytest.fixture(scope="module")
def module(tmp_path_factory, nvcc) -> bytes:
    from scanlab.build import cuda_gencode

    folder = tmp_path_factory.mktemp("gpu_plan")
    (folder / "kernels.cu").write_text(KERNELS)
    subprocess.run([nvcc, "-fatbin", *cuda_gencode(), "-o", str(folder / "kernels.fatbin"),
                    str(folder / "kernels.cu")], check=True, timeout=300)
    return (folder / "kernels.fatbin").read_bytes()


@pytest.mark.gpu
@pytest.mark.cuda
def test_tasks_run_by_plan_with_exact_dumps_errors_and_hangs(module):
    values = array("f", [float(i % 5) for i in range(1000)])
    poison = b"\xff" * 4 * 16
    plan = Plan()
    plan.task("copy").buffer("in", "f32", 1000, guard=16, data=values.tobytes()) \
        .buffer("out", "f32", 1000, guard=16).launch("copy", 4, 256, ["@in", "@out", "u64:1000"]).dump("in", "out")
    plan.task("one past").buffer("in", "f32", 1000, guard=16, data=values.tobytes()) \
        .buffer("out", "f32", 1000, guard=16).launch("copy_one_past", 4, 256, ["@in", "@out", "u64:1000"]) \
        .dump("out")
    plan.task("trap").buffer("x", "f32", 1).launch("trap", 1, 1, ["@x"]).dump("x")
    plan.task("after the trap").buffer("x", "i32", 4, init="zero").launch("add", 1, 4, ["@x", "i32:-5"]).dump("x")
    plan.task("spin").buffer("flag", "i32", 1, init="zero").launch("spin", 1, 1, ["@flag"]).dump("flag")
    plan.task("spin again").buffer("flag", "i32", 1, init="zero").launch("spin", 1, 1, ["@flag"]).dump("flag")
    plan.task("missing").buffer("x", "f32", 1).launch("no_such_kernel", 1, 1, ["@x"])
    plan.task("last").buffer("x", "i32", 2, init="zero").launch("add", 1, 2, ["@x", "i32:3"]).dump("x")
    results, info = gpu_plan.run_plan(module, plan)
    assert info is not None and not info.load_error and ("copy", "copy") in info.kernels
    copy, one_past, trap, after, spin, again, missing, last = results
    assert copy.dumps["out"] == poison + values.tobytes() + poison and copy.dumps["in"] == copy.dumps["out"]
    assert one_past.dumps["out"][:4 * 1016] == poison + values.tobytes()
    assert one_past.dumps["out"][4 * 1016:4 * 1017] == array("f", [7.0]).tobytes()  # the stray store shows
    assert "CUDA_ERROR_" in trap.error and not trap.dumps, trap
    assert array("i", after.dumps["x"]).tolist() == [-5] * 4, after
    assert spin.hung and "time limit 2 s per launch exceeded" in spin.error, spin
    assert again.hung and again.error.startswith("not run: spin did not finish earlier"), again
    assert "kernel not found in your module: no_such_kernel" in missing.error
    assert array("i", last.dumps["x"]).tolist() == [3, 3], last


@pytest.mark.gpu
@pytest.mark.cuda
def test_every_task_starts_from_the_modules_initialisers(module):
    """The module is loaded afresh for every task (and a new context when the kernel changes): a
    __device__ counter reads 0 in each task, the same kernel twice in a row included. The globals the
    plan names are read before any kernel runs (the counter at its initialiser, the answer as compiled);
    one the module lacks, or of another size, is not found."""
    plan = Plan().read_global("g_launches", 4).read_global("g_answer", 4).read_global("g_wide", 4) \
        .read_global("no_such_global", 4)
    for name in ("first", "same kernel again", "after another kernel"):
        if name == "after another kernel":
            plan.task("between").buffer("x", "i32", 1, init="zero").launch("add", 1, 1, ["@x", "i32:1"]).dump("x")
        plan.task(name).buffer("out", "i32", 1, init="zero").launch("remember", 1, 1, ["@out"]).dump("out")
    results, info = gpu_plan.run_plan(module, plan)
    assert info is not None and not info.load_error
    assert info.globals == {"g_launches": bytes(4), "g_answer": struct.pack("<i", 42), "g_wide": None,
                            "no_such_global": None}, info.globals
    first, again, between, after = results
    for task in (first, again, after):
        assert array("i", task.dumps["out"]).tolist() == [0], task
    assert array("i", between.dumps["x"]).tolist() == [1], between
