"""Finding the CUDA tools, and `make help`: the same nvcc for `make run` and `make test`.

harness/find-cuda-tool.sh looks on the PATH, in $CUDA_HOME/bin, $CUDA_PATH/bin,
then /usr/local/cuda/bin (and, for other tools, next to nvcc); scanlab/env.py
looks in the same order, and every Makefile takes its NVCC from the script. A
machine without the tools is simulated with fake toolkits in temporary folders
and a PATH of /usr/bin:/bin. `make help` at the top and in a05-scan/ lists a
line for every target a student would type.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from scanlab import env

REPO = Path(__file__).resolve().parent.parent
FIND = REPO / "harness" / "find-cuda-tool.sh"
BARE_PATH = "/usr/bin:/bin"


def fake_toolkit(root: Path, *tools: str) -> Path:
    (root / "bin").mkdir(parents=True)
    for tool in tools:
        path = root / "bin" / tool
        path.write_text("#!/bin/sh\necho fake\n")
        path.chmod(0o755)
    return root


def find(name: str, **extra) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "CUDA_PATH", "NVCC")}
    return subprocess.run([str(FIND), name], capture_output=True, text=True, timeout=30,
                          env={**base, "PATH": BARE_PATH, **extra})


def on_bare_path(name: str) -> bool:
    """NAME in /usr/bin or /bin: found before any fake toolkit, so the order cannot be isolated."""
    return any(Path(d, name).exists() for d in BARE_PATH.split(":"))


def in_default_toolkit(name: str) -> bool:
    return Path("/usr/local/cuda/bin", name).exists()


def test_find_cuda_tool_looks_in_the_documented_order(tmp_path):
    if on_bare_path("nvcc"):
        pytest.skip("this machine has nvcc in /usr/bin, /bin or /usr/local/cuda/bin: the order cannot be isolated")
    home, path = fake_toolkit(tmp_path / "home", "nvcc"), fake_toolkit(tmp_path / "path", "nvcc")
    assert find("nvcc", CUDA_HOME=str(home), CUDA_PATH=str(path)).stdout.strip() == f"{home}/bin/nvcc"
    assert find("nvcc", CUDA_PATH=str(path)).stdout.strip() == f"{path}/bin/nvcc"
    on_path = fake_toolkit(tmp_path / "onpath", "nvcc")
    proc = find("nvcc", CUDA_HOME=str(home), PATH=f"{on_path}/bin:{BARE_PATH}")
    assert proc.stdout.strip() == f"{on_path}/bin/nvcc"  # the PATH first
    if not in_default_toolkit("nvcc"):
        missing = find("nvcc", CUDA_HOME=str(tmp_path / "nowhere"))
        assert missing.returncode == 1 and missing.stdout == ""


def test_find_cuda_tool_finds_other_tools_next_to_nvcc(tmp_path):
    if on_bare_path("nvcc") or on_bare_path("compute-sanitizer") or in_default_toolkit("compute-sanitizer"):
        pytest.skip("this machine has compute-sanitizer where it is found before nvcc's folder")
    kit = fake_toolkit(tmp_path / "kit", "nvcc", "compute-sanitizer")
    link = tmp_path / "links"
    link.mkdir()
    (link / "nvcc").symlink_to(kit / "bin" / "nvcc")  # nvcc on the PATH through a link, as distributions do
    proc = find("compute-sanitizer", PATH=f"{link}:{BARE_PATH}")
    assert proc.returncode == 0 and proc.stdout.strip() == f"{kit}/bin/compute-sanitizer"


def test_env_agrees_with_the_script(tmp_path, monkeypatch):
    if on_bare_path("nvcc"):
        pytest.skip("this machine has nvcc in a default place")
    home = fake_toolkit(tmp_path / "home", "nvcc", "ncu")
    for name in ("NVCC", "CUDA_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", BARE_PATH)
    monkeypatch.setenv("CUDA_HOME", str(home))
    env.nvcc.cache_clear()
    env._cuda_tool.cache_clear()
    try:
        assert env.nvcc() == find("nvcc", CUDA_HOME=str(home)).stdout.strip() == f"{home}/bin/nvcc"
        assert env.ncu() == f"{home}/bin/ncu"
    finally:
        env.nvcc.cache_clear()
        env._cuda_tool.cache_clear()


def make(*args: str, **extra) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "NVCC", "CUDA_HOME",
                                                              "CUDA_PATH", "SANITIZER", "NCU")}
    return subprocess.run(["make", "--no-print-directory", *args], capture_output=True, text=True, timeout=120,
                          cwd=REPO, env={**base, **extra})


@pytest.mark.parametrize("given, mode", [(None, "course"), ("self-study", "self-study")])
def test_drill03_is_graded_in_the_mode_asked_for_with_no_stray_spaces(given, mode):
    """make run's drill 03 line (make -n: nothing runs) passes --mode exactly: a value with trailing
    spaces once reached grade.py as "course " and the echoed command showed them."""
    proc = make("-C", "exercises", "-s", "-n", "run", "PYTHON=python3",
                **({"GRADE03_MODE": given} if given else {}))
    found = re.findall(r"grade\.py drill03 03_scan_analysis\.md --mode ([^\"; \n]*)( *)", proc.stdout)
    assert found and set(found) == {(mode, "")}, proc.stdout


@pytest.mark.parametrize("folder", [".", "a05-scan", "exercises", "solutions"])
def test_every_makefile_takes_nvcc_from_cuda_home_when_it_is_not_on_the_path(folder, tmp_path):
    if on_bare_path("nvcc"):
        pytest.skip("this machine has nvcc in a default place")
    home = fake_toolkit(tmp_path / "home", "nvcc")
    proc = make("-C", folder, "-p", "-n", "help" if folder in (".", "a05-scan") else "clean",
                PATH=BARE_PATH, CUDA_HOME=str(home))
    assert re.search(rf"^NVCC :?= {re.escape(str(home))}/bin/nvcc$", proc.stdout, re.M), proc.stdout[-2000:]


def test_a_build_says_which_nvcc_it_uses_or_where_it_looked(tmp_path):
    if on_bare_path("nvcc"):
        pytest.skip("this machine has nvcc in a default place")
    home = fake_toolkit(tmp_path / "home", "nvcc")
    proc = make("need-nvcc", PATH=BARE_PATH, CUDA_HOME=str(home))
    assert proc.returncode == 0 and proc.stdout.strip() == f"make: nvcc is {home}/bin/nvcc", proc.stdout
    if not in_default_toolkit("nvcc"):
        proc = make("need-nvcc", PATH=BARE_PATH)
        assert proc.returncode != 0 and "nvcc not found (not on the PATH, nor in $CUDA_HOME/bin" in proc.stderr


def test_make_sanitize_without_compute_sanitizer_says_so_in_one_line():
    proc = make("sanitize", SANITIZER="/no/such/compute-sanitizer")
    assert proc.returncode != 0
    said = [line for line in proc.stderr.splitlines() if not line.startswith("make: ***")]
    assert len(said) == 1 and said[0].startswith("make sanitize: compute-sanitizer not found"), proc.stderr


@pytest.mark.parametrize("folder", [".", "a05-scan"])
def test_make_help_lists_every_target(folder):
    proc = make("-C", folder, "help")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines and all(line.startswith("make ") for line in lines), proc.stdout
    makefile = (REPO / folder / "Makefile").read_text()
    phony = re.search(r"^\.PHONY:((?:.*\\\n)*.*)$", makefile, re.M).group(1).replace("\\\n", " ").split()
    listed = " ".join(lines)
    for target in phony:
        if target in ("all", "FORCE", "need-nvcc"):
            continue
        assert re.search(rf"\b{re.escape(target)}\b", listed), f"{folder}/Makefile: `make help` omits {target}"


def test_find_cuda_tool_without_a_name_is_a_usage_error():
    proc = subprocess.run([str(FIND)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and proc.stderr.startswith("usage: find-cuda-tool.sh NAME"), proc.stderr


def test_make_run_names_a_failed_build_in_one_line_and_fails(tmp_path):
    """A GPU that nvidia-smi lists and an nvcc that fails: one FAILED line, its log, status 1."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: a test double (UUID: GPU-0)'\n")
    (fake / "nvidia-smi").chmod(0o755)
    # NVIDIA_SMI=false: the drills' own Makefile then leaves Day 31 alone (the double is not a GPU).
    # No Triton and no drills (no such Python, no such compiler): their skips are not what is tested here.
    proc = make("run", f"BUILD={tmp_path / 'build'}", PATH=f"{fake}:{os.environ['PATH']}", NVCC="/bin/false",
                NVIDIA_SMI="false", PYTHON="/no/such/python3", CXX="/no/such/g++")
    assert proc.returncode == 2, proc.stdout + proc.stderr  # run-lessons.sh's 1, which make reports as its 2
    failed = [line for line in proc.stdout.splitlines() if line.startswith("FAILED")]
    assert failed == [f"FAILED   make cuda: the build failed (log: {tmp_path}/build/run/make_cuda.log)"], proc.stdout
    assert (tmp_path / "build" / "run" / "make_cuda.log").is_file()
    assert proc.stdout.splitlines()[-1].startswith("make run: ") and "failed: make cuda" in proc.stdout


@pytest.mark.parametrize("nvcc", ["/bin/true", "/no/such/nvcc"], ids=["no-gpu", "no-nvcc"])
def test_make_run_without_an_nvidia_gpu_names_the_colab_route(tmp_path, nvcc):
    """Every CUDA lesson skipped for want of a GPU (or of nvcc) says where a student can run it.
    Everything else is skipped too (no hipcc, no C++ compiler, a Python that imports nothing), so
    nothing is built: the lines are make run's skips alone."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nvidia-smi").write_text("#!/bin/sh\nexit 9\n")  # installed, lists no GPU
    (fake / "nvidia-smi").chmod(0o755)
    proc = make("run", f"BUILD={tmp_path / 'build'}", PATH=f"{fake}:{BARE_PATH}", NVCC=nvcc,
                HIPCC="/no/such/hipcc", CXX="/no/such/g++", PYTHON="false")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cuda = [line for line in proc.stdout.splitlines()
            if re.match(r"skipped +(day31-scan/scan\.cu|a05-scan/cuda/(scan|compaction)\.cu): ", line)]
    assert len(cuda) == 3, proc.stdout
    why = "no NVIDIA GPU (nvidia-smi lists none)" if nvcc == "/bin/true" else "nvcc not found"
    for line in cuda:
        assert why in line, line
        assert line.endswith('; to run it without one: the Colab notebook, harness/colab/scan-lab.ipynb (README.md, "No GPU of your '
                             'own?")'), line
    assert (REPO / "harness" / "colab" / "scan-lab.ipynb").is_file()
    assert "No GPU of your own?" in (REPO / "README.md").read_text()


def test_an_nvidia_smi_answer_that_is_not_a_gpu_is_a_reason_not_a_traceback(tmp_path, monkeypatch):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: a test double'\n")
    (fake / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{BARE_PATH}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    env.nvidia_gpu.cache_clear()
    try:
        gpu, why = env.nvidia_gpu()
    finally:
        env.nvidia_gpu.cache_clear()
    assert gpu is None and why.startswith("no usable NVIDIA GPU: nvidia-smi's answer is not"), why


# ---- harness/pitfalls.sh: the troubleshooting section's reproductions ------------------------

PITFALLS = REPO / "harness" / "pitfalls.sh"


def pitfalls(*args: str, **extra) -> subprocess.CompletedProcess:
    return subprocess.run([str(PITFALLS), *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, **extra})


def test_pitfalls_lists_six_and_refuses_a_bad_command_line():
    listed = pitfalls("list")
    assert listed.returncode == 0 and [line.split()[0] for line in listed.stdout.splitlines()] == list("123456")
    for bad in ([], ["7"], ["x"], ["1", "--nope"]):
        proc = pitfalls(*bad)
        assert proc.returncode == 2 and "harness/pitfalls.sh N" in proc.stdout, bad
        assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("pitfalls: "), proc.stderr


@pytest.mark.parametrize("n", ["1", "2", "3", "5", "6"])
def test_a_gpu_pitfall_without_a_gpu_says_so_in_one_line_and_exits_3(n, tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nvidia-smi").write_text("#!/bin/sh\nexit 9\n")  # installed, but no GPU answers
    (fake / "nvidia-smi").chmod(0o755)
    proc = pitfalls(n, BUILD=str(tmp_path), PATH=f"{fake}:{os.environ['PATH']}")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == ["pitfalls: no NVIDIA GPU (nvidia-smi lists none)"], proc.stderr


@pytest.mark.parametrize("n", ["2", "3", "4", "5"])
def test_each_one_line_pitfall_still_applies_to_the_lesson_it_changes(n, tmp_path):
    proc = pitfalls(n, "--patch", BUILD=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    changed = [line for line in proc.stdout.splitlines() if line.startswith(("+", "-")) and
               not line.startswith(("+++", "---"))]
    assert len([c for c in changed if c.startswith("-")]) == 1 and "PITFALL" in proc.stdout, proc.stdout


@pytest.mark.cuda
@pytest.mark.parametrize("n", ["2", "3", "5"])
def test_each_gpu_pitfall_copy_compiles(n, tmp_path, nvcc):
    pitfalls(n, "--patch", BUILD=str(tmp_path))
    copy = next((tmp_path / "pitfalls" / n).glob("*.cu"))
    proc = subprocess.run([nvcc, "-std=c++17", "-O3", "-arch=sm_90", "-o", str(tmp_path / "p"), str(copy)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.slow
def test_pitfall_4_runs_on_the_cpu_and_shows_the_write_past_the_end(tmp_path):
    proc = pitfalls("4", BUILD=str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "one past the end" in proc.stdout and (tmp_path / "pitfalls" / "4.log").is_file()
    assert proc.stdout.strip().splitlines()[-1].startswith("pitfalls: pitfall 4 shown above")
