"""Build each program once per test session, in parallel, into a temporary folder.

Test modules declare what they build as a module-level list `BUILDS` of
`Program`s. Once collection is over, conftest hands every declared program
whose compiler is present to one `Builder`, which compiles them all in a
thread pool; a test asks for its binary with `builder.get(program)`, which
waits for that one build. A failed build fails the test that asked for it,
with the exact command to reproduce it and the compiler's output.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path


from . import env
from .paths import REPO
from .run import run_process

# The two targets of the course: the page's Tesla T4 and Hopper. The newest
# also ships as PTX, so a later GPU can still run the binary.
CUDA_ARCHS = ("sm_75", "sm_90")
CUDA_FLAGS = ("-std=c++17", "-O3", "-lineinfo", "-Xcompiler", "-Wall,-Wextra")
HIP_ARCH = "gfx90a"  # the newest target Debian's hipcc (HIP 5.2) can build for
HIP_FLAGS = ("-std=c++17", "-O3", "-Wall", "-Wextra")
HIP_ON_CUDA_INCLUDE = REPO / "harness" / "hip_on_cuda"

CXX_FLAGS = ("-std=c++17", "-O2", "-Wall", "-Wextra")  # the harness's own C++ (drill drivers) and submissions

COMPILERS = ("nvcc", "hipcc", "nvcc-hip", "c++")

# A compiler's warning line: gcc and clang "file:line:col: warning: ...", nvcc "file(line): warning #N-D: ..."
# and its driver's "nvcc warning : ...".
WARNING = re.compile(r"\bwarning(\s*#\d+(-D)?)?\s*:", re.IGNORECASE)


def compiler_warnings(output: str, about: str | None = None) -> list[str]:
    """The warning lines of a compiler's output; with `about`, only those about that file (its name)."""
    found = [line for line in output.splitlines() if WARNING.search(line)]
    if about is not None:
        found = [line for line in found if line.startswith((f"{about}:", f"{about}("))]
    return found


def cxx() -> list[str] | None:
    """$CXX (may carry flags) or g++, by absolute path; None when neither is on PATH."""
    words = shlex.split(os.environ.get("CXX", "")) or ["g++"]
    found = shutil.which(words[0])
    return [found, *words[1:]] if found else None


def cuda_gencode() -> list[str]:
    archs = list(CUDA_ARCHS)
    gpu, _ = env.nvidia_gpu()
    if gpu is not None and gpu.sm not in archs:
        archs.append(gpu.sm)  # a runner with another GPU still gets native code
    flags = []
    for arch in archs:
        flags += ["-gencode", f"arch=compute_{arch[3:]},code={arch}"]
    newest = max(archs, key=lambda a: int(a[3:]))[3:]
    flags += ["-gencode", f"arch=compute_{newest},code=compute_{newest}"]
    return flags


@dataclass(frozen=True)
class Program:
    """One binary: its sources (relative to the repository), compiler and extras.

    compiler: "nvcc" for .cu files; "hipcc" for HIP sources built for AMD
    (gfx90a); "nvcc-hip" for HIP sources built by nvcc through the project's
    HIP-on-CUDA header, to run on an NVIDIA GPU; "c++" for the harness's own C++
    (the drill drivers), with $CXX or g++.
    """

    name: str
    sources: tuple[str, ...]
    compiler: str = "nvcc"
    extra_flags: tuple[str, ...] = ()
    include_dirs: tuple[str, ...] = ()

    def __post_init__(self):
        assert self.compiler in COMPILERS, self.compiler


# The lesson programs, one home for each (the tests of a lesson and of its HIP port share them).
DAY31_SCAN = Program("day31-scan", ("day31-scan/scan.cu",))
A05_CUDA_SCAN = Program("a05-cuda-scan", ("a05-scan/cuda/scan.cu",))
# Their traced twins: the lesson kernels again, with the trace calls added (test_trace.py).
DAY31_TRACE = Program("day31-trace", ("day31-scan/trace.cu",))
A05_CUDA_TRACE = Program("a05-cuda-trace", ("a05-scan/cuda/trace.cu",))
A05_CUDA_COMPACTION = Program("a05-cuda-compaction", ("a05-scan/cuda/compaction.cu",))


@dataclass
class Built:
    program: Program
    path: Path
    command: list[str]
    returncode: int
    output: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.path.exists()

    @property
    def reproduce(self) -> str:
        return shlex.join(self.command)

    def warnings(self) -> list[str]:
        return compiler_warnings(self.output)


def command(program: Program, out: Path) -> list[str]:
    """The compile line for `program`, writing the binary to `out`."""
    sources = [str(REPO / s) if not Path(s).is_absolute() else s for s in program.sources]
    includes = [f"-I{REPO / d}" for d in program.include_dirs]
    if program.compiler == "nvcc":
        return [env.nvcc() or "nvcc", *CUDA_FLAGS, *cuda_gencode(), *includes, *program.extra_flags,
                "-o", str(out), *sources]
    if program.compiler == "c++":
        return [*(cxx() or ["g++"]), *CXX_FLAGS, *includes, *program.extra_flags, "-o", str(out), *sources]
    if program.compiler == "nvcc-hip":
        return [env.nvcc() or "nvcc", *CUDA_FLAGS, *cuda_gencode(), f"-I{HIP_ON_CUDA_INCLUDE}", *includes,
                *program.extra_flags, "-x", "cu", "-o", str(out), *sources]
    return [env.hipcc() or "hipcc", *HIP_FLAGS, f"--offload-arch={HIP_ARCH}", *includes,
            *program.extra_flags, "-o", str(out), *sources]


def compile_program(program: Program, out_dir: Path, out: Path | None = None, timeout: float = 900) -> Built:
    """Compile into `out` (default out_dir/<name>); never raises for a compiler error (see Built.ok).
    Every trusted build goes through here: the lesson programs, the tests' mutants and the
    graders' own drivers (submissions are compiled inside the sandbox, never here)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out or out_dir / program.name
    cmd = command(program, out)
    if program.compiler == "c++" and cxx() is None:
        return Built(program, out, cmd, -1, "no C++ compiler: g++ is not on PATH (set CXX to choose one)")
    try:
        if program.compiler == "hipcc":  # Debian's hipcc (HIP 5.2) leaves an empty folder in $TMPDIR per compile
            with tempfile.TemporaryDirectory(prefix=".hipcc-tmp-", dir=out_dir) as scratch:
                proc = run_process(cmd, capture_output=True, text=True, errors="replace", timeout=timeout,
                                   cwd=out_dir, env={**os.environ, "TMPDIR": scratch})
        else:
            proc = run_process(cmd, capture_output=True, text=True, errors="replace", timeout=timeout, cwd=out_dir)
        return Built(program, out, cmd, proc.returncode, proc.stdout + proc.stderr)
    except OSError as exc:
        return Built(program, out, cmd, -1, f"the compiler could not be started: {exc}")
    except subprocess.TimeoutExpired as exc:
        return Built(program, out, cmd, -1, f"the compiler did not finish within {exc.timeout:g} s")


@dataclass
class Builder:
    root: Path
    workers: int = field(default_factory=lambda: max(1, os.cpu_count() or 1))

    def __post_init__(self):
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="build")
        self._futures: dict[Program, Future] = {}

    def available(self, program: Program) -> bool:
        return (env.hipcc() if program.compiler == "hipcc" else env.nvcc()) is not None

    def _build(self, program: Program) -> Built:
        return compile_program(program, self.root / program.name)

    def submit(self, program: Program) -> Future:
        if program not in self._futures:
            self._futures[program] = self._pool.submit(self._build, program)
        return self._futures[program]

    def get(self, program: Program) -> Built:
        """The finished build; fails the calling test if it did not compile."""
        if program.compiler == "hipcc":
            env.require_hipcc()
        else:
            env.require_nvcc()
        built = self.submit(program).result()
        if not built.ok:
            import pytest

            pytest.fail(
                f"build of {program.name} failed (exit {built.returncode})\n"
                f"reproduce with:\n  {built.reproduce}\n\ncompiler output:\n{built.output}",
                pytrace=False,
            )
        return built

    def shutdown(self):
        self._pool.shutdown(wait=False, cancel_futures=True)
