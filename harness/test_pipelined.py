"""The pipelined scan (solutions/pipelined_scan.cu, sm_90 only, through solutions/experiments/pipelined_bench.cu).

CPU: its bench builds for sm_90 without warnings (its ablation build too, under make test-full: the
same program with knobs) and refuses bad command lines; the measured defaults and every ablation knob
are in the source; its inputs and CPU check are drill 05's bench's, one fenced text in both. GPU
(sm_90): the checks and the stress suite pass, memcheck and synccheck are clean (racecheck does not
model the bulk copies' writes). Its timings: solutions/README-pipelined.md, from
solutions/experiments/run_pipelined_device.sh.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from scanlab import env
from scanlab.sanitizer import sanitize

REPO = Path(__file__).resolve().parent.parent

PIPELINED_BENCH = REPO / "solutions" / "experiments" / "pipelined_bench.cu"
# Its two builds: the bench (with CUB) and the ablation (every design step's build in one binary).
PIPELINED_BUILDS = {"pipelined_bench": [], "ablation": ["-DPIPE_NO_CUB", "-DPIPE_ABLATION"]}
PIPELINED_TOOLS = ["memcheck", "synccheck"]  # racecheck does not model the bulk copies' writes


@pytest.fixture(scope="module")
def pipelined_builds(tmp_path_factory) -> dict:
    """Both builds, side by side: {name: (CompletedProcess, output path, the command)}."""
    nvcc = env.require_nvcc()
    out = tmp_path_factory.mktemp("pipelined")

    def build(name):
        target = out / name
        cmd = [nvcc, "-std=c++17", "-O3", "-arch=sm_90", "-lineinfo", "-Xcompiler", "-Wall,-Wextra",
               *PIPELINED_BUILDS[name], "-o", str(target), str(PIPELINED_BENCH)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=REPO / "solutions")
        return proc, target, " ".join(cmd)

    names = [name for name in PIPELINED_BUILDS if name == "pipelined_bench" or env.full()]
    with ThreadPoolExecutor(2) as pool:
        return dict(zip(names, pool.map(build, names)))


# The ablation is pipelined_bench with knobs (every design step in one binary), run only by
# solutions/experiments/run_pipelined_device.sh: make test-full builds it, as it does the drill 05
# experiments' knob combinations.
@pytest.mark.cuda
@pytest.mark.slow
@pytest.mark.parametrize("name", [name if name == "pipelined_bench" else pytest.param(name, marks=pytest.mark.full)
                                  for name in PIPELINED_BUILDS])
def test_the_pipelined_scan_builds_for_sm90_without_warnings(name, pipelined_builds):
    proc, target, cmd = pipelined_builds[name]
    assert proc.returncode == 0 and target.is_file(), f"{cmd}\n{proc.stderr}"
    assert "warning" not in proc.stderr.lower(), f"{cmd}\n{proc.stderr}"


# Bad command lines, refused before any GPU is looked for (the same on every machine): status 2,
# nothing on stdout, and the one line that says what is wrong before the usage text.
BAD_COMMAND_LINES = {
    "--nope": "unknown argument '--nope'", "--reps 0": "bad value '0'", "--reps=5x": "bad value '5x'",
    "--csv": "--csv needs a value", "--quick --full": "--quick does not combine with --full, --bench or --stress",
    "--check-only --time-log2 20": "--check-only times nothing",
    "--bench-min 20 --bench-max 18": "--bench: want --bench-min <= --bench-max",
    "--ablation": "--ablation needs a build with -DPIPE_ABLATION (run_pipelined_device.sh makes one)",
}


@pytest.mark.cuda
@pytest.mark.slow
@pytest.mark.parametrize("args", list(BAD_COMMAND_LINES))
def test_the_pipelined_bench_refuses_a_bad_command_line_in_one_line_with_status_2(args, pipelined_builds):
    proc, target, cmd = pipelined_builds["pipelined_bench"]
    assert proc.returncode == 0, f"{cmd}\n{proc.stderr}"
    result = subprocess.run([str(target), *args.split()], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stdout == "", result.stdout + result.stderr
    assert result.stderr.splitlines()[0] == f"pipelined_bench: {BAD_COMMAND_LINES[args]}", result.stderr


def test_the_pipelined_scan_keeps_the_measured_defaults_and_the_ablation_knobs():
    """The defaults are the H200 sweep's fastest shape and crossover; every ablation knob exists."""
    text = (REPO / "solutions" / "pipelined_scan.cu").read_text()
    for knob, default in (("STAGES", "12"), ("TILE_KIB", "16"), ("CROSSOVER_LOG2", "23"), ("PUBLISH", "0"),
                          ("LOOKAHEAD_WARP", "1"), ("PERSISTENT", "1"), ("BULK_STORE", "0")):
        assert re.search(rf"#ifndef PIPE_{knob}\n#define PIPE_{knob} {default}\b", text), knob
    assert "--ablation" in PIPELINED_BENCH.read_text()


# The library benchmark sets pipelined_bench's rows beside drill 05's bench's, seed for seed: both
# programs hold drill 05's input generator and CPU check as one fenced text.
BENCH05 = REPO / "exercises" / "bench" / "05_lookback_scan_bench.cu"
DRILL05_FENCES = ("// ==== drill 05's input and check, identical in exercises/bench/05_lookback_scan_bench.cu and "
                  "solutions/experiments/pipelined_bench.cu ====", "// ==== end of drill 05's input and check ====")


def drill05_block(path: Path) -> str:
    text = path.read_text()
    begin, end = DRILL05_FENCES
    for fence in DRILL05_FENCES:
        count = text.count(fence)
        assert count == 1, f"{path.relative_to(REPO)} holds {count} of {fence!r}, not one"
    assert text.index(begin) < text.index(end), f"{path.relative_to(REPO)}: the fences are the wrong way round"
    return text[text.index(begin):text.index(end) + len(end)]


def test_the_pipelined_bench_makes_and_checks_its_inputs_as_drill_05s_bench_does():
    import difflib

    ours, theirs = drill05_block(PIPELINED_BENCH), drill05_block(BENCH05)
    differ = list(difflib.unified_diff(theirs.splitlines(), ours.splitlines(), str(BENCH05.relative_to(REPO)),
                                       str(PIPELINED_BENCH.relative_to(REPO)), lineterm="", n=1))
    assert not differ, "the fenced input and check differ: edit both copies together\n" + "\n".join(differ[:40])
    for name in ("makeInput(", "checkScan(", "flush_l2(", "kExactLimit ="):
        assert name in ours, f"{name} is not in the fenced block"


DEVICE_SCRIPT = REPO / "solutions" / "experiments" / "run_pipelined_device.sh"
ABLATION_TABLE = ["| group | design step | `-D` knobs | exclusive, of copy | inclusive, of copy | change (mean) |",
                  "|---|---|---|---|---|---|", "| steps | the design | `(defaults)` | 0.99 | 0.99 | - |",
                  "| scan warps | 8 scan warps | `PIPE_SCAN_WARPS=8` | 0.99 | 0.99 | +0.00 vs the design |"]


@pytest.mark.slow
def test_the_device_script_prints_the_ablation_table_and_times_only_what_it_has(tmp_path):
    """run_pipelined_device.sh --no-build on stand-in programs (each step meets no GPU here and the
    run goes on): the summary carries the ablation's Markdown table whole (a blank line once cut it
    to its heading), and a full budget over a pipelined-only build times only the pipelined rows,
    saying so, rather than failing for drill 05's bench it does not have. Every program and tool it
    calls is a stand-in. OUT is named: a device machine sets its own (on the H200 the script once
    wrote this test's logs there)."""
    build = tmp_path / "build"
    build.mkdir()
    table = "\n".join(ABLATION_TABLE)
    for name in ("pipelined_bench", "ceiling"):
        (build / name).write_text("#!/bin/sh\nexit 0\n")
    (build / "ablation").write_text(f"#!/bin/sh\nprintf 'ablation markdown (a stand-in):\\n\\n%s\\n\\nall 32 gated "
                                    f"checks passed\\n' '{table}'\n")
    # The tools it calls, stand-ins too, so that no step uses a GPU where there is one.
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("compute-sanitizer", "ncu", "nvidia-smi", "python3"):
        (tools / name).write_text("#!/bin/sh\nexit 3\n")
    for program in [*build.iterdir(), *tools.iterdir()]:
        program.chmod(0o755)
    proc = subprocess.run(["bash", str(DEVICE_SCRIPT), "--no-build"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "BUILD": str(build), "OUT": str(build / "out"), "BUDGET_S": "400",
                               "PATH": f"{tools}:{os.environ['PATH']}"})
    lines = proc.stdout.splitlines()
    assert all(row in lines for row in ABLATION_TABLE), proc.stdout
    assert "libraries: " + str(build) + " holds no full build (drill 05's bench, a05-scan): only the pipelined " \
        "rows are timed" in proc.stderr, proc.stderr
    assert "is not built" not in (build / "out" / "extra.log").read_text()


def skip_unless_sm90(result) -> None:
    """pipelined_bench exits 3 (no usable GPU) on a GPU without sm_90 code: skip, saying so."""
    if result.returncode == 3:
        pytest.skip(f"pipelined_bench runs on sm_90 only: {(result.stdout + result.stderr).strip()[-300:]}")


@pytest.fixture(scope="module")
def pipelined_runs(pipelined_builds) -> dict:
    """The stress suite first, alone (its watchdog must not see the sanitizers' slow launches; about 25 s on
    the H200), then memcheck and synccheck side by side: {"stress": CompletedProcess, tool: Report}."""
    bench = str(pipelined_builds["pipelined_bench"][1])
    stress = subprocess.run([bench, "--check-only", "--stress", "--seed", "1", "--timeout", "60"],
                            capture_output=True, text=True, timeout=600)
    with ThreadPoolExecutor(len(PIPELINED_TOOLS)) as pool:
        reports = dict(zip(PIPELINED_TOOLS, pool.map(
            lambda tool: sanitize(tool, [bench, "--quick", "--seed", "11", "--timeout", "300"], timeout=1800),
            PIPELINED_TOOLS)))
    return {"stress": stress, **reports}


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.slow
def test_the_pipelined_scan_passes_its_checks_and_stress_on_sm90(pipelined_runs):
    """Every awkward size (0, 1, 3, tile - 1, tile, tile + 1, fewer tiles than SMs, ragged ends, the
    dispatcher on both sides of its crossover), float32 and int32, both scans, exactly; every tile
    scanned once and the counter at tiles + grid; the small-tile builds at 2^28, 8 launches back to back."""
    proc = pipelined_runs["stress"]
    skip_unless_sm90(proc)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("all ") and "gated checks passed" in last, last
    assert "HUNG" not in proc.stdout and " 1048576 " in proc.stdout  # 2^28 in 256-element tiles
    for why in ("empty: no launch", "tile + 1", "fewer tiles than SMs", "the tightest ring", "n not a multiple of 4"):
        assert why in proc.stdout, why


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.slow
@pytest.mark.parametrize("tool", PIPELINED_TOOLS)
def test_the_pipelined_scan_is_clean_under_memcheck_and_synccheck(tool, pipelined_runs, sanitizer):
    report = pipelined_runs[tool]
    skip_unless_sm90(report.result)
    assert report.result.returncode == 0 and report.clean, report.result.describe()


@pytest.mark.parametrize("args", [["--min-log2", "24", "--max-log2", "22"], ["--min-log2", "19"], ["--reps", "0"]])
def test_the_triton_single_pass_refuses_a_bad_range_with_status_2_and_one_line(args):
    """Checked before torch is imported: the same answer with or without a GPU."""
    proc = subprocess.run([sys.executable, str(REPO / "solutions" / "experiments" / "triton_single_pass.py"), *args],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout + proc.stderr
    assert proc.stderr.strip() == "triton_single_pass: want 20 <= --min-log2 <= --max-log2 <= 28 and --reps >= 1"
