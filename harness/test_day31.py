"""Day 31: day31-scan/scan.cu, the Hillis-Steele race demo and its fix.

Without a GPU: the build (sm_75 + sm_90, no warnings), --help, bad flags, the
no-GPU status, and the CPU reference against an independent computation.
With a GPU: the page's run, random patterns at awkward sizes, the broken
kernels reported and never gated, and compute-sanitizer's verdicts.
"""

from __future__ import annotations

import struct
from array import array
from itertools import accumulate

import pytest

from scanlab import EXIT_FAIL, EXIT_NO_GPU, EXIT_PASS, EXIT_USAGE
from scanlab.build import DAY31_SCAN, Program, compile_program
from scanlab.grade_day31 import cycle8, random_small
from scanlab.paths import REPO
from scanlab.run import parse_table, run, run_on_gpu
from scanlab.sanitizer import sanitize

SCAN = DAY31_SCAN
BUILDS = [SCAN]

MISMATCH_HEADER = ["threads", "kernel", "mismatches", "first bad", "gated"]
WORK_HEADER = ["threads", "steps", "scan adds", "sequential"]
GATED = ("inclusive, double buffered", "exclusive, double buffered")
DEFAULT_BLOCKS = ("32", "64", "256", "1024")


@pytest.fixture(scope="module")
def scan(builder):
    return builder.get(SCAN).path


def mismatch_rows(stdout: str) -> list[dict[str, str]]:
    return parse_table(stdout, MISMATCH_HEADER)


# ---- without a GPU -------------------------------------------------------------

@pytest.mark.cuda
def test_builds_for_t4_and_hopper_without_warnings(builder):
    built = builder.get(SCAN)
    assert "sm_75" in built.reproduce and "sm_90" in built.reproduce
    assert built.warnings() == [], f"{built.reproduce}\n{built.output}"


def test_the_first_kernel_starts_by_line_100():
    """The header is the map, then the includes and the error macros, then the kernels: what the host
    needs and no kernel uses (limits, the plumbing's declarations) waits below them."""
    lines = (REPO / SCAN.sources[0]).read_text().splitlines()
    first = next(k for k, line in enumerate(lines, 1) if line.startswith("__global__"))
    assert first <= 100, f"{SCAN.sources[0]}: the first kernel starts at line {first}, past the budget of 100"


@pytest.mark.cuda
def test_help_documents_flags_and_exit_statuses(scan):
    result = run([scan, "--help"])
    assert result.returncode == EXIT_PASS, result.describe()
    for word in ("--n", "--block", "--kernel", "--pattern", "--seed", "exit status", "3 no usable GPU"):
        assert word in result.stdout, f"--help does not mention {word!r}"


@pytest.mark.cuda
@pytest.mark.parametrize("args, complaint", [
    pytest.param(["--n", "x"], "--n wants", id="n-not-a-number"),
    pytest.param(["--n", "-1"], "--n wants", id="n-negative"),
    pytest.param(["--n", "1073741825"], "--n wants", id="n-over-2^30"),
    pytest.param(["--n"], "needs a value", id="n-missing-value"),
    pytest.param(["--block", "0"], "--block wants", id="block-zero"),
    pytest.param(["--block", "2048"], "--block wants", id="block-over-1024"),
    pytest.param(["--block", "64,,256"], "--block wants", id="block-empty-item"),
    pytest.param(["--kernel", "fast"], "unknown kernel", id="kernel-unknown"),
    pytest.param(["--pattern", "zigzag"], "--pattern wants", id="pattern-unknown"),
    pytest.param(["--seed", "4"], "only applies to --pattern random", id="seed-without-random"),
    pytest.param(["--frobnicate"], "unknown argument", id="unknown-flag"),
])
def test_bad_command_line_prints_usage_and_exits_2(scan, args, complaint):
    result = run([scan, *args])
    assert result.returncode == EXIT_USAGE, result.describe()
    assert complaint in result.stderr and "usage:" in result.stderr, result.describe()


@pytest.mark.cuda
def test_no_gpu_gives_one_line_and_status_3(scan):
    # Hiding every device works on a GPU machine too; on a machine without a
    # driver the program reaches the same status by another line.
    result = run([scan], env_vars={"CUDA_VISIBLE_DEVICES": ""})
    assert result.returncode == EXIT_NO_GPU, result.describe()
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("scan: no usable GPU: "), result.describe()
    assert result.stdout == ""


def read_reference_dump(path):
    data = path.read_bytes()
    assert data[:8] == b"SCANREF1"
    n, count = struct.unpack_from("<QI", data, 8)
    at = 20

    def floats(k):
        nonlocal at
        values = array("f")
        values.frombytes(data[at:at + 4 * k])
        at += 4 * k
        return values.tolist()

    values = floats(n)
    per_block = {}
    for _ in range(count):
        (block,) = struct.unpack_from("<I", data, at)
        at += 4
        per_block[block] = (floats(n), floats(n))
    assert at == len(data), "trailing bytes in the reference dump"
    return values, per_block


def independent_scans(values, block):
    inclusive, exclusive = [], []
    for start in range(0, len(values), block):
        tile = values[start:start + block]
        inclusive += list(accumulate(tile))
        exclusive += [0.0] + list(accumulate(tile))[:-1]
    return inclusive, exclusive


@pytest.mark.cuda
@pytest.mark.parametrize("args, expected_input", [
    pytest.param(["--n", "1049187"], cycle8(1_049_187), id="page-input"),
    pytest.param(["--n", "0"], [], id="empty"),
    pytest.param(["--n", "1"], cycle8(1), id="one-element"),
    pytest.param(["--n", "3001", "--pattern", "random", "--seed", "17"], random_small(3001, 17), id="random-seed17"),
    pytest.param(["--n", "1025", "--block", "1000,7,1"], cycle8(1025), id="odd-blocks"),
])
def test_cpu_reference_matches_an_independent_computation(scan, tmp_path, args, expected_input):
    """The program's reference is checked here, so a GPU run can trust it."""
    dump = tmp_path / "reference.bin"
    result = run([scan, *args, "--dump-reference", dump])
    assert result.returncode == EXIT_PASS, result.describe()
    values, per_block = read_reference_dump(dump)
    assert values == expected_input, "input pattern differs from the documented one"
    blocks = [1000, 7, 1] if "--block" in args else [32, 64, 256, 1024]
    assert sorted(per_block) == sorted(blocks)
    for block, (inclusive, exclusive) in per_block.items():
        want_inclusive, want_exclusive = independent_scans(values, block)
        assert inclusive == want_inclusive, f"inclusive reference wrong at block {block}"
        assert exclusive == want_exclusive, f"exclusive reference wrong at block {block}"


# ---- on a GPU ------------------------------------------------------------------

@pytest.fixture(scope="module")
def page_run(scan):
    return run_on_gpu([scan])


@pytest.mark.gpu
def test_page_run_gates_both_double_buffered_kernels(page_run):
    assert page_run.returncode == EXIT_PASS, page_run.describe()
    rows = mismatch_rows(page_run.stdout)
    assert [r["threads"] for r in rows] == [b for b in DEFAULT_BLOCKS for _ in range(4)]
    for row in rows:
        if row["kernel"] in GATED:
            assert row["gated"] == "yes" and row["mismatches"] == "0" and row["first bad"] == "-", row
        else:
            assert row["gated"] == "no", row
    assert page_run.last_line == "both double-buffered kernels matched the reference at every block size"
    assert "1049187 elements, in[i] = (i % 8) + 1, one tile per block" in page_run.stdout


@pytest.mark.gpu
def test_work_table_matches_the_closed_form(page_run):
    rows = parse_table(page_run.stdout, WORK_HEADER)
    for row in rows:
        t = int(row["threads"])
        steps = t.bit_length() - 1
        assert int(row["steps"]) == steps
        assert int(row["scan adds"]) == t * steps - (t - 1)  # n log2 n - (n - 1)
        assert int(row["sequential"]) == t - 1
    assert [r["scan adds"] for r in rows] == ["129", "321", "1793", "9217"]


@pytest.mark.gpu
def test_no_copy_kernel_is_wrong_at_every_block_size(page_run):
    rows = [r for r in mismatch_rows(page_run.stdout) if r["kernel"] == "inclusive, no copy"]
    assert len(rows) == 4
    for row in rows:
        assert int(row["mismatches"]) > 0 and row["gated"] == "no", row


@pytest.mark.gpu
def test_broken_kernels_alone_are_reported_never_gated(scan):
    result = run_on_gpu([scan, "--kernel", "in-place,no-copy", "--block", "256"])
    assert result.returncode == EXIT_PASS, result.describe()
    assert all(r["gated"] == "no" for r in mismatch_rows(result.stdout))
    assert result.last_line.startswith("no gated kernel selected")


# Sizes around each tile edge, with the reason each one is here.
ODD_SIZES = [
    pytest.param(0, id="n=0-no-launch-at-all"),
    pytest.param(1, id="n=1-lane-0-alone"),
    pytest.param(31, id="n=31-one-short-of-a-warp-tile"),
    pytest.param(33, id="n=33-one-past-a-warp-tile"),
    pytest.param(1023, id="n=1023-largest-tile-minus-1"),
    pytest.param(1024, id="n=1024-exactly-the-largest-tile"),
    pytest.param(1025, id="n=1025-largest-tile-plus-1"),
    pytest.param(100003, id="n=100003-prime-many-partial-tiles"),
]


@pytest.mark.gpu
@pytest.mark.parametrize("n", ODD_SIZES)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_gated_kernels_exact_on_random_data_at_odd_sizes(scan, n, seed):
    result = run_on_gpu([scan, "--n", n, "--pattern", "random", "--seed", seed])
    assert result.returncode == EXIT_PASS, result.describe()
    assert f"random integers 0..15 (seed {seed})" in result.stdout
    gated = [r for r in mismatch_rows(result.stdout) if r["gated"] == "yes"]
    assert len(gated) == 8 and all(r["mismatches"] == "0" for r in gated), result.stdout


@pytest.mark.gpu
def test_non_power_of_two_block_sizes(scan):
    # Hillis-Steele needs no power-of-two block; the reference tiles match the block.
    result = run_on_gpu([scan, "--n", "5000", "--block", "1,7,100,1000", "--kernel", "double-buffer,exclusive",
                         "--pattern", "random", "--seed", "11"])
    assert result.returncode == EXIT_PASS, result.describe()
    assert all(r["mismatches"] == "0" for r in mismatch_rows(result.stdout))


@pytest.mark.gpu
def test_a_gated_failure_exits_1_with_the_first_bad_value(tmp_path):
    """Break the exclusive kernel's identity and the program must say where and exit 1."""
    text = (REPO / SCAN.sources[0]).read_text()
    broken = text.replace("tid > 0 ? tile[src * blockDim.x + tid - 1] : 0.0f",
                          "tid > 0 ? tile[src * blockDim.x + tid - 1] : 1.0f")
    assert broken != text, "the mutation no longer applies; update this test"
    mutant = tmp_path / "scan_mutant.cu"
    mutant.write_text(broken)
    built = compile_program(Program("scan_mutant", (str(mutant),)), tmp_path)
    assert built.ok, built.output
    result = run_on_gpu([built.path, "--n", "300", "--block", "256", "--kernel", "exclusive"])
    assert result.returncode == EXIT_FAIL, result.describe()
    assert "out[0] is 1, should be 0" in result.stdout
    assert result.last_line.startswith("FAILED: 1 of 1 gated checks")


# ---- compute-sanitizer ---------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("block", [64, 256, 1024])
def test_racecheck_catches_the_in_place_race(scan, block):
    report = sanitize("racecheck", [scan, "--n", "4096", "--block", block, "--kernel", "in-place"])
    assert report.hazards and report.errors and report.errors > 0, report.result.describe()


@pytest.mark.gpu
def test_racecheck_clean_on_both_double_buffered_kernels(scan):
    report = sanitize("racecheck", [scan, "--n", "4099", "--block", "32,64,256,1024",
                                    "--kernel", "double-buffer,exclusive"])
    assert report.clean and report.hazards == 0, report.result.describe()
    assert report.result.returncode == EXIT_PASS


@pytest.mark.gpu
@pytest.mark.parametrize("tool", ["initcheck", "memcheck", "synccheck"])
def test_gated_kernels_clean_under_sanitizer(scan, tool):
    report = sanitize(tool, [scan, "--n", "4099", "--block", "32,64,256,1024", "--kernel", "double-buffer,exclusive"])
    assert report.clean and report.errors == 0, report.result.describe()
    assert report.result.returncode == EXIT_PASS
