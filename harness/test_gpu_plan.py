"""The plan-driven GPU runner (drivers/gpu_runner.cpp, scanlab/gpu_plan.py) the stretch drills grade with.

CPU: the plan text, the runner's refusal of a bad plan (status 2, one line, before
any CUDA call), and the parsing of what the runner leaves. GPU: a module of the
test's own kernels run by plan: a copy whose dump is exact and whose guards stay
poisoned, a stray store past the end that shows in the guard, a trap (a CUDA error:
the next tasks still run, in a fresh process), a kernel that never ends (the
per-launch limit, and the tasks that use it are not run again), and a kernel name
the module does not have; and no task sees a __device__ variable an earlier task changed.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from array import array
from pathlib import Path

import pytest

from scanlab import gpu_plan
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
extern "C" __global__ void remember(int* out) { out[0] = atomicAdd(&g_launches, 1); }
"""


def test_plan_text_names_every_buffer_launch_and_dump():
    plan = Plan()
    plan.task("first").buffer("in", "f32", 3, guard=2, data=array("f", [1, 2, 3]).tobytes()) \
        .buffer("out", "f32", 3, guard=2).launch("copy", 1, 32, ["@in", "@out", "u64:3"]).dump("out")
    plan.task("second").buffer("x", "i32", 4, init="zero").launch("add", 1, 4, ["@x", "i32:-5"]).dump("x")
    text, files = plan.text("module.fatbin")
    assert text.splitlines() == [
        "module module.fatbin",
        "task  # 0: first", "buffer in f32 3 2 file:in-0-in.bin", "buffer out f32 3 2 poison",
        "launch copy 1 32 0 @in @out u64:3", "dump out", "end",
        "task  # 1: second", "buffer x i32 4 0 zero", "launch add 1 4 0 @x i32:-5", "dump x", "end"]
    assert files == {"in-0-in.bin": array("f", [1, 2, 3]).tobytes()}
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
    state, result, _ = gpu_plan.parse_task(task_bytes(1, 1, [b"\x01\x02", b"\x03\x04\x05"]), task)
    assert state == gpu_plan.FINISHED and result.dumps == {"a": b"\x01\x02", "b": b"\x03\x04\x05"}
    state, result, _ = gpu_plan.parse_task(task_bytes(2, 0, code=700, step="running k"), task)
    assert state == gpu_plan.CUDA_ERROR and "CUDA_ERROR_X while running k" in result.error and not result.dumps
    state, result, _ = gpu_plan.parse_task(task_bytes(3, step="k"), task)
    assert "kernel not found in your module: k" in result.error
    with pytest.raises(ValueError, match="truncated"):
        gpu_plan.parse_task(task_bytes(1, 1, [b"\x01\x02"]), task)
    with pytest.raises(ValueError, match="wrong header"):
        gpu_plan.parse_task(b"D31TSK01" + bytes(40), task)


@pytest.mark.parametrize("plan, said", [
    ("task\nend\n", "a task without a launch"),
    ("module m\ntask\nbuffer x f33 1 0 zero\nlaunch k 1 1 0 @x\nend\n", "unknown type f33"),
    ("module m\ntask\nbuffer x f32 1 0 zero\nlaunch k 1 1 0 @y\nend\n", "no buffer y declared"),
    ("module m\ntask\nbuffer x f32 1 0 zero\nlaunch k 1 2000 0 @x\nend\n", "not a whole number up to 1024"),
    ("module m\ntask\nbuffer x f32 1 0 zero\nlaunch k 1 1 0 u64:-1\nend\n", "bad u64 -1"),
    ("module m\ntask\nbuffer x f32 1 0 junk\nlaunch k 1 1 0 @x\nend\n", "INIT is zero, poison or file:PATH"),
    ("module m\ntask\nlaunch k 1 1 0\n", "the last task has no end"),
    ("module m\n", "the plan has no task"),
])
def test_the_runner_refuses_a_bad_plan_before_touching_the_gpu(plan, said, tmp_path):
    if shutil.which("g++") is None:
        pytest.skip("no g++ to build the runner")
    runner = gpu_plan.build_runner()
    (tmp_path / "plan.txt").write_text(plan)
    env = dict(os.environ)
    stubs = next((p for p in (Path("/usr/local/cuda/lib64/stubs/libcuda.so"),) if p.is_file()), None)
    if stubs is not None:  # no driver here: the toolkit's stub satisfies the loader (the plan is read first)
        (tmp_path / "libcuda.so.1").symlink_to(stubs)
        env["LD_LIBRARY_PATH"] = f"{tmp_path}:{env.get('LD_LIBRARY_PATH', '')}"
    proc = subprocess.run([str(runner), "--plan", "plan.txt"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, env=env)
    if proc.returncode == 127:
        pytest.skip("no libcuda.so.1, not even the toolkit's stub, to load the runner")
    assert proc.returncode == 2 and said in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr


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
    __device__ counter reads 0 in each task, the same kernel twice in a row included."""
    plan = Plan()
    for name in ("first", "same kernel again", "after another kernel"):
        if name == "after another kernel":
            plan.task("between").buffer("x", "i32", 1, init="zero").launch("add", 1, 1, ["@x", "i32:1"]).dump("x")
        plan.task(name).buffer("out", "i32", 1, init="zero").launch("remember", 1, 1, ["@out"]).dump("out")
    results, info = gpu_plan.run_plan(module, plan)
    assert info is not None and not info.load_error
    first, again, between, after = results
    for task in (first, again, after):
        assert array("i", task.dumps["out"]).tolist() == [0], task
    assert array("i", between.dumps["x"]).tolist() == [1], between
