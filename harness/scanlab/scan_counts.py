"""Drill 03's reference numbers, counted by the harness itself.

The grader of exercises/03_scan_analysis.md compares a student's numbers with
these. They are counted, not typed in: one block scanning one tile is
simulated (Hillis-Steele double-buffered with one thread per element; Blelloch
up-sweep and down-sweep in place with one thread per pair, padded to a power of
two with the identity 0; the bonus warp-shuffle block scan), every add goes
through a counter that also marks its thread active in the current level, and
every barrier closes a level. Each simulated scan is checked against the
sequential one, so the counts belong to scans that work.

This is a port of solutions/03_scan_analysis.cpp, the program students of the
full repository read and run, so that grading never needs solutions/ (a
student release does not have it). harness/test_course_mode.py checks that the
two print the same `name = value` lines, so they cannot drift apart. The model
(what an add, a level, a barrier and an active thread are) is stated in
exercises/03_scan_analysis.md and in that program's header.

    python3 -m scanlab.scan_counts [N ...]      (from harness/) the slot lines, default 512 1024 300
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from itertools import accumulate

from . import splitmix

BYTES_PER_ELEMENT = 4  # float tiles: the page's adds-per-byte figures use 8n bytes (read once, written once)
SHUFFLE_BLOCK = 1024  # the bonus question's block
# The sizes exercises/03_scan_analysis.md asks about: 512 for the counts (Q1-Q4: the lessons print the
# 1024-element tile's, so those are no question), 1024 for utilisation and intensity (derived from the
# page's figures), 300 for the padded tile (Q8: it pads to 512, never to a size whose counts are printed).
DEFAULT_SIZES = (512, 1024, 300)


class CountingError(RuntimeError):
    """A simulated scan did not match the sequential one: the counts would belong to a broken scan."""


# ---- inputs and the sequential reference ---------------------------------------

def make_input(n: int) -> list[int]:
    """Integers 0..15 seeded with n, as the C++ program draws them (the counts do not depend on them)."""
    gen = splitmix.stream(n)
    return [next(gen) % 16 for _ in range(n)]


def inclusive_reference(values: list[int]) -> list[int]:
    return list(accumulate(values))


def exclusive_reference(values: list[int]) -> list[int]:
    return [0, *accumulate(values)][:len(values)]


# ---- the instrumented block -------------------------------------------------------
#
# Threads run one after another inside a level, which is what a barrier-separated
# level permits: no thread reads what another writes in the same level.

@dataclass
class Level:
    phase: str
    stride: int
    active: int
    adds: int


@dataclass
class Block:
    threads: int
    adds: int = 0
    barriers: int = 0
    levels: list[Level] = field(default_factory=list)
    _active: set[int] = field(default_factory=set)
    _level_adds: int = 0

    def add(self, tid: int, a: int, b: int) -> int:
        self.adds += 1
        self._level_adds += 1
        self._active.add(tid)
        return a + b

    def barrier(self, phase: str, stride: int) -> None:
        """Closes the current level."""
        self.levels.append(Level(phase, stride, len(self._active), self._level_adds))
        self.barriers += 1
        self._active = set()
        self._level_adds = 0


def hillis_steele(values: list[int]) -> tuple[Block, list[int]]:
    """Double-buffered: level k has every thread tid >= 2^k add the element 2^k to its left."""
    n = len(values)
    block = Block(n)
    src = list(values)
    offset = 1
    while offset < n:
        dst = [block.add(tid, src[tid - offset], src[tid]) if tid >= offset else src[tid] for tid in range(n)]
        block.barrier("-", offset)
        src = dst
        offset *= 2
    return block, src


def padded_size(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def blelloch(values: list[int]) -> tuple[Block, list[int]]:
    """Up-sweep, the identity at the root, down-sweep; exclusive. One thread per pair of the padded tile."""
    p = padded_size(len(values))
    block = Block(p // 2 if p // 2 > 0 else 1)
    x = list(values) + [0] * (p - len(values))  # padding with the identity 0
    offset = 1
    active = p // 2
    while active > 0:
        for tid in range(min(active, block.threads)):
            left, right = offset * (2 * tid + 1) - 1, offset * (2 * tid + 2) - 1
            x[right] = block.add(tid, x[left], x[right])
        block.barrier("up", offset)
        offset *= 2
        active //= 2
    x[p - 1] = 0  # the identity at the root: nothing precedes the whole tile
    active = 1
    while active < p:
        offset //= 2
        for tid in range(min(active, block.threads)):
            left, right = offset * (2 * tid + 1) - 1, offset * (2 * tid + 2) - 1
            left_sum = x[left]
            x[left] = x[right]  # a copy, not an add
            x[right] = block.add(tid, x[right], left_sum)
        block.barrier("down", offset)
        active *= 2
    return block, x[:len(values)]


# ---- the bonus: a warp-shuffle block scan ---------------------------------------------
#
# Each warp scans its lanes with shfl_up (Hillis-Steele in lockstep: no barrier);
# the last lane writes the warp total to shared memory; barrier; warp 0 scans the
# totals; barrier; every warp but the first adds the total of the warps before it.

@dataclass
class Shuffle:
    steps_per_warp: int = 0
    barriers: int = 0
    adds: int = 0
    correct: bool = False


def warp_scan(lanes: list[int], first: int, width: int) -> tuple[int, int]:
    """Scans lanes[first:first + width] in place; (steps, adds)."""
    steps = adds = 0
    d = 1
    while d < width:
        before = lanes[first:first + width]  # shfl_up reads every lane's value from before this step
        for lane in range(d, width):
            lanes[first + lane] = before[lane - d] + before[lane]
            adds += 1
        steps += 1
        d *= 2
    return steps, adds


def shuffle_block(block: int, warp: int) -> Shuffle:
    s = Shuffle()
    values = make_input(block)
    x = list(values)
    warps = block // warp
    for w in range(warps):
        s.steps_per_warp, adds = warp_scan(x, w * warp, warp)
        s.adds += adds
    totals = [x[w * warp + warp - 1] for w in range(warps)]
    s.barriers += 1  # the totals are in shared memory before warp 0 reads them
    s.adds += warp_scan(totals, 0, warps)[1]
    s.barriers += 1  # the scanned totals are back before the other warps read them
    for w in range(1, warps):
        for lane in range(warp):
            x[w * warp + lane] += totals[w - 1]
            s.adds += 1
    s.correct = x == inclusive_reference(values)
    return s


def warp_steps(warp: int) -> int:
    return warp_scan(make_input(warp), 0, warp)[0]


# ---- the slots ----------------------------------------------------------------------

def percent(part: int, whole: int) -> str:
    """As the C++ program prints it: printf("%.2f") of the same double (both round it correctly)."""
    return "-" if whole == 0 else f"{100.0 * part / whole:.2f}"


def ratio(a: int, b: int) -> str:
    return "-" if b == 0 else f"{a / b:.2f}"


def levels_under_quarter(block: Block) -> int:
    return sum(1 for level in block.levels if 4 * level.active < block.threads)


def size_slots(n: int) -> dict[str, str]:
    """Every slot of one tile size, in the order the C++ program prints them."""
    if n < 1:
        raise ValueError(f"a tile has at least one element, not {n}")
    values = make_input(n)
    hs, inclusive = hillis_steele(values)
    bl, exclusive = blelloch(values)
    if inclusive != inclusive_reference(values) or exclusive != exclusive_reference(values):
        raise CountingError(f"a simulated scan of n = {n} did not match the sequential one")
    return {
        f"serial_adds_{n}": str(n - 1),
        f"hs_threads_{n}": str(hs.threads),
        f"hs_levels_{n}": str(len(hs.levels)),
        f"hs_adds_{n}": str(hs.adds),
        f"hs_barriers_{n}": str(hs.barriers),
        f"hs_avg_utilisation_pct_{n}": percent(hs.adds, len(hs.levels) * hs.threads),
        f"hs_levels_under_25pct_{n}": str(levels_under_quarter(hs)),
        f"bl_padded_n_{n}": str(padded_size(n)),
        f"bl_threads_{n}": str(bl.threads),
        f"bl_levels_{n}": str(len(bl.levels)),
        f"bl_adds_{n}": str(bl.adds),
        f"bl_barriers_{n}": str(bl.barriers),
        f"bl_avg_utilisation_pct_{n}": percent(bl.adds, len(bl.levels) * bl.threads),
        f"bl_levels_under_25pct_{n}": str(levels_under_quarter(bl)),
        f"extra_work_factor_{n}": ratio(hs.adds, bl.adds),
        f"hs_adds_per_byte_{n}": ratio(hs.adds, 2 * BYTES_PER_ELEMENT * n),
        f"bl_adds_per_byte_{n}": ratio(bl.adds, 2 * BYTES_PER_ELEMENT * n),
    }


def slots(sizes: tuple[int, ...] = DEFAULT_SIZES) -> dict[str, str]:
    """name -> value as text, exactly what `03_scan_analysis --n SIZES --slots` prints."""
    found: dict[str, str] = {}
    for n in sizes:
        found.update(size_slots(n))
    shuffle = shuffle_block(SHUFFLE_BLOCK, 32)
    if not shuffle.correct:
        raise CountingError("the simulated warp-shuffle block scan did not match the sequential one")
    found["warp_scan_steps_32"] = str(warp_steps(32))
    found["warp_scan_steps_64"] = str(warp_steps(64))
    found[f"shfl_block_barriers_{SHUFFLE_BLOCK}"] = str(shuffle.barriers)
    found[f"shfl_block_adds_{SHUFFLE_BLOCK}"] = str(shuffle.adds)
    return found


_DEFAULT: dict[str, str] | None = None


def reference_slots() -> dict[str, str]:
    """The default sizes' slots, counted once per process (a class grades many files)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = slots()
    return dict(_DEFAULT)


def main(argv: list[str]) -> int:
    try:
        sizes = tuple(int(a) for a in argv) or DEFAULT_SIZES
        if any(n < 1 or n > 1 << 16 for n in sizes):
            raise ValueError
    except ValueError:
        print("usage: python3 -m scanlab.scan_counts [N ...]   (each N from 1 to 65536)", file=sys.stderr)
        return 2
    try:
        counted = slots(sizes)
    except CountingError as exc:
        print(f"scan_counts: FAILED: {exc}", file=sys.stderr)
        return 1
    for name, value in counted.items():
        print(f"{name} = {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
