"""
A single-pass scan in Triton: one launch, decoupled look-back
=============================================================

Lab 3's ``scan_1d`` (a05-scan/triton/scan.py) scans in three phases and three-plus launches:
at 2^18 .. 2^21 the launches are the cost, and at 2^28 its 4n bytes are. This file does what
drill 05 does in CUDA, in one Triton launch:

  - each program draws a ticket (``tl.atomic_add`` on a counter): tiles go out in the order
    programs START, so the holder of every earlier tile is running and the scan can not hang;
    the program that draws the last ticket puts the counter back to 0 for the next launch
    (every program draws exactly one ticket here: the grid is one program a tile);
  - it loads its tile, sums it, and publishes the sum at once (flag A) in a 64-bit descriptor,
    high 32 bits ``epoch * 4 + flag``, low 32 bits the value's bits, written by one
    ``tl.atomic_xchg`` (relaxed, GPU scope: one 64-bit store that reaches L2, no fence);
  - it looks back over windows of WINDOW predecessors with volatile loads (a plain load could be
    served from this SM's L1 or hoisted out of the loop), adding aggregates back to the nearest
    inclusive prefix (flag P), re-reading while a needed predecessor is not ready (X);
  - it publishes its own inclusive prefix (flag P), adds the prefix to ``tl.cumsum`` of the tile
    and stores: 2n bytes moved, a copy's.
The epoch (1, 2, 3, ... from the host) makes an earlier launch's words read as X: nothing is
cleared between launches.

You will learn: the look-back needs nothing Triton lacks (an atomic counter, an atomic store,
volatile loads, a while loop); and where a one-launch Triton scan stands against torch.cumsum.

Run (python3 with torch and triton, an NVIDIA GPU):
    python3 triton_single_pass.py                 checks, a small tuning pass, timing 2^20 .. 2^28
    python3 triton_single_pass.py --check         the checks only
    python3 triton_single_pass.py --max-log2 26   timing up to 2^26
    python3 triton_single_pass.py --help
Checks: integer-valued float32 and int32 data exactly against an int64 cumsum, at sizes that
each carry a reason (1, a tile - 1, a tile, a tile + 1, many tiles, 2^20 + 3, 2^24), and the tuned
configuration again at every timed size (on the GPU, against torch.cumsum); random floats
within the lab's tolerance |out - exact| <= 2^-16 * S (S = running sum of |x|), as in Lab 3.
Exit status: 0 every check passed; 1 a check failed or a kernel failed; 2 bad command line;
3 no usable GPU, or torch or triton is not importable.
"""

import argparse
import statistics
import sys

EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_NO_GPU = 0, 1, 2, 3
WINDOW = 32  # predecessors read at once by the look-back
FLAG_A, FLAG_P = 1, 2  # passed to the kernel as tl.constexpr arguments: a @triton.jit function may
# read no plain Python global (Triton 3.6: "Cannot access global variable ..."), and literals in
# the kernel would hide what they mean
EXACT_LIMIT = 1 << 24  # float32 holds every integer up to here
FLOAT_TOLERANCE = 2.0**-16  # Lab 3's gate for random floats (a05-scan/triton/scan.py)
CONFIGS = [(2048, 4), (4096, 4), (4096, 8), (8192, 8), (8192, 16)]  # (BLOCK, num_warps) tried

try:
    import torch
    import triton
    import triton.language as tl
    HAVE = True
except ImportError as missing:  # --help still answers; main() says what is missing
    HAVE, MISSING = False, str(missing)

# %%
# The kernel
# ----------
if HAVE:

    @triton.jit(do_not_specialize=["epoch"])
    def single_pass_scan_kernel(x_ptr, out_ptr, desc_ptr, counter_ptr, n, num_tiles, epoch,
                                BLOCK: tl.constexpr, EXCLUSIVE: tl.constexpr, IS_FLOAT: tl.constexpr,
                                WIN: tl.constexpr, FLAG_A: tl.constexpr, FLAG_P: tl.constexpr):
        ticket = tl.atomic_add(counter_ptr, 1)
        # The last ticket resets the counter: every program draws one, so nobody draws after it.
        tl.atomic_xchg(counter_ptr, 0, mask=ticket == num_tiles - 1)
        base = ticket.to(tl.int64) * BLOCK
        offs = base + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=0)
        aggregate = tl.sum(x, axis=0)

        status_hi = epoch.to(tl.int64) * 4
        # A word: (epoch * 4 + flag) << 32 | the value's 32 bits, zero-extended through uint32 (no
        # 0xFFFFFFFF mask: Triton types that literal uint32, and mixed-sign promotion is a trap).
        agg_bits = aggregate.to(tl.uint32, bitcast=True).to(tl.int64)  # float32 or int32: its 32 bits
        first_flag = tl.where(ticket == 0, FLAG_P, FLAG_A)
        tl.atomic_xchg(desc_ptr + ticket, ((status_hi + first_flag) << 32) | agg_bits, sem="relaxed")

        # The look-back (tile 0 skips it): window w reads tiles nearest, nearest - 1, ...
        lanes = tl.arange(0, WIN)
        prefix = aggregate * 0
        done = (ticket == 0).to(tl.int32)
        nearest = ticket - 1
        while done == 0:
            idx = nearest - lanes
            # Before tile 0: an imaginary P of 0.
            words = tl.load(desc_ptr + idx, mask=idx >= 0, other=(status_hi + FLAG_P) << 32, volatile=True)
            status = (words >> 32).to(tl.int32)
            flag = tl.where((status >> 2) == epoch, status & 3, 0)
            first_p = tl.min(tl.where(flag == FLAG_P, lanes, WIN), axis=0)
            needed = lanes <= first_p  # lanes 0 .. the nearest P (all of them when no P)
            not_ready = tl.sum(((flag == 0) & needed).to(tl.int32), axis=0)
            bits = words.to(tl.int32)  # the low 32 bits (int64 -> int32 truncates)
            if IS_FLOAT:
                values = bits.to(tl.float32, bitcast=True)
            else:
                values = bits
            add = tl.sum(tl.where(needed, values, 0), axis=0)
            ready = not_ready == 0
            prefix = tl.where(ready, prefix + add, prefix)
            done = tl.where(ready & (first_p < WIN), 1, 0)
            nearest = tl.where(ready & (first_p >= WIN), nearest - WIN, nearest)

        inclusive_total = prefix + aggregate
        p_bits = inclusive_total.to(tl.uint32, bitcast=True).to(tl.int64)
        tl.atomic_xchg(desc_ptr + ticket, ((status_hi + FLAG_P) << 32) | p_bits, sem="relaxed", mask=ticket > 0)

        scanned = tl.cumsum(x, axis=0)
        if EXCLUSIVE:
            scanned = scanned - x  # exact on integer-valued data; within the tolerance on floats
        tl.store(out_ptr + offs, scanned + prefix, mask=mask)


# %%
# The host wrapper
# ----------------
class SinglePassScan:
    """Holds the descriptors and the counter (allocated once, grown outside timed regions) and
    the epoch; ``scan(x, exclusive, out)`` is one launch."""

    def __init__(self, device):
        self.device = device
        self.desc = torch.zeros(1, dtype=torch.int64, device=device)
        self.counter = torch.zeros(1, dtype=torch.int32, device=device)
        self.epoch = 0

    def reserve(self, tiles: int):
        if tiles > self.desc.numel():
            self.desc = torch.zeros(tiles, dtype=torch.int64, device=self.device)
            self.epoch = 0

    def scan(self, x, exclusive=False, out=None, block=4096, num_warps=8):
        n = x.numel()
        out = torch.empty_like(x) if out is None else out
        if n == 0:
            return out
        tiles = triton.cdiv(n, block)
        self.reserve(tiles)
        if self.epoch >= (1 << 29) - 1:  # the status word keeps epoch * 4 + flag below 2^31
            self.desc.zero_()
            self.epoch = 0
        self.epoch += 1
        single_pass_scan_kernel[(tiles,)](x, out, self.desc, self.counter, n, tiles, self.epoch, BLOCK=block,
                                          EXCLUSIVE=exclusive, IS_FLOAT=x.dtype == torch.float32, WIN=WINDOW,
                                          FLAG_A=FLAG_A, FLAG_P=FLAG_P, num_warps=num_warps)
        return out


# %%
# The checks
# ----------
def integer_data(n, dtype, gen):
    """float32: total at most 2^24 (sparse ones past that), int32: 0..3 (as the lab's benches)."""
    if dtype == torch.float32 and 3 * n > EXACT_LIMIT:
        return (torch.rand(n, generator=gen) < EXACT_LIMIT / (2 * n)).to(dtype)
    return torch.randint(0, 4, (n,), generator=gen, dtype=torch.int64).to(dtype)


def check_exact(sp, sizes, block, warps, gen, failures):
    rows = []
    for n, why in sizes:
        for dtype in (torch.float32, torch.int32):
            host = integer_data(n, dtype, gen)
            x = host.cuda()
            ref_incl = torch.cumsum(host.to(torch.int64), 0)
            for exclusive in (False, True):
                ref = ref_incl - host.to(torch.int64) if exclusive else ref_incl
                out = torch.full_like(x, -1)  # poison: every answer is >= 0
                sp.scan(x, exclusive, out, block, warps)
                torch.cuda.synchronize()
                got = out.cpu().to(torch.int64)
                bad = (got != ref).nonzero()
                mode = "exclusive" if exclusive else "inclusive"
                if bad.numel():
                    i = int(bad[0])
                    failures.append(f"{str(dtype)[6:]} {mode} n={n}: out[{i}] is {got[i].item()}, should be {ref[i].item()}")
                rows.append(f"triton check n={n:<10} {str(dtype)[6:]:8} {mode:9} "
                            f"{'exact' if not bad.numel() else f'{bad.numel()} wrong from {int(bad[0])}':24} {why}")
    print("\n".join(rows))


def check_floats(sp, block, warps, gen, failures):
    n = (1 << 20) + 3
    x64 = (torch.rand(n, generator=gen, dtype=torch.float64) * 2 - 1)
    x = x64.to(torch.float32).cuda()
    xd = x.double().cpu()
    for exclusive in (False, True):
        exact = torch.cumsum(xd, 0) - (xd if exclusive else 0)
        scale = torch.cumsum(xd.abs(), 0)
        out = sp.scan(x, exclusive, None, block, warps).double().cpu()
        err = ((out - exact).abs() / scale.clamp_min(1e-30)).max().item()
        mode = "exclusive" if exclusive else "inclusive"
        ok = err <= FLOAT_TOLERANCE
        if not ok:
            failures.append(f"random floats {mode} n={n}: worst |out - exact| / S = {err:.3g} > {FLOAT_TOLERANCE:.3g}")
        print(f"triton floats n={n} {mode}: worst |out - exact| / S = {err:.2e} (limit 2^-16 = {FLOAT_TOLERANCE:.2e}) "
              f"{'ok' if ok else 'FAIL'}")


# %%
# The benchmark
# -------------
QUEUE_CYCLES = 400_000  # about 0.2 ms of GPU clock: longer than any host launch below


def median_ms(fn, flush, reps=20, warmups=2, queue=True):
    """Median device-event time of fn() with a cold L2. queue: first a GPU-side wait
    (torch.cuda._sleep), so that the flush, the start event, fn's launch and the stop event are all
    queued before the GPU reaches them and the events bracket GPU work only. Without it a launch that
    costs the host more than the flush takes (Triton's Python launcher: tens of microseconds, a
    2^21 scan's whole run) is timed as GPU idle between the events."""
    times = []
    for r in range(reps + warmups):
        if queue:
            torch.cuda._sleep(QUEUE_CYCLES)
        flush.zero_()  # the L2 cleaned before every repetition
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        if r >= warmups:
            times.append(start.elapsed_time(stop))
    return statistics.median(times)


def bench(sp, min_log2, max_log2, reps, gen, flush, queue=True):
    # The configuration: the best of CONFIGS at 2^26 float32 inclusive.
    n = 1 << min(26, max_log2)
    x = integer_data(n, torch.float32, gen).cuda()
    out = torch.empty_like(x)
    tuned = []
    for block, warps in CONFIGS:
        ms = median_ms(lambda: sp.scan(x, False, out, block, warps), flush, reps=max(5, reps // 2), queue=queue)
        tuned.append((ms, block, warps))
        print(f"triton tune n=2^{n.bit_length() - 1} BLOCK {block:5} warps {warps:2}: {ms:.4f} ms "
              f"{2 * n * 4 / (ms * 1e6):.1f} GB/s")
    _, block, warps = min(tuned)
    print(f"triton config: BLOCK {block}, num_warps {warps}")
    print(f"{'triton n':<14} {'type':8} {'copy GB/s':>9} {'incl GB/s':>9} {'excl GB/s':>9} {'cumsum GB/s':>11} "
          f"{'incl/cumsum':>11} {'of copy':>7}")
    slowest = None
    for k in range(min_log2, max_log2 + 1):
        n = 1 << k
        src = torch.empty(n, dtype=torch.float32, device="cuda")
        dst = torch.empty_like(src)
        copy_ms = median_ms(lambda: dst.copy_(src), flush, reps, queue=queue)
        del src, dst
        for dtype in (torch.float32, torch.int32):
            x = integer_data(n, dtype, gen).cuda()
            out = torch.empty_like(x)
            ref = torch.cumsum(x, 0, dtype=dtype)
            for exclusive, expected in ((False, ref), (True, ref - x)):  # the timed size, exactly (integer data)
                out.fill_(-1)
                sp.scan(x, exclusive, out, block, warps)
                if not torch.equal(out, expected):
                    i = int((out != expected).nonzero()[0])
                    raise SystemExit(f"triton FAILED: n={n} {dtype} {'exclusive' if exclusive else 'inclusive'}: "
                                     f"out[{i}] is {out[i].item()}, should be {expected[i].item()}")
            incl = median_ms(lambda: sp.scan(x, False, out, block, warps), flush, reps, queue=queue)
            excl = median_ms(lambda: sp.scan(x, True, out, block, warps), flush, reps, queue=queue)
            cum = median_ms(lambda: torch.cumsum(x, 0, dtype=dtype, out=ref), flush, reps, queue=queue)
            gbs = lambda ms: 2 * n * 4 / (ms * 1e6)
            ratio = cum / incl
            if slowest is None or ratio < slowest[0]:
                slowest = (ratio, k, str(dtype)[6:])
            print(f"triton 2^{k:<8} {str(dtype)[6:]:8} {gbs(copy_ms):9.1f} {gbs(incl):9.1f} {gbs(excl):9.1f} "
                  f"{gbs(cum):11.1f} {ratio:10.2f}x {gbs(incl) / gbs(copy_ms):7.2f}")
            del x, out, ref
    if slowest:
        print(f"triton target: at least torch.cumsum from 2^{min_log2} up: slowest {slowest[0]:.2f}x at 2^{slowest[1]} "
              f"{slowest[2]} -> {'met' if slowest[0] >= 1.0 else 'not met'}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="A single-pass (decoupled look-back) Triton scan, checked and timed")
    parser.add_argument("--check", action="store_true", help="the checks only")
    parser.add_argument("--max-log2", type=int, default=28, help="time n = 2^20 .. 2^K (20..28, default 28)")
    parser.add_argument("--min-log2", type=int, default=20, help="time from n = 2^K (20..28, default 20)")
    parser.add_argument("--reps", type=int, default=20, help="timed repetitions, median reported")
    parser.add_argument("--no-queue", action="store_true",
                        help="time without the GPU-side wait before each repetition (host launch cost included)")
    parser.add_argument("--seed", type=int, default=1)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return EXIT_PASS if exit_.code == 0 else EXIT_USAGE
    if not 20 <= args.min_log2 <= args.max_log2 <= 28 or args.reps < 1:
        print("triton_single_pass: want 20 <= --min-log2 <= --max-log2 <= 28 and --reps >= 1", file=sys.stderr)
        return EXIT_USAGE
    if not HAVE:
        print(f"triton_single_pass: no usable GPU stack: {MISSING}", file=sys.stderr)
        return EXIT_NO_GPU
    if not torch.cuda.is_available():
        print("triton_single_pass: torch sees no CUDA device", file=sys.stderr)
        return EXIT_NO_GPU
    print(f"triton single-pass scan on {torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
          f"triton {triton.__version__}, seed {args.seed}")
    gen = torch.Generator().manual_seed(args.seed)
    sp = SinglePassScan("cuda")
    failures = []
    block, warps = 4096, 8
    sizes = [(1, "one element: tile 0 alone"), (block - 1, "tile - 1: one partial tile"), (block, "one full tile"),
             (block + 1, "tile + 1: the first carry"), (100 * block + 7, "101 tiles: windows move back"),
             ((1 << 20) + 3, "2^20 + 3: partial last tile"), (1 << 24, "2^24: 4096 tiles")]
    try:
        # The default configuration here; the one the tuning pass picks is checked exactly at every
        # timed size (2^20 .. 2^28), both types and both scans, before it is timed.
        check_exact(sp, sizes, block, warps, gen, failures)
        check_floats(sp, block, warps, gen, failures)
        if failures:
            print("triton FAILED:\n  " + "\n  ".join(failures))
            return EXIT_FAIL
        print("triton checks: all passed")
        if not args.check:
            flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4 + (1 << 20),
                                dtype=torch.int32, device="cuda")
            bench(sp, args.min_log2, args.max_log2, args.reps, gen, flush, queue=not args.no_queue)
    except SystemExit as stop:
        print(stop)
        return EXIT_FAIL
    except Exception as error:  # a compile or launch failure: say which, exit 1
        print(f"triton FAILED with {type(error).__name__}: {error}")
        return EXIT_FAIL
    return EXIT_PASS


if __name__ == "__main__":
    sys.exit(main())
