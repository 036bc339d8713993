"""What this machine has: toolchains, GPUs, profilers, and the strict switch.

A test that needs something missing calls `unavailable(what, reason)`. By
default that skips the test with the reason. When `what` is named in the
environment variable SCANLAB_REQUIRE (a comma list; CI sets
`SCANLAB_REQUIRE=nvcc,hipcc`, a GPU runner adds `gpu,sanitizer,triton`), the
same call fails the test instead, so nothing passes because a tool was quietly
absent.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


KNOWN_REQUIREMENTS = ("nvcc", "hipcc", "gpu", "sanitizer", "triton", "ncu", "sandbox", "python39")
OLDEST_PYTHON = "3.9"  # the oldest Python SETUP.md and requirements.txt promise the graders run on


def oldest_python() -> str | None:
    """A working python3.9: $SCANLAB_OLDEST_PYTHON, else python3.9 on PATH, else one pyenv built
    (a pyenv shim on PATH may name a version that is not selected: each candidate is run)."""
    named = os.environ.get("SCANLAB_OLDEST_PYTHON")
    candidates = [named] if named else [shutil.which(f"python{OLDEST_PYTHON}")]
    if not named:
        for root in (Path(os.environ.get("PYENV_ROOT", "~/.pyenv")).expanduser(), Path("/root/.pyenv")):
            candidates += sorted(str(p) for p in root.glob(f"versions/{OLDEST_PYTHON}.*/bin/python{OLDEST_PYTHON}"))
    for candidate in candidates:
        if not candidate or not os.access(candidate, os.X_OK):
            continue
        try:
            said = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                  capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            continue
        if said == OLDEST_PYTHON:
            return candidate
    return None


# What `make` hands its recipes (the top Makefile exports BUILD and the architectures)
# and what would steer a make run in another checkout into this one's build folder.
MAKE_VARIABLES = ("BUILD", "SM_ARCH", "GPU_ARCH", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")
# What the outer `make test` (harness/run-tests.sh) reads: a `make test` a test runs in another tree
# must not inherit them, or it writes its JUnit and shard logs over the outer run's (seen 2026-12-04:
# the release's own suite replaced shard 0's results of `SCANLAB_SHARDS=3 .ci/run`).
OUTER_RUN_VARIABLES = ("ARGS", "SCANLAB_RESULTS", "SCANLAB_SHARDS", "MAKEOVERRIDES")


def fresh_environ(**extra: str) -> dict[str, str]:
    """os.environ without MAKE_VARIABLES and OUTER_RUN_VARIABLES, plus `extra`: for commands run in a clone."""
    dropped = {*MAKE_VARIABLES, *OUTER_RUN_VARIABLES}
    return {**{k: v for k, v in os.environ.items() if k not in dropped}, **extra}


def full() -> bool:
    """`make test-full` (SCANLAB_FULL=1): the exhaustive tests (marked `full`) run too."""
    return os.environ.get("SCANLAB_FULL", "") not in ("", "0")


def required() -> set[str]:
    names = {x.strip() for x in os.environ.get("SCANLAB_REQUIRE", "").split(",") if x.strip()}
    unknown = names - set(KNOWN_REQUIREMENTS) - {"all"}
    if unknown:
        import pytest

        raise pytest.UsageError(
            f"SCANLAB_REQUIRE names {sorted(unknown)}; known: {', '.join(KNOWN_REQUIREMENTS)}, all"
        )
    return set(KNOWN_REQUIREMENTS) if "all" in names else names


def unavailable(what: str, reason: str):
    """Skip (default) or fail (when SCANLAB_REQUIRE names `what`)."""
    import pytest

    assert what in KNOWN_REQUIREMENTS, what
    if what in required():
        pytest.fail(f"{reason} (SCANLAB_REQUIRE names '{what}', so this is an error, not a skip)", pytrace=False)
    pytest.skip(reason)


def _toolkit_bins() -> list[Path]:
    """Where a CUDA toolkit's tools are when they are not on the PATH, in the order
    harness/find-cuda-tool.sh (and so the Makefiles) looks: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    return [Path(root) / "bin" for root in roots if root]


@functools.lru_cache(maxsize=None)
def nvcc() -> str | None:
    """$NVCC if set, else nvcc on the PATH, in $CUDA_HOME/bin, $CUDA_PATH/bin or /usr/local/cuda/bin."""
    found = shutil.which(os.environ.get("NVCC", "nvcc"))
    if found or os.environ.get("NVCC"):
        return found
    for place in _toolkit_bins():
        if os.access(place / "nvcc", os.X_OK):
            return str(place / "nvcc")
    return None


@functools.lru_cache(maxsize=None)
def hipcc() -> str | None:
    return shutil.which(os.environ.get("HIPCC", "hipcc"))


@functools.lru_cache(maxsize=None)
def _cuda_tool(name: str) -> str | None:
    """A CUDA tool (compute-sanitizer, ncu) where find-cuda-tool.sh finds it: the PATH, the toolkit's
    usual places, then next to nvcc."""
    found = shutil.which(name)
    if found:
        return found
    places = _toolkit_bins()
    if nvcc():
        places.append(Path(nvcc()).resolve().parent)
    for place in places:
        if os.access(place / name, os.X_OK):
            return str(place / name)
    return None


def compute_sanitizer() -> str | None:
    return _cuda_tool("compute-sanitizer")


def ncu() -> str | None:
    return _cuda_tool("ncu")


@dataclass(frozen=True)
class NvidiaGpu:
    name: str
    major: int
    minor: int

    @property
    def sm(self) -> str:
        return f"sm_{self.major}{self.minor}"


@functools.lru_cache(maxsize=None)
def nvidia_gpu() -> tuple[NvidiaGpu | None, str]:
    """The first NVIDIA GPU nvidia-smi lists, or None and why there is none."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return None, "CUDA_VISIBLE_DEVICES hides every GPU"
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None, "no NVIDIA GPU: nvidia-smi is not installed"
    try:
        out = subprocess.run(
            [smi, "--query-gpu=name,compute_cap", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"no NVIDIA GPU: nvidia-smi failed ({exc})"
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    if out.returncode != 0 or not lines:
        why = (out.stderr or out.stdout).strip().splitlines()
        return None, "no NVIDIA GPU: nvidia-smi lists none" + (f" ({why[0]})" if why else "")
    found = re.fullmatch(r"\s*(.+?)\s*,\s*(\d+)\.(\d+)\s*", lines[0])
    if found is None:  # an old driver without compute_cap, or something that is not nvidia-smi
        return None, f"no usable NVIDIA GPU: nvidia-smi's answer is not 'name, major.minor': {lines[0][:120]!r}"
    return NvidiaGpu(found.group(1), int(found.group(2)), int(found.group(3))), ""


def require_nvidia_gpu() -> NvidiaGpu:
    gpu, why = nvidia_gpu()
    if gpu is None:
        unavailable("gpu", why)
    return gpu


def require_nvcc() -> str:
    path = nvcc()
    if path is None:
        unavailable("nvcc", "nvcc not found on the PATH, in $CUDA_HOME/bin, $CUDA_PATH/bin or /usr/local/cuda/bin")
    return path


def require_hipcc() -> str:
    path = hipcc()
    if path is None:
        unavailable("hipcc", "hipcc not found on PATH (Debian: apt-get install hipcc)")
    return path


def require_sanitizer() -> str:
    path = compute_sanitizer()
    if path is None:
        unavailable("sanitizer", "compute-sanitizer not found next to nvcc or on PATH")
    return path
