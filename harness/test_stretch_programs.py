"""The stretch drills' programs (exercises/ and solutions/ 04-06, CUDA and HIP) and drill 05's library benchmark.

Each drill is a short kernel file (what the student writes and calls: the starter in
exercises/, the answer in solutions/) and one bench program per language in
exercises/bench/ (the checks, the stress suite, the watchdog, the library comparisons,
main), which #includes the kernel file SUBMISSION names.
CPU: every file builds (sm_90 without warnings, drill 05's tuning experiments in
solutions/experiments/ with the knobs its header measures, gfx90a for HIP); each
starter differs from its solution only inside the TODO region; the kernel files keep
their budgets (300 lines, the TODO by line 150, a header of 30 comment lines) and hold
no host program; each bench's default SUBMISSION is the starter next to it.
GPU: each solution passes its own checks and each starter fails naming its TODO; the
look-back at 2^28 and under its never-hang stress; every solution clean under the four
compute-sanitizer tools; the library benchmark's command line, its committed H200 CSV,
its plot, and a run at small sizes. The pipelined scan: test_pipelined.py. The graders of
these drills: test_stretch.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from scanlab import env, registry
from scanlab.sanitizer import sanitize

REPO = Path(__file__).resolve().parent.parent

# The stretch drills' programs, by the stem of their kernel file (harness/exercises.toml).
STRETCH = [Path(e.file).stem for e in registry.EXERCISES.values() if e.stretch]
# A quick run of each: every check, small sizes (the sanitizers run these too).
QUICK = {  # per exercise (test_every_stretch_drill_has_its_rows checks the keys)
    "04_warp_scan": ["--n", "5000"], "05_lookback_scan": ["--quick"], "06_copy_if_partition": ["--n", "5000"]}
# The function each starter's last line sends the student to.
TODO = {  # per exercise
    "04_warp_scan": "warp_inclusive_scan", "05_lookback_scan": "lookback_exclusive_prefix",
    "06_copy_if_partition": "partition_scatter"}


def test_every_stretch_drill_has_its_rows():
    assert sorted(QUICK) == sorted(TODO) == sorted(STRETCH)


def make(folder: str, target: str, build: Path, *flags: str, **extra) -> subprocess.CompletedProcess:
    import os

    args = [*flags, *(f"{k}={v}" for k, v in extra.items())]
    # hipcc (HIP 5.2) leaves a folder in $TMPDIR at every compile; the Makefiles give it one of its
    # own and remove it. A $TMPDIR watched here holds them to it.
    watched = build / f".tmp-{folder}-{target}"
    watched.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["make", "-s", "-C", str(REPO / folder), target, f"BUILD={build}", *args],
                          capture_output=True, text=True, timeout=1800, env={**os.environ, "TMPDIR": str(watched)})
    left = sorted(p.name for p in watched.iterdir()) + sorted(p.name for p in (build / folder).rglob(".hipcc-tmp-*"))
    assert left == [], f"make -C {folder} {target} left these in $TMPDIR or beside its outputs: {left}"
    watched.rmdir()
    return proc


def side_by_side() -> int:
    """How many builds or sanitizer runs this module starts at once: half the cores (2 at least)."""
    import os

    return max(2, min(12, (os.cpu_count() or 2) // 2))


@pytest.fixture(scope="module")
def stretch_build(tmp_path_factory) -> Path:
    """Both folders' `make stretch`, side by side and each with make -j (the same compile lines)."""
    env.require_nvcc()
    build = tmp_path_factory.mktemp("stretch")
    with ThreadPoolExecutor(2) as pool:
        procs = list(pool.map(lambda folder: make(folder, "stretch", build, f"-j{side_by_side()}", NVCC=env.nvcc()),
                              ("exercises", "solutions")))
    for proc in procs:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "warning" not in proc.stderr.lower(), proc.stderr
    return build


def selected(request, test) -> list[dict]:
    """The parameters of this module's tests named `test` that this session runs (after -k and -m)."""
    found = [item for item in request.session.items
             if item.module is request.module and item.originalname == test.__name__]
    return [item.callspec.params if hasattr(item, "callspec") else {} for item in found]


def test_selected_reads_plain_and_parametrized_tests(request):
    """The GPU fixtures ask `selected` about plain tests too (no callspec): on the H200 that once
    errored every GPU test of this module, where a machine without a GPU skips them first."""
    assert selected(request, test_selected_reads_plain_and_parametrized_tests) == [{}]
    for params in selected(request, test_stretch_solutions_are_clean_under_compute_sanitizer):
        assert set(params) == {"name", "tool"}, params


@pytest.mark.cuda
@pytest.mark.slow
def test_every_stretch_program_builds_for_sm90_without_warnings(stretch_build):
    for folder in ("exercises", "solutions"):
        for name in STRETCH:
            assert (stretch_build / folder / "cuda" / name).is_file(), (folder, name)


def test_stretch_builds_carry_machine_code_for_the_pages_t4_and_the_h200():
    """The Makefiles' stretch lines (make -n: nothing is built) name sm_75 (the page's Tesla T4) and
    sm_90 (H100/H200) for every CUDA stretch program, starter and answer alike."""
    for folder in ("exercises", "solutions"):
        lines = subprocess.run(["make", "-s", "-n", "-B", "-C", str(REPO / folder), "stretch", "NVCC=nvcc"],
                               capture_output=True, text=True, timeout=60).stdout.splitlines()
        built = [line for line in lines if "_bench.cu" in line]
        assert len(built) == len(STRETCH), (folder, lines)
        for line in built:
            assert re.findall(r"-gencode arch=compute_(\d+),code=sm_(\d+)", line) == [("75", "75"), ("90", "90")], line


VARIANTS05 = REPO / "solutions" / "experiments" / "05_lookback_variants.cu"
BENCH05 = REPO / "exercises" / "bench" / "05_lookback_scan_bench.cu"


# The compile lines the experiments file's header and its ablation table name: the variants
# kernel file through drill 05's bench, knobs on the command line. They must keep working:
# make test builds the defaults, make test-full every line (another knob combination of one program).
EXPERIMENTS = {"defaults": [], "staged-fastest": ["-DLOOKBACK_STAGED=1", "-DLOOKBACK_MIN_BLOCKS=12", "-DLOOKBACK_ITEMS=32"],
               "speculate": ["-DLOOKBACK_SPECULATE=1"],
               "streaming-256x16-no-pause": ["-DLOOKBACK_STREAMING=1", "-DLOOKBACK_THREADS=256", "-DLOOKBACK_ITEMS=16",
                                             "-DLOOKBACK_SLEEP_NS=0"]}


@pytest.fixture(scope="module")
def experiment_builds(request, tmp_path_factory) -> dict:
    """The selected experiments' builds, side by side: {id: CompletedProcess, output path}."""
    out = tmp_path_factory.mktemp("experiments")

    def build(name):
        target = out / name
        proc = subprocess.run([env.require_nvcc(), "-std=c++17", "-O3", "-arch=sm_90", "-Xcompiler", "-Wall,-Wextra",
                               f'-DSUBMISSION="{VARIANTS05}"', *EXPERIMENTS[name], "-o", str(target), str(BENCH05)],
                              capture_output=True, text=True, timeout=600)
        return proc, target

    names = [params["name"] for params in selected(request, test_the_lookback_experiments_build_through_the_bench_without_warnings)
             if params["name"] == "defaults" or env.full()]
    with ThreadPoolExecutor(side_by_side()) as pool:
        return dict(zip(names, pool.map(build, names)))


@pytest.mark.cuda
@pytest.mark.slow
@pytest.mark.parametrize("name", [name if name == "defaults" else pytest.param(name, marks=pytest.mark.full)
                                  for name in EXPERIMENTS])
def test_the_lookback_experiments_build_through_the_bench_without_warnings(name, experiment_builds):
    text = VARIANTS05.read_text()
    for knob in EXPERIMENTS[name]:
        assert knob.split("=")[0][2:] in text, f"{knob}: no such knob in {VARIANTS05.name}"
    proc, target = experiment_builds[name]
    assert proc.returncode == 0 and target.is_file(), proc.stderr
    assert "warning" not in proc.stderr.lower(), proc.stderr


def test_the_tuning_knobs_left_the_students_files():
    """The answer keeps the chosen defaults; the knobs and the staged kernel live in the experiments."""
    for folder in ("exercises", "solutions"):
        for suffix in (".cu", "_hip.cpp"):
            text = (REPO / folder / f"05_lookback_scan{suffix}").read_text()
            assert "LOOKBACK_" not in text and "staged" not in text and "#ifndef" not in text, (folder, suffix)
    text = VARIANTS05.read_text()
    for knob in ("THREADS", "ITEMS", "FIRST_SLEEP_NS", "SLEEP_NS", "STAGED", "SPECULATE", "MIN_BLOCKS", "STREAMING"):
        assert f"#ifndef LOOKBACK_{knob}\n" in text, knob
    assert "lookback_scan_staged" in text and "of copy" in text  # the staged kernel and its measurements


KERNEL_FILES = [(name, suffix) for name in STRETCH for suffix in (".cu", "_hip.cpp")]


def bench_of(name: str, suffix: str) -> Path:
    return REPO / "exercises" / "bench" / f"{name}_bench{suffix}"


@pytest.mark.parametrize("name, suffix", KERNEL_FILES, ids=[f"{n}{s}" for n, s in KERNEL_FILES])
def test_stretch_starters_hold_what_the_student_writes_and_calls_within_their_budgets(name, suffix):
    """A starter is its kernel file: a short header, the helpers, the TODO early, the kernels;
    300 lines at most, the TODO by line 150, a header of 30 comment lines at most, no host program."""
    for folder in ("exercises", "solutions"):
        path = REPO / folder / f"{name}{suffix}"
        lines = path.read_text().splitlines()
        header = next(i for i, line in enumerate(lines) if not line.startswith("//"))
        assert header <= 30, f"{path.relative_to(REPO)}: a header of {header} comment lines (30 at most)"
        todo = next(i + 1 for i, line in enumerate(lines) if re.search(r"TODO.*\bbegins?\b", line))
        if folder == "exercises":
            assert len(lines) <= 300, f"{path.relative_to(REPO)}: {len(lines)} lines (300 at most)"
            assert todo <= 150, f"{path.relative_to(REPO)}: the TODO region begins at line {todo} (150 at most)"
        text = "\n".join(lines)
        for host in ("int main(", "printTable", "splitmix64", "cub::", "thrust::", "rocprim::", "_CHECK(",
                     "#include <cstdio>"):
            assert host not in text, f"{path.relative_to(REPO)} holds {host!r}: host code belongs in the bench"
        assert f"bench/{name}_bench{suffix}" in text, f"{path.relative_to(REPO)}: its header names no bench"


@pytest.mark.parametrize("name, suffix", KERNEL_FILES, ids=[f"{n}{s}" for n, s in KERNEL_FILES])
def test_each_bench_includes_the_starter_next_to_it_by_default(name, suffix):
    text = bench_of(name, suffix).read_text()
    found = re.search(r'#ifndef SUBMISSION\n#define SUBMISSION "([^"]+)"\n#endif\n#include SUBMISSION\n', text)
    assert found, f"{bench_of(name, suffix).name}: no default SUBMISSION"
    assert (bench_of(name, suffix).parent / found.group(1)).resolve() == REPO / "exercises" / f"{name}{suffix}"
    assert text.count("int main(") == 1


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
    """The kernel files: the bench is one file, shared by both."""
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


FULL = {"every size up to 2^28": ["--check-only", "--full"],
        "forward progress: grids far larger than resident": ["--stress", "--check-only"]}
SANITIZERS = ["memcheck", "racecheck", "synccheck", "initcheck"]


@pytest.fixture(scope="module")
def gpu_runs(request, stretch_build) -> dict:
    """The selected tests' GPU runs. Drill 05 at 2^28 and under its never-hang stress run first,
    alone (their watchdog must not see a shared GPU); then the quick runs and the sanitizer runs go
    side by side (each is a process of its own; most of a sanitizer's time is its own CPU work).
    {key: result}; a run that raised (a timeout) raises again in the test that reads it."""
    def program(folder, name):
        return str(stretch_build / folder / "cuda" / name)

    def quick(folder, name):
        return subprocess.run([program(folder, name), *QUICK[name], "--seed", "11"],
                              capture_output=True, text=True, timeout=900)

    def sanitized(name, tool):
        slow = ["--timeout", "300"] if name == "05_lookback_scan" else []  # its watchdog, under a slow sanitizer
        # racecheck costs 20-100x a plain run per shared-memory access: it runs every size's reason at
        # --quick sizes (04 and 06 took 139 s and 124 s at the quick run's sizes on the H100, 2026-12-05)
        sizes = ["--quick"] if tool == "racecheck" else QUICK[name]
        return sanitize(tool, [program("solutions", name), *sizes, *slow, "--seed", "11"], timeout=1800)

    seconds = {}  # each run's wall time, for the JUnit file (test_stretch_solution_passes_... records it)

    def timed(key, fn, *args, **kwargs):
        start = time.monotonic()
        try:
            return fn(*args, **kwargs)
        finally:
            seconds[" ".join(map(str, key)) if isinstance(key, tuple) else key] = round(time.monotonic() - start, 1)

    runs = {"seconds": seconds}
    for params in selected(request, test_lookback_solution_at_2_28_and_under_the_never_hang_stress):
        runs[params["case"]] = timed(params["case"], subprocess.run, [program("solutions", "05_lookback_scan"),
                                     *FULL[params["case"]], "--seed", "1"], capture_output=True, text=True, timeout=900)
    jobs = {}
    for params in selected(request, test_stretch_solution_passes_and_starter_fails_pointing_at_its_todo):
        for folder in ("solutions", "exercises"):
            jobs[(folder, params["name"])] = (quick, folder, params["name"])
    for params in selected(request, test_stretch_solutions_are_clean_under_compute_sanitizer):
        jobs[(params["name"], params["tool"])] = (sanitized, params["name"], params["tool"])
    with ThreadPoolExecutor(side_by_side()) as pool:
        futures = {key: pool.submit(timed, key, fn, *args) for key, (fn, *args) in jobs.items()}
    for key, future in futures.items():
        runs[key] = future
    return runs


def result_of(runs: dict, key):
    found = runs[key]
    return found.result() if hasattr(found, "result") else found


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.slow
@pytest.mark.parametrize("name", STRETCH)
def test_stretch_solution_passes_and_starter_fails_pointing_at_its_todo(name, gpu_runs, record_property):
    record_property("gpu_run_seconds", json.dumps(gpu_runs["seconds"]))  # where this module's time goes
    solution = result_of(gpu_runs, ("solutions", name))
    assert solution.returncode == 0, solution.stdout[-4000:] + solution.stderr[-2000:]
    starter = result_of(gpu_runs, ("exercises", name))
    assert starter.returncode == 1, starter.stdout[-4000:] + starter.stderr[-2000:]
    assert TODO[name] in starter.stdout.strip().splitlines()[-1], starter.stdout[-2000:]


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.slow
@pytest.mark.parametrize("case", list(FULL))
def test_lookback_solution_at_2_28_and_under_the_never_hang_stress(case, gpu_runs):
    proc = gpu_runs[case]
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("all ") and "gated checks passed" in last, last
    if "--full" in FULL[case]:
        assert re.search(r"^268435456 ", proc.stdout, re.M), "n = 2^28 was not checked"
    else:
        assert "HUNG" not in proc.stdout and " 8388608 " in proc.stdout  # 2^28 in 32-element tiles: 8 million


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.slow
@pytest.mark.parametrize("tool", SANITIZERS)
@pytest.mark.parametrize("name", STRETCH)
def test_stretch_solutions_are_clean_under_compute_sanitizer(name, tool, gpu_runs, sanitizer):
    # racecheck's summary counts hazards ("RACECHECK SUMMARY: 0 hazards displayed"), the others'
    # errors: scanlab.sanitizer reads both, and the program's own exit status must be 0 too.
    report = result_of(gpu_runs, (name, tool))
    assert report.result.returncode == 0 and report.clean, report.result.describe()


# ---- drill 05's library benchmark (solutions/bench_libraries.py) ------------------------------

BENCH = REPO / "solutions" / "bench_libraries.py"
H200_CSV = REPO / "solutions" / "results" / "h200-libraries.csv"


def bench(*args: str, env_: dict | None = None) -> subprocess.CompletedProcess:
    import sys

    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=600, env=env_)


@pytest.mark.cuda
@pytest.mark.slow
@pytest.mark.parametrize("name", STRETCH)
def test_stretch_benches_refuse_quick_with_another_size(name, stretch_build):
    """--quick (the sanitizers' small sizes) with a size of its own is a bad command line: status 2, one
    line naming --quick, before any GPU is looked for (so it holds on a machine without one too)."""
    other = ["--full"] if name == "05_lookback_scan" else ["--n", "5"]
    for args in (["--quick", *other], ["--quick=1"]):
        proc = subprocess.run([str(stretch_build / "solutions" / "cuda" / name), *args],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and "--quick" in proc.stderr.splitlines()[0], (args, proc.stderr)


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


def test_the_committed_h100_benchmark_holds_the_pipelined_rows_and_meets_issue_25s_targets():
    """solutions/results/h100-libraries.csv (run_pipelined_device.sh, the final code): the pipelined
    scan and its dispatcher at every n, and what README-pipelined.md claims of them."""
    import csv

    lines = (REPO / "solutions" / "results" / "h100-libraries.csv").read_text().splitlines()
    assert lines[0].startswith("# NVIDIA H100"), lines[0]
    rows = list(csv.DictReader(lines[1:]))
    for impl in ("pipelined", "pipelined dispatch"):
        mine = [r for r in rows if r["implementation"] == impl]
        assert {(int(r["n"]), r["type"], r["scan"]) for r in mine} == {
            (1 << k, t, s) for k in range(16, 29) for t in ("float32", "int32") for s in ("exclusive", "inclusive")}
        assert min(float(r["vs_cub"]) for r in mine) >= 1.0, impl  # never slower than CUB
    top = [r for r in rows if r["implementation"] == "pipelined" and int(r["n"]) == 1 << 28]
    assert min(float(r["of_copy"]) for r in top) >= 0.90 and min(float(r["vs_cub"]) for r in top) >= 1.21, top


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
    if "pipelined: ran" in proc.stdout:  # an sm_90 GPU: the pipelined scan's rows too
        assert ",pipelined," in text and ",pipelined dispatch," in text
