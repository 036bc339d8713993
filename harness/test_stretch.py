"""The stretch drills' GPU grader (scanlab/grade_stretch.py), drill 06: partition on copy_if's scan.

CPU: the submission's device code compiles with the grader's wrapper, in the
sandbox, and the fatbin holds the kernels under the names the plan launches; the
judging of made-up runner dumps (right, the starter's forward-ordered back part, a
stray store, a changed input). GPU: the solution passes every check and the starter
fails the back part with the diagnosis its mistake deserves.
"""

from __future__ import annotations

import re
from array import array
from pathlib import Path

import pytest

from scanlab import grade_stretch as gs

REPO = Path(__file__).resolve().parent.parent
FILE06 = "06_copy_if_partition.cu"


@pytest.mark.cuda
@pytest.mark.parametrize("folder", ["solutions", "exercises"])
def test_drill06_device_code_compiles_with_the_kernels_the_plan_launches(folder, nvcc):
    fatbin, why = gs.compile_device(REPO / folder / FILE06, gs.wrapper06)
    assert fatbin is not None, why
    for _, _, mangled, _ in gs.TYPES06.values():
        assert mangled.encode() in fatbin, mangled


@pytest.mark.cuda
def test_drill06_a_compile_error_is_the_students_own(tmp_path, nvcc):
    broken = tmp_path / FILE06
    broken.write_text((REPO / "solutions" / FILE06).read_text().replace("__global__ void partition_scatter(",
                                                                      "__global__ void partition_scatter(int oops ", 1))
    fatbin, why = gs.compile_device(broken, gs.wrapper06)
    assert fatbin is None and FILE06 in why and "error" in why, why


def dumps_for(case: gs.Case06, out: list[int], inp: list[int] | None = None) -> dict[str, bytes]:
    code = gs.TYPES06[case.type][3]
    poison = array(code, b"\xff" * array(code).itemsize)[0]
    guard = [poison] * gs.GUARD
    return {"in": array(code, guard + (inp if inp is not None else case.values) + guard).tobytes(),
            "out": array(code, guard + out + guard).tobytes()}


CASE = gs.Case06("int32, n=8 (the drill's example), predicate x > 0", "int32", [3, -3, 4, -5, 9, -2, 6, -8],
                 [1, 0, 1, 0, 1, 0, 1, 0])


def test_drill06_judges_the_documented_order_exactly():
    assert CASE.offsets == [0, 1, 1, 2, 2, 3, 3, 4]
    assert CASE.expected() == [3, 4, 9, 6, -8, -2, -5, -3]
    assert gs.judge06(CASE, dumps_for(CASE, CASE.expected())) == ("", "", "")
    forward = [3, 4, 9, 6, -3, -5, -2, -8]  # the starter: the back part in input order
    front, back, side = gs.judge06(CASE, dumps_for(CASE, forward))
    assert front == "" and side == "" and "first out[4], which holds -3" in back, back
    assert "FORWARD order" in gs.diagnose06(CASE, dumps_for(CASE, forward))
    unwritten = CASE.expected()[:4] + [array("i", b"\xff" * 4)[0]] * 4
    assert "was never written" in gs.judge06(CASE, dumps_for(CASE, unwritten))[1]
    assert all(-1 not in c.values for c in gs.cases06(5))  # no input value looks like the poison


def test_drill06_side_effects_are_found():
    dumps = dumps_for(CASE, CASE.expected(), inp=[0] * 8)
    assert "the input changed" in gs.judge06(CASE, dumps)[2]
    dumps = dumps_for(CASE, CASE.expected())
    out = array("i", dumps["out"])
    out[gs.GUARD + 8] = 5  # one past the end
    dumps["out"] = out.tobytes()
    assert "wrote out[8], outside out[0, n)" in gs.judge06(CASE, dumps)[2]


def test_drill06_cases_cover_the_sizes_and_predicates_and_never_reach_the_student():
    cases = gs.cases06(5)
    sizes = {len(c.values) for c in cases}
    assert {0, 1, gs.THREADS - 1, gs.THREADS, gs.THREADS + 1, (1 << 20) + 3} <= sizes
    assert {c.type for c in cases} == set(gs.TYPES06)
    assert any(sum(c.flags) == 0 for c in cases if c.values) and any(all(c.flags) for c in cases if c.values)
    plan = gs.plan06(cases[:3])
    text, files = plan.text("module.fatbin")
    for case, k in zip(cases[:3], range(3)):  # the runner gets values, flags and offsets: never the answer
        assert set(f for f in files if f.startswith(f"in-{k}-")) == {f"in-{k}-in.bin", f"in-{k}-flags.bin",
                                                                     f"in-{k}-offsets.bin"}
        if len(case.values) > 2 and case.expected() != case.values:
            assert array("i", case.expected()).tobytes() not in files.values()


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.slow
def test_scan_drill_solutions_pass_and_starters_fail_with_their_diagnosis(tmp_path):
    report = gs.grade("drill04", REPO / "solutions" / "04_warp_scan.cu", tmp_path, seed=3)
    assert report.passed, report.text()
    starter = gs.grade("drill04", REPO / "exercises" / "04_warp_scan.cu", tmp_path, seed=3)
    assert not starter.check(gs.CHECK04_32).passed and "log2(width) shuffle steps" in starter.text()
    report = gs.grade("drill05", REPO / "solutions" / "05_lookback_scan.cu", tmp_path, seed=3)
    assert report.passed, report.text()
    starter = gs.grade("drill05", REPO / "exercises" / "05_lookback_scan.cu", tmp_path, seed=3)
    assert not starter.check(gs.CHECK05_EXCL).passed and "look-back" in starter.check(gs.CHECK05_EXCL).feedback


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.slow
def test_drill06_solution_passes_and_starter_fails_the_back_part(tmp_path):
    solution = gs.grade("drill06", REPO / "solutions" / FILE06, tmp_path, seed=3)
    assert solution.passed, solution.text()
    starter = gs.grade("drill06", REPO / "exercises" / FILE06, tmp_path, seed=3)
    assert starter.check(gs.CHECK_FRONT).passed and not starter.check(gs.CHECK_BACK).passed, starter.text()
    assert "FORWARD order" in starter.check(gs.CHECK_BACK).feedback


# Planted mistakes, made from the reference answers at test time (so they follow every edit of
# the answers): what each does wrong, the check that must fail, and what its feedback must say.
PLANTED = {
    "a wrong lane count (a literal 32 where the group width belongs)": (
        "drill04", "04_warp_scan.cu", "for (int delta = 1; delta < L::width; delta *= 2)",
        "for (int delta = 1; delta < 32; delta *= 2)", gs.CHECK04_64, "something assumes 32 lanes"),
    "a weak look-back load (a plain load where the ordering needs a strong one)": (
        "drill05", "05_lookback_scan.cu",
        "    return word.load(cuda::memory_order_relaxed);\n}",
        "    return descriptors[tile];  // planted: a plain load\n}", gs.CHECK05_MANY, "must be strong"),
    "a partition whose back part is in input order": (
        "drill06", FILE06, None, None, gs.CHECK_BACK, "FORWARD order"),
}


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.slow
@pytest.mark.parametrize("mistake", sorted(PLANTED))
def test_planted_mistakes_fail_with_their_diagnosis(mistake, tmp_path):
    drill, name, right, wrong, check, says = PLANTED[mistake]
    if right is None:  # the starter is this mistake
        planted = REPO / "exercises" / name
    else:
        text = (REPO / "solutions" / name).read_text()
        assert text.count(right) == 1, f"the planted mistake no longer applies to solutions/{name}"
        planted = tmp_path / name
        planted.write_text(text.replace(right, wrong))
    report = gs.grade(drill, planted, tmp_path, seed=5)
    assert not report.check(check).passed, report.text()
    assert says in report.check(check).feedback, report.text()
    assert report.check("builds").passed, report.text()


# ---- drills 04 and 05 -------------------------------------------------------------------------

@pytest.mark.cuda
@pytest.mark.parametrize("drill, name", [("drill04", "04_warp_scan.cu"), ("drill05", "05_lookback_scan.cu")])
@pytest.mark.parametrize("folder", ["solutions", "exercises"])
def test_scan_drills_compile_with_every_kernel_the_grader_launches(drill, name, folder, nvcc):
    wrapper, cases = {"drill04": (gs.wrapper04, gs.cases04), "drill05": (gs.wrapper05, gs.cases05)}[drill]
    fatbin, why = gs.compile_device(REPO / folder / name, wrapper)
    assert fatbin is not None, why
    kernels = {case.kernel for case in cases(5)}
    assert len(kernels) == (8 if drill == "drill04" else 5)
    for kernel in kernels:
        assert kernel.encode() in fatbin, kernel


def scan_dumps(case: gs.ScanCase, out: list, inp: list | None = None) -> dict[str, bytes]:
    code = {"f32": "f", "i32": "i"}[case.type]
    guard = array(code, b"\xff" * 4 * gs.GUARD).tolist()
    return {"in": array(code, guard + (inp if inp is not None else case.values) + guard).tobytes(),
            "out": array(code, guard + out + guard).tobytes()}


def test_scan_judging_per_tile_and_whole_array():
    tiled = gs.ScanCase("c", "4 per tile", "k", "i32", False, 4, 4, 4, 2, [1, 2, 3, 4, 5, 6, 7])
    assert tiled.expected() == [0, 1, 3, 6, 0, 5, 11]
    assert gs.judge_scan(tiled, scan_dumps(tiled, tiled.expected())) == ("", "")
    whole = gs.ScanCase("c", "whole", "k", "f32", True, 0, 4, 4, 2, [1, 2, 3, 4, 5, 6, 7])
    assert whole.expected() == [1, 3, 6, 10, 15, 21, 28]
    # Each tile scanned alone: right in tile 0, wrong from the first element of tile 1, with the look-back hint.
    problem, side = gs.judge_scan(whole, scan_dumps(whole, [1.0, 3, 6, 10, 5, 11, 18]))
    assert "3 wrong element(s); first out[4] (element 0 of tile 1), which holds 5" in problem and side == ""
    assert "look-back" in problem
    unwritten = array("f", b"\xff" * 4)[0]
    problem, _ = gs.judge_scan(whole, scan_dumps(whole, [1.0, 3, 6, 10, 15, 21, unwritten]))
    assert "first out[6] (element 2 of tile 1), which was never written" in problem and "look-back" not in problem
    out = array("f", scan_dumps(whole, whole.expected())["out"])
    out[gs.GUARD - 1] = 0.0  # one before the start
    dumps = scan_dumps(whole, whole.expected())
    dumps["out"] = out.tobytes()
    assert "wrote out[-1], outside out[0, n)" in gs.judge_scan(whole, dumps)[1]
    assert "the input changed" in gs.judge_scan(whole, scan_dumps(whole, whole.expected(), inp=[0.0] * 7))[1]


def test_scan_cases_cover_edges_widths_and_a_huge_grid():
    c04, c05 = gs.cases04(5), gs.cases05(5)
    assert {c.check for c in c04} == {gs.CHECK04_32, gs.CHECK04_64}
    assert {(c.block, len(c.values)) for c in c04} >= {(64, 63), (256, 257), (1024, 1023), (1024, 1)}
    tile = 256 * 16
    assert {len(c.values) for c in c05} >= {1, 3, tile - 1, tile, tile + 1, (1 << 20) + 3}
    many = [c for c in c05 if c.check == gs.CHECK05_MANY]
    assert len(many) == 1 and many[0].grid > 100_000
    for case in c04 + c05:  # float sums stay exact: every prefix below 2^24
        assert sum(case.values) < 1 << 24 and -1 not in case.values


# ---- the stretch programs themselves ---------------------------------------------------------

import subprocess  # noqa: E402

from scanlab import env  # noqa: E402
from scanlab.sanitizer import sanitize  # noqa: E402

STRETCH = ["04_warp_scan", "05_lookback_scan", "06_copy_if_partition"]
# A quick run of each: every check, small sizes (the sanitizers run these too).
QUICK = {"04_warp_scan": ["--n", "5000"], "05_lookback_scan": ["--quick"], "06_copy_if_partition": ["--n", "5000"]}
# The function each starter's last line sends the student to.
TODO = {"04_warp_scan": "warp_inclusive_scan", "05_lookback_scan": "lookback_exclusive_prefix",
        "06_copy_if_partition": "partition_scatter"}


def make(folder: str, target: str, build: Path, **extra) -> subprocess.CompletedProcess:
    args = [f"{k}={v}" for k, v in extra.items()]
    return subprocess.run(["make", "-s", "-C", str(REPO / folder), target, f"BUILD={build}", *args],
                          capture_output=True, text=True, timeout=1800)


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
