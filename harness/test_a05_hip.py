"""A05, HIP side: a05-scan/hip/scan.cpp (Lab 1) and a05-scan/hip/compaction.cpp (Lab 2).

Each HIP program is built twice:
- for AMD, by hipcc for gfx90a (Debian's HIP 5.2 in CI). No AMD GPU is attached
  anywhere the harness runs, so these binaries are only built (without warnings)
  and run as far as their no-device line and status 3.
- for NVIDIA, by nvcc through the project's HIP-on-CUDA header
  (harness/hip_on_cuda/hip/hip_runtime.h). Without a GPU: --help and bad flags say
  exactly what the CUDA programs say. With a GPU: run with the CUDA programs' inputs,
  every output matches the CUDA program's line for line, except the device lines of
  the header and the timing figures; compute-sanitizer's racecheck and memcheck
  are clean.

The wavefront width: one code path depends on it, the warp-shuffle block scan of
Part 3 (--block-scan warp), and it takes the width from warpSize alone. Through the
header it runs with NVIDIA's 32 lanes; the 64-lane CDNA path is compiled (hipcc,
gfx90a) but not executed here. A lint below keeps every other kernel free of lane
counts and lockstep operations, and fails with what to do when one appears.
"""

from __future__ import annotations

import difflib
import re
import subprocess
from pathlib import Path

import pytest

from scanlab import EXIT_NO_GPU, EXIT_PASS, EXIT_USAGE, env
from scanlab.build import A05_CUDA_COMPACTION as CUDA_COMPACTION
from scanlab.build import A05_CUDA_SCAN as CUDA_SCAN
from scanlab.build import HIP_ARCH, Program
from scanlab.paths import REPO
from scanlab.run import Result, run, run_on_gpu, split_row
from scanlab.sanitizer import sanitize
from scanlab.source import device_code

SOURCES = {"scan": "a05-scan/hip/scan.cpp", "compaction": "a05-scan/hip/compaction.cpp"}
CUDA_SOURCES = {"scan": "a05-scan/cuda/scan.cu", "compaction": "a05-scan/cuda/compaction.cu"}

# The AMD builds are the Makefile's own (`make hip`, the made_hip fixture), not the builder's.
ON_CUDA = {name: Program(f"a05-hip-{name}-on-cuda", (src,), compiler="nvcc-hip") for name, src in SOURCES.items()}
CUDA = {"scan": CUDA_SCAN, "compaction": CUDA_COMPACTION}
BUILDS = [*ON_CUDA.values(), CUDA_SCAN, CUDA_COMPACTION]

PROGRAMS = ["scan", "compaction"]


# ---- the comparison: what may differ between the CUDA and the HIP output ------------
#
# 1. The header's device lines: the HIP programs print the target (gcnArchName), the
#    wavefront size and the LDS sizes where the CUDA programs print the compute
#    capability, the warp size and the shared memory. They are dropped from both
#    outputs, after checking each says the same about the GPU (device_facts).
# 2. Timing figures: in a table with a timing column, those cells become <time>
#    (the other cells, and the tables without timing, must match exactly); in the two
#    sentences that quote measured ratios, the ratios become <time>.
# Everything else must be identical, character for character.

DEVICE_LINE_PREFIXES = {"scan": ("GPU: ", "Max threads per block: "), "compaction": ("GPU: ",)}
TIMING_COLUMNS = {"time (ms)", "GB/s", "vs Blelloch", "of copy", "share"}
TIMING_SENTENCES = [
    (re.compile(r"; it takes \d+\.\d+x \(ping-pong\) and \d+\.\d+x \(register-staged\) Blelloch's time$"),
     "; it takes <time>x (ping-pong) and <time>x (register-staged) Blelloch's time"),
    (re.compile(r"^the 3-phase scan reaches \d+\.\d+ of the copy ceiling"), "the 3-phase scan reaches <time> of the copy ceiling"),
]
TIME = "<time>"


def is_dashes(line: str) -> bool:
    return bool(line.strip()) and set(line.strip()) <= {"-", " "}


def normalise(stdout: str, program: str) -> list[str]:
    """The output with the device lines dropped and the timing figures masked."""
    lines = stdout.splitlines()
    out: list[str] = []
    at = 0
    while at < len(lines):
        line = lines[at]
        if line.startswith(DEVICE_LINE_PREFIXES[program]):
            at += 1
            continue
        if at + 1 < len(lines) and is_dashes(lines[at + 1]):
            header = split_row(line)
            timed = [cell in TIMING_COLUMNS for cell in header]
            if any(timed):
                # Column widths follow the timings, so the table is rewritten cell by cell.
                out += [" | ".join(header), "-"]
                at += 2
                while at < len(lines) and lines[at].strip():
                    cells = split_row(lines[at])
                    if len(cells) != len(header):
                        out.append(f"ROW DOES NOT FIT ITS HEADER: {lines[at]}")
                    else:
                        out.append(" | ".join(TIME if t else c for c, t in zip(cells, timed)))
                    at += 1
                continue
        for pattern, masked in TIMING_SENTENCES:
            line = pattern.sub(masked, line)
        out.append(line)
        at += 1
    return out


CUDA_GPU_LINE = re.compile(r"^GPU: (?P<name>.+) \(compute capability (?P<major>\d+)\.(?P<minor>\d+)\), "
                           r"warp size (?P<width>\d+), (?P<units>\d+) SMs, L2 cache (?P<l2>\d+) MiB$", re.M)
HIP_GPU_LINE = re.compile(r"^GPU: (?P<name>.+) \((?P<arch>[^()]+)\), wavefront size (?P<width>\d+), "
                          r"(?P<units>\d+) compute units, L2 cache (?P<l2>\d+) MiB$", re.M)
CUDA_LIMITS_LINE = re.compile(r"^Max threads per block: (?P<threads>\d+), shared memory per block: (?P<block>\d+) B, "
                              r"shared memory banks: (?P<banks>\d+) x 4 B$", re.M)
HIP_LIMITS_LINE = re.compile(r"^Max threads per block: (?P<threads>\d+), LDS per block: (?P<block>\d+) B, "
                             r"LDS per CU: (?P<unit>\d+) B, LDS banks: (?P<banks>\d+) x 4 B$", re.M)


def device_facts(program: str, cuda: str, hip: str):
    """The dropped device lines: present once, first, and saying the same about the GPU."""
    prefixes = DEVICE_LINE_PREFIXES[program]
    for text, what in ((cuda, "CUDA"), (hip, "HIP")):
        lines = text.splitlines()
        opens = len(lines) >= len(prefixes) and all(line.startswith(p) for line, p in zip(lines, prefixes))
        assert opens, f"the {what} output does not open with its device lines {prefixes}:\n{text}"
        assert sum(line.startswith(prefixes) for line in lines) == len(prefixes), f"device lines repeated:\n{text}"
    c, h = CUDA_GPU_LINE.search(cuda), HIP_GPU_LINE.search(hip)
    assert c and h, f"device line not in the expected form\nCUDA: {cuda.splitlines()[0]}\nHIP:  {hip.splitlines()[0]}"
    # Through the header, gcnArchName is "sm_XY" and the wavefront is NVIDIA's warp.
    assert h["arch"] == f"sm_{c['major']}{c['minor']}", (c.group(0), h.group(0))
    assert (h["name"], h["width"], h["units"], h["l2"]) == (c["name"], c["width"], c["units"], c["l2"]), \
        (c.group(0), h.group(0))
    if program == "scan":
        c, h = CUDA_LIMITS_LINE.search(cuda), HIP_LIMITS_LINE.search(hip)
        assert c and h, f"limits line not in the expected form\n{cuda}\n{hip}"
        assert (h["threads"], h["block"], h["banks"]) == (c["threads"], c["block"], c["banks"]), (c.group(0), h.group(0))
        assert int(h["unit"]) >= int(h["block"]), h.group(0)


def assert_same_run(program: str, cuda: Result, hip: Result):
    """Both passed every gated check, and printed the same thing (see normalise)."""
    want, got = normalise(cuda.stdout, program), normalise(hip.stdout, program)
    diff = "\n".join(difflib.unified_diff(want, got, f"{CUDA_SOURCES[program]} (normalised)",
                                          f"{SOURCES[program]} through hip_on_cuda (normalised)", lineterm=""))
    problems = []
    if cuda.returncode != EXIT_PASS:
        problems.append(f"the CUDA program exited {cuda.returncode}")
    if hip.returncode != EXIT_PASS:
        problems.append(f"the HIP program exited {hip.returncode}")
    if diff:
        problems.append("the outputs differ")
    if hip.stderr != cuda.stderr:
        problems.append("stderr differs")
    if problems:
        pytest.fail(f"{'; '.join(problems)}\n{diff}\n\n== CUDA\n{cuda.describe()}\n== HIP\n{hip.describe()}",
                    pytrace=False)
    device_facts(program, cuda.stdout, hip.stdout)


# ---- the comparison itself, tested without a GPU ------------------------------------

SAMPLE_CUDA = """GPU: NVIDIA H200 (compute capability 9.0), warp size 32, 132 SMs, L2 cache 60 MiB
Max threads per block: 1024, shared memory per block: 49152 B, shared memory banks: 32 x 4 B
Input: 1048576 floats (4.0 MiB), cycle: in[i] = 1 + i % 13, values 1..13

kernel                   kind       adds/tile  mismatches  time (ms)  GB/s    vs Blelloch
-----------------------  ---------  ---------  ----------  ---------  ------  -----------
Hillis-Steele ping-pong  inclusive  1793       0           0.0123     682.0   1.05x
Blelloch (padded)        exclusive  510        0           0.0117     717.1   1.00x

Hillis-Steele does 3.5x the additions of Blelloch per tile of 256; it takes 1.05x (ping-pong) and 1.10x (register-staged) Blelloch's time
the 3-phase scan reaches 0.21 of the copy ceiling; it moves about 4n bytes against the
all 7 gated checks passed: every kernel matched its CPU reference exactly
"""
SAMPLE_HIP = """GPU: NVIDIA H200 (sm_90), wavefront size 32, 132 compute units, L2 cache 60 MiB
Max threads per block: 1024, LDS per block: 49152 B, LDS per CU: 233472 B, LDS banks: 32 x 4 B
Input: 1048576 floats (4.0 MiB), cycle: in[i] = 1 + i % 13, values 1..13

kernel                   kind       adds/tile  mismatches  time (ms)  GB/s     vs Blelloch
-----------------------  ---------  ---------  ----------  ---------  -------  -----------
Hillis-Steele ping-pong  inclusive  1793       0           0.0101     1003.9   0.99x
Blelloch (padded)        exclusive  510        0           0.0102     1001.2   1.00x

Hillis-Steele does 3.5x the additions of Blelloch per tile of 256; it takes 0.99x (ping-pong) and 1.12x (register-staged) Blelloch's time
the 3-phase scan reaches 0.19 of the copy ceiling; it moves about 4n bytes against the
all 7 gated checks passed: every kernel matched its CPU reference exactly
"""


def sample_result(text: str) -> Result:
    return Result(["sample"], EXIT_PASS, text, "")


def test_comparison_ignores_only_device_lines_and_timings():
    assert_same_run("scan", sample_result(SAMPLE_CUDA), sample_result(SAMPLE_HIP))


@pytest.mark.parametrize("old, new, why", [
    pytest.param("1793       0   ", "1793       1   ", "a mismatch count", id="table-cell"),
    pytest.param("all 7 gated", "all 6 gated", "the last line", id="last-line"),
    pytest.param("does 3.5x the", "does 3.4x the", "a ratio of additions, not a timing", id="work-ratio"),
    pytest.param("values 1..13\n", "values 1..12\n", "the input line", id="input-line"),
    pytest.param("wavefront size 32", "wavefront size 64", "a device line that disagrees with CUDA's", id="device-line"),
])
def test_comparison_catches_a_real_difference(old, new, why):
    assert old in SAMPLE_HIP
    with pytest.raises((pytest.fail.Exception, AssertionError)):
        assert_same_run("scan", sample_result(SAMPLE_CUDA), sample_result(SAMPLE_HIP.replace(old, new)))


# ---- wavefront width: only through warpSize and shuffle_up() ------------------------

# In device code, any of these is a lockstep (warp/wavefront-synchronous) assumption.
# The one sanctioned width dependence is warpSize itself (64 on CDNA, 32 on NVIDIA),
# and the one sanctioned lockstep operation is the shuffle inside shuffle_up().
LOCKSTEP = re.compile(r"\b(__shfl\w*|__ballot\w*|__any\w*|__all\w*|__activemask|__syncwarp|__lane_id|"
                      r"__match\w*|__reduce_\w+_sync|__builtin_amdgcn_\w+)\b")
# Literal lane widths and lane math: 31, 32, 63, 64, or a shift by 5 or 6.
LANE_LITERAL = re.compile(r"\b(31|32|63|64)\b|(>>|<<)\s*[56]\b")
# LOG_NUM_BANKS is 5 because LDS and shared memory have 32 banks on both vendors:
# banks, not lanes, and the padding macro shifts by the name, never by a literal.
# shuffle_up()'s body is the warp scan's only shuffle, spelled once per vendor.
VENDOR_SHUFFLE = {"hip": "return __shfl_up(v, delta);", "cuda": "return __shfl_up_sync(0xffffffffu, v, delta);"}
ALLOWED_DEVICE_LINES = {"#define LOG_NUM_BANKS 5", *VENDOR_SHUFFLE.values()}


def lane_width_assumptions(source: str) -> list[str]:
    found = []
    for line in device_code(source).splitlines():
        code = line.strip()
        if code in ALLOWED_DEVICE_LINES:
            continue
        if LOCKSTEP.search(code) or LANE_LITERAL.search(code):
            found.append(code)
    return found


@pytest.mark.hip
@pytest.mark.parametrize("program", PROGRAMS)
def test_kernels_take_the_wavefront_width_only_from_warpsize(program):
    found = lane_width_assumptions((REPO / SOURCES[program]).read_text())
    assert found == [], (
        f"{SOURCES[program]}: device code now depends on the lockstep width:\n  " + "\n  ".join(found) +
        "\nTake the width from warpSize (64 on CDNA, 32 on NVIDIA) and shuffle only through shuffle_up(); "
        "then update the README's wavefront note and this test.")


@pytest.mark.hip
@pytest.mark.parametrize("planted", [
    pytest.param("    const float y = __shfl_up(x, 1);", id="shuffle"),
    pytest.param("    const unsigned int lane = tid & 31;", id="lane-mask-31"),
    pytest.param("    if (tid < 32) temp[tid] += temp[tid + 32];", id="warp-synchronous-tail"),
    pytest.param("    const unsigned int wave = tid >> 5;", id="shift-by-5"),
    pytest.param("    const unsigned int vote = __ballot(tid > 3);", id="ballot-assumes-a-lane-count"),
    pytest.param("    const unsigned int lane = tid % 64;", id="wavefront-64-literal"),
])
def test_the_width_lint_catches_planted_assumptions(planted):
    source = (REPO / SOURCES["scan"]).read_text()
    kernel = "__global__ void hillis_steele_scan_tile_staged("
    assert kernel in source
    at = source.index("\n", source.index(kernel)) + 1
    assert lane_width_assumptions(source[:at] + planted + "\n" + source[at:]) == [planted.strip()]


@pytest.mark.hip
@pytest.mark.parametrize("program", PROGRAMS)
def test_kernels_are_the_cuda_kernels_token_for_token(program):
    """The GPU comparison runs HIP's kernels on NVIDIA; they must be the ones AMD gets,
    and the same as CUDA's, so that a passing comparison says something about both."""
    hip_code = device_code((REPO / SOURCES[program]).read_text())
    # The shuffle is the one line spelled per vendor; it must appear exactly where CUDA has its own.
    assert hip_code.count("__shfl") == hip_code.count(VENDOR_SHUFFLE["hip"])
    hip = hip_code.replace(VENDOR_SHUFFLE["hip"], VENDOR_SHUFFLE["cuda"]).split()
    cuda = device_code((REPO / CUDA_SOURCES[program]).read_text()).split()
    if hip != cuda:
        diff = "\n".join(difflib.unified_diff(cuda, hip, CUDA_SOURCES[program], SOURCES[program], lineterm="", n=8))
        pytest.fail(f"the kernels of the two ports differ (tokens, comments ignored):\n{diff}", pytrace=False)


def test_the_first_kernel_of_lab_1_starts_by_line_170():
    """The port keeps cuda/scan.cu's reading order, and its budget: the map, the includes and the
    error macros, the CPU reference, then the kernels; the host's limits and declarations below them."""
    lines = (REPO / SOURCES["scan"]).read_text().splitlines()
    first = next(k for k, line in enumerate(lines, 1) if line.startswith("__global__"))
    assert first <= 170, f"{SOURCES['scan']}: the first kernel starts at line {first}, past the budget of 170"


# ---- without a GPU: the AMD build ----------------------------------------------------

@pytest.mark.hip
@pytest.mark.builds
@pytest.mark.parametrize("program", PROGRAMS)
def test_hipcc_builds_for_gfx90a_without_warnings(made_hip, program):
    proc, build = made_hip
    assert proc.returncode == 0 and (build / program).exists(), proc.stdout + proc.stderr
    line = next((line for line in proc.stdout.splitlines() if line.endswith(f"hip/{program}.cpp")), "")
    assert f"--offload-arch={HIP_ARCH}" in line and "-Wall -Wextra" in line, proc.stdout
    warned = [line for line in proc.stderr.splitlines() if f"{program}.cpp:" in line and "warning" in line]
    assert warned == [], proc.stderr


@pytest.mark.hip
@pytest.mark.builds
def test_hipcc_leaves_nothing_in_the_temporary_folder(tmp_path):
    """Debian's hipcc leaves an empty <name>-XXXXXX folder in $TMPDIR at every compile; the
    harness gives it a folder of its own, removed after, so CI machines do not fill /tmp.
    (A process of its own: this one's background builds would write to the folder watched.)"""
    import os
    import sys

    from scanlab.env import require_hipcc

    require_hipcc()  # this test is about hipcc itself: the HIP-on-CUDA header is no stand-in
    shared = tmp_path / "tmp"
    shared.mkdir()
    out = tmp_path / "out"
    # A small kernel: what is watched is hipcc's $TMPDIR, not the lesson (test_hipcc_builds_* builds that).
    source = tmp_path / "tiny.cpp"
    source.write_text("#include <hip/hip_runtime.h>\n__global__ void twice(int* v) { v[threadIdx.x] *= 2; }\n"
                      "int main() { int* d = nullptr; return hipMalloc(&d, 4) == hipSuccess ? 0 : 3; }\n")
    script = ("import sys; from scanlab.build import compile_program, Program; "
              f"b = compile_program(Program('x', ({str(source)!r},), compiler='hipcc'), "
              f"__import__('pathlib').Path({str(out)!r})); print(b.output); sys.exit(0 if b.ok else 1)")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                          cwd=REPO / "harness", env={**os.environ, "TMPDIR": str(shared)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert list(shared.iterdir()) == []
    assert [p.name for p in out.iterdir()] == ["x"]


@pytest.mark.hip
@pytest.mark.builds
@pytest.mark.parametrize("program", PROGRAMS)
def test_hipcc_binary_without_an_amd_gpu_gives_one_line_and_status_3(made_hip, program):
    # Nowhere the harness runs has an AMD GPU; hiding devices keeps this true on one that does.
    proc, build = made_hip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = run([build / program, "--n", "1000"],
                 env_vars={"HIP_VISIBLE_DEVICES": "-1", "ROCR_VISIBLE_DEVICES": "-1"})
    assert result.returncode == EXIT_NO_GPU, result.describe()
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{program}: no usable GPU: "), result.describe()
    assert re.search(r"\(hipError\w+\)$", lines[0]), f"the line should name the HIP runtime's error\n{result.describe()}"
    assert result.stdout == ""


def make_hip(tmp_path, gpu_arch: str) -> subprocess.CompletedProcess:
    """`make -C a05-scan hip` with a $TMPDIR of its own that must stay empty: the Makefile gives
    hipcc a folder of its own and removes it (Debian's hipcc leaves one behind per compile),
    whether the build works or not."""
    import os

    watched = tmp_path / "tmp"
    watched.mkdir()
    proc = subprocess.run(["make", "-C", str(REPO / "a05-scan"), "hip", f"GPU_ARCH={gpu_arch}",
                           f"BUILD={tmp_path / 'build'}"], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TMPDIR": str(watched)})
    assert list(watched.iterdir()) == [], f"make hip left {sorted(p.name for p in watched.iterdir())} in $TMPDIR"
    left = sorted(p.name for p in (tmp_path / "build").rglob(".hipcc-tmp-*"))
    assert left == [], f"make hip left its own hipcc folders behind: {left}"
    return proc


@pytest.fixture(scope="module")
def made_hip(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """`make hip` for gfx90a, once (it leaves nothing in $TMPDIR: make_hip checks): the process and
    the folder of its programs. The AMD tests read this one build, the one a student makes."""
    env.require_hipcc()
    tmp_path = tmp_path_factory.mktemp("make-hip")
    return make_hip(tmp_path, HIP_ARCH), tmp_path / "build" / "a05-scan" / "hip"


@pytest.mark.hip
@pytest.mark.builds
def test_make_hip_builds_for_gfx90a_and_leaves_nothing_in_the_temporary_folder(made_hip):
    proc, build = made_hip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for program in PROGRAMS:
        assert (build / program).exists()


@pytest.mark.hip
@pytest.mark.builds
def test_make_hip_for_gfx942_builds_or_says_which_rocm_it_needs(tmp_path):
    """MI300 needs ROCm 6.0 or newer; Debian's hipcc (HIP 5.2) does not know gfx942."""
    env.require_hipcc()
    proc = make_hip(tmp_path, "gfx942")
    if proc.returncode == 0:
        return  # a ROCm new enough for MI300
    assert "gfx942 6.0+" in proc.stderr and "make hip GPU_ARCH=gfx90a" in proc.stderr, proc.stdout + proc.stderr


# ---- without a GPU: the build through the HIP-on-CUDA header -------------------------

@pytest.mark.hip
@pytest.mark.parametrize("program", PROGRAMS)
def test_nvcc_builds_through_the_compatibility_header_without_warnings(builder, program):
    built = builder.get(ON_CUDA[program])
    assert "harness/hip_on_cuda" in built.reproduce and "-x cu" in built.reproduce, built.reproduce
    assert built.warnings() == [], f"{built.reproduce}\n{built.output}"


@pytest.mark.hip
@pytest.mark.parametrize("program", PROGRAMS)
def test_header_build_without_a_gpu_gives_one_line_and_status_3(builder, program):
    # No driver here: cudaErrorInsufficientDriver; a GPU machine with every device
    # hidden: cudaErrorNoDevice. Either way one line, status 3, and the error's name in
    # CUDA's spelling shows that the CUDA runtime answered through the header.
    result = run([builder.get(ON_CUDA[program]).path, "--n", "1000"], env_vars={"CUDA_VISIBLE_DEVICES": ""})
    assert result.returncode == EXIT_NO_GPU, result.describe()
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{program}: no usable GPU: "), result.describe()
    assert re.search(r"\(cudaError\w+\)$", lines[0]), result.describe()
    assert result.stdout == ""


def as_hip(cuda_text: str) -> str:
    """What the HIP program prints where the CUDA one names its runtime."""
    return cuda_text.replace("CUDA", "HIP")


BUILD_KINDS = ["through-header", f"hipcc-{HIP_ARCH}"]


def hip_program(request, builder, kind: str, program: str) -> Path:
    """The HIP program built through the HIP-on-CUDA header (the builder's), or for AMD (`make hip`'s)."""
    if kind == "through-header":
        return builder.get(ON_CUDA[program]).path
    proc, build = request.getfixturevalue("made_hip")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return build / program


@pytest.mark.hip
@pytest.mark.parametrize("builds", BUILD_KINDS)
@pytest.mark.parametrize("program", PROGRAMS)
def test_help_is_the_cuda_programs_help(request, builder, builds, program):
    cuda = run([builder.get(CUDA[program]).path, "--help"])
    hip = run([hip_program(request, builder, builds, program), "--help"])
    assert (cuda.returncode, hip.returncode) == (EXIT_PASS, EXIT_PASS), cuda.describe() + hip.describe()
    assert "HIP call failed" in hip.stdout
    assert hip.stdout == as_hip(cuda.stdout), "\n".join(difflib.unified_diff(
        as_hip(cuda.stdout).splitlines(), hip.stdout.splitlines(), "cuda --help", "hip --help", lineterm=""))


BAD_FLAGS = [
    pytest.param("scan", ["--tile", "48"], id="scan-tile-not-a-power-of-two"),
    pytest.param("scan", ["--items", "3"], id="scan-items-3"),
    pytest.param("scan", ["--part", "1,,3"], id="scan-part-empty-item"),
    pytest.param("scan", ["--seed", "4"], id="scan-seed-without-random"),
    pytest.param("scan", ["--check-only=yes"], id="scan-check-only-with-a-value"),
    pytest.param("scan", ["--n"], id="scan-n-missing-value"),
    pytest.param("compaction", ["--keep", "1.5"], id="compaction-keep-over-1"),
    pytest.param("compaction", ["--pattern", "cycle"], id="compaction-pattern-of-the-scan"),
    pytest.param("compaction", ["--pattern", "no-zero", "--keep", "0.5"], id="compaction-keep-without-random"),
    pytest.param("compaction", ["--frobnicate"], id="compaction-unknown-flag"),
]


@pytest.mark.hip
@pytest.mark.parametrize("builds", BUILD_KINDS)
@pytest.mark.parametrize("program, args", BAD_FLAGS)
def test_bad_flags_are_refused_like_the_cuda_programs(request, builder, builds, program, args):
    cuda = run([builder.get(CUDA[program]).path, *args])
    hip = run([hip_program(request, builder, builds, program), *args])
    assert cuda.returncode == EXIT_USAGE and "usage:" in cuda.stderr, cuda.describe()
    assert hip.returncode == EXIT_USAGE, hip.describe()
    assert hip.stderr == as_hip(cuda.stderr) and hip.stdout == "", hip.describe()


# ---- on a GPU: the HIP programs through the header, against the CUDA programs -------

def run_pair(builder, program: str, args: list) -> tuple[Result, Result]:
    cuda = run_on_gpu([builder.get(CUDA[program]).path, *args])
    hip = run_on_gpu([builder.get(ON_CUDA[program]).path, *args])
    return cuda, hip


SCAN_RUNS = [
    pytest.param(["--n", "4099"], id="all-parts-n=4099-17-tiles"),
    pytest.param(["--n", "0"], id="n=0-nothing-launched"),
    pytest.param(["--n", "1"], id="n=1-lane-0-alone"),
    pytest.param(["--n", "257"], id="n=257-tile-plus-1-second-level"),
    pytest.param(["--n", "65537"], id="n=65537-third-level-appears"),
    pytest.param(["--n", "65537", "--pattern", "random", "--seed", "20240"], id="random-seed-20240"),
    pytest.param(["--n", "100003", "--no-padding"], id="no-padding"),
    pytest.param(["--n", "70001", "--tile", "32", "--pattern", "random", "--seed", "7"],
                 id="tile=32-half-a-cdna-wavefront-4-levels"),
    pytest.param(["--n", "1048577", "--tile", "1024"], id="tile=1024-the-most-lds-a-block-takes"),
    pytest.param(["--part", "3", "--n", "100003", "--threads", "128", "--items", "4", "--pattern", "random",
                  "--seed", "99"], id="items-4-float4-runs-partial-tiles"),
    pytest.param(["--part", "3", "--n", "1000003", "--threads", "64", "--items", "16"], id="items-16-64-threads"),
    pytest.param(["--part", "3", "--n", "1000003", "--threads", "256", "--items", "4", "--block-scan", "warp",
                  "--pattern", "random", "--seed", "12"], id="warp-shuffle-block-scan-256x4"),
    pytest.param(["--part", "3", "--n", "70001", "--threads", "1024", "--block-scan", "warp"],
                 id="warp-shuffle-block-scan-32-warps"),
]


@pytest.mark.hip
@pytest.mark.gpu
@pytest.mark.parametrize("args", SCAN_RUNS)
def test_scan_matches_the_cuda_program(builder, args):
    assert_same_run("scan", *run_pair(builder, "scan", [*args, "--check-only"]))


COMPACTION_RUNS = [
    pytest.param(["--n", "0", "--seed", "5"], id="n=0-nothing-launched"),
    pytest.param(["--n", "1", "--seed", "5"], id="n=1-count-is-offsets[0]+flags[0]"),
    pytest.param(["--n", "257", "--seed", "5"], id="n=257-random-two-levels"),
    pytest.param(["--n", "65537", "--seed", "5"], id="n=65537-random-three-levels"),
    pytest.param(["--n", "257", "--pattern", "all-zero"], id="n=257-all-zero"),
    pytest.param(["--n", "65537", "--pattern", "all-zero"], id="n=65537-all-zero"),
    pytest.param(["--n", "257", "--pattern", "no-zero"], id="n=257-no-zero"),
    pytest.param(["--n", "65537", "--pattern", "no-zero"], id="n=65537-no-zero"),
    pytest.param(["--n", "257", "--pattern", "alternating"], id="n=257-alternating"),
    pytest.param(["--n", "65537", "--pattern", "alternating"], id="n=65537-alternating"),
    pytest.param(["--n", "100003", "--keep", "0.03", "--seed", "8"], id="sparse-keep-3%"),
    pytest.param(["--n", "100003", "--keep", "0.97", "--seed", "8", "--threads", "32"], id="dense-keep-97%-tiles-of-32"),
    pytest.param(["--n", "1000003", "--pattern", "alternating", "--threads", "1024"], id="tiles-of-1024"),
]


@pytest.mark.hip
@pytest.mark.gpu
@pytest.mark.parametrize("args", COMPACTION_RUNS)
def test_compaction_matches_the_cuda_program(builder, args):
    assert_same_run("compaction", *run_pair(builder, "compaction", [*args, "--check-only"]))


@pytest.mark.hip
@pytest.mark.gpu
@pytest.mark.parametrize("program, args", [
    pytest.param("scan", ["--n", str(1 << 20), "--reps", "2"], id="scan-all-parts"),
    pytest.param("compaction", ["--n", str(1 << 20), "--seed", "3", "--reps", "2"], id="compaction"),
])
def test_timed_runs_match_except_the_timings(builder, program, args):
    cuda, hip = run_pair(builder, program, args)
    assert_same_run(program, cuda, hip)
    assert TIME in "\n".join(normalise(hip.stdout, program)), "a timed run should have had timings to mask"


# Small sizes, nothing timed: the shapes test_a05_cuda.py sanitizes for the CUDA programs.
SANITIZED = [
    pytest.param("scan", ["--n", "5000", "--tile", "64", "--pattern", "random", "--seed", "3"], id="scan-every-part"),
    pytest.param("compaction", ["--n", "5000", "--threads", "64", "--seed", "3"], id="compaction"),
]


@pytest.mark.hip
@pytest.mark.gpu
@pytest.mark.parametrize("tool", ["racecheck", "memcheck"])
@pytest.mark.parametrize("program, args", SANITIZED)
def test_sanitizer_clean_through_the_header(builder, program, args, tool):
    report = sanitize(tool, [builder.get(ON_CUDA[program]).path, *args, "--check-only"])
    assert report.clean, report.result.describe()
    if tool == "racecheck":
        assert report.hazards == 0, report.result.describe()
    assert report.result.returncode == EXIT_PASS, report.result.describe()
