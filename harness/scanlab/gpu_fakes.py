"""A stand-in for drivers/gpu_runner.cpp in its GPU sandbox, for testing run_plan without a GPU.

`FakeGpuBox` takes the place of `Sandbox(gpu=True)` in scanlab/gpu_plan.py: its `run`
reads plan.txt and writes module.bin and task-I.bin in the runner's formats, running
"kernels" that are Python functions of the task's buffers. A test decides each
launch's fate: it finishes, crashes (a CUDA error: the process stops, status 4),
hangs (the runner's launch limit, status 5), or the process is ended by a sandbox
limit or a signal inside it. Nothing here runs in grading.

    box = FakeGpuBox({"copy": copy}, fate=lambda k, kernel: "hang" if k == 3 else "ok")

A timed task (`timed` ... `time`, drill 05's speed check) runs no Python kernel: its
"timing" dump is what `timed(k, task)` returns (a record in the runner's format:
speed.timing_bytes), after the launch's fate said "ok"; `task` holds the plan's words
(buffers, launches, the `time` line's words).
    monkeypatch.setattr(gpu_plan, "Sandbox", box)
    monkeypatch.setattr(gpu_plan, "build_runner", lambda: Path("gpu_runner"))
"""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path
from typing import Callable

from . import gpu_plan
from .sandbox import Outcome

ILLEGAL_ADDRESS = ("CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered")
WIDTH = {"u8": 1, "i32": 4, "u32": 4, "f32": 4, "i64": 8, "u64": 8, "f64": 8}


def _text(s: str) -> bytes:
    data = s.encode()
    return struct.pack("<I", len(data)) + data


class Buffer:
    """A task's buffer: the whole of it, guards included, and the words a kernel is handed."""

    def __init__(self, guard_bytes: int, count_bytes: int, data: bytearray):
        self.data, self.first, self.size = data, guard_bytes, count_bytes

    def get(self) -> bytes:
        return bytes(self.data[self.first:self.first + self.size])

    def set(self, words: bytes, at: int = 0) -> None:
        """Store `words` from byte `at` of the buffer's first word on (past its end too: a stray store)."""
        self.data[self.first + at:self.first + at + len(words)] = words


# Called with the launch's arguments (a Buffer for @NAME, the str for TYPE:VALUE), its grid and its block.
Kernel = Callable[[list, int, int], None]


class FakeGpuBox:
    def __init__(self, kernels: dict[str, Kernel], fate: Callable[[int, str], str] = lambda k, kernel: "ok",
                 globals: dict[str, bytes] | None = None, load_error: str = "", printed: str = "",
                 timed: Callable[[int, dict], bytes] | None = None):
        self.kernels, self.fate, self.globals, self.timed = kernels, fate, globals or {}, timed
        self.load_error, self.printed = load_error, printed
        self.files: dict[str, bytes] = {}
        self.runs: list[list[str]] = []  # every command run: one a process

    # -- what run_plan calls on a Sandbox
    def __call__(self, gpu: bool = False) -> "FakeGpuBox":
        self.files = {}  # a fresh sandbox: nothing an earlier run_plan left
        return self

    def __enter__(self) -> "FakeGpuBox":
        return self

    def __exit__(self, *exc) -> None:
        pass

    def put(self, name: str, data, executable: bool | None = None) -> str:
        self.files[name] = data if isinstance(data, bytes) else b"(the runner)"
        return name

    def get(self, name: str, limit: int | None = None) -> bytes | None:
        return self.files.get(name)

    def run(self, command: list[str], limits=None) -> Outcome:
        self.runs.append(command)
        plan = self._plan(self.files[command[command.index("--plan") + 1]].decode())
        self._module(plan["globals"])
        if self.load_error:
            return Outcome(command, 4, "", f"gpu_runner: the module did not load: {self.load_error}\n")
        stdout = ""
        for k in map(int, command[command.index("--tasks") + 1].split(",")):
            stdout += self.printed
            self._task(k, 0, 0)
            buffers = {name: self._buffer(*spec) for name, spec in plan["tasks"][k]["buffers"].items()}
            for reached, (kernel, grid, block, args) in enumerate(plan["tasks"][k]["launches"]):
                if kernel not in self.kernels:
                    self._task(k, 3, reached, step=kernel)
                    break
                fate = self.fate(k, kernel)
                if fate == "crash":
                    self._task(k, 2, reached, error=ILLEGAL_ADDRESS, step=f"running {kernel}")
                    said = f"gpu_runner: task {k}: running {kernel}: {ILLEGAL_ADDRESS[0]}\n"
                    return Outcome(command, 4, stdout, said)
                if fate != "ok":
                    self._task(k, 0, reached)
                    return {"hang": Outcome(command, 5, stdout, f"gpu_runner: task {k}: {kernel} ran past the limit\n"),
                            "limit": Outcome(command, -9, stdout, "", limit="wall-clock limit 20 s exceeded",
                                             signal="SIGKILL"),
                            "signal": Outcome(command, -11, stdout, "", signal="SIGSEGV")}[fate]
                if plan["tasks"][k]["time"]:
                    self._task(k, 1, 1, dumps=[self.timed(k, plan["tasks"][k])])
                    break
                self.kernels[kernel]([buffers[a[1:]] if a.startswith("@") else a for a in args], grid, block)
            else:
                self._task(k, 1, len(plan["tasks"][k]["launches"]),
                           dumps=[bytes(buffers[name].data) for name in plan["tasks"][k]["dumps"]])
        return Outcome(command, 0, stdout, "")

    # -- the runner's side
    @staticmethod
    def _plan(text: str) -> dict:
        plan: dict = {"globals": [], "tasks": []}
        for line in text.splitlines():
            w = line.split("#")[0].split()
            if not w or w[0] in ("module", "end", "library"):
                continue
            if w[0] == "global":
                plan["globals"].append((w[1], int(w[2])))
            elif w[0] in ("task", "timed"):
                plan["tasks"].append({"buffers": {}, "launches": [], "dumps": [], "time": None})
            elif w[0] == "time":
                plan["tasks"][-1]["time"] = w[1:]
            elif w[0] == "buffer":
                plan["tasks"][-1]["buffers"][w[1]] = (w[2], int(w[3]), int(w[4]), w[5])
            elif w[0] == "launch":
                plan["tasks"][-1]["launches"].append((w[1], int(w[2]), int(w[3]), w[5:]))
            elif w[0] == "dump":
                plan["tasks"][-1]["dumps"] += w[1:]
        return plan

    def _buffer(self, type: str, count: int, guard: int, init: str) -> Buffer:
        width = WIDTH[type]
        data = bytearray(b"\xff" * width * (guard + count + guard))
        buffer = Buffer(guard * width, count * width, data)
        if init == "zero":
            buffer.set(bytes(count * width))
        elif init.startswith("file:"):
            buffer.set(self.files[init[5:]])
        return buffer

    def _module(self, wanted: list[tuple[str, int]]) -> None:
        data = b"GPRMOD02" + struct.pack("<I", 200 if self.load_error else 0)
        data += _text("CUDA_ERROR_INVALID_IMAGE" if self.load_error else "")
        data += _text(self.load_error)
        if not self.load_error:
            data += struct.pack("<I", len(self.kernels))
            data += b"".join(_text(name) + _text(name) for name in self.kernels)
            data += struct.pack("<I", len(wanted))
            for name, size in wanted:
                value = self.globals.get(name)
                found = value is not None and len(value) == size
                data += _text(name) + struct.pack("<IQ", found, size if found else 0) + (value if found else b"")
        self.files["module.bin"] = data

    def _task(self, k: int, state: int, reached: int, error=("", ""), step: str = "", dumps=()) -> None:
        data = b"GPRTSK01" + struct.pack("<III", state, reached, 700 if error[0] else 0)
        data += _text(error[0]) + _text(error[1]) + _text(step)
        data += b"".join(struct.pack("<Q", len(d)) + d for d in dumps)
        self.files[f"task-{k}.bin"] = data


def run_on_the_stub(folder: Path, args: list[str]) -> subprocess.CompletedProcess:
    """The real runner run in `folder` with the toolkit's libcuda stub as libcuda.so.1 (no GPU, whatever
    the machine: what it does before cuInit, its plan reading and its usage errors). Skips the
    calling test when there is no g++ to build it or no libcuda to load it."""
    import os
    import shutil

    import pytest

    if shutil.which("g++") is None:
        pytest.skip("no g++ to build the runner")
    runner = gpu_plan.build_runner()
    env = dict(os.environ)
    stubs = next((p for p in (Path("/usr/local/cuda/lib64/stubs/libcuda.so"),) if p.is_file()), None)
    if stubs is not None:  # no driver here: the toolkit's stub satisfies the loader (the plan is read first)
        (folder / "libcuda.so.1").symlink_to(stubs)
        env["LD_LIBRARY_PATH"] = f"{folder}:{env.get('LD_LIBRARY_PATH', '')}"
    proc = subprocess.run([str(runner), *args], cwd=folder, capture_output=True, text=True, timeout=60, env=env)
    if proc.returncode == 127:
        pytest.skip("no libcuda.so.1, not even the toolkit's stub, to load the runner")
    return proc
