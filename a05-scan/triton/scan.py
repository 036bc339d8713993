"""
Lab 3: prefix sums in Triton (A05, parallel scan)
=================================================

``rowwise_cumsum(x)`` scans every row of a 2-D tensor, one program per row (per-sequence
offsets of a ragged batch); ``scan_1d(x)`` scans one array of any length with Lab 1's three
phases (scan each block and write its total, scan the totals recursively, add the offsets
back). Both are checked against ``torch.cumsum`` (integer-valued data exactly, random floats
within a stated tolerance: float addition is not associative) and timed against a copy.
You will learn that ``tl.cumsum`` is the whole block scan, so what is left is the composition
across programs; the exclusive scan as a shift by one into another buffer, never in place;
and why 0.5 of the copy is this design's ceiling (about 4n bytes moved against 2n).

Run (from a05-scan/):
    python triton/scan.py               the checks, then the benchmark (table, CSV, PNG into --out,
                                        default build/a05-scan/triton/ at the top of the repository)
    python triton/scan.py --check       the checks only; --quick: small sizes (what the harness runs)
    python triton/scan.py --bench-sizes 2^24,2^28 --block 2048,4096,8192 --warps 4,8
    python triton/scan.py --device cpu --quick --check      no GPU: Triton's interpreter, slowly
    python triton/scan.py --help        every flag

In reading order: the imports (``--device cpu`` is read first: the interpreter must be on
before kernels are decorated); the reference (``torch.cumsum`` in 64 bits); the kernels
``scan_blocks_kernel`` (phase 1, SHIFT=1: exclusive), ``add_offsets_kernel`` (phase 3; going
further: the note after it), ``rowwise_cumsum_kernel``; the wrappers ``scan_1d`` and
``rowwise_cumsum``; the checks; the benchmark; the command line and ``main``.

Exit status: 0 every check passed (and the benchmark ran, when asked); 1 a check or a kernel
failed; 2 bad command line; 3 no usable GPU, or torch or triton is not importable.
"""

# %%
# Imports
# -------
#
# --device cpu runs the kernels in Triton's interpreter, which must be switched on
# before the kernels below are decorated, so that one option is looked at here; the
# whole command line is read in main's turn, at the end. When torch or triton is
# missing, the definitions still load (through a stand-in that knows only what they
# need), so --help and a bad flag still answer, and main() then says what is missing.

import argparse
import csv
import os
import sys
import time
from pathlib import Path


def _wants_interpreter(argv) -> bool:
    """--device cpu or --device=cpu on the command line."""
    return "--device=cpu" in argv or any(a == "--device" and b == "cpu" for a, b in zip(argv, argv[1:]))


if __name__ == "__main__" and _wants_interpreter(sys.argv[1:]):
    os.environ["TRITON_INTERPRET"] = "1"


class _Missing:
    """Stands in for torch, triton and triton.language when one is not importable: just
    enough for this file's definitions to load. main() stops before anything runs."""

    constexpr = None
    float32 = int32 = None

    @staticmethod
    def jit(fn):
        return fn


MISSING = ""  # why the run cannot go ahead: "torch is not importable (...)", or ""
try:
    import torch
except (ImportError, OSError) as exc:
    if __name__ != "__main__":
        raise
    torch, MISSING = _Missing, f"torch is not importable ({type(exc).__name__}: {exc})"
try:
    import triton
    import triton.language as tl
except (ImportError, OSError) as exc:
    if __name__ != "__main__":
        raise
    torch, triton, tl = _Missing, _Missing, _Missing  # nothing will run: torch's stand-in too
    MISSING = MISSING or f"triton is not importable ({type(exc).__name__}: {exc})"

INTERPRETED = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


# %%
# The reference
# -------------
#
# torch.cumsum in 64 bits, exact for the integer-valued data the checks draw; the
# exclusive scan is the inclusive one shifted right a slot, into a new tensor.

def shift_right(inclusive, dim: int = -1):
    """excl[i] = incl[i - 1], excl[0] = identity: into a new tensor, never in place."""
    exclusive, length = torch.zeros_like(inclusive), inclusive.shape[dim]
    if length > 1:
        exclusive.narrow(dim, 1, length - 1).copy_(inclusive.narrow(dim, 0, length - 1))
    return exclusive


def exact_reference(x, exclusive: bool, dim: int = -1):
    ref = torch.cumsum(x.to(torch.float64 if x.dtype.is_floating_point else torch.int64), dim=dim)
    return shift_right(ref, dim) if exclusive else ref


# %%
# Kernels
# -------
#
# Phase 1: every program scans one block of BLOCK elements with ``tl.cumsum``
# and writes the block's total. Out-of-range lanes load 0, the identity of +,
# so a partial last block needs no special case; the mask guards the data.
#
# The exclusive scan comes from the same kernel: with SHIFT = 1 each inclusive
# prefix is stored one slot to the right and program 0 stores the identity in
# slot 0 (excl[i] = incl[i - 1], excl[0] = 0). The output is a different
# buffer from the input, so every slot has exactly one writer and nobody reads
# a slot that someone else writes: that is why the shift is never done in
# place, where program b's last store would land on program b + 1's input.


@triton.jit
def scan_blocks_kernel(x_ptr, y_ptr, totals_ptr, n, BLOCK: tl.constexpr, SHIFT: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    # The total first: then x is dead once tl.cumsum has consumed it, which
    # saves registers (the same lines in the other order keep both x and the
    # prefixes alive, and fewer programs fit on an SM).
    tl.store(totals_ptr + pid, tl.sum(x, axis=0))
    prefix = tl.cumsum(x, axis=0)
    dest = offs + SHIFT
    tl.store(y_ptr + dest, prefix, mask=dest < n)
    if SHIFT:
        if pid == 0:
            tl.store(y_ptr, 0)  # the identity: nothing comes before element 0


# Phase 3: block b (b >= 1) adds the sum of every block before it. After
# phase 2 has scanned the totals inclusively in place, that sum sits in
# totals[b - 1], so program p serves block p + 1 and block 0 is left alone.
# With SHIFT = 1 a block's prefixes sit one slot to the right, and so does the
# range it adds to.


@triton.jit
def add_offsets_kernel(y_ptr, totals_ptr, n, BLOCK: tl.constexpr, SHIFT: tl.constexpr):
    pid = tl.program_id(0)
    carry = tl.load(totals_ptr + pid)
    offs = (pid + 1) * BLOCK + SHIFT + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, y + carry, mask=mask)


# Going further: phase 1 could write only the block totals and phase 3 could re-read the
# input and scan it again with its offset (reduce, then scan): 3n bytes instead of 4n, for
# twice the tl.cumsum work. Try it and see whether "of copy" moves from 0.5 towards 0.67.


# One program per row. A row that fits one block (ONE_BLOCK) is one load, one
# tl.cumsum and one store; a longer row walks its blocks left to right and
# carries the running total of the blocks before into the next.
#
# Lengths and row strides arrive divided by VEC (4, 2 or 1, whichever divides
# them all): Triton vectorises a masked load only when it can prove the mask is
# constant over each group of VEC lanes, and `length_v * VEC` proves it. A row
# of 1000 floats then moves in 16-byte loads instead of 4-byte ones.


@triton.jit
def rowwise_cumsum_kernel(x_ptr, y_ptr, length_v, x_row_stride_v, y_row_stride_v, BLOCK: tl.constexpr,
                          VEC: tl.constexpr, SHIFT: tl.constexpr, ONE_BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    length = length_v * VEC
    x_row = x_ptr + row * (x_row_stride_v * VEC)
    y_row = y_ptr + row * (y_row_stride_v * VEC)
    cols = tl.arange(0, BLOCK)
    if ONE_BLOCK:
        x = tl.load(x_row + cols, mask=cols < length, other=0)
        dest = cols + SHIFT
        tl.store(y_row + dest, tl.cumsum(x, axis=0), mask=dest < length)
    else:
        carry = tl.zeros((), dtype=x_ptr.dtype.element_ty)
        for start in range(0, length, BLOCK):
            c = start + cols
            x = tl.load(x_row + c, mask=c < length, other=0)
            block_total = tl.sum(x, axis=0)
            dest = c + SHIFT
            tl.store(y_row + dest, tl.cumsum(x, axis=0) + carry, mask=dest < length)
            carry += block_total
    if SHIFT:
        tl.store(y_row, 0)


# %%
# Host wrappers
# -------------
#
# scan_1d's phase 2 is scan_1d itself, applied to the block totals: a level
# has cdiv(n, BLOCK) totals, the next level cdiv of that, until one block
# holds them all. `scan_levels` lists the total counts per level, and the
# workspace holds one buffer per level, allocated before anything is timed.

DTYPES = (torch.float32, torch.int32)
SCAN_BLOCK = 4096  # scan_1d: elements per program in phases 1 and 3
SCAN_WARPS = 4  # scan_1d: 128 threads, 32 elements each
ROW_MAX_BLOCK = 4096  # rowwise_cumsum: longer rows loop over blocks of this size
MAX_N = 2**31 - 2**17  # offsets are int32 inside the kernels
WARP_CHOICES = (1, 2, 4, 8, 16, 32)


def scan_levels(n: int, block: int = SCAN_BLOCK) -> list:
    """Block totals per level: [cdiv(n, B), cdiv(cdiv(n, B), B), ..., 1]; [] for n = 0.

    Its length is the number of phase-1 passes: 1 while n <= B, 2 while n <= B^2, ...
    """
    sizes = []
    while n > 0:
        n = triton.cdiv(n, block)
        sizes.append(n)
        if n == 1:
            break
    return sizes


def scan_workspace(n: int, dtype, device, block: int = SCAN_BLOCK) -> list:
    """Every buffer scan_1d needs for n elements, to allocate outside a timed region."""
    return [torch.empty(size, dtype=dtype, device=device) for size in scan_levels(n, block)]


def _check_config(block: int, num_warps: int):
    if not _power_of_two(block) or not 32 <= block <= 65536:
        raise ValueError(f"block must be a power of two from 32 to 65536, not {block}")
    if num_warps not in WARP_CHOICES:
        raise ValueError(f"num_warps must be one of {WARP_CHOICES}, not {num_warps}")
    if block < 32 * num_warps:
        raise ValueError(f"block {block} is smaller than 32 x num_warps = {32 * num_warps}")


def _check_input(x, ndim: int, name: str):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} wants a torch.Tensor, not {type(x).__name__}")
    if x.dim() != ndim:
        raise ValueError(f"{name} wants a {ndim}-D tensor, not shape {tuple(x.shape)}")
    if x.dtype not in DTYPES:
        raise TypeError(f"{name} handles float32 and int32, not {x.dtype}")
    if x.device.type != "cuda" and not INTERPRETED:
        raise ValueError(f"{name} wants a CUDA tensor (or TRITON_INTERPRET=1 and a CPU tensor), not {x.device}")


def _check_out(out, x, shape, name: str):
    if out.shape != shape or out.dtype != x.dtype or out.device != x.device:
        raise ValueError(f"{name}: out must be {x.dtype} {tuple(shape)} on {x.device}")
    if out.stride(-1) != 1 or (out.dim() == 1 and not out.is_contiguous()):
        raise ValueError(f"{name}: out must be contiguous along the scanned dimension")
    size = x.element_size()
    x_end = x.data_ptr() + x.numel() * size
    out_end = out.data_ptr() + out.numel() * size
    if x.numel() and out.numel() and out.data_ptr() < x_end and x.data_ptr() < out_end:
        raise ValueError(f"{name}: out must not overlap x (the exclusive shift would race)")


def _scan_into(x, y, workspace, level: int, block: int, num_warps: int, shift: int):
    n = x.numel()
    totals = workspace[level]
    n_blocks = totals.numel()
    # Phase 1: scan every block, write every block's total.
    scan_blocks_kernel[(n_blocks,)](x, y, totals, n, BLOCK=block, SHIFT=shift, num_warps=num_warps)
    if n_blocks > 1:
        # Phase 2: an inclusive scan of the totals, in place. That is safe for
        # the inclusive scan: each program reads its whole block before it
        # writes it, and no two programs share a block.
        _scan_into(totals, totals, workspace, level + 1, block, num_warps, 0)
        # Phase 3: add the offsets back.
        add_offsets_kernel[(n_blocks - 1,)](y, totals, n, BLOCK=block, SHIFT=shift, num_warps=num_warps)


def scan_1d(x, exclusive: bool = False, *, block: int = SCAN_BLOCK, num_warps: int = SCAN_WARPS,
            out=None, workspace=None):
    """Inclusive (or exclusive) prefix sum of a 1-D float32 or int32 tensor of any length.

    >>> scan_1d(torch.tensor([3, 1, 7, 0, 4, 1, 6, 3], dtype=torch.int32, device="cuda"))
    tensor([ 3,  4, 11, 11, 15, 16, 22, 25], device='cuda:0', dtype=torch.int32)
    >>> scan_1d(torch.tensor([3, 1, 7, 0, 4, 1, 6, 3], dtype=torch.int32, device="cuda"), exclusive=True)
    tensor([ 0,  3,  4, 11, 11, 15, 16, 22], device='cuda:0', dtype=torch.int32)

    out (optional) must not overlap x. workspace (optional) comes from
    scan_workspace(n, dtype, device, block); pass both to keep allocation out
    of a timed region.
    """
    _check_config(block, num_warps)
    _check_input(x, 1, "scan_1d")
    n = x.numel()
    if n > MAX_N:
        raise ValueError(f"scan_1d handles up to {MAX_N} elements (int32 offsets), not {n}")
    x = x.contiguous()
    if out is None:
        out = torch.empty_like(x)
    else:
        _check_out(out, x, x.shape, "scan_1d")
    if n == 0:
        return out
    if workspace is None:
        workspace = scan_workspace(n, x.dtype, x.device, block)
    elif [t.numel() for t in workspace] != scan_levels(n, block) or any(
            t.dtype != x.dtype or t.device != x.device for t in workspace):
        raise ValueError("scan_1d: workspace does not match scan_workspace(n, dtype, device, block)")
    _scan_into(x, out, workspace, 0, block, num_warps, int(exclusive))
    return out


def row_config(length: int, max_block: int = ROW_MAX_BLOCK, num_warps: int = 0):
    """(BLOCK, num_warps, blocks per row) rowwise_cumsum uses for rows of `length`.

    BLOCK is the next power of two >= length when that is at most max_block, so a
    row is one block; longer rows loop over blocks of max_block.
    """
    block = min(max(triton.next_power_of_2(max(length, 1)), 32), max_block)
    warps = num_warps or min(max(block // 256, 1), 8)
    block = max(block, 32 * warps)  # at least one element per thread
    return block, warps, triton.cdiv(length, block)


def rowwise_cumsum(x, exclusive: bool = False, *, max_block: int = ROW_MAX_BLOCK, num_warps: int = 0,
                   out=None):
    """Inclusive (or exclusive) prefix sum along dim 1 of a 2-D float32 or int32 tensor.

    >>> rowwise_cumsum(torch.tensor([[1., 2., 3.], [4., 5., 6.]], device="cuda"))
    tensor([[ 1.,  3.,  6.],
            [ 4.,  9., 15.]], device='cuda:0')
    """
    _check_config(max_block, num_warps or 1)
    _check_input(x, 2, "rowwise_cumsum")
    if x.stride(1) != 1:
        x = x.contiguous()
    rows, length = x.shape
    if out is None:
        out = torch.empty((rows, length), dtype=x.dtype, device=x.device)
    else:
        _check_out(out, x, x.shape, "rowwise_cumsum")
    if rows == 0 or length == 0:
        return out
    block, warps, blocks_per_row = row_config(length, max_block, num_warps)
    vec = next(v for v in (4, 2, 1) if length % v == 0 and x.stride(0) % v == 0 and out.stride(0) % v == 0)
    rowwise_cumsum_kernel[(rows,)](x, out, length // vec, x.stride(0) // vec, out.stride(0) // vec,
                                   BLOCK=block, VEC=vec, SHIFT=int(exclusive), ONE_BLOCK=blocks_per_row == 1,
                                   num_warps=warps)
    return out


# %%
# Checking against torch.cumsum
# -----------------------------
#
# Integer-valued data makes the comparison exact. For float32 every value is a
# small non-negative integer and every prefix stays <= 2^24, so every partial
# sum, in any order, is an integer float32 holds exactly: a mismatch is an
# algorithm bug, never rounding. For int32 the values keep every |prefix|
# below 2^31. The reference is torch.cumsum in float64 / int64, exact for this
# data; exclusive references are the inclusive ones shifted by one slot, the
# identity in slot 0, into a new tensor.
#
# Outputs start poisoned (NaN, or INT32_MIN) so an element nobody writes
# cannot pass for a right answer left over in recycled memory.

FLOAT_EXACT_LIMIT = 2**24
INT_POISON = -(2**31)


def integer_data(shape, dtype, generator, device="cpu"):
    """Random integer-valued data whose prefixes along the last dim stay exact."""
    length = max(shape[-1] if len(shape) else 1, 1)
    if dtype == torch.float32:
        vmax = min(15, FLOAT_EXACT_LIMIT // length)
        if vmax >= 1:
            values = torch.randint(0, vmax + 1, shape, generator=generator, device=device)
        else:  # very long: sparse ones, about half of 2^24 of them in expectation
            every = 2 * triton.cdiv(length, FLOAT_EXACT_LIMIT)
            values = torch.randint(0, every, shape, generator=generator, device=device) == 0
        data = values.to(torch.float32)
        if data.numel() and data.double().sum(-1).max().item() > FLOAT_EXACT_LIMIT:
            raise RuntimeError("integer_data broke its own 2^24 bound; draw with another seed")
        return data
    vmax = min(1000, (2**31 - 1) // length)
    return torch.randint(-vmax, vmax + 1, shape, generator=generator, device=device).to(torch.int32)


def poisoned_like(x):
    return torch.full_like(x, float("nan") if x.dtype.is_floating_point else INT_POISON)


def compare_exact(out, ref):
    """(wrong count, first bad index tuple or None, expected, actual)."""
    wide = out.to(ref.dtype)
    bad = wide != ref  # NaN != anything: an unwritten element counts
    wrong = int(bad.sum().item())
    if wrong == 0:
        return 0, None, None, None
    first = tuple(int(i) for i in bad.nonzero()[0].tolist())
    return wrong, first, ref[first].item(), out[first].item()


# Random floats cannot be compared exactly: float addition is not associative
# (A05 section 6), and our tree adds in another order than torch.cumsum, so the
# last bits differ, and would differ again with another BLOCK. The gate is
# |out - exact| <= FLOAT_TOLERANCE * S, where exact is the float64 cumsum and
# S the running sum of |x|: to first order, the error of any order of
# additions is at most (additions on the longest chain) x 2^-24 x S. 2^-16
# allows a chain of 256, more than ours: about 32 sequential adds per thread
# plus a few shuffle and cross-warp steps, per level of the recursion.
FLOAT_TOLERANCE = 2.0**-16


def float_error(out, x, exclusive: bool, dim: int = -1) -> float:
    """The worst |out - exact| / S over all elements (0 where both are 0)."""
    exact = exact_reference(x, exclusive, dim)
    scale = exact_reference(x.abs(), exclusive, dim)
    err = (out.double() - exact).abs()
    if err.numel() == 0:
        return 0.0
    ratio = torch.where(err == 0, torch.zeros_like(err), err / scale.clamp_min(1e-300))
    return float(ratio.max().item())


def _fmt_index(first):
    return ", ".join(str(i) for i in first)


def _table(header, rows):
    """A fixed-width table: header, dashes, rows, then a blank line."""
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows)]

    def line(cells):
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()

    print(line(header))
    print(line("-" * w for w in widths))
    for row in rows:
        print(line(row))
    print(flush=True)


def _cell(result):
    wrong = result[0]
    return "ok" if wrong == 0 else f"{wrong} wrong"


# The four (dtype, exclusive) columns of the exact tables.
MODES = ((DTYPES[0], False), (DTYPES[0], True), (DTYPES[1], False), (DTYPES[1], True))


def _exact_row(name, label, fn, x_by_dtype, dim, failures) -> list:
    """One table row: the four dtype/mode cells; each mismatch or changed input is added to failures."""
    cells = []
    for dtype, exclusive in MODES:
        x = x_by_dtype[dtype]
        kept = x.clone()
        out = fn(x, exclusive, poisoned_like(x))
        ref = exact_reference(x, exclusive, dim)
        result = compare_exact(out, ref)
        mode = "exclusive" if exclusive else "inclusive"
        if result[0]:
            wrong, first, expected, actual = result
            failures.append(f"{name} {str(dtype)[6:]} {mode} {label}: out[{_fmt_index(first)}] is {actual}, "
                            f"should be {expected} ({wrong} wrong)")
        if not torch.equal(x, kept):
            failures.append(f"{name} {str(dtype)[6:]} {mode} {label}: the input was modified")
            result = (max(result[0], 1),) + result[1:]
        cells.append(_cell(result))
    return cells


def check_scan_1d(device, gen, quick: bool, scan_configs, failures) -> None:
    """scan_1d against torch.cumsum, exactly, at sizes that each carry a reason."""
    # scan_1d: the sizes each carry a reason.
    block0, warps0 = scan_configs[0]
    sizes = [
        (0, "empty"), (1, "one element"), (2, "smallest carry"),
        (1023, "1024 tile - 1"), (1024, "1024 tile"), (1025, "1024 tile + 1"),
        (block0 - 1, "block - 1: one partial block"), (block0, "block: one full block"),
        (block0 + 1, "block + 1: the carry into block 2"), (2 * block0 + 1, "2 blocks + 1"),
        (7 * block0 + 1, "7 blocks + 1"),
    ]
    if not quick:
        sizes.append((2**20 + 3, "2^20 + 3: many blocks, partial last"))
    plan = [(n, why, block0, warps0) for n, why in sizes]
    # Small blocks reach several recursion levels at small n.
    if quick:
        plan += [(3 * 64 * 64 + 1, "3 levels at block 64", 64, 1), (32**3 + 1, "4 levels at block 32", 32, 1)]
    else:
        plan += [(3 * 128 * 128 + 1, "3 levels at block 128", 128, 1), (32**4 + 1, "5 levels at block 32", 32, 1)]
    for block, warps in scan_configs[1:]:  # every configuration that will be timed
        plan += [(3 * block + 1, "3 blocks + 1", block, warps)]
        if not quick:
            plan += [(2**20 + 3, "2^20 + 3", block, warps)]

    print("scan_1d against torch.cumsum, exact (integer-valued data)")
    rows, progress = [], Progress(device, "scan_1d checks", len(plan))
    for n, why, block, warps in plan:
        data = {dtype: integer_data((n,), dtype, gen).to(device) for dtype in DTYPES}
        fn = lambda x, exclusive, out, b=block, w=warps: scan_1d(x, exclusive, block=b, num_warps=w, out=out)
        cells = _exact_row("scan_1d", f"n={n} block {block}/{warps}", fn, data, 0, failures)
        rows.append([n, block, warps, len(scan_levels(n, block))] + cells + [why])
        progress.step()
    _table(["n", "block", "warps", "levels", "f32 incl", "f32 excl", "i32 incl", "i32 excl", "why"], rows)


def check_rowwise(device, gen, quick: bool, row_configs, failures) -> None:
    """rowwise_cumsum against torch.cumsum(dim=1), exactly, at shapes that each carry a reason."""
    # rowwise_cumsum: (rows, length, max block, warps, strided?) with a reason each.
    max_block0, rwarps0 = row_configs[0]
    shapes = [
        (5, 1, max_block0, rwarps0, False, "rows of length 1"),
        (7, 1000, max_block0, rwarps0, False, "1000: one block of 1024"),
        (4, 1023, max_block0, rwarps0, False, "odd length: no vector loads"),
        (3, 5000, max_block0, rwarps0, False, "5000: two blocks, total carried"),
        (2, 5000, 1024, 0, False, "5000 at max block 1024: 5 blocks"),
        (6, 1000, max_block0, rwarps0, True, "rows strided 1030 apart"),
        (0, 16, max_block0, rwarps0, False, "no rows"),
        (3, 0, max_block0, rwarps0, False, "empty rows"),
    ]
    if not quick:
        shapes.append((4096, 1000, max_block0, rwarps0, False, "the benchmark shape"))
    for max_block, rwarps in row_configs[1:]:  # every configuration that will be timed
        shapes += [(7, 1000, max_block, rwarps, False, "1000"), (3, 5000, max_block, rwarps, False, "5000")]
    print("rowwise_cumsum against torch.cumsum(dim=1), exact (integer-valued data)")
    rows, progress = [], Progress(device, "rowwise_cumsum checks", len(shapes))
    for n_rows, length, max_block, rwarps, strided, why in shapes:
        data = {}
        for dtype in DTYPES:
            if strided:
                data[dtype] = integer_data((n_rows, length + 30), dtype, gen).to(device)[:, :length]
            else:
                data[dtype] = integer_data((n_rows, length), dtype, gen).to(device)
        fn = lambda x, exclusive, out, m=max_block, w=rwarps: rowwise_cumsum(
            x, exclusive, max_block=m, num_warps=w, out=out)
        block, warps, per_row = row_config(length, max_block, rwarps)
        cells = _exact_row("rowwise_cumsum", f"{n_rows}x{length} max block {max_block}", fn, data, 1, failures)
        rows.append([f"{n_rows}x{length}", block, warps, per_row] + cells + [why])
        progress.step()
    _table(["shape", "block", "warps", "blocks/row", "f32 incl", "f32 excl", "i32 incl", "i32 excl", "why"], rows)


def check_random_floats(device, gen, quick: bool, scan_configs, row_configs, failures) -> None:
    """Both functions on random floats, within a stated tolerance of the exact sum."""
    block0, warps0 = scan_configs[0]
    max_block0, rwarps0 = row_configs[0]
    # Random floats: a tolerance, with its reason.
    print("random float32 data, uniform in [-1, 1), compared with a tolerance, not exactly:\n"
          "float addition is not associative (A05 section 6), so another order of additions rounds differently.\n"
          "Gate: |out - exact| <= 2^-16 x S, where S = running sum of |x| and exact = the float64 cumsum\n"
          "(2^-16 allows 256 float32 roundings of 2^-24 each). torch.cumsum's own error is shown, not gated.")
    n_float = 2**16 + 3 if quick else 2**20 + 3
    rows_float = (8, 5000) if quick else (64, 5000)
    rows = []
    for name, shape, dim in (("scan_1d", (n_float,), 0), ("rowwise_cumsum", rows_float, 1)):
        x = (torch.rand(shape, generator=gen) * 2 - 1).to(device)
        for exclusive in (False, True):
            mode = "exclusive" if exclusive else "inclusive"
            if name == "scan_1d":
                out = scan_1d(x, exclusive, block=block0, num_warps=warps0, out=poisoned_like(x))
            else:
                out = rowwise_cumsum(x, exclusive, max_block=max_block0, num_warps=rwarps0, out=poisoned_like(x))
            theirs = torch.cumsum(x, dim=dim)
            if exclusive:
                theirs = shift_right(theirs, dim)
            ours_err = float_error(out, x, exclusive, dim)
            torch_err = float_error(theirs, x, exclusive, dim)
            ok = ours_err <= FLOAT_TOLERANCE  # NaN fails too
            label = "x".join(str(s) for s in shape)
            if not ok:
                failures.append(f"{name} float32 {mode} {label}: worst |out - exact| / S is {ours_err:.3g}, "
                                f"over the tolerance {FLOAT_TOLERANCE:.3g}")
            rows.append([name, label, mode, f"{ours_err:.2e}", f"{torch_err:.2e}", f"{FLOAT_TOLERANCE:.2e}",
                         "ok" if ok else "FAIL"])
    _table(["function", "shape", "mode", "ours err/S", "torch err/S", "limit", "result"], rows)


class Progress:
    """On the CPU (Triton's interpreter), a line on stderr after every check row: how far, how long
    so far, and roughly how long the rest takes at the pace so far. Silent on a GPU."""

    def __init__(self, device, what: str, total: int):
        self.on, self.what, self.total, self.done, self.start = device == "cpu", what, total, 0, time.monotonic()

    def step(self):
        self.done += 1
        if self.on:
            spent = time.monotonic() - self.start
            left = spent / self.done * (self.total - self.done)
            print(f"scan.py: {self.what} {self.done}/{self.total}, {spent:.0f} s so far, about {left:.0f} s to go",
                  file=sys.stderr, flush=True)


def run_checks(device, seed: int, quick: bool, scan_configs, row_configs) -> list:
    """Every check, in this order (the seed's draws depend on it); prints three tables and returns a
    line per failure."""
    gen = torch.Generator().manual_seed(seed)
    failures = []
    check_scan_1d(device, gen, quick, scan_configs, failures)
    check_rowwise(device, gen, quick, row_configs, failures)
    check_random_floats(device, gen, quick, scan_configs, row_configs, failures)
    return failures


# %%
# Benchmark
# ---------
#
# GB/s counts the bytes a scan must move at least, one read and one write of
# the array (2 x n x 4 bytes), so every line, the copy included, is judged by
# the same yardstick and "of copy" is simply copy time / scan time. Inputs,
# outputs and workspaces are allocated before timing; triton.testing.do_bench
# warms up, clears the L2 before every run, times with CUDA events and gives
# the median (with the 20th and 80th percentiles for the plot's band).

QUANTILES = [0.5, 0.2, 0.8]


def _wall_clock(fn, quantiles):
    """The interpreter's stand-in for do_bench: wall-clock quantiles of a few runs."""
    fn()
    times = []
    for _ in range(3):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    return [times[round(q * (len(times) - 1))] for q in quantiles]


def scan_label(block, warps):
    return f"scan_1d[{block}/{warps}]"


def row_label(max_block, warps, cols):
    block, warps, _ = row_config(cols, max_block, warps)
    return f"rowwise_cumsum[{block}/{warps}]"


def run_benchmark(device, sizes, rows_list, cols, scan_configs, row_configs, quick):
    """Time every line at every size; returns the records (one dict per measurement)."""
    records = []
    inputs = {}
    timer = _wall_clock if device == "cpu" else (
        lambda fn, q: triton.testing.do_bench(fn, warmup=10 if quick else 25, rep=30 if quick else 100, quantiles=q))

    def tensors(key, shape):
        if key not in inputs:
            inputs.clear()  # one size at a time on the device
            x = torch.rand(shape, device=device)
            inputs[key] = (x, torch.empty_like(x))
        return inputs[key]

    def measure(provider, kind, n=None, rows=None, cols=None):
        if kind == "1d":
            x, out = tensors(("1d", n), (n,))
            shape = str(n)
        else:
            x, out = tensors(("rows", rows, cols), (rows, cols))
            shape = f"{rows}x{cols}"
        what, *config = provider
        if what == "scan_1d":
            block, warps = config
            workspace = scan_workspace(x.numel(), x.dtype, x.device, block)
            fn = lambda: scan_1d(x, out=out, workspace=workspace, block=block, num_warps=warps)
            label = scan_label(block, warps)
        elif what == "rowwise_cumsum":
            max_block, warps = config
            fn = lambda: rowwise_cumsum(x, out=out, max_block=max_block, num_warps=warps)
            label = row_label(max_block, warps, cols)
        elif what == "torch.cumsum":
            fn = lambda: torch.cumsum(x, dim=x.dim() - 1, out=out)
            label = "torch.cumsum" if kind == "1d" else "torch.cumsum(dim=1)"
        else:
            fn = lambda: out.copy_(x)
            label = "copy"
        ms, ms_low, ms_high = timer(fn, QUANTILES)
        gbps = lambda t: 2 * x.numel() * x.element_size() / (t * 1e-3) / 1e9
        records.append({"benchmark": "scan_1d" if kind == "1d" else "rowwise", "shape": shape,
                        "elements": x.numel(), "provider": label, "ms": ms, "gbps": gbps(ms)})
        return gbps(ms), gbps(ms_high), gbps(ms_low)

    # perf_report runs each sweep, every size against every line. It would also
    # draw one untitled figure per Benchmark; plot_name="" turns that off, and
    # write_results draws both sweeps side by side under a title naming the GPU.
    scan_lines = [("scan_1d", b, w) for b, w in scan_configs] + [("torch.cumsum",), ("copy",)]
    row_lines = [("rowwise_cumsum", b, w) for b, w in row_configs] + [("torch.cumsum",), ("copy",)]
    benchmarks = [
        triton.testing.Benchmark(
            x_names=["n"], x_vals=sizes, line_arg="provider", line_vals=scan_lines,
            line_names=[scan_label(b, w) for b, w in scan_configs] + ["torch.cumsum", "copy"],
            plot_name="", args={"kind": "1d"}, xlabel="elements", ylabel="GB/s", x_log=True),
        triton.testing.Benchmark(
            x_names=["rows"], x_vals=rows_list, line_arg="provider", line_vals=row_lines,
            line_names=[row_label(b, w, cols) for b, w in row_configs] + ["torch.cumsum(dim=1)", "copy"],
            plot_name="", args={"kind": "rows", "cols": cols}, xlabel="rows", ylabel="GB/s", x_log=True),
    ]
    report = triton.testing.perf_report(benchmarks)(measure)
    try:  # perf_report.run needs pandas and matplotlib; the plain loop below does the same sweep
        import matplotlib  # noqa: F401
        import pandas  # noqa: F401
        have_report = True
    except ImportError:
        have_report = False
    if have_report:
        report.run(print_data=False, show_plots=False, save_path="")
    else:
        for bench in benchmarks:
            for x_val in bench.x_vals:
                for line in bench.line_vals:
                    report.fn(**{bench.x_names[0]: x_val, bench.line_arg: line}, **bench.args)
    inputs.clear()
    copy_gbps = {(r["benchmark"], r["shape"]): r["gbps"] for r in records if r["provider"] == "copy"}
    for r in records:
        r["of_copy"] = r["gbps"] / copy_gbps[(r["benchmark"], r["shape"])]
    return records


def write_results(records, out_dir: Path, device_name: str, cols: int):
    """The CSV always; the PNG when matplotlib is importable. Returns what it wrote."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    csv_path = out_dir / "scan_bench.csv"
    with open(csv_path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["device", "benchmark", "shape", "elements", "provider", "median_ms", "gbps", "of_copy"])
        for r in records:
            writer.writerow([device_name, r["benchmark"], r["shape"], r["elements"], r["provider"],
                             f"{r['ms']:.6f}", f"{r['gbps']:.2f}", f"{r['of_copy']:.4f}"])
    written.append(str(csv_path))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        print(f"matplotlib is not importable ({exc}): wrote {csv_path} only, no plot")
        return written
    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    for ax, bench, title in ((axes[0], "scan_1d", "one array: scan_1d vs torch.cumsum"),
                             (axes[1], "rowwise", f"rows of {cols}: rowwise_cumsum vs torch.cumsum(dim=1)")):
        mine = [r for r in records if r["benchmark"] == bench]
        for provider in dict.fromkeys(r["provider"] for r in mine):
            points = [(r["elements"], r["gbps"]) for r in mine if r["provider"] == provider]
            style = dict(linestyle="--", color="gray") if provider == "copy" else {}
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=provider, **style)
            if provider == "copy" and bench == "scan_1d":
                ax.plot([p[0] for p in points], [p[1] / 2 for p in points], linestyle=":", color="gray",
                        label="copy / 2 (3-phase bound)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("elements (float32)")
        ax.set_ylabel("GB/s (2 x bytes of one array / median time)")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.suptitle(f"A05 Lab 3, Triton scans on {device_name}")
    fig.tight_layout()
    png_path = out_dir / "scan_bench.png"
    fig.savefig(png_path, dpi=120)
    plt.close(fig)
    written.append(str(png_path))
    return written


def summarize(records, cols: int) -> str:
    """The plain last line: scan_1d against copy at the largest n, rowwise against torch."""
    scan = [r for r in records if r["benchmark"] == "scan_1d"]
    largest = max(r["elements"] for r in scan)
    at = {r["provider"]: r for r in scan if r["elements"] == largest}
    best = max((r for p, r in at.items() if p.startswith("scan_1d")), key=lambda r: r["gbps"])
    rows = [r for r in records if r["benchmark"] == "rowwise"]
    target = 4096 * cols
    row_n = target if any(r["elements"] == target for r in rows) else max(r["elements"] for r in rows)
    row_at = {r["provider"]: r for r in rows if r["elements"] == row_n}
    row_best = min((r for p, r in row_at.items() if p.startswith("rowwise")), key=lambda r: r["ms"])
    row_torch = row_at["torch.cumsum(dim=1)"]
    speedup = row_torch["ms"] / row_best["ms"]
    return (f"{best['provider']} at n={largest}: {best['gbps']:.0f} GB/s = {best['of_copy']:.2f} of copy "
            f"({at['copy']['gbps']:.0f} GB/s; 3-phase bound 0.5), torch.cumsum {at['torch.cumsum']['gbps']:.0f} GB/s; "
            f"{row_best['provider']} {row_best['shape']}: {row_best['ms'] * 1e3:.1f} us vs torch.cumsum(dim=1) "
            f"{row_torch['ms'] * 1e3:.1f} us ({speedup:.2f}x)")


# %%
# The command line
# ----------------

EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_NO_GPU = 0, 1, 2, 3  # the header's exit statuses
QUICK_SIZES = [2**12, 2**14, 2**16]
DEFAULT_SIZES = [2**k for k in range(16, 29, 2)]  # 2^16 .. 2^28
QUICK_ROWS = [16, 64]
DEFAULT_ROWS = [256, 1024, 4096, 16384]
DEFAULT_COLS = 1000

def _count(text: str) -> int:
    """A whole number written as 123 or as a power of two, 2^20."""
    text = text.strip()
    if "^" in text:
        base, _, power = text.partition("^")
        if base != "2" or not power.isdigit() or int(power) > 40:
            raise ValueError(text)
        return 2 ** int(power)
    if not text.isdigit():
        raise ValueError(text)
    return int(text)


def _list_of(kind, check, what):
    def parse(text):
        values = []
        for part in text.split(","):
            try:
                value = kind(part)
            except ValueError:
                raise argparse.ArgumentTypeError(f"{what}, not '{part}'") from None
            if not check(value):
                raise argparse.ArgumentTypeError(f"{what}, not '{part}'")
            values.append(value)
        return values

    return parse


def _seed(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"--seed wants a whole number, not '{text}'")
    return int(text)


def _power_of_two(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # why first, then the usage, then status 2
        sys.stderr.write(f"scan.py: {message}\n\n")
        self.print_usage(sys.stderr)
        sys.exit(EXIT_USAGE)


def parse_args(argv):
    p = _Parser(
        prog="scan.py",
        description="Lab 3: rowwise_cumsum and a three-phase scan_1d in Triton, checked against "
        "torch.cumsum and timed against a copy.",
        epilog="exit status: 0 every check passed (and the benchmark ran, when asked); 1 a check "
        "failed or a kernel failed; 2 bad command line; 3 no usable GPU, or torch or triton "
        "is not importable",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--check", action="store_true", help="run the checks only, no benchmark")
    p.add_argument("--quick", action="store_true",
                   help="small sizes for the checks and the benchmark (the test harness uses this)")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                   help="cuda (default), or cpu: Triton's interpreter on CPU tensors, wall-clock "
                   "timings that mean nothing")
    p.add_argument("--block", type=_list_of(_count, lambda v: _power_of_two(v) and 32 <= v <= 65536,
                                            "--block wants powers of two from 32 to 65536"),
                   default=[SCAN_BLOCK], metavar="B[,B...]",
                   help=f"scan_1d elements per program (default {SCAN_BLOCK})")
    p.add_argument("--warps", type=_list_of(_count, lambda v: v in WARP_CHOICES,
                                            "--warps wants 1, 2, 4, 8, 16 or 32"),
                   default=[SCAN_WARPS], metavar="W[,W...]",
                   help=f"scan_1d num_warps (default {SCAN_WARPS}); every --block is tried with every --warps")
    p.add_argument("--row-block", type=_list_of(_count, lambda v: _power_of_two(v) and 32 <= v <= 65536,
                                                "--row-block wants powers of two from 32 to 65536"),
                   default=[ROW_MAX_BLOCK], metavar="B[,B...]",
                   help=f"rowwise_cumsum: the largest block; longer rows loop (default {ROW_MAX_BLOCK})")
    p.add_argument("--row-warps", type=_list_of(_count, lambda v: v in WARP_CHOICES,
                                                "--row-warps wants 1, 2, 4, 8, 16 or 32"),
                   default=[0], metavar="W[,W...]",
                   help="rowwise_cumsum num_warps (default: from the block, block/256 clamped to 1..8)")
    p.add_argument("--bench-sizes", type=_list_of(_count, lambda v: 1 <= v <= MAX_N,
                                                  f"--bench-sizes wants element counts from 1 to {MAX_N}"),
                   metavar="N[,N...]", help="scan_1d sizes to time, e.g. 2^24,2^28 (default 2^16..2^28 "
                   "by powers of 4; --quick: 2^12..2^16)")
    p.add_argument("--rows", type=_list_of(_count, lambda v: 1 <= v <= 2**20, "--rows wants 1 to 2^20 rows"),
                   metavar="R[,R...]", help="rowwise_cumsum row counts to time (default 256,1024,4096,16384)")
    p.add_argument("--cols", type=_list_of(_count, lambda v: 1 <= v <= 2**20, "--cols wants 1 to 2^20"),
                   metavar="L", help=f"rowwise_cumsum row length to time (default {DEFAULT_COLS})")
    p.add_argument("--out", metavar="DIR", help="where the benchmark writes scan_bench.csv and "
                   "scan_bench.png (default: build/a05-scan/triton/ at the top of the repository)")
    p.add_argument("--seed", type=_seed, metavar="S",
                   help="seed for the random check data (default: drawn from the clock, printed)")
    args = p.parse_args(argv)
    if args.cols is not None:
        if len(args.cols) != 1:
            p.error("--cols takes one row length")
        args.cols = args.cols[0]
    if args.check:
        for flag, value in (("--bench-sizes", args.bench_sizes), ("--rows", args.rows),
                            ("--cols", args.cols), ("--out", args.out)):
            if value is not None:
                p.error(f"{flag} only applies to the benchmark; drop --check to run it")
    for block in args.block:
        for warps in args.warps:
            if block < 32 * warps:
                p.error(f"--block {block} with --warps {warps}: a block needs at least 32 x num_warps "
                        "elements, one per thread")
    for block in args.row_block:
        for warps in args.row_warps:
            if warps and block < 32 * warps:
                p.error(f"--row-block {block} with --row-warps {warps}: a block needs at least "
                        "32 x num_warps elements, one per thread")
    return args


def _unusable(why: str):
    """Exit status 3 with one line: no usable GPU, or no torch / triton to run on it."""
    print(f"scan.py: {why}", file=sys.stderr)
    sys.exit(EXIT_NO_GPU)


def _no_gpu(why: str):
    _unusable(f"no usable GPU: {why}; without one, --device cpu runs the kernels in Triton's interpreter")



# %%
# Main: open the device, check everything, then (unless --check) time it.


def open_device(device: str) -> str:
    """A line naming the device; exit status 3 when there is no usable GPU."""
    versions = f"torch {torch.__version__}, triton {triton.__version__}"
    if device == "cpu":
        return f"device: CPU through Triton's interpreter (TRITON_INTERPRET=1), {versions}"
    if torch.version.cuda is None and getattr(torch.version, "hip", None) is None:
        _no_gpu(f"this torch build ({torch.__version__}) has no GPU support")
    if not torch.cuda.is_available():
        hidden = os.environ.get("CUDA_VISIBLE_DEVICES")
        why = "CUDA_VISIBLE_DEVICES hides every GPU" if hidden in ("", "-1") else "no device, or no driver"
        _no_gpu(f"torch.cuda.is_available() is False ({why})")
    props = torch.cuda.get_device_properties(0)
    return (f"device: {props.name} (compute capability {props.major}.{props.minor}, "
            f"{props.multi_processor_count} SMs, {props.total_memory / 2**30:.0f} GiB), {versions}")


def main(args) -> int:
    header = open_device(args.device)
    device = args.device
    if device == "cpu":
        print("scan.py: --device cpu: every kernel runs in Triton's interpreter, minutes where a GPU takes "
              "seconds (--quick --check is the shortest run); progress follows here", file=sys.stderr, flush=True)
    seed = args.seed if args.seed is not None else (time.time_ns() // 1000) % 1_000_000
    scan_configs = [(b, w) for b in args.block for w in args.warps]
    row_configs = [(b, w) for b in args.row_block for w in args.row_warps]
    print("Lab 3: scans in Triton, checked against torch.cumsum")
    print(header)
    scan_text = ", ".join(f"{b}/{w}" for b, w in scan_configs)
    row_text = ", ".join(f"{b}/{w or 'auto'}" for b, w in row_configs)
    print(f"scan_1d: BLOCK/num_warps {scan_text}; rowwise_cumsum: BLOCK = next power of two >= row length, "
          f"capped (cap/num_warps {row_text})")
    print(f"random data: seed {seed} (rerun with --seed {seed}); float32 values keep every prefix <= 2^24 "
          f"and int32 values every |prefix| < 2^31, so both compare exactly\n")
    try:
        failures = run_checks(device, seed, args.quick, scan_configs, row_configs)
    except Exception as exc:  # a kernel that does not compile or faults: status 1, with its reason
        print(f"scan.py: a check could not run: {type(exc).__name__}: {exc}", file=sys.stderr)
        print("FAILED: a check could not run (see stderr)")
        return EXIT_FAIL
    if failures:
        print("mismatches:")
        for line in failures:
            print(f"  {line}")
        print()
        print(f"FAILED: {len(failures)} check(s) failed; nothing was timed")
        return EXIT_FAIL
    if args.check:
        print("every check passed")
        return EXIT_PASS

    sizes = args.bench_sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    rows_list = args.rows or (QUICK_ROWS if args.quick else DEFAULT_ROWS)
    cols = args.cols or DEFAULT_COLS
    out_dir = Path(args.out) if args.out else Path(__file__).resolve().parents[2] / "build" / "a05-scan" / "triton"
    try:
        records = run_benchmark(device, sorted(set(sizes)), sorted(set(rows_list)), cols, scan_configs,
                                row_configs, args.quick)
    except Exception as exc:
        print(f"scan.py: the benchmark failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        print("FAILED: every check passed, but the benchmark failed (see stderr)")
        return EXIT_FAIL
    print("benchmark: median of triton.testing.do_bench" if device != "cpu" else
          "benchmark: wall clock of the interpreter (meaningless as performance)")
    _table(["benchmark", "shape", "provider", "median ms", "GB/s", "of copy"],
           [[r["benchmark"], r["shape"], r["provider"], f"{r['ms']:.4f}", f"{r['gbps']:.1f}",
             f"{r['of_copy']:.2f}"] for r in records])
    device_name = torch.cuda.get_device_name() if device == "cuda" else "CPU (Triton interpreter)"
    for path in write_results(records, out_dir, device_name, cols):
        print(f"wrote {path}")
    print(f"every check passed; {summarize(records, cols)}")
    return EXIT_PASS


if __name__ == "__main__":
    ARGS = parse_args(sys.argv[1:])
    if MISSING:
        _unusable(MISSING)
    sys.exit(main(ARGS))
