"""Lab 3, a05-scan/triton/scan.py: rowwise_cumsum and scan_1d in Triton against torch.cumsum.

CPU tests (always run): scan.py byte-compiles; --help and bad flags answer
without torch (exit 0 and 2, flags are read before torch is imported); a
missing torch or triton gives exit 3 and one line saying which.

`triton` tests need torch and triton (skipped with the reason, or failed when
SCANLAB_REQUIRE names triton). Those that run kernels also need a GPU that
torch can see (skipped as 'gpu' otherwise). Function tests import scan.py from
its path; the command line and the benchmark run it as a program.

The reference here is the test's own: torch.cumsum in int64 / float64 and a
shift into a new tensor, not the lab's helpers (those are tested separately,
against planted wrong answers).

SCANLAB_TRITON_DEVICE=cpu runs the kernel tests through Triton's interpreter
(TRITON_INTERPRET=1) on CPU tensors, to check these tests on a machine without
a GPU. It is slow, and triton 3.6's interpreter needs numpy < 2.3.
"""

from __future__ import annotations

import importlib.util
import os
import py_compile
import re
import sys

import pytest

from scanlab.env import unavailable
from scanlab.paths import REPO
from scanlab.run import parse_table, run, run_on_gpu

SCAN_PY = REPO / "a05-scan" / "triton" / "scan.py"
DEVICE = os.environ.get("SCANLAB_TRITON_DEVICE", "cuda")
BLOCK = 4096  # scan.py's SCAN_BLOCK; test_defaults_match_the_sizes_below keeps the two in step
WARPS = 4


def _device_args():
    return ["--device", "cpu"] if DEVICE == "cpu" else []


# ---- CPU: no torch needed ----------------------------------------------------


def test_scan_py_byte_compiles(tmp_path):
    py_compile.compile(str(SCAN_PY), cfile=str(tmp_path / "scan.pyc"), doraise=True)


@pytest.fixture
def hidden_torch(tmp_path):
    """An environment where `import torch` fails, as on a machine without it."""
    (tmp_path / "torch.py").write_text('raise ImportError("No module named torch (hidden by the test)")\n')
    return {"PYTHONPATH": str(tmp_path)}


@pytest.fixture
def hidden_triton(tmp_path):
    """torch imports (an empty stand-in), triton does not."""
    (tmp_path / "torch.py").write_text("# an empty stand-in for torch\n")
    (tmp_path / "triton.py").write_text('raise ImportError("No module named triton (hidden by the test)")\n')
    return {"PYTHONPATH": str(tmp_path)}


def test_the_file_reads_in_the_order_its_header_gives():
    """The header's reading order is the file's, the lessons' order (issue 22): the reference, the
    kernels (the first by line 130, as the tutorials put theirs near the top), the wrappers, the
    checks, the benchmark and main; constants only the host side uses stand with it, after the kernels."""
    text = SCAN_PY.read_text()
    lines = text.splitlines()
    first_kernel = next(k for k, line in enumerate(lines, 1) if line.startswith("@triton.jit"))
    assert first_kernel <= 130, f"the first kernel starts at line {first_kernel}"
    order = ["def exact_reference", "def scan_blocks_kernel", "def add_offsets_kernel", "def rowwise_cumsum_kernel",
             "def scan_1d", "def rowwise_cumsum", "def check_scan_1d", "def run_benchmark", "def main"]
    at = [text.index(name + "(") for name in order]
    assert at == sorted(at), [name for name, _ in sorted(zip(order, at), key=lambda p: p[1])]
    header = text.split('"""')[1]
    header = header[header.index("In reading order"):]
    named = [header.index(f"``{name.split()[1]}``") for name in order[1:6]]
    assert header.index("the reference") < named[0] and named == sorted(named), \
        "the header names the reference, the kernels and the wrappers in the file's order"
    before_kernels = text[:text.index("@triton.jit")]
    for name in ("EXIT_PASS", "DEFAULT_SIZES", "SCAN_BLOCK", "WARP_CHOICES"):
        assert f"\n{name} " not in before_kernels, f"{name} is set before the kernels, which do not use it"


def test_help_works_without_torch(hidden_torch):
    result = run([sys.executable, SCAN_PY, "--help"], timeout=60, env_vars=hidden_torch)
    assert result.returncode == 0, result.describe()
    for flag in ("--check", "--quick", "--bench-sizes", "--block", "--warps", "--out", "--device", "exit status"):
        assert flag in result.stdout, f"--help does not mention {flag}\n{result.describe()}"


@pytest.mark.parametrize(
    "args, why",
    [
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--block", "1000"], "--block wants powers of two"),  # not a power of two
        (["--block", "16"], "--block wants powers of two from 32"),  # below one warp
        (["--warps", "3"], "--warps wants 1, 2, 4, 8, 16 or 32"),
        (["--block", "32", "--warps", "2"], "at least 32 x num_warps"),  # fewer elements than threads
        (["--bench-sizes", "lots"], "--bench-sizes wants element counts"),
        (["--bench-sizes", "0"], "--bench-sizes wants element counts"),
        (["--bench-sizes", "2^24,3^5"], "--bench-sizes wants element counts"),  # only powers of two
        (["--check", "--out", "somewhere"], "--out only applies to the benchmark"),
        (["--device", "tpu"], "invalid choice: 'tpu'"),
        (["--seed", "x"], "not 'x'"),
        (["--cols", "10,20"], "--cols takes one row length"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_bad_command_line_exits_2(hidden_torch, args, why):
    result = run([sys.executable, SCAN_PY, *args], timeout=60, env_vars=hidden_torch)
    assert result.returncode == 2, result.describe()
    assert why in result.stderr, result.describe()
    assert "usage: scan.py" in result.stderr, result.describe()
    assert result.stdout == "", result.describe()


def test_without_torch_exits_3_with_one_line(hidden_torch):
    result = run([sys.executable, SCAN_PY, "--check"], timeout=60, env_vars=hidden_torch)
    assert result.returncode == 3, result.describe()
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "torch is not importable" in lines[0], result.describe()
    assert result.stdout == "", result.describe()


def test_without_triton_exits_3_with_one_line(hidden_triton):
    result = run([sys.executable, SCAN_PY, "--check"], timeout=60, env_vars=hidden_triton)
    assert result.returncode == 3, result.describe()
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "triton is not importable" in lines[0], result.describe()


# ---- torch and triton present ------------------------------------------------


def _torch():
    if DEVICE == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is first imported
    try:
        import torch
        import triton  # noqa: F401
    except Exception as exc:  # ImportError, or a broken install
        unavailable("triton", f"torch and triton are not importable ({type(exc).__name__}: {exc})")
    return torch


@pytest.fixture(scope="module")
def lab():
    """scan.py, imported from its path."""
    _torch()
    spec = importlib.util.spec_from_file_location("a05_triton_scan", SCAN_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def device(lab):
    torch = _torch()
    if DEVICE == "cuda" and not torch.cuda.is_available():
        unavailable("gpu", "torch.cuda.is_available() is False: no GPU for the Triton kernels")
    return DEVICE


@pytest.mark.triton
def test_module_imports_cleanly(lab):
    for name in ("scan_1d", "rowwise_cumsum", "scan_levels", "scan_workspace", "scan_blocks_kernel",
                 "add_offsets_kernel", "rowwise_cumsum_kernel", "run_checks", "main"):
        assert hasattr(lab, name), f"scan.py has no {name}"
    assert not hasattr(lab, "ARGS"), "importing scan.py must not read the command line"


@pytest.mark.triton
def test_defaults_match_the_sizes_below(lab):
    assert (lab.SCAN_BLOCK, lab.SCAN_WARPS) == (BLOCK, WARPS), "update BLOCK / WARPS at the top of this file"


@pytest.mark.triton
def test_no_gpu_exits_3_with_one_line(lab):
    result = run([sys.executable, SCAN_PY, "--check", "--quick"], timeout=120, env_vars={"CUDA_VISIBLE_DEVICES": ""})
    assert result.returncode == 3, result.describe()
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "no usable GPU" in lines[0], result.describe()
    assert "--device cpu" in lines[0], "the no-GPU line must name the way to run without one"


@pytest.mark.triton
def test_the_cpu_run_reports_progress_and_the_time_left(lab, capsys, monkeypatch):
    clock = iter([100.0, 104.0, 108.0, 0.0, 0.0])
    monkeypatch.setattr(lab.time, "monotonic", lambda: next(clock))
    progress = lab.Progress("cpu", "scan_1d checks", 4)
    progress.step()
    progress.step()
    assert capsys.readouterr().err.splitlines() == [
        "scan.py: scan_1d checks 1/4, 4 s so far, about 12 s to go",
        "scan.py: scan_1d checks 2/4, 8 s so far, about 8 s to go"]
    quiet = lab.Progress("cuda", "scan_1d checks", 4)
    quiet.step()
    assert capsys.readouterr().err == "", "a GPU run prints no progress"


# The test's own reference: exact for integer-valued data.


def _reference(torch, x, exclusive, dim):
    wide = x.to(torch.float64 if x.dtype.is_floating_point else torch.int64)
    inclusive = torch.cumsum(wide, dim=dim)
    if not exclusive:
        return inclusive
    shifted = torch.zeros_like(inclusive)  # identity in slot 0, a new tensor
    length = inclusive.shape[dim]
    if length > 1:
        shifted.narrow(dim, 1, length - 1).copy_(inclusive.narrow(dim, 0, length - 1))
    return shifted


def _integer_data(torch, shape, dtype, seed, device):
    """float32: values 0..15, or sparse ones for long rows, every prefix <= 2^24; int32: |prefix| < 2^31."""
    gen = torch.Generator(device=device).manual_seed(seed)
    length = max(shape[-1], 1)
    if dtype == torch.float32:
        vmax = min(15, 2**24 // length)
        if vmax >= 1:
            return torch.randint(0, vmax + 1, shape, generator=gen, device=device).to(dtype)
        every = 2 * -(-length // 2**24)
        return (torch.randint(0, every, shape, generator=gen, device=device) == 0).to(dtype)
    vmax = min(1000, (2**31 - 1) // length)
    return torch.randint(-vmax, vmax + 1, shape, generator=gen, device=device).to(dtype)


def _poisoned(torch, x):
    return torch.full_like(x, float("nan") if x.dtype.is_floating_point else -(2**31))


def _assert_exact(torch, out, x, exclusive, dim, what):
    ref = _reference(torch, x, exclusive, dim)
    assert out.shape == ref.shape and out.dtype == x.dtype, f"{what}: got {out.dtype} {tuple(out.shape)}"
    if x.dtype == torch.float32 and x.numel():
        assert ref.abs().max().item() <= 2**24, f"{what}: the test data broke the 2^24 bound"
    bad = out.to(ref.dtype) != ref  # an unwritten (NaN / poisoned) element counts
    if bad.any():
        first = tuple(bad.nonzero()[0].tolist())
        raise AssertionError(f"{what}: out{list(first)} is {out[first].item()}, should be {ref[first].item()} "
                             f"({int(bad.sum())} of {out.numel()} wrong)")


MODES = [("f32", "incl"), ("f32", "excl"), ("i32", "incl"), ("i32", "excl")]


def _dtype(torch, name):
    return torch.float32 if name == "f32" else torch.int32


# Sizes as functions of the block, each with its reason in the id.
SCAN_SIZES = [
    ("n=0 empty", lambda b: 0),
    ("n=1 one element", lambda b: 1),
    ("n=1023 1024-tile minus one", lambda b: 1023),
    ("n=1024 one 1024-tile", lambda b: 1024),
    ("n=1025 1024-tile plus one", lambda b: 1025),
    ("n=block-1 one partial block", lambda b: b - 1),
    ("n=block one full block", lambda b: b),
    ("n=block+1 the carry into block 2", lambda b: b + 1),
    ("n=2block+1", lambda b: 2 * b + 1),
    ("n=7block+1 several blocks", lambda b: 7 * b + 1),
    ("n=2^20+3 many blocks, partial last", lambda b: 2**20 + 3),
]


@pytest.mark.triton
@pytest.mark.parametrize("dtype_name, mode", MODES, ids=[f"{d}-{m}" for d, m in MODES])
@pytest.mark.parametrize("size", SCAN_SIZES, ids=[s[0] for s in SCAN_SIZES])
def test_scan_1d_exact(lab, device, size, dtype_name, mode):
    torch = _torch()
    n = size[1](lab.SCAN_BLOCK)
    exclusive = mode == "excl"
    seed = 1000 + n
    x = _integer_data(torch, (n,), _dtype(torch, dtype_name), seed, device)
    kept = x.clone()
    out = lab.scan_1d(x, exclusive, out=_poisoned(torch, x))
    _assert_exact(torch, out, x, exclusive, 0, f"scan_1d {dtype_name} {mode} n={n} seed {seed}")
    assert torch.equal(x, kept), "scan_1d modified its input"
    fresh = lab.scan_1d(x, exclusive)  # the allocating path gives the same answer
    assert torch.equal(fresh, out)


LEVELS = [
    # (id, block, warps, n as a function of the block, levels)
    ("block64-3levels", 64, 1, lambda b: 3 * b * b + 1, 3),
    ("block32-5levels", 32, 1, lambda b: b**4 + 1, 5),
    ("default-block-3levels", BLOCK, WARPS, lambda b: b * b + 1, 3),  # 16.8 M elements: the real block size
]


@pytest.mark.triton
@pytest.mark.parametrize("mode", ["incl", "excl"])
@pytest.mark.parametrize("dtype_name", ["f32", "i32"])
@pytest.mark.parametrize("case", LEVELS, ids=[c[0] for c in LEVELS])
def test_scan_1d_recursion_levels(lab, device, case, dtype_name, mode):
    torch = _torch()
    _, block, warps, size, levels = case
    if block == BLOCK and DEVICE == "cpu":
        pytest.skip("16.8 M elements through the interpreter takes minutes")
    n = size(block)
    sizes = lab.scan_levels(n, block)
    assert len(sizes) == levels and sizes[-1] == 1, f"scan_levels({n}, {block}) = {sizes}"
    exclusive = mode == "excl"
    x = _integer_data(torch, (n,), _dtype(torch, dtype_name), 7 + levels, device)
    out = lab.scan_1d(x, exclusive, block=block, num_warps=warps, out=_poisoned(torch, x))
    _assert_exact(torch, out, x, exclusive, 0, f"scan_1d {dtype_name} {mode} n={n} block {block}/{warps}")


ROW_SHAPES = [
    # (id, rows, length, max_block, strided)
    ("rows-of-length-1", 5, 1, None, False),
    ("length-1000 one block of 1024", 7, 1000, None, False),
    ("length-1023 odd, scalar loads", 4, 1023, None, False),
    ("length-5000 two blocks, carried total", 3, 5000, None, False),
    ("length-5000 max-block-1024, five blocks", 2, 5000, 1024, False),
    ("length-1000 rows strided 1030 apart", 6, 1000, None, True),
    ("no rows", 0, 16, None, False),
    ("empty rows", 3, 0, None, False),
]


@pytest.mark.triton
@pytest.mark.parametrize("dtype_name, mode", MODES, ids=[f"{d}-{m}" for d, m in MODES])
@pytest.mark.parametrize("shape", ROW_SHAPES, ids=[s[0] for s in ROW_SHAPES])
def test_rowwise_cumsum_exact(lab, device, shape, dtype_name, mode):
    torch = _torch()
    _, rows, length, max_block, strided = shape
    exclusive = mode == "excl"
    dtype = _dtype(torch, dtype_name)
    if strided:
        x = _integer_data(torch, (rows, length + 30), dtype, 21, device)[:, :length]
        assert x.stride(0) == length + 30
    else:
        x = _integer_data(torch, (rows, length), dtype, 21, device)
    kwargs = {"max_block": max_block} if max_block else {}
    out = lab.rowwise_cumsum(x, exclusive, out=_poisoned(torch, x.contiguous()), **kwargs)
    _assert_exact(torch, out, x, exclusive, 1, f"rowwise_cumsum {dtype_name} {mode} {rows}x{length}")


@pytest.mark.triton
@pytest.mark.parametrize("mode", ["incl", "excl"])
@pytest.mark.parametrize("function", ["scan_1d n=2^20+3", "rowwise_cumsum 64x5000"])
def test_random_floats_within_the_stated_tolerance(lab, device, function, mode):
    """Float addition is not associative: random floats get a tolerance, 2^-16 of the running sum of |x|."""
    torch = _torch()
    exclusive = mode == "excl"
    gen = torch.Generator(device=device).manual_seed(99)
    if function.startswith("scan_1d"):
        x = torch.rand((2**20 + 3,), generator=gen, device=device) * 2 - 1
        out, dim = lab.scan_1d(x, exclusive, out=_poisoned(torch, x)), 0
    else:
        x = torch.rand((64, 5000), generator=gen, device=device) * 2 - 1
        out, dim = lab.rowwise_cumsum(x, exclusive, out=_poisoned(torch, x)), 1
    exact = _reference(torch, x, exclusive, dim)
    scale = _reference(torch, x.abs(), exclusive, dim)
    err = (out.double() - exact).abs()
    limit = 2.0**-16 * scale
    bad = ~(err <= limit)  # NaN counts as bad
    if bad.any():
        first = tuple(bad.nonzero()[0].tolist())
        raise AssertionError(f"{function} {mode}: out{list(first)} = {out[first].item()} is "
                             f"{err[first].item():.3g} from {exact[first].item()}, limit {limit[first].item():.3g}")
    assert lab.FLOAT_TOLERANCE == 2.0**-16


@pytest.mark.triton
def test_lab_checkers_catch_planted_errors(lab):
    """The program's own gates: a wrong element, an unwritten one and a float error all fail."""
    torch = _torch()
    x = torch.arange(1, 11, dtype=torch.float32)
    ref = lab.exact_reference(x, False, 0)
    assert lab.compare_exact(ref.float(), ref) == (0, None, None, None)
    wrong = ref.float().clone()
    wrong[6] += 1
    assert lab.compare_exact(wrong, ref) == (1, (6,), 28.0, 29.0)
    unwritten = ref.float().clone()
    unwritten[9] = float("nan")
    count, first, expected, _ = lab.compare_exact(unwritten, ref)
    assert (count, first, expected) == (1, (9,), 55.0)
    exclusive = lab.exact_reference(x, True, 0)
    assert exclusive[0].item() == 0 and exclusive[1].item() == 1 and exclusive[9].item() == 45
    rows = torch.arange(1, 7, dtype=torch.int32).reshape(2, 3)
    assert lab.exact_reference(rows, True, 1).tolist() == [[0, 1, 3], [0, 4, 9]]
    assert lab.compare_exact(torch.tensor([[0, 1, 3], [0, 4, 8]], dtype=torch.int32),
                             lab.exact_reference(rows, True, 1))[:2] == (1, (1, 2))
    floats = torch.linspace(-1, 1, 101)
    good = torch.cumsum(floats.double(), 0).float()
    assert lab.float_error(good, floats, False, 0) <= lab.FLOAT_TOLERANCE
    off = good.clone()
    off[50] += 1e-3
    assert lab.float_error(off, floats, False, 0) > lab.FLOAT_TOLERANCE


@pytest.mark.triton
def test_wrappers_reject_bad_input(lab):
    torch = _torch()
    dev = "cpu" if DEVICE == "cpu" else "cuda"
    with pytest.raises(ValueError, match="1-D"):
        lab.scan_1d(torch.zeros((2, 2), dtype=torch.int32, device="cpu"))
    with pytest.raises(TypeError, match="float32 and int32"):
        lab.scan_1d(torch.zeros(4, dtype=torch.float64))
    with pytest.raises(ValueError, match="power of two"):
        lab.scan_1d(torch.zeros(4, dtype=torch.int32), block=1000)
    with pytest.raises(ValueError, match="2-D"):
        lab.rowwise_cumsum(torch.zeros(4, dtype=torch.int32))
    if DEVICE == "cuda":
        with pytest.raises(ValueError, match="CUDA tensor"):
            lab.scan_1d(torch.zeros(4, dtype=torch.int32, device="cpu"))
    if DEVICE == "cpu" or torch.cuda.is_available():
        x = torch.zeros(8, dtype=torch.int32, device=dev)
        with pytest.raises(ValueError, match="must not overlap"):
            lab.scan_1d(x, True, out=x)  # in place: the exclusive shift would race


def _no_phase_3(lab):
    """A planted bug: phase 1 only, so every block restarts at zero."""
    torch = _torch()

    def scan_1d(x, exclusive=False, *, block=BLOCK, num_warps=WARPS, out=None, workspace=None):
        out = torch.empty_like(x) if out is None else out
        if x.numel():
            totals = lab.scan_workspace(x.numel(), x.dtype, x.device, block)[0]
            lab.scan_blocks_kernel[(totals.numel(),)](x, out, totals, x.numel(), BLOCK=block, SHIFT=int(exclusive),
                                                      num_warps=num_warps)
        return out

    return scan_1d


@pytest.mark.triton
def test_planted_bug_fails_with_its_first_bad_index(lab, device, monkeypatch, capsys):
    monkeypatch.setattr(lab, "scan_1d", _no_phase_3(lab))
    failures = lab.run_checks(device, 5, True, [(BLOCK, WARPS)], [(lab.ROW_MAX_BLOCK, 0)])
    capsys.readouterr()
    # Without phase 3 every block restarts at zero. Inclusive: the first wrong
    # element is the first of the second block, out[BLOCK]. Exclusive: out[BLOCK]
    # is still right (the first block's last prefix, shifted one slot), so the
    # first wrong one is out[BLOCK + 1].
    inclusive = [f for f in failures if f.startswith("scan_1d float32 inclusive") and f"n={BLOCK + 1} " in f]
    exclusive = [f for f in failures if f.startswith("scan_1d int32 exclusive") and f"n={2 * BLOCK + 1} " in f]
    assert inclusive and f"out[{BLOCK}] is" in inclusive[0], failures
    assert exclusive and f"out[{BLOCK + 1}] is" in exclusive[0], failures
    assert not any(f.startswith("rowwise_cumsum") for f in failures), failures
    assert not any(f"n={BLOCK} " in f or f"n={BLOCK - 1} " in f for f in failures), "one block needs no phase 3"


@pytest.mark.triton
def test_planted_bug_makes_main_exit_1(lab, device, monkeypatch, capsys):
    monkeypatch.setattr(lab, "scan_1d", _no_phase_3(lab))
    status = lab.main(lab.parse_args(["--check", "--quick", "--seed", "3", *_device_args()]))
    out = capsys.readouterr().out
    assert status == 1, out
    assert "mismatches:" in out and "should be" in out, out
    assert out.strip().splitlines()[-1].startswith("FAILED:"), out


SCAN_HEADER = ["n", "block", "warps", "levels", "f32 incl", "f32 excl", "i32 incl", "i32 excl", "why"]
ROW_HEADER = ["shape", "block", "warps", "blocks/row", "f32 incl", "f32 excl", "i32 incl", "i32 excl", "why"]
FLOAT_HEADER = ["function", "shape", "mode", "ours err/S", "torch err/S", "limit", "result"]
BENCH_HEADER = ["benchmark", "shape", "provider", "median ms", "GB/s", "of copy"]


@pytest.mark.triton
def test_cli_check_quick_passes(lab, device):
    result = run_on_gpu([sys.executable, SCAN_PY, "--check", "--quick", "--seed", "11", *_device_args()], timeout=600)
    assert result.returncode == 0, result.describe()
    assert "seed 11" in result.stdout
    scan_rows = parse_table(result.stdout, SCAN_HEADER)
    assert {int(r["n"]) for r in scan_rows} >= {0, 1, 1023, 1024, 1025, BLOCK + 1}, scan_rows
    assert max(int(r["levels"]) for r in scan_rows) >= 3, "the checks must reach 3 recursion levels"
    row_rows = parse_table(result.stdout, ROW_HEADER)
    assert {r["shape"] for r in row_rows} >= {"5x1", "7x1000", "3x5000"}, row_rows
    for row in scan_rows + row_rows:
        assert all(row[c] == "ok" for c in ("f32 incl", "f32 excl", "i32 incl", "i32 excl")), row
    float_rows = parse_table(result.stdout, FLOAT_HEADER)
    assert len(float_rows) == 4 and all(r["result"] == "ok" for r in float_rows), float_rows
    assert "not associative" in result.stdout, "the tolerance must be printed with its reason"
    assert result.last_line == "every check passed", result.describe()


@pytest.mark.triton
def test_cli_benchmark_writes_table_csv_and_plot(lab, device, tmp_path):
    torch = _torch()
    out_dir = tmp_path / "bench"
    result = run_on_gpu([sys.executable, SCAN_PY, "--quick", "--seed", "3", "--out", out_dir, *_device_args()],
                        timeout=600)
    assert result.returncode == 0, result.describe()
    rows = parse_table(result.stdout, BENCH_HEADER)
    providers = {r["provider"] for r in rows}
    assert providers >= {f"scan_1d[{BLOCK}/{WARPS}]", "torch.cumsum", "copy", "rowwise_cumsum[1024/4]",
                         "torch.cumsum(dim=1)"}, providers
    assert all(float(r["GB/s"]) >= 0 and float(r["median ms"]) > 0 for r in rows), rows
    assert all(r["of copy"] == "1.00" for r in rows if r["provider"] == "copy"), rows

    csv_path = out_dir / "scan_bench.csv"
    lines = csv_path.read_text().splitlines()
    assert lines[0] == "device,benchmark,shape,elements,provider,median_ms,gbps,of_copy", lines[0]
    assert len(lines) == 1 + len(rows), "the CSV holds every row of the table"
    name = torch.cuda.get_device_name() if DEVICE == "cuda" else "CPU (Triton interpreter)"
    assert all(line.startswith(name + ",") for line in lines[1:]), "the CSV names the device on every row"

    png_path = out_dir / "scan_bench.png"
    if importlib.util.find_spec("matplotlib") is None:
        assert not png_path.exists() and "matplotlib is not importable" in result.stdout, result.describe()
    else:
        assert png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", "scan_bench.png is not a PNG"
    assert re.search(r"scan_1d\[\d+/\d+\] at n=\d+: \d+ GB/s = [\d.]+ of copy", result.last_line), result.last_line
    assert "rowwise_cumsum[" in result.last_line and "torch.cumsum(dim=1)" in result.last_line, result.last_line
