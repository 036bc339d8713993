"""The stretch drills' programs (exercises/ and solutions/ 04-06, CUDA and HIP) and drill 05's library benchmark.

CPU: every file builds (sm_90 without warnings, the look-back knobs the README measures,
gfx90a for HIP), and each starter differs from its solution only inside the TODO region.
GPU: each solution passes its own checks and each starter fails naming its TODO; the
look-back at 2^28 and under its never-hang stress; every solution clean under the four
compute-sanitizer tools; the library benchmark's command line, its committed H200 CSV,
its plot, and a run at small sizes. The graders of these drills: test_stretch.py.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from scanlab import env
from scanlab.sanitizer import sanitize

REPO = Path(__file__).resolve().parent.parent

STRETCH = ["04_warp_scan", "05_lookback_scan", "06_copy_if_partition"]
# A quick run of each: every check, small sizes (the sanitizers run these too).
QUICK = {"04_warp_scan": ["--n", "5000"], "05_lookback_scan": ["--quick"], "06_copy_if_partition": ["--n", "5000"]}
# The function each starter's last line sends the student to.
TODO = {"04_warp_scan": "warp_inclusive_scan", "05_lookback_scan": "lookback_exclusive_prefix",
        "06_copy_if_partition": "partition_scatter"}


def make(folder: str, target: str, build: Path, **extra) -> subprocess.CompletedProcess:
    import os

    args = [f"{k}={v}" for k, v in extra.items()]
    scratch = build / ".tmp"  # hipcc (HIP 5.2) leaves a folder in $TMPDIR at every compile: keep them here
    scratch.mkdir(parents=True, exist_ok=True)
    return subprocess.run(["make", "-s", "-C", str(REPO / folder), target, f"BUILD={build}", *args],
                          capture_output=True, text=True, timeout=1800, env={**os.environ, "TMPDIR": str(scratch)})


@pytest.fixture(scope="module")
def stretch_build(tmp_path_factory) -> Path:
    env.require_nvcc()
    build = tmp_path_factory.mktemp("stretch")
    for folder in ("exercises", "solutions"):
        proc = make(folder, "stretch", build, NVCC=env.nvcc())
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "warning" not in proc.stderr.lower(), proc.stderr
    return build


@pytest.mark.cuda
@pytest.mark.slow
def test_every_stretch_program_builds_for_sm90_without_warnings(stretch_build):
    for folder in ("exercises", "solutions"):
        for name in STRETCH:
            assert (stretch_build / folder / "cuda" / name).is_file(), (folder, name)


@pytest.mark.cuda
@pytest.mark.slow
@pytest.mark.parametrize("knobs", [["-DLOOKBACK_STAGED=1", "-DLOOKBACK_MIN_BLOCKS=12", "-DLOOKBACK_ITEMS=32"],
                                   ["-DLOOKBACK_SPECULATE=1"]], ids=["staged-fastest", "speculate"])
def test_the_lookback_knob_builds_the_readme_measures_still_build_without_warnings(knobs, tmp_path):
    """The ablation table and the drill's header name these compile lines; they must keep working."""
    import subprocess

    out = tmp_path / "05"
    proc = subprocess.run([env.require_nvcc(), "-std=c++17", "-O3", "-arch=sm_90", "-Xcompiler", "-Wall,-Wextra",
                           *knobs, "-o", str(out), str(REPO / "solutions" / "05_lookback_scan.cu")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and out.is_file(), proc.stderr
    assert "warning" not in proc.stderr.lower(), proc.stderr


@pytest.mark.hip
@pytest.mark.slow
def test_every_stretch_hip_program_builds_for_gfx90a(tmp_path):
    hipcc = env.require_hipcc()
    for folder in ("exercises", "solutions"):
        proc = make(folder, "stretch-hip", tmp_path, HIPCC=hipcc, GPU_ARCH="gfx90a")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "warning" not in proc.stderr, proc.stderr
        for name in STRETCH:
            assert (tmp_path / folder / "hip" / name).is_file(), (folder, name)


@pytest.mark.parametrize("name", STRETCH)
def test_starter_and_solution_differ_only_inside_the_todo_region(name):
    import difflib

    for suffix in (".cu", "_hip.cpp"):
        starter = (REPO / "exercises" / f"{name}{suffix}").read_text().splitlines()
        solution = (REPO / "solutions" / f"{name}{suffix}").read_text().splitlines()
        changed_outside = []
        marks = [i for i, line in enumerate(solution) if re.search(r"TODO.*\b(begins?|ends?)\b", line)]
        assert len(marks) >= 2 and len(marks) % 2 == 0, f"{name}{suffix}: TODO begin/end markers unpaired: {marks}"
        for tag, i1, i2, _, _ in difflib.SequenceMatcher(a=solution, b=starter, autojunk=False).get_opcodes():
            if tag == "equal":
                continue
            if not any(marks[k] <= i1 and i2 <= marks[k + 1] + 1 for k in range(0, len(marks) - 1, 2)):
                changed_outside.append((i1, i2))
        assert not changed_outside, f"{name}{suffix}: starter and solution differ outside the TODO region at " \
                                    f"solution lines {changed_outside[:3]}"


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.slow
@pytest.mark.parametrize("name", STRETCH)
def test_stretch_solution_passes_and_starter_fails_pointing_at_its_todo(name, stretch_build):
    solution = subprocess.run([str(stretch_build / "solutions" / "cuda" / name), *QUICK[name], "--seed", "11"],
                              capture_output=True, text=True, timeout=900)
    assert solution.returncode == 0, solution.stdout[-4000:] + solution.stderr[-2000:]
    starter = subprocess.run([str(stretch_build / "exercises" / "cuda" / name), *QUICK[name], "--seed", "11"],
                             capture_output=True, text=True, timeout=900)
    assert starter.returncode == 1, starter.stdout[-4000:] + starter.stderr[-2000:]
    assert TODO[name] in starter.stdout.strip().splitlines()[-1], starter.stdout[-2000:]


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.slow
@pytest.mark.parametrize("args", [["--check-only", "--full"], ["--stress", "--check-only"]],
                         ids=["every size up to 2^28", "forward progress: grids far larger than resident"])
def test_lookback_solution_at_2_28_and_under_the_never_hang_stress(args, stretch_build):
    proc = subprocess.run([str(stretch_build / "solutions" / "cuda" / "05_lookback_scan"), *args, "--seed", "1"],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("all ") and "gated checks passed" in last, last
    if "--full" in args:
        assert re.search(r"^268435456 ", proc.stdout, re.M), "n = 2^28 was not checked"
    else:
        assert "HUNG" not in proc.stdout and " 8388608 " in proc.stdout  # 2^28 in 32-element tiles: 8 million


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.slow
@pytest.mark.parametrize("tool", ["memcheck", "racecheck", "synccheck", "initcheck"])
@pytest.mark.parametrize("name", STRETCH)
def test_stretch_solutions_are_clean_under_compute_sanitizer(name, tool, stretch_build, sanitizer):
    slow = ["--timeout", "300"] if name == "05_lookback_scan" else []  # its watchdog, under a slow sanitizer
    # racecheck's summary counts hazards ("RACECHECK SUMMARY: 0 hazards displayed"), the others'
    # errors: scanlab.sanitizer reads both, and the program's own exit status must be 0 too.
    report = sanitize(tool, [stretch_build / "solutions" / "cuda" / name, *QUICK[name], *slow, "--seed", "11"],
                      timeout=1800)
    assert report.result.returncode == 0 and report.clean, report.result.describe()


# ---- drill 05's library benchmark (solutions/bench_libraries.py) ------------------------------

BENCH = REPO / "solutions" / "bench_libraries.py"
H200_CSV = REPO / "solutions" / "results" / "h200-libraries.csv"


def bench(*args: str, env_: dict | None = None) -> subprocess.CompletedProcess:
    import sys

    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=600, env=env_)


def test_library_benchmark_refuses_bad_command_lines_and_a_machine_without_gpu(tmp_path):
    import os

    fake = tmp_path / "prog"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    assert bench().returncode == 2  # neither program named
    assert bench("--lookback", str(fake), "--scan", str(fake), "--min", "9").returncode == 2
    assert bench("--lookback", str(fake), "--scan", str(tmp_path / "missing")).returncode == 2
    assert bench("--no-such-flag").returncode == 2
    assert bench("--plot", str(tmp_path / "missing.csv")).returncode == 2
    no_gpu = bench("--lookback", str(fake), "--scan", str(fake), env_={**os.environ, "PATH": str(tmp_path)})
    assert no_gpu.returncode == 3 and "nvidia-smi" in no_gpu.stderr, no_gpu.stderr


def test_the_committed_h200_benchmark_has_every_row_and_supports_the_readme():
    import csv

    lines = H200_CSV.read_text().splitlines()
    assert lines[0].startswith("# NVIDIA H200, driver "), lines[0]
    rows = list(csv.DictReader(lines[1:]))
    for k in range(16, 29):
        found = {(r["implementation"], r["type"], r["scan"]) for r in rows if int(r["n"]) == 1 << k}
        for dtype in ("float32", "int32"):
            for scan in ("exclusive", "inclusive"):
                assert {("look-back", dtype, scan), ("CUB", dtype, scan), ("Thrust", dtype, scan)} <= found, (k, found)
            assert ("torch.cumsum", dtype, "inclusive") in found
        assert {("copy", "-", "-"), ("3-phase 256x1", "float32", "exclusive"),
                ("3-phase 256x8", "float32", "exclusive")} <= found
    # The README's claims: from 2^22 up the look-back scan is no slower than CUB; at 2^28 it reaches
    # 0.75 of the copy (exclusive) and the best 3-phase scan stays under its 0.50 bound.
    look = [r for r in rows if r["implementation"] == "look-back" and int(r["n"]) >= 1 << 22]
    assert min(float(r["vs_cub"]) for r in look) >= 1.0
    top = {(r["implementation"], r["type"], r["scan"]): float(r["of_copy"]) for r in rows if int(r["n"]) == 1 << 28}
    assert top[("look-back", "float32", "exclusive")] >= 0.74 and top[("3-phase 256x8", "float32", "exclusive")] < 0.5


def test_the_benchmark_draws_a_png_from_a_csv(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib draws the benchmark's PNG")
    table = tmp_path / "libraries.csv"
    table.write_text(H200_CSV.read_text())
    proc = bench("--plot", str(table))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "libraries.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.slow
def test_the_library_benchmark_runs_and_validates_at_small_sizes(stretch_build, tmp_path):
    out = tmp_path / "bench"
    proc = make("solutions", "bench-libraries", stretch_build, NVCC=env.nvcc(),
                BENCH_ARGS=f"--min 16 --max 17 --reps 2 --out {out}")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "every implementation matched the CPU at every size" in proc.stdout.strip().splitlines()[-1]
    text = (out / "libraries.csv").read_text()
    for name in ("copy", "look-back", "CUB", "Thrust", "3-phase 256x1", "3-phase 256x8", "3-phase 128x8 warp"):
        assert f",{name}," in text, name
