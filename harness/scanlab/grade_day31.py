"""Grader for the Day 31 exercise (exercises/day31_shift_then_scan.cu).

No host code of the submission ever runs. The pipeline:

1. Compile, in a sandbox, DEVICE code only (`nvcc -fatbin`): a wrapper
   translation unit that #includes the submission and then
   harness/drivers/day31_exports.cuh, which copies kFreeTotalVersion and
   kFreeTotalSentence into __device__ globals at compile time. If that part
   does not compile (answers that are not constant expressions), the
   submission alone is compiled, so its kernels are still graded. A build
   that read any file but the scratch folder's and the system's (/usr) is
   refused, which matters where the sandbox is only partial.
2. The harness's own runner (harness/drivers/gpu_runner.cpp, through
   scanlab/gpu_plan.py: host C++ built with g++ outside the sandbox and cached)
   follows the plan `day31_plan` writes: in a GPU sandbox, one process for all
   inputs, it reads the two answers before any kernel runs, launches both
   kernels by their mangled names at 32, 64, 256 and 1024 threads, and writes
   back the raw words of out, block_totals and the input, each with poisoned
   guard words around it.
3. Everything is judged here: the reference (each tile's exclusive scan
   restarts at 0; each tile's total is the sum of its elements, lanes past the
   end counting 0), the guards, the input, the diagnoses. `evaluate` is pure
   Python so the grading logic is tested without a GPU.

Scores come from harness/points.toml (checked against CHECKS at import). The
lesson's scan-then-shift exclusive scan is given in the starter and is worth 0;
the side-effects check counts only once a kernel the student completes gives a
right output; a compile error lists every check as failed, "not run", so the
maximum never changes. In course mode no feedback shows an expected value (the
"should be" halves, the side-by-side totals table): those are instructor-only.

`probe_gpu()` is the graders' own check for a usable GPU (the runner's --probe on
drivers/day31_probe.cu); grade.py calls it before anything else. `grade()` never
reports "no GPU": after the probe, any failure is the submission's (or a harness
error), never exit status 3.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import random
import re
import struct
import threading
from array import array
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from itertools import accumulate
from pathlib import Path

from . import env, splitmix
from .build import compiler_warnings, cuda_gencode
from .grading import (MODES, TOO_LARGE, Report, compare_exact, hidden_note, read_submission, reproduce_line,
                      require_points, show)
from .gpu_plan import (LAUNCH_LIMIT_S, RUNNER_HUNG, RUNNER_NAME, HarnessBuildError, ModuleInfo, Plan, Words,
                       cached_build, cuda_root, probe, run_plan)
from .paths import REPO
from .sandbox import (NVCC_COMPILE_LIMITS, GPU_LIMITS, INSIDE as INSIDE_SCRATCH, Outcome, Sandbox,
                      toolchain_dirs)

BLOCKS = (32, 64, 256, 1024)
PAGE_N = 1_049_187
KERNELS = ("scan-then-shift", "shift-then-scan")
KERNEL_SYMBOLS = {  # the starter's signatures, mangled: the names the runner asks the module for
    "scan-then-shift": "_Z26scanExclusiveScanThenShiftPKfPfS1_m",
    "shift-then-scan": "_Z26scanExclusiveShiftThenScanPKfPfS1_m",
}
KERNEL_SIGNATURES = {
    "scan-then-shift": "scanExclusiveScanThenShift(const float*, float*, float*, size_t)",
    "shift-then-scan": "scanExclusiveShiftThenScan(const float*, float*, float*, size_t)",
}
ANSWER_SCAN_THEN_SHIFT = 1
ANSWER_SHIFT_THEN_SCAN = 2
VERSION_CHECK = "answer: which version hands you the total"
SENTENCE_CHECK = "answer: the sentence"
SIDE_EFFECTS_CHECK = "input left unchanged and nothing written outside out and block_totals"


def out_check(kernel: str) -> str:
    return f"{kernel}: exclusive scan at 32, 64, 256, 1024 threads"


def totals_check(kernel: str) -> str:
    return f"{kernel}: block totals at 32, 64, 256, 1024 threads"


# Every check, in report order, whatever the outcome ("builds" is added by grade()).
CHECKS = ["builds", VERSION_CHECK, SENTENCE_CHECK,
          *(name for kernel in KERNELS for name in (out_check(kernel), totals_check(kernel))), SIDE_EFFECTS_CHECK]
# The checks of code the student writes: the starter gives scan-then-shift's scan whole.
STUDENT_WORK = [totals_check("scan-then-shift"), out_check("shift-then-scan"), totals_check("shift-then-scan")]
require_points("day31", CHECKS)  # harness/points.toml must name exactly these

GUARD = 1024  # poisoned words on each side of in, out and block_totals
POISON = b"\xff\xff\xff\xff"  # the runner's poison word: a NaN no kernel computes from these inputs
MOST_LINES = 8  # feedback lines per check

DRIVERS = REPO / "harness" / "drivers"
PROBE_SOURCE = DRIVERS / "day31_probe.cu"
EXPORTS_SOURCE = DRIVERS / "day31_exports.cuh"
WRAPPER = "scanlab_day31_wrapper.cu"
MODULE = "module.fatbin"
DEVICE_FLAGS = ("-std=c++17", "-O3", "-fatbin")
# The answers' __device__ globals (day31_exports.cuh), read by the runner before any kernel runs.
VERSION_GLOBAL = "scanlab_free_total_version"  # int
SENTENCE_GLOBAL = "scanlab_free_total_sentence"  # ScanlabText: char bytes[4096]; unsigned length, truncated
SENTENCE_CAPACITY = 4096
# One process runs the 32 launches of the 4 inputs (each a few milliseconds; the CUDA context
# takes longer to make): a run past this is a kernel that never ends. Waiting blocks rather
# than spins, so the CPU limit is slack. Within it, the runner's own limit per launch
# (gpu_plan.LAUNCH_LIMIT_S, its status RUNNER_HUNG) makes a kernel that never ends cost that
# much of the GPU's time, not the whole run's limit.
RUN_LIMITS = dataclasses.replace(GPU_LIMITS, cpu_s=20, wall_s=20)


# ---- inputs ----------------------------------------------------------------

def cycle8(n: int) -> list[float]:
    return [float(i % 8 + 1) for i in range(n)]


def random_small(n: int, seed: int) -> list[float]:
    gen = splitmix.stream(seed)  # the lesson programs' generator: a seed means the same data everywhere
    return [float(next(gen) % 16) for _ in range(n)]


@dataclass(eq=False)
class Case:
    """One input. A seed's inputs are made once and shared by every submission graded with it (a
    class), so their references are computed once too: treat them as read-only."""
    label: str
    values: list[float]
    student_label: str = ""  # course mode: a hidden input named without its size or seed ("" = label)
    _outs: dict[int, bytes] = field(default_factory=dict, repr=False)
    _totals: dict[int, bytes] = field(default_factory=dict, repr=False)

    @cached_property
    def input_bytes(self) -> bytes:
        return f32_bytes(self.values)

    def expected_out(self, block: int) -> bytes:
        """Every tile's exclusive scan at this block size, as the float32 words out must hold."""
        if block not in self._outs:
            self._outs[block] = f32_bytes(exclusive_tiles(self.values, block))
        return self._outs[block]

    def expected_totals(self, block: int) -> bytes:
        if block not in self._totals:
            self._totals[block] = f32_bytes(tile_totals(self.values, block))
        return self._totals[block]


@lru_cache(maxsize=4)
def cases(seed: int) -> list[Case]:
    """The page's input, then seeded random inputs of sizes the student never saw.

    Values are integers 0..16 and a tile has at most 1024 of them, so every
    prefix stays below 2^24 and float sums are exact in any order: `!=` is fair.
    """
    found = [Case(f"page input: n={PAGE_N}, in[i] = (i % 8) + 1", cycle8(PAGE_N))]
    # Hidden: drawn from the seed where the size has no reason of its own, so no file can be fitted
    # to sizes it was once shown; in course mode a student sees neither these sizes nor the seed.
    many = random.Random(f"{seed}/day31/many").randrange(50_001, 400_001, 2)  # odd: never whole tiles
    for k, (n, why) in enumerate(((1, "a single element: lane 0 alone"),
                                  (1025, "one past the largest tile"),
                                  (many, "many tiles, a partial last tile at every block size")), start=1):
        found.append(Case(f"hidden: random n={n} ({why}), integers 0..15, grader seed {seed}",
                          random_small(n, seed + n), student_label=f"hidden input {k} of 3 ({why})"))
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


def f32_bytes(values: list[float]) -> bytes:
    return array("f", values).tobytes()


# ---- what the runner left --------------------------------------------------------

def _floats(data: bytes) -> list[float]:
    values = array("f")
    values.frombytes(data)
    return values.tolist()


@dataclass
class Launch:
    """One kernel, one block size, one input: the raw words the runner copied back, unjudged.

    out, totals and input each hold `guard` poisoned words, then the n (or
    tiles) words the kernel sees, then `guard` more. `error` says why there are
    no words: a CUDA error, a limit, the kernel missing from the module.
    """

    guard: int = GUARD
    out_words: bytes = b""
    totals_words: bytes = b""
    input_words: bytes = b""
    error: str = ""

    def _inner(self, words: bytes) -> bytes:
        return words[4 * self.guard:len(words) - 4 * self.guard]

    @property
    def out(self) -> bytes:
        return self._inner(self.out_words)

    @property
    def totals(self) -> bytes:
        return self._inner(self.totals_words)

    @property
    def input(self) -> bytes:
        return self._inner(self.input_words)


@dataclass
class Answers:
    """The submission's answers as the compiler saw them; version None when they could not be read."""

    version: int | None = None
    sentence: str = ""
    why: str = ""


@dataclass
class CaseRun:
    case: Case
    launches: dict[int, dict[str, Launch]]  # block -> kernel -> what it left


def module_answers(module: ModuleInfo) -> tuple[int | None, str | None]:
    """kFreeTotalVersion and kFreeTotalSentence as day31_exports.cuh left them in the loaded module
    (None: the runner did not find that global)."""
    raw = module.globals.get(VERSION_GLOBAL)
    version = struct.unpack("<i", raw)[0] if raw is not None else None
    raw = module.globals.get(SENTENCE_GLOBAL)
    if raw is None:
        return version, None
    length, truncated = struct.unpack_from("<II", raw, SENTENCE_CAPACITY)
    sentence = raw[:min(length, SENTENCE_CAPACITY)].decode("utf-8", "replace")
    return version, sentence + (f" [cut at {SENTENCE_CAPACITY} bytes]" if truncated else "")


def missing_kernel_message(kernel: str, functions: list[tuple[str, str]]) -> str:
    have = ", ".join(plain or mangled for mangled, plain in functions) or "no kernels at all"
    return (f"kernel not found: the module has no __global__ void {KERNEL_SIGNATURES[kernel]} "
            f"(keep the starter's name and parameter types); your module has: {have}")


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
    if any(math.isnan(out[i]) for i in bad):
        return ("some elements are NaN, the poison the grader fills out and the words around in with: they were "
                "never written, or computed from a word read outside the input (in[-1] or in[n]).")
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


def _word(data: bytes, index: int) -> str:
    (bits,) = struct.unpack_from("<I", data, 4 * index)
    (value,) = struct.unpack_from("<f", data, 4 * index)
    return f"NaN (bits 0x{bits:08x})" if math.isnan(value) else show(value)


def _changed(words: bytes, expected: bytes) -> list[int]:
    if words == expected:
        return []
    return [i for i in range(len(words) // 4) if words[4 * i:4 * i + 4] != expected[4 * i:4 * i + 4]]


def side_effects(launch: Launch, case: Case, block: int) -> list[str]:
    """What a finished launch did outside out[0, n) and block_totals[0, tiles), one sentence each."""
    values = case.values
    g, n, count = launch.guard, len(values), math.ceil(len(values) / block)
    guard = POISON * g
    found = []
    for name, words, size, advice in (
            ("out", launch.out_words, n, "every store needs the guard `if (i < n)`"),
            ("block_totals", launch.totals_words, count,
             f"there is one slot per block ({count} blocks here), written at blockIdx.x"),
            ("in", launch.input_words, n, "the input is `const float*`: read it, never write it")):
        before, after = words[:4 * g], words[len(words) - 4 * g:]
        bad = _changed(before, guard)
        if bad:
            found.append(f"wrote before the start of {name}: {len(bad)} word(s) changed, "
                         f"first {name}[{bad[0] - g}] = {_word(before, bad[0])}; {advice}.")
        bad = _changed(after, guard)
        if bad:
            found.append(f"wrote past the end of {name}: {len(bad)} word(s) changed, "
                         f"first {name}[{size + bad[0]}] = {_word(after, bad[0])}; {advice}.")
    bad = _changed(launch.input, case.input_bytes)
    if bad:
        found.append(f"changed the input: {len(bad)} element(s), first in[{bad[0]}] is now "
                     f"{_word(launch.input, bad[0])}, was {show(values[bad[0]])}; the input is `const float*`: "
                     "read it, never write it.")
    return found


# ---- evaluation --------------------------------------------------------------

def totals_side_by_side(run: CaseRun) -> str:
    """Both totals arrays next to the reference, pass or fail, for every block size."""
    header = f"{'threads':>7}  {'tile':>6}  {'expected':>9}  {'scan-then-shift':>15}  {'shift-then-scan':>15}"
    lines = [f"block totals, {run.case.label}", header, "  ".join("-" * w for w in (7, 6, 9, 15, 15))]
    for block, by_kernel in run.launches.items():
        expected = tile_totals(run.case.values, block)
        got = {k: (None if launch.error else _floats(launch.totals)) for k, launch in by_kernel.items()}

        def cell(kernel: str, t: int) -> str:
            values = got.get(kernel)
            return "no result" if values is None else show(values[t])

        for t in sorted({0, 1, len(expected) - 1} & set(range(len(expected)))):
            lines.append(f"{block:>7}  {t:>6}  {show(expected[t]):>9}  {cell(KERNELS[0], t):>15}  "
                         f"{cell(KERNELS[1], t):>15}")
        verdict = []
        for kernel in KERNELS:
            values = got.get(kernel)
            state = ("has no result (see its checks)" if values is None
                     else "matches" if compare_exact(expected, values) is None else "MISMATCHES")
            verdict.append(f"{kernel} {state}")
        lines.append(f"{block:>7}  {'all':>6}  {len(expected):>9}  " + ", ".join(verdict))
    return "\n".join(lines)


def _grade_answers(report: Report, answers: Answers) -> None:
    if answers.version is None:
        report.add(VERSION_CHECK, False, answers.why)
        report.add(SENTENCE_CHECK, False, answers.why)
        return
    if answers.version == ANSWER_SCAN_THEN_SHIFT:
        report.add(VERSION_CHECK, True)
    elif answers.version == ANSWER_SHIFT_THEN_SCAN:
        report.add(VERSION_CHECK, False,
                   "kFreeTotalVersion is 2. Look at what each tile holds when the loop ends: which version scanned "
                   "the real tile, last element included?")
    else:
        report.add(VERSION_CHECK, False,
                   f"kFreeTotalVersion is {answers.version}: set it to 1 (scan-then-shift) or 2 (shift-then-scan).")
    sentence = answers.sentence.strip()
    if len(sentence.split()) >= 5 and "TODO" not in sentence:
        report.add(SENTENCE_CHECK, True)
        report.notes.append(f"sentence for the instructor: {sentence}")
    else:
        report.add(SENTENCE_CHECK, False,
                   f"kFreeTotalSentence must be one sentence (at least five words) saying why; it is {sentence!r}.")


def _errors_first(errors: dict[str, list[tuple[str, str]]], student: bool = False) -> list[str]:
    """One line per distinct error, where it happened first, and how often it repeated."""
    lines = []
    for error, where in errors.items():
        lines.append(f"{where[0][1 if student else 0]}: {error}")
        if len(where) > 1:
            lines.append(f"  the same at {len(where) - 1} more launch(es)")
    return lines


def student_mismatch(m, what: str, case: Case) -> str:
    """A mismatch in course-mode words: where and what it holds, never the expected value; on a hidden
    input not the count of wrong elements either (it would give away the size)."""
    if not case.student_label:
        return m.describe(what, expected=False)
    return f"{what} is wrong; the first wrong element is {what}[{m.index}], which holds {show(m.actual)}"


def evaluate(report: Report, answers: Answers, runs: list[CaseRun]) -> Report:
    """Turn the runner's raw words into checks. Pure: no GPU, no files."""
    _grade_answers(report, answers)

    side_lines: list[str] = []
    judged = 0
    for kernel in KERNELS:
        # (full line, course-mode line): the course line says where and what, never what it should be
        out_lines: list[tuple[str, str]] = []
        total_lines: list[tuple[str, str]] = []
        errors: dict[str, list[str]] = {}
        for run in runs:
            values = run.case.values
            for block, by_kernel in run.launches.items():
                launch = by_kernel[kernel]
                where = f"{run.case.label}, {block} threads"
                shown = f"{run.case.student_label or run.case.label}, {block} threads"
                if launch.error:
                    errors.setdefault(launch.error, []).append((where, shown))
                    continue
                judged += 1
                if len(side_lines) < MOST_LINES:
                    side_lines += [f"{kernel}, {where}: {line}" for line in side_effects(launch, run.case, block)]
                if launch.out != run.case.expected_out(block):  # bytes first: a million floats compare fast
                    expected = exclusive_tiles(values, block)
                    out = _floats(launch.out)
                    m = compare_exact(expected, out)
                    if m is not None and len(out_lines) < MOST_LINES:
                        out_lines.append((f"{where}: {m.describe('out')}",
                                          f"{shown}: {student_mismatch(m, 'out', run.case)}"))
                        diagnosis = diagnose_output(kernel, values, block, out)
                        if diagnosis:
                            out_lines.append((f"  likely cause: {diagnosis}",) * 2)
                if launch.totals != run.case.expected_totals(block):
                    expected = tile_totals(values, block)
                    totals = _floats(launch.totals)
                    m = compare_exact(expected, totals)
                    if m is not None and len(total_lines) < MOST_LINES:
                        total_lines.append((f"{where}: {m.describe('block_totals')}",
                                            f"{shown}: {student_mismatch(m, 'block_totals', run.case)}"))
                        diagnosis = diagnose_totals(values, block, totals)
                        if diagnosis:
                            total_lines.append((f"  likely cause: {diagnosis}",) * 2)
        crash_lines = _errors_first(errors)
        student_crashes = _errors_first(errors, student=True)
        for name, lines in ((out_check(kernel), out_lines), (totals_check(kernel), total_lines)):
            full = "\n".join(crash_lines + [line for line, _ in lines])
            report.add(name, not full, full, student="\n".join(student_crashes + [line for _, line in lines]))

    if judged == 0:
        report.add(SIDE_EFFECTS_CHECK, False, "nothing to judge: no launch of either kernel finished.")
    elif not side_lines and not any(report.check(name).passed for name in STUDENT_WORK):
        # A kernel that stores nothing has no stray store: the starter would pass this for free.
        report.add(SIDE_EFFECTS_CHECK, False, "not counted yet: no stray write was found, but this check counts "
                                              "only once a kernel you complete gives a right output (the "
                                              "shift-then-scan scan, or either kernel's block totals).")
    else:
        report.add(SIDE_EFFECTS_CHECK, not side_lines, "\n".join(side_lines))
    if runs:
        # The reference totals beside the submission's: instructor-only in course mode.
        report.note(totals_side_by_side(runs[0]), student="")
    return report


# ---- the GPU probe (the harness's own module, run by the runner) -----------------------

def device_command(source: str, out: str) -> list[str]:
    """nvcc, device code only, for every target the grader loads (build.cuda_gencode: sm_75, sm_90, PTX, this GPU)."""
    nvcc = env.nvcc()
    if nvcc is None:
        raise HarnessBuildError("nvcc not found on PATH or in /usr/local/cuda/bin")
    return [nvcc, *DEVICE_FLAGS, *cuda_gencode(), "-o", out, source]


def build_probe_module() -> Path:
    command = device_command(str(PROBE_SOURCE), "OUT")
    return cached_build("day31_probe.fatbin", [PROBE_SOURCE], command, command.index("-o") + 1)


def probe_gpu() -> str | None:
    """None when this machine can run what the grader builds; otherwise one line saying why not.

    Runs no student code: the harness's runner loads and runs the harness's own
    probe module, inside a GPU sandbox as the grading runs will be.
    """
    return probe(build_probe_module)


# ---- compiling the submission (device code only, in a sandbox) ------------------------

PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")


def scratch_name(submission: Path) -> str:
    """The submission's own base name when it is plain, so the compiler's messages name it."""
    name = submission.name
    if PLAIN_NAME.fullmatch(name) and name not in (WRAPPER, MODULE, RUNNER_NAME) and len(name) <= 100:
        return name
    return "submission.cu"


def wrapper_source(name: str) -> str:
    return ("// The Day 31 grader's wrapper: the submission, then the harness's compile-time exports.\n"
            "#define SCANLAB_GRADER 1\n"
            f'#include "{name}"\n'
            f'#line 1 "harness/drivers/{EXPORTS_SOURCE.name}"\n'
            + EXPORTS_SOURCE.read_text())


@dataclass
class Compiled:
    fatbin: bytes | None  # None: the submission's device code did not compile
    exports: bool = False  # the fatbin carries the scanlab_ answer globals
    feedback: str = ""  # why it did not compile (the student's own errors)
    export_error: str = ""  # why the answers could not be read at compile time
    warnings: str = ""  # the compiler's warnings about the student's file, for a note


def _compiler_messages(outcome: Outcome, most_lines: int = 30, most_chars: int = 3000) -> str:
    """The compiler's output, errors first, cut to a readable length."""
    text = (outcome.stdout + outcome.stderr).strip()
    lines = text.splitlines()
    errors = [i for i, line in enumerate(lines) if " error" in line or line.startswith("error")]
    start = max(0, errors[0] - 2) if errors else 0
    shown = lines[start:start + most_lines]
    result = "\n".join(shown)[:most_chars]
    if start + most_lines < len(lines) or len(result) < len("\n".join(shown)):
        result += f"\n[... cut: {len(lines)} lines in all]"
    if outcome.limit:
        result = f"the compiler stopped: {outcome.limit}\n{result}"
    elif outcome.signal:
        result = f"the compiler was {outcome.describe()}\n{result}"
    return result.strip()


def _student_warnings(outcome: Outcome, name: str) -> str:
    return "\n".join(compiler_warnings(outcome.stdout + outcome.stderr, about=name)[:6])


DEPENDENCIES = "deps.d"


def outside_includes(deps: str, scratch: Path) -> list[str]:
    """Files the compile read that are neither the scratch folder's nor the system's (/usr).

    Under bubblewrap nothing else exists; without it (partial isolation) this is
    what keeps `#include "/path/to/the/repo/solutions/..."` from building.
    """
    words = deps.replace("\\\n", " ").replace("\\ ", "\0").split()
    # The host compiler's own headers may live outside /usr (a g++ in /opt/gcc): the sandbox binds
    # those toolchain folders read-only, and a header there is the system's, not another file.
    tools = [*_toolkit_dirs(), *toolchain_dirs()]
    allowed = ("/usr/", f"{INSIDE_SCRATCH}/", f"{scratch}/", *(f"{d}/" for d in tools))
    found = []
    for word in words[1:]:  # words[0] is the target ("module.fatbin:")
        path = word.replace("\0", " ")
        if path == ":" or path.endswith(":"):
            continue
        if not os.path.isabs(path):
            path = str(scratch / path)
        path = os.path.normpath(path)
        if not path.startswith(allowed):
            found.append(path)
    return found


def _toolkit_dirs() -> list[str]:
    root = cuda_root()
    return [str(root), os.path.realpath(root)] if root else []


def compile_submission(submission: Path) -> Compiled:
    """The submission's device code as a fatbin, with the answer exports when they compile."""
    data = read_submission(submission)
    if data is None:
        return Compiled(None, feedback=TOO_LARGE)
    name = scratch_name(submission)
    nvcc = env.nvcc()
    if nvcc is None:
        raise HarnessBuildError("nvcc not found on PATH or in /usr/local/cuda/bin")
    device = [nvcc, *DEVICE_FLAGS, *cuda_gencode(), "-MD", "-MF", DEPENDENCIES, "-o", MODULE]
    with Sandbox(gpu=False) as box:
        box.put(name, data)
        box.put(WRAPPER, wrapper_source(name).encode())

        def built(outcome: Outcome) -> Compiled | bytes | None:
            """The fatbin; a refusal when it read files from elsewhere; None when it did not compile."""
            fatbin = box.get(MODULE) if outcome.ok else None
            if not fatbin:
                return None
            deps = box.get(DEPENDENCIES)
            outside = outside_includes(deps.decode("utf-8", "replace"), box.scratch) if deps else ["(unknown)"]
            if outside:
                return Compiled(None, feedback=f"your file includes {outside[0]}: a submission is one file, and "
                                               "may include the system's and CUDA's headers only.")
            return fatbin

        wrapped = box.run([*device, WRAPPER], NVCC_COMPILE_LIMITS)
        result = built(wrapped)
        if isinstance(result, Compiled):
            return result
        if result:
            return Compiled(result, exports=True, warnings=_student_warnings(wrapped, name))
        if wrapped.limit:  # the same code alone would only hit the limit again
            return Compiled(None, feedback=_compiler_messages(wrapped))
        # Compile the submission alone: its kernels are graded even when the answers are not constants.
        plain = box.run([*device, "-DSCANLAB_GRADER=1", "-x", "cu", name], NVCC_COMPILE_LIMITS)
        result = built(plain)
        if isinstance(result, Compiled):
            return result
        if not result:
            return Compiled(None, feedback=_compiler_messages(plain))
        said = [line for line in (wrapped.stdout + wrapped.stderr).splitlines() if "error" in line]
        why = ("kFreeTotalVersion and kFreeTotalSentence could not be read at compile time: keep them constexpr "
               "as in the starter (`constexpr int kFreeTotalVersion = ...;` and "
               "`constexpr const char* kFreeTotalSentence = \"...\";`, at file scope).")
        if said:
            why += f"\nthe compiler said: {said[0].strip()[:300]}"
        return Compiled(result, exports=False, export_error=why, warnings=_student_warnings(plain, name))


# ---- running the kernels (one plan, one GPU sandbox for every input) ----------------------

@dataclass
class Printed:
    """What the kernels printed (device printf reaches the runner's stdout): kept only to be counted."""

    kept: int = 0
    discarded: int = 0


def day31_plan(inputs: list[Case]) -> Plan:
    """Every kernel at every block size on every input, a task a launch, and the two answers' globals.

    One kernel's launches, then the other's (the runner gives the second kernel a new context), and
    within a kernel the input changes at every launch: no launch follows one on the same input, so a
    kernel cannot pass by handing on, or picking up, what an earlier launch computed. Every task has
    its own in (the input), out and block_totals, each between GUARD poisoned words, and the module
    loaded afresh.
    """
    plan = Plan().read_global(VERSION_GLOBAL, 4).read_global(SENTENCE_GLOBAL, SENTENCE_CAPACITY + 8)
    for kernel in KERNELS:
        for block in BLOCKS:
            for c, case in enumerate(inputs):
                n = len(case.values)
                count = math.ceil(n / block)
                plan.task(f"{kernel}, {block} threads, {case.label}", key=(c, block, kernel)) \
                    .buffer("in", "f32", n, GUARD, data=case.input_bytes) \
                    .buffer("out", "f32", n, GUARD).buffer("totals", "f32", count, GUARD) \
                    .launch(KERNEL_SYMBOLS[kernel], count, block, ["@in", "@out", "@totals", f"u64:{n}"]) \
                    .dump("out", "totals", "in")
    return plan


class Day31Words(Words):
    """How a launch without results is reported to a Day 31 student; counts what the kernels printed."""

    STEPS = {"allocating": "refilling the buffers before the launch", "filling": "refilling the buffers before the "
             "launch", "launching": "launching the kernel", "running": "running the kernel",
             "copying": "copying the results back"}
    HANG = " (a hang: a barrier some lanes never reach, or a loop that never ends?)"

    def __init__(self, printed: Printed):
        self.printed = printed

    def crashed(self, task, result) -> str:
        name, text = result.cuda_error
        return f"crashed while {self.STEPS.get(result.step.split(' ')[0], result.step)}: {name} ({text})"

    def missing(self, task, kernel, module) -> str:
        return missing_kernel_message(task.key[2], module.kernels if module else [])

    def unfinished(self, task, kernel, outcome):
        """A kernel past the runner's launch limit or the run's limits is not launched again; a run
        that ended otherwise (a signal) costs only its launch."""
        block = task.key[1]
        if outcome.returncode == RUNNER_HUNG and not outcome.limit:
            said = f"time limit {LAUNCH_LIMIT_S:g} s per launch exceeded"
            return f"did not finish: {said}{self.HANG}", f"{said} at {block} threads"
        if outcome.limit:
            return f"did not finish: {outcome.describe()}{self.HANG}", f"{outcome.describe()} at {block} threads"
        return f"did not finish: {outcome.describe()}", None

    def skipped(self, task, why) -> str:
        return f"not launched: this kernel did not finish earlier ({why})"

    def stopped(self, task, why) -> str:
        return f"the grader's runner stopped before this launch: {why}"

    def ran(self, outcome) -> None:
        self.printed.kept += len(outcome.stdout.encode())
        self.printed.discarded += outcome.output_dropped


def run_cases(fatbin: bytes, inputs: list[Case],
              printed: Printed | None = None) -> tuple[list[CaseRun], ModuleInfo | None]:
    """Every kernel at every block size on every input, in one fresh GPU sandbox (gpu_plan.run_plan:
    a fresh process after a CUDA error; a kernel that hangs is not launched again, on any input)."""
    plan = day31_plan(inputs)
    results, module = run_plan(fatbin, plan, limits=RUN_LIMITS,
                               words=Day31Words(printed if printed is not None else Printed()))
    launches: list[dict[int, dict[str, Launch]]] = [{block: {} for block in BLOCKS} for _ in inputs]
    for task, result in zip(plan.tasks, results):
        c, block, kernel = task.key
        launches[c][block][kernel] = (Launch(error=result.error) if result.error else
                                      Launch(GUARD, result.dumps["out"], result.dumps["totals"], result.dumps["in"]))
    return [CaseRun(case, launches[c]) for c, case in enumerate(inputs)], module


# ---- the whole pipeline ------------------------------------------------------

def grade(exercise: str, submission: Path, workdir: Path, seed: int, mode: str = "self-study",
          gpu_lock: threading.Lock | None = None) -> Report:
    """Grade one Day 31 submission. The compile runs at once; with `gpu_lock` (class grading), the
    GPU runs wait for it, so many submissions compile while one uses the GPU."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    report = Report(exercise, str(submission), mode=mode)
    hidden_note(report, seed, reproduce_line(exercise, submission, seed))
    compiled = compile_submission(submission)
    if compiled.fatbin is None:
        report.add("builds", False, f"your file's device code did not compile:\n{compiled.feedback}")
        for name in CHECKS[1:]:  # listed, so the maximum is the same whatever the outcome
            report.add(name, False, "not run: the submission did not build (see 'builds')")
        return report
    report.add("builds", True)
    if compiled.warnings:
        report.notes.append(f"compiler warnings (not graded):\n{compiled.warnings}")

    printed = Printed()
    with gpu_lock or contextlib.nullcontext():  # a class's GPU runs take the GPU one at a time
        runs, module = run_cases(compiled.fatbin, cases(seed), printed)
    if printed.discarded:
        report.note(f"the kernels printed more than the grader keeps: {printed.discarded} bytes were "
                    "discarded (what a submission prints decides nothing)",
                    student="the kernels printed more than the grader keeps: the rest was discarded (what a "
                            "submission prints decides nothing)")

    if not compiled.exports:
        answers = Answers(why=compiled.export_error)
    else:
        version, sentence = module_answers(module) if module is not None else (None, None)
        if version is None or sentence is None:
            why = module.load_error if module and module.load_error else "the runner could not read them"
            answers = Answers(why=f"the answers could not be read from your module: {why}")
        else:
            answers = Answers(version, sentence)
    return evaluate(report, answers, runs)
