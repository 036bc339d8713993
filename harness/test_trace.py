"""The traced twins: the lesson kernels again, recording their own steps, and the pictures drawn from them.

Each lesson keeps its kernels plain; its twin beside it (day31-scan/trace.cu, a05-scan/cuda/trace.cu,
a05-scan/hip/trace.cpp) holds copies of them with trace calls added, every added line marked
`// trace`. Without those lines each twin is its lesson's kernels token for token (checked here,
no toolchain needed), so what a twin records is what the lesson's kernels do.
CPU: the committed fixture (harness/fixtures/trace-page-example.txt, the page's worked
example written out) is what the three algorithms compute step by step, simulated here;
the parser reads it and refuses broken traces with the line named; the picture script
draws valid PNG and SVG files from it; the programs refuse a bad --trace-input.
GPU: Lab 1's `trace` (CUDA, and the HIP file through the HIP-on-CUDA header) prints and
writes, for the page's input, exactly the fixture's rows, captured by the kernels; the
tracing build stays clean under racecheck; the pictures draw from the GPU's trace.
"""

from __future__ import annotations

import difflib
import importlib.util
import re
import subprocess
import sys

import pytest

from scanlab import EXIT_NO_GPU, EXIT_PASS, EXIT_USAGE
from scanlab.build import A05_CUDA_TRACE, DAY31_TRACE, HIP_ARCH, Program
from scanlab.paths import REPO
from scanlab.run import run, run_on_gpu
from scanlab.sanitizer import sanitize
from scanlab.source import TRACE_MARK, device_code, device_functions, without_trace_lines

FIXTURE = REPO / "harness" / "fixtures" / "trace-page-example.txt"
PICTURES = REPO / "a05-scan" / "trace_pictures.py"
HIP_TRACE_ON_CUDA = Program("a05-hip-trace-on-cuda", ("a05-scan/hip/trace.cpp",), compiler="nvcc-hip")
HIP_TRACE_AMD = Program(f"a05-hip-trace-{HIP_ARCH}", ("a05-scan/hip/trace.cpp",), compiler="hipcc")
BUILDS = [A05_CUDA_TRACE, HIP_TRACE_ON_CUDA, HIP_TRACE_AMD, DAY31_TRACE]


# ---- each twin is its lesson's kernels, plus lines marked `// trace` -------------------------

# twin -> (its lesson, the lesson functions it copies). Anything else a twin defines in device
# code is a trace helper (trace_*), called only from marked lines.
TWINS = {
    "day31-scan/trace.cu": ("day31-scan/scan.cu", {"scanInclusiveInPlace", "scanInclusiveNoCopy",
                                                   "hillisSteeleDoubleBuffer", "scanInclusiveDoubleBuffer"}),
    "a05-scan/cuda/trace.cu": ("a05-scan/cuda/scan.cu", {"hillis_steele_scan_tile_pingpong",
                                                         "hillis_steele_scan_tile_staged", "smem_index",
                                                         "blelloch_block_scan", "blelloch_scan_tile"}),
    "a05-scan/hip/trace.cpp": ("a05-scan/hip/scan.cpp", {"hillis_steele_scan_tile_pingpong",
                                                         "hillis_steele_scan_tile_staged", "smem_index",
                                                         "blelloch_block_scan", "blelloch_scan_tile"}),
}
HOOK = re.compile(r"trace|dump|\bg_\w+")  # what no lesson kernel may hold: a trace or dump call, a g_ global


def twin_differences(twin_text: str, lesson_text: str, copies: set[str]) -> list[str]:
    """Why the twin is not the lesson's kernels plus marked lines (none: it is)."""
    lesson = device_functions(device_code(lesson_text))
    marked = device_functions(device_code(twin_text))
    plain = device_functions(device_code(without_trace_lines(twin_text)))
    problems = []
    if set(plain) & set(lesson) != copies:
        problems.append(f"copies {sorted(set(plain) & set(lesson))}, expected {sorted(copies)}")
    for name in sorted(set(plain) - set(lesson)):
        if not name.startswith("trace_"):
            problems.append(f"{name}: in the twin, not in the lesson, and not a trace_ helper")
    for name in sorted(copies & set(plain) & set(lesson)):
        if plain[name] != lesson[name]:
            diff = "\n".join(difflib.unified_diff(lesson[name], plain[name], "lesson", "twin", lineterm="", n=6))
            problems.append(f"{name}, unmarked lines removed, differs from the lesson's (tokens):\n{diff}")
    if all(marked.get(name) == plain.get(name) for name in copies):
        problems.append("no copy has a trace line: nothing is traced")
    helpers = [t for name in copies & set(plain) for t in plain[name] if HOOK.search(t)]
    if helpers:
        problems.append(f"unmarked trace code: {helpers}")
    return problems


def test_no_lesson_kernel_holds_a_trace_dump_or_test_hook():
    for lesson, _ in TWINS.values():
        found = [t for t in device_code((REPO / lesson).read_text()).split() if HOOK.search(t)]
        assert not found, f"{lesson}: a hook in the kernels: {found}"


@pytest.mark.parametrize("twin", list(TWINS))
def test_each_twin_less_its_marked_lines_is_its_lessons_kernels_token_for_token(twin):
    lesson, copies = TWINS[twin]
    problems = twin_differences((REPO / twin).read_text(), (REPO / lesson).read_text(), copies)
    assert not problems, f"{twin} against {lesson}:\n" + "\n".join(problems)


@pytest.mark.parametrize("old, new, why", [
    ("offset *= 2) {", "offset += offset) {", "a changed token in a copied kernel"),
    ("trace_lane(offset, tid, seen, mine, mine + seen);  // trace", "trace_lane(offset, tid, seen, mine, mine + seen);",
     "a trace line without its mark"),
    ("        tile[tid] += seen;\n", "        tile[tid] += seen;  // trace\n", "a lesson line marked as trace"),
    ("__global__ void scanInclusiveNoCopy(", "__global__ void scanInclusiveNoCopyTraced(", "a renamed copy"),
])
def test_the_twin_check_fails_on_a_planted_difference(old, new, why):
    twin, (lesson, copies) = "day31-scan/trace.cu", TWINS["day31-scan/trace.cu"]
    text = (REPO / twin).read_text()
    assert old in text, f"the planted change ({why}) no longer applies; update this test"
    assert twin_differences(text.replace(old, new, 1), (REPO / lesson).read_text(), copies), why


def test_every_marked_line_of_a_twin_is_inside_its_kernels():
    for twin in TWINS:
        text = (REPO / twin).read_text()
        start, end = text.index("// ---- GPU kernels"), text.index("// ---- host side")
        outside = [line for line in (text[:start] + text[end:]).splitlines() if TRACE_MARK.search(line)]
        assert not outside, f"{twin}: marked lines outside the kernels: {outside}"
        assert any(TRACE_MARK.search(line) for line in text[start:end].splitlines()), twin


@pytest.mark.cuda
@pytest.mark.parametrize("program", [DAY31_TRACE, A05_CUDA_TRACE, HIP_TRACE_ON_CUDA], ids=lambda p: p.name)
def test_the_twins_build_without_warnings(builder, program):
    built = builder.get(program)
    assert built.warnings() == [], f"{built.reproduce}\n{built.output}"


@pytest.mark.hip
def test_the_hip_twin_builds_for_amd_without_warnings(builder):
    built = builder.get(HIP_TRACE_AMD)
    assert f"--offload-arch={HIP_ARCH}" in built.reproduce, built.reproduce
    assert built.warnings() == [], f"{built.reproduce}\n{built.output}"


def pictures_module():
    spec = importlib.util.spec_from_file_location("trace_pictures", PICTURES)
    module = importlib.util.module_from_spec(spec)
    sys.modules["trace_pictures"] = module
    spec.loader.exec_module(module)
    return module


tp = pictures_module()


def simulate(values: list[int]) -> dict[str, list[list[int]]]:
    """Every step of the three algorithms on one tile, in plain Python."""
    n = len(values)
    hs, cur, offset = [values[:]], values[:], 1
    while offset < n:
        cur = [cur[i] + (cur[i - offset] if i >= offset else 0) for i in range(n)]
        hs.append(cur[:])
        offset *= 2
    tree, t, offset = [values[:]], values[:], 1
    while offset < n:
        for j in range(n // (2 * offset)):
            t[offset * (2 * j + 2) - 1] += t[offset * (2 * j + 1) - 1]
        tree.append(t[:])
        offset *= 2
    t[n - 1] = 0
    tree.append(t[:])
    while offset > 1:
        offset //= 2
        for j in range(n // (2 * offset)):
            left, node = offset * (2 * j + 1) - 1, offset * (2 * j + 2) - 1
            t[left], t[node] = t[node], t[node] + t[left]
        tree.append(t[:])
    return {"hillis-steele-pingpong": hs, "hillis-steele-staged": hs, "blelloch": tree}


def rows_of(trace) -> dict[str, list[list[int]]]:
    return {k.name: [[int(v) for v in s.values] for s in k.steps] for k in trace.kernels}


def test_the_fixture_is_the_three_algorithms_step_by_step_on_the_pages_input():
    trace = tp.parse(FIXTURE.read_text())
    assert rows_of(trace) == simulate([3, 1, 7, 0, 4, 1, 6, 3])
    labels = {k.name: [s.label for s in k.steps] for k in trace.kernels}
    assert labels["blelloch"] == ["leaves", "up, stride 1", "up, stride 2", "up, stride 4", "root := 0",
                                  "down, stride 4", "down, stride 2", "down, stride 1"]
    assert labels["hillis-steele-pingpong"] == ["in", "offset 1", "offset 2", "offset 4"]


@pytest.mark.parametrize("text, says", [
    ("kernel|x\nrow|sideways 3|1 2\n", "line 2: unknown step label"),
    ("row|in|1 2\n", "line 1: a row before any kernel line"),
    ("kernel|x\nrow|in|1 2\nrow|offset 1|1 2 3\n", "line 3: 3 values where"),
    ("kernel|x\nrow|in|1 two\n", "line 2:"),
    ("gpu|H\n", "no kernel with any rows"),
    ("kernel|x\nsomething else\n", "line 2: not program|"),
])
def test_the_parser_names_the_line_of_a_broken_trace(text, says):
    with pytest.raises(tp.TraceError) as caught:
        tp.parse(text)
    assert says in str(caught.value), str(caught.value)


def test_the_picture_script_draws_valid_png_and_svg_from_the_fixture(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib (harness/requirements.txt) draws the pictures")
    proc = subprocess.run([sys.executable, str(PICTURES), str(FIXTURE), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    for name in ("hillis-steele-pingpong", "hillis-steele-staged", "blelloch"):
        assert (tmp_path / f"trace-{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        svg = (tmp_path / f"trace-{name}.svg").read_text()
        assert svg.lstrip().startswith("<?xml") and "</svg>" in svg


def test_the_picture_script_exit_statuses(tmp_path):
    broken = tmp_path / "broken.txt"
    broken.write_text("kernel|x\nrow|nonsense|1\n")
    run_ = [sys.executable, str(PICTURES)]
    assert subprocess.run([*run_, str(broken)], capture_output=True, timeout=120).returncode == 1
    assert subprocess.run([*run_, str(tmp_path / "missing.txt")], capture_output=True, timeout=120).returncode == 2
    assert subprocess.run([*run_], capture_output=True, timeout=120).returncode == 2


@pytest.mark.cuda
@pytest.mark.parametrize("bad", ["1,x", "", "1,2000", ",".join(["1"] * 65)])
def test_a_bad_trace_input_is_a_usage_error(bad, builder):
    binary = builder.get(A05_CUDA_TRACE).path
    result = run([str(binary), "--trace-input", bad])
    assert result.returncode == EXIT_USAGE and "--trace-input wants" in result.stderr, result.stderr


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("program", [A05_CUDA_TRACE, HIP_TRACE_ON_CUDA], ids=["cuda", "hip-on-cuda"])
def test_the_kernels_trace_is_the_pages_trace(program, builder, tmp_path):
    out = tmp_path / "trace.txt"
    result = run_on_gpu([str(builder.get(program).path), "--trace-out", str(out)])
    assert result.returncode == EXIT_PASS, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1].startswith("all 3 traced kernels ended with the CPU's scan")
    traced = tp.parse(out.read_text())
    assert rows_of(traced) == rows_of(tp.parse(FIXTURE.read_text()))
    assert "   25" in result.stdout and "root := 0" in result.stdout


@pytest.mark.gpu
@pytest.mark.cuda
def test_a_traced_tile_that_is_not_a_power_of_two_is_padded_with_the_identity(builder, tmp_path):
    out = tmp_path / "trace.txt"
    result = run_on_gpu([str(builder.get(A05_CUDA_TRACE).path), "--trace-input", "5,0,2,9,1", "--trace-out", str(out)])
    assert result.returncode == EXIT_PASS, result.stdout + result.stderr
    assert rows_of(tp.parse(out.read_text())) == simulate([5, 0, 2, 9, 1, 0, 0, 0])


@pytest.mark.gpu
@pytest.mark.cuda
def test_the_tracing_build_is_clean_under_racecheck(builder, sanitizer):
    report = sanitize("racecheck", [str(builder.get(A05_CUDA_TRACE).path)])
    assert report.result.returncode != EXIT_NO_GPU
    assert report.clean, report.result.describe()


@pytest.mark.gpu
@pytest.mark.cuda
def test_pictures_draw_from_the_gpus_trace(builder, tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib (harness/requirements.txt) draws the pictures")
    out = tmp_path / "trace.txt"
    assert run_on_gpu([str(builder.get(A05_CUDA_TRACE).path), "--trace-out", str(out)]).returncode == 0
    proc = subprocess.run([sys.executable, str(PICTURES), str(out), "--out", str(tmp_path / "pictures")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert tp.parse(out.read_text()).gpu in (tmp_path / "pictures" / "trace-blelloch.svg").read_text()


# ---- Day 31 --trace: the race, lane by lane ---------------------------------------------------

RACE_FIXTURE = REPO / "harness" / "fixtures" / "race-simulated.txt"
RACE_PICTURE = REPO / "day31-scan" / "race_picture.py"


def race_module():
    spec = importlib.util.spec_from_file_location("race_picture", RACE_PICTURE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["race_picture"] = module
    spec.loader.exec_module(module)
    return module


rp = race_module()


def warp_by_warp(lanes: int, warp: int) -> list[set[int]]:
    """The stale reads of the in-place kernel when each warp does a whole step before the next starts."""
    values, offset, stale = [i % 8 + 1 for i in range(lanes)], 1, []
    while offset < lanes:
        before, found = values[:], set()
        for w in range(0, lanes, warp):
            seen = {t: values[t - offset] for t in range(w, w + warp) if t >= offset}
            found |= {t for t, v in seen.items() if v != before[t - offset]}
            for t, v in seen.items():
                values[t] += v
        stale.append(found)
        offset *= 2
    return stale


def test_the_race_fixture_parses_and_its_stale_reads_are_the_simulated_ones():
    race = rp.parse(RACE_FIXTURE.read_text())
    assert (race.lanes, race.warp, list(race.kernels)) == (8, 4, ["in-place", "no-copy", "double-buffer"])
    assert [set(s.stale_reads()) for s in race.kernels["in-place"]] == warp_by_warp(8, 4) == [{4}, {4, 5}, set()]
    assert all(not s.stale_reads() for s in race.kernels["double-buffer"])
    assert all(not s.stale_reads() for s in race.kernels["no-copy"])
    assert any(s.stale_words() for s in race.kernels["no-copy"])  # the words nobody copied forward
    assert not any(s.stale_words() for s in race.kernels["double-buffer"])


@pytest.mark.parametrize("text, says", [
    ("lanes|2\nkernel|x\nread|1|1|? 1\n", "a step without all of read"),
    ("lanes|2\nread|1|1|? 1\n", "line 2: a step before any kernel line"),
    ("lanes|3\nkernel|x\nread|1|1|? 1\n", "line 3: 2 values for 3 lanes"),
    ("lanes|2\nkernel|x\nread|2|2|? 1\n", "line 3: step 2 out of order"),
    ("kernel|x\n", "no lanes| line"),
])
def test_the_race_parser_names_the_line_of_a_broken_trace(text, says):
    with pytest.raises(rp.TraceError) as caught:
        rp.parse(text)
    assert says in str(caught.value), str(caught.value)


def test_the_race_picture_draws_valid_png_and_svg(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib (harness/requirements.txt) draws the pictures")
    proc = subprocess.run([sys.executable, str(RACE_PICTURE), str(RACE_FIXTURE), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "race.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "</svg>" in (tmp_path / "race.svg").read_text()
    broken = tmp_path / "broken.txt"
    broken.write_text("kernel|x\n")
    assert subprocess.run([sys.executable, str(RACE_PICTURE), str(broken)], capture_output=True,
                          timeout=120).returncode == 1


DAY31 = DAY31_TRACE


@pytest.mark.cuda
@pytest.mark.parametrize("bad", ["3", "0", "2048", "x"])
def test_day31_refuses_a_bad_trace_lanes(bad, builder):
    result = run([str(builder.get(DAY31).path), "--trace-lanes", bad])
    assert result.returncode == EXIT_USAGE and "--trace-lanes wants" in result.stderr, result.stderr


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("lanes", [32, 64])
def test_day31_trace_stale_reads_across_warps_only(lanes, builder, tmp_path):
    out = tmp_path / "race.txt"
    result = run_on_gpu([str(builder.get(DAY31).path), "--trace-lanes", str(lanes), "--trace-out", str(out)])
    assert result.returncode == EXIT_PASS, result.stdout + result.stderr
    race = rp.parse(out.read_text())
    in_place = sum(len(s.stale_reads()) for s in race.kernels["in-place"])
    assert all(not s.stale_reads() for s in race.kernels["double-buffer"])
    assert any(s.stale_words() for s in race.kernels["no-copy"])
    # the no-copy kernel reads only the half nobody writes during the step: never stale (a
    # NaN read from never-written shared memory is the same NaN its owner held, not a change)
    assert not any(s.stale_reads() for s in race.kernels["no-copy"]) and "; no copy 0;" in result.stdout, result.stdout
    if lanes == 32:  # one warp: its lanes step together, nothing is read after it is overwritten
        assert in_place == 0 and "in place 0 " in result.stdout, result.stdout
    else:  # two warps: in some block, a lane of warp 1 reads a word warp 0 already rewrote
        assert in_place > 0, result.stdout


@pytest.mark.gpu
@pytest.mark.cuda
def test_day31_tracing_build_keeps_the_fix_clean_under_racecheck(builder, sanitizer):
    """The traced double-buffered kernel's extra reads add no hazard (the in-place kernel's race is
    the point of the trace, so racecheck watches the double-buffered kernel only)."""
    binary = str(builder.get(DAY31).path)
    report = sanitize("racecheck", ["--kernel-name", "kns=scanInclusiveDoubleBuffer", binary, "--trace-lanes", "64"])
    assert report.clean, report.result.describe()
    assert report.result.returncode == EXIT_PASS, report.result.describe()


# ---- the committed H200 traces the READMEs show -----------------------------------------------

def test_the_committed_h200_traces_say_what_the_readmes_say_of_them():
    """a05: the kernels' own rows on an H200 are the page's. Day 31: the in-place kernel's stale
    reads all cross the warp boundary, the no-copy kernel reads nothing stale but leaves stale
    words, the double-buffered kernel neither; and each README shows the picture drawn from it."""
    traced = tp.parse((REPO / "a05-scan" / "pictures" / "h200-trace.txt").read_text())
    assert "H200" in traced.gpu and rows_of(traced) == rows_of(tp.parse(FIXTURE.read_text()))
    race = rp.parse((REPO / "day31-scan" / "pictures" / "h200-race.txt").read_text())
    assert "H200" in race.gpu and race.lanes == 64 and race.warp == 32
    crossing = [(t, s.offset) for s in race.kernels["in-place"] for t in s.stale_reads()]
    assert crossing and all(t // race.warp != (t - off) // race.warp for t, off in crossing), crossing
    assert not any(s.stale_reads() for s in race.kernels["no-copy"]) and any(s.stale_words() for s in race.kernels["no-copy"])
    assert not any(s.stale_reads() or s.stale_words() for s in race.kernels["double-buffer"])
    for readme, picture in (("a05-scan/README.md", "pictures/h200-trace-blelloch.png"),
                            ("day31-scan/README.md", "pictures/h200-race.png")):
        assert f"]({picture})" in (REPO / readme).read_text() and (REPO / readme).parent.joinpath(picture).is_file()
