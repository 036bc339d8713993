"""Made-up Day 31 runner dumps, for testing the grader's judgement without a GPU.

What a correct kernel leaves (the reference in out and totals, the input untouched, the
guard words intact), with any kernel's arrays or whole launch replaced by a test. The
grader's tests and the course-mode tests both use these; nothing here runs in grading.
"""

from __future__ import annotations

from .grade_day31 import (BLOCKS, GUARD, KERNELS, POISON, Case, CaseRun, Launch, exclusive_tiles, f32_bytes,
                          random_small, tile_totals)

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
