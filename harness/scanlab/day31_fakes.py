"""Made-up Day 31 runner dumps, for testing the grader's judgement without a GPU.

What a correct kernel leaves (the reference in out and totals, the input untouched, the
guard words intact), with any kernel's arrays or whole launch replaced by a test; and
`day31_box`, the plan runner's stand-in (gpu_fakes.FakeGpuBox) with both kernels done
right, for the grader's runs through gpu_plan. The grader's tests and the course-mode
tests use these; nothing here runs in grading.
"""

from __future__ import annotations

import struct
from array import array

from .gpu_fakes import FakeGpuBox
from .grade_day31 import (BLOCKS, GUARD, KERNEL_SYMBOLS, KERNELS, POISON, SENTENCE_CAPACITY, SENTENCE_GLOBAL,
                          VERSION_GLOBAL, Case, CaseRun, Launch, exclusive_tiles, f32_bytes, random_small,
                          tile_totals)

SENTENCE = "Scan-then-shift keeps the whole tile, so its last word is the total."


def guarded(words: bytes, before: bytes | None = None, after: bytes | None = None) -> bytes:
    """`words` with the runner's poisoned guard words on both sides (or the ones given)."""
    return (before or POISON * GUARD) + words + (after or POISON * GUARD)


def clean_launch(values, block) -> Launch:
    """What a correct kernel leaves: the reference in out and totals, the input untouched, guards intact."""
    return Launch(GUARD, guarded(f32_bytes(exclusive_tiles(values, block))),
                  guarded(f32_bytes(tile_totals(values, block))), guarded(f32_bytes(values)))


def fake_run(case: Case, out=None, totals=None, launch=None) -> CaseRun:
    """One input's launches; `out`/`totals` override one kernel's arrays, `launch` a whole launch."""
    launches = {}
    for block in BLOCKS:
        launches[block] = {}
        for kernel in KERNELS:
            made = clean_launch(case.values, block)
            if out and kernel in out:
                made.out_words = guarded(f32_bytes(out[kernel](case.values, block)))
            if totals and kernel in totals:
                made.totals_words = guarded(f32_bytes(totals[kernel](case.values, block)))
            if launch and kernel in launch:
                made = launch[kernel](case.values, block, made)
            launches[block][kernel] = made
    return CaseRun(case, launches)


CASE = Case("random: n=3001", random_small(3001, 5))


def right_kernel(args, grid: int, block: int) -> None:
    """Either Day 31 kernel done right: every tile's exclusive scan in out, its total in block_totals."""
    inputs, out, totals, _ = args
    values = array("f", inputs.get()).tolist()
    out.set(f32_bytes(exclusive_tiles(values, block)))
    totals.set(f32_bytes(tile_totals(values, block)))


def answer_globals(version: int = 1, sentence: str = SENTENCE, truncated: bool = False) -> dict[str, bytes]:
    """The two globals as day31_exports.cuh lays them out."""
    raw = sentence.encode()[:SENTENCE_CAPACITY]
    text = raw + bytes(SENTENCE_CAPACITY - len(raw)) + struct.pack("<II", len(raw), int(truncated))
    return {VERSION_GLOBAL: struct.pack("<i", version), SENTENCE_GLOBAL: text}


def day31_box(fate=lambda k, kernel: "ok", missing=(), **kwargs) -> FakeGpuBox:
    """The plan runner's stand-in with both kernels right (those named in `missing` left out of the module)."""
    kernels = {KERNEL_SYMBOLS[k]: right_kernel for k in KERNELS if k not in missing}
    kwargs.setdefault("globals", answer_globals())
    return FakeGpuBox(kernels, fate, **kwargs)
