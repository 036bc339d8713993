"""Grader for the Day 31 exercise (exercises/day31_shift_then_scan.cu).

The submission is built into harness/drivers/day31_checker.cu, which runs
scanExclusiveScanThenShift and scanExclusiveShiftThenScan at 32, 64, 256 and
1024 threads on inputs written here and dumps every output and totals array.
Everything below this line of the pipeline is harness code: the inputs, the
reference (each tile's exclusive scan restarts at 0; each tile's total is the
sum of its elements, lanes past the end counting 0), the comparisons, the
diagnoses. `evaluate` is pure Python so the grading logic is tested without a GPU.
"""

from __future__ import annotations

import math
import shutil
import struct
import subprocess
from array import array
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

from . import EXIT_NO_GPU
from .build import Program, compile_program
from .grading import NoGpu, Report, compare_exact, show
from .paths import REPO
from .run import run_process

BLOCKS = (32, 64, 256, 1024)
PAGE_N = 1_049_187
KERNELS = ("scan-then-shift", "shift-then-scan")  # the order the checker dumps them in
ANSWER_SCAN_THEN_SHIFT = 1
ANSWER_SHIFT_THEN_SCAN = 2


# ---- inputs ----------------------------------------------------------------

def splitmix64(state: int):
    """The lesson programs' generator, so a seed means the same data everywhere."""
    mask = (1 << 64) - 1
    while True:
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        yield z ^ (z >> 31)


def cycle8(n: int) -> list[float]:
    return [float(i % 8 + 1) for i in range(n)]


def random_small(n: int, seed: int) -> list[float]:
    gen = splitmix64(seed)
    return [float(next(gen) % 16) for _ in range(n)]


@dataclass
class Case:
    label: str
    values: list[float]


def cases(seed: int) -> list[Case]:
    """The page's input, then seeded random inputs of sizes the student never saw."""
    found = [Case(f"page input: n={PAGE_N}, in[i] = (i % 8) + 1", cycle8(PAGE_N))]
    for n, why in ((1, "a single element: lane 0 alone"),
                   (1025, "one past the largest tile"),
                   (100_003, "many tiles, a partial last tile at every block size")):
        found.append(Case(f"random: n={n} ({why}), integers 0..15, grader seed {seed}",
                          random_small(n, seed + n)))
    return found


# ---- reference -------------------------------------------------------------

def tiles(values: list[float], block: int):
    for start in range(0, len(values), block):
        yield start, values[start:start + block]


def exclusive_tiles(values: list[float], block: int) -> list[float]:
    out: list[float] = []
    for _, tile in tiles(values, block):
        out.append(0.0)
        out.extend(accumulate(tile[:-1]))
    return out


def inclusive_tiles(values: list[float], block: int) -> list[float]:
    out: list[float] = []
    for _, tile in tiles(values, block):
        out.extend(accumulate(tile))
    return out


def tile_totals(values: list[float], block: int) -> list[float]:
    return [math.fsum(tile) for _, tile in tiles(values, block)]


# ---- what the checker wrote --------------------------------------------------

@dataclass
class KernelRun:
    out: list[float]
    totals: list[float]


@dataclass
class Dump:
    answer: int
    sentence: str
    n: int
    runs: dict[int, dict[str, KernelRun]]  # block -> kernel name -> outputs


def _floats(data: bytes, at: int, count: int) -> tuple[list[float], int]:
    values = array("f")
    values.frombytes(data[at:at + 4 * count])
    if len(values) != count:
        raise ValueError("the checker's output file is truncated")
    return values.tolist(), at + 4 * count


def parse_dump(data: bytes) -> Dump:
    if data[:8] != b"DAY31X01":
        raise ValueError("the checker's output file has the wrong header")
    answer, sentence_len = struct.unpack_from("<iI", data, 8)
    at = 16
    sentence = data[at:at + sentence_len].decode("utf-8", "replace")
    at += sentence_len
    n, block_count = struct.unpack_from("<QI", data, at)
    at += 12
    runs: dict[int, dict[str, KernelRun]] = {}
    for _ in range(block_count):
        block, tile_count = struct.unpack_from("<IQ", data, at)
        at += 12
        runs[block] = {}
        for name in KERNELS:
            out, at = _floats(data, at, n)
            totals, at = _floats(data, at, tile_count)
            runs[block][name] = KernelRun(out, totals)
    return Dump(answer, sentence, n, runs)


# ---- diagnosis ---------------------------------------------------------------

def _all_nan(values: list[float]) -> bool:
    return bool(values) and all(math.isnan(v) for v in values)


def diagnose_output(kernel: str, values: list[float], block: int, out: list[float]) -> str:
    """A sentence about the likely cause, or '' when the pattern is not recognised."""
    if _all_nan(out):
        return "out was never written: the kernel stored nothing (every element is still the NaN poison)."
    if compare_exact(inclusive_tiles(values, block), out) is None:
        hint = ("lane tid must load element i - 1 and lane 0 the identity 0, before the scan"
                if kernel == "shift-then-scan" else "store the left neighbour's prefix, and 0 from lane 0")
        return f"this is the INCLUSIVE scan (each element counts itself): {hint}."
    expected = exclusive_tiles(values, block)
    bad = [i for i, (e, a) in enumerate(zip(expected, out)) if e != a]
    if bad and all(i % block == 0 for i in bad):
        return "only the first element of tiles is wrong: an exclusive scan starts every tile at the identity 0."
    if bad and all(i % block == block - 1 or i == len(values) - 1 for i in bad):
        return "only the last element of tiles is wrong: check the guard and the lane that loads the last element."
    return ""


def diagnose_totals(values: list[float], block: int, totals: list[float]) -> str:
    if _all_nan(totals):
        return "block_totals was never written: one lane of each block must store the tile's total."
    full = [(start, tile) for start, tile in tiles(values, block) if len(tile) == block]
    short = [math.fsum(tile) - tile[-1] for _, tile in full]
    if full and short != [math.fsum(tile) for _, tile in full] and totals[:len(full)] == short:
        return ("every total is short by its tile's last input element: that is the last word of a scan that "
                "never added the last element (the exclusive result), not the tile's sum. Add in[last] back.")
    return ""


# ---- evaluation --------------------------------------------------------------

def _feedback_lines(case: Case, block: int, mismatch, what: str, diagnosis: str) -> list[str]:
    lines = [f"{case.label}, {block} threads: {mismatch.describe(what)}"]
    if diagnosis:
        lines.append(f"  likely cause: {diagnosis}")
    return lines


def totals_side_by_side(case: Case, dump: Dump) -> str:
    """Both totals arrays next to the reference, pass or fail, for every block size."""
    header = f"{'threads':>7}  {'tile':>6}  {'expected':>9}  {'scan-then-shift':>15}  {'shift-then-scan':>15}"
    lines = [f"block totals, {case.label}", header, "  ".join("-" * w for w in (7, 6, 9, 15, 15))]
    for block, by_kernel in dump.runs.items():
        expected = tile_totals(case.values, block)
        first, second = by_kernel[KERNELS[0]].totals, by_kernel[KERNELS[1]].totals
        shown = sorted({0, 1, len(expected) - 1} & set(range(len(expected))))
        for t in shown:
            lines.append(f"{block:>7}  {t:>6}  {show(expected[t]):>9}  {show(first[t]):>15}  {show(second[t]):>15}")
        verdict = [f"{name} {'matches' if compare_exact(expected, run.totals) is None else 'MISMATCHES'}"
                   for name, run in by_kernel.items()]
        lines.append(f"{block:>7}  {'all':>6}  {len(expected):>9}  " + ", ".join(verdict))
    return "\n".join(lines)


def evaluate(report: Report, results: list[tuple[Case, Dump]]) -> Report:
    """Turn the checker's dumps into checks. Pure: no GPU, no files."""
    dump0 = results[0][1]
    if dump0.answer == ANSWER_SCAN_THEN_SHIFT:
        report.add("answer: which version hands you the total", True)
    elif dump0.answer == ANSWER_SHIFT_THEN_SCAN:
        report.add("answer: which version hands you the total", False,
                   "kFreeTotalVersion is 2. Look at what each tile holds when the loop ends: which version scanned "
                   "the real tile, last element included?")
    else:
        report.add("answer: which version hands you the total", False,
                   f"kFreeTotalVersion is {dump0.answer}: set it to 1 (scan-then-shift) or 2 (shift-then-scan).")
    sentence = dump0.sentence.strip()
    words = len(sentence.split())
    if words >= 5 and "TODO" not in sentence:
        report.add("answer: the sentence", True)
        report.notes.append(f"sentence for the instructor: {sentence}")
    else:
        report.add("answer: the sentence", False,
                   "kFreeTotalSentence must be one sentence (at least five words) saying why; it is "
                   f"{sentence!r}.")

    for kernel in KERNELS:
        out_lines: list[str] = []
        total_lines: list[str] = []
        for case, dump in results:
            for block, by_kernel in dump.runs.items():
                run = by_kernel[kernel]
                m = compare_exact(exclusive_tiles(case.values, block), run.out)
                if m is not None and len(out_lines) < 8:
                    out_lines += _feedback_lines(case, block, m, "out",
                                                 diagnose_output(kernel, case.values, block, run.out))
                m = compare_exact(tile_totals(case.values, block), run.totals)
                if m is not None and len(total_lines) < 8:
                    total_lines += _feedback_lines(case, block, m, "block_totals",
                                                   diagnose_totals(case.values, block, run.totals))
        report.add(f"{kernel}: exclusive scan at 32, 64, 256, 1024 threads", not out_lines, "\n".join(out_lines))
        report.add(f"{kernel}: block totals at 32, 64, 256, 1024 threads", not total_lines, "\n".join(total_lines))

    report.notes.append(totals_side_by_side(*results[0]))
    return report


# ---- the whole pipeline ------------------------------------------------------

CHECKER_SOURCE = REPO / "harness" / "drivers" / "day31_checker.cu"


def checker_program(submission: Path, name: str = "day31_checker") -> Program:
    """The checker with `submission` force-included ahead of it."""
    return Program(name, (str(CHECKER_SOURCE),), "nvcc", extra_flags=("-include", str(submission)))


def grade(exercise: str, submission: Path, workdir: Path, seed: int) -> Report:
    report = Report(exercise, str(submission))
    report.notes.append(f"hidden inputs drawn with seed {seed}; reproduce: "
                        f"python3 harness/grade.py day31 {submission.name} --seed {seed}")
    copy = workdir / "submission.cu"  # a fixed name: odd characters in the student's path cannot reach the compiler
    shutil.copyfile(submission, copy)
    built = compile_program(checker_program(copy), workdir / "build")
    if not built.ok:
        report.add("builds", False, f"the checker did not compile with your file.\n$ {built.reproduce}\n{built.output}")
        return report
    report.add("builds", True)

    results: list[tuple[Case, Dump]] = []
    for number, case in enumerate(cases(seed)):
        data_in = workdir / f"input{number}.f32"
        data_out = workdir / f"output{number}.bin"
        data_in.write_bytes(array("f", case.values).tobytes())
        command = [str(built.path), "--input", str(data_in), "--output", str(data_out)]
        try:
            proc = run_process(command, capture_output=True, text=True, timeout=120)
        except OSError as exc:
            report.add("runs", False, f"{case.label}: the grader could not start its checker ({exc}); "
                                      "a harness problem, not yours")
            return report
        except subprocess.TimeoutExpired:
            report.add("runs", False, f"{case.label}: the kernels did not finish within 120 s (a hang: a barrier "
                                      "some lanes never reach, or a loop that never ends?)")
            return report
        if proc.returncode == EXIT_NO_GPU:
            raise NoGpu(proc.stderr.strip())
        if proc.returncode != 0:
            report.add("runs", False, f"{case.label}: {proc.stderr.strip() or f'exit status {proc.returncode}'}")
            return report
        results.append((case, parse_dump(data_out.read_bytes())))
    report.add("runs", True)
    return evaluate(report, results)
