"""Graders for the A05 drills (exercises/01-03): exact, harness-owned, CPU only.

drill01 and drill02: the submission is copied to <workdir>/scanlab_submission.cpp
and compiled with plain g++ into a harness-owned driver
(harness/drivers/drill0N_driver.cpp) that #includes it with SCANLAB_GRADER
defined, so the student's own main() drops out. Python writes every input to a
file, the driver calls the student's functions and dumps the raw outputs, and
Python compares them with references it computes itself. Nothing the
submission prints is read. Each driver run is one function on one input, so a
crash or a hang costs that case only, and is reported as a failing check.

drill03: the numbers in the student's Markdown are compared with the numbers
solutions/03_scan_analysis.cpp prints when it runs (it simulates both scans and
counts), never with constants typed in here. Prose answers become notes.

Every grader: `grade(exercise, submission, workdir, seed) -> Report`.
"""

from __future__ import annotations

import math
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
from array import array
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate
from pathlib import Path
from typing import Callable

from .grading import Report
from .paths import REPO
from .run import run_process

DRIVERS = REPO / "harness" / "drivers"
COUNTING_PROGRAM = REPO / "solutions" / "03_scan_analysis.cpp"
CXXFLAGS = ("-std=c++17", "-O2", "-Wall", "-Wextra")
SUBMISSION_COPY = "scanlab_submission.cpp"  # a fixed name: odd characters in the student's path never reach g++
TIMEOUT_S = 10.0  # per driver run; every run is one function on one input
COMPILE_TIMEOUT_S = 300.0
POISON = -999_999_999  # what the drivers fill outputs and guard words with (drill_io.hpp)
DRIVER_ERROR = 90  # the drivers' own I/O failures (drill_io.hpp)
MAX_CASES_SHOWN = 3


# ---- compiling and running ----------------------------------------------------------

def compiler() -> list[str] | None:
    """$CXX (may carry flags) or g++; None when neither is on PATH."""
    words = shlex.split(os.environ.get("CXX", "")) or ["g++"]
    found = shutil.which(words[0])
    return [found, *words[1:]] if found else None


@dataclass
class Built:
    ok: bool
    exe: Path
    command: list[str]
    output: str

    @property
    def reproduce(self) -> str:
        return shlex.join(self.command)

    def warnings(self) -> list[str]:
        return [line for line in self.output.splitlines() if "warning:" in line]


def compile_cxx(source: Path, exe: Path, include_dirs: tuple[Path, ...] = ()) -> Built:
    exe.parent.mkdir(parents=True, exist_ok=True)
    cxx = compiler()
    command = [*(cxx or ["g++"]), *CXXFLAGS, *(f"-I{d}" for d in include_dirs), "-o", str(exe), str(source)]
    if cxx is None:
        return Built(False, exe, command, "no C++ compiler: g++ is not on PATH (set CXX to choose one)")
    try:
        proc = run_process(command, capture_output=True, text=True, errors="replace", timeout=COMPILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Built(False, exe, command, f"the compiler did not finish within {COMPILE_TIMEOUT_S:g} s")
    except OSError as exc:
        return Built(False, exe, command, f"the compiler could not be started: {exc}")
    return Built(proc.returncode == 0 and exe.exists(), exe, command, proc.stdout + proc.stderr)


def build_submission(drill: str, submission: Path, workdir: Path) -> Built:
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(submission, workdir / SUBMISSION_COPY)
    return compile_cxx(DRIVERS / f"{drill}_driver.cpp", workdir / f"{drill}_driver", (workdir, DRIVERS))


def builds_check(report: Report, drill: str, built: Built, names: list[str]) -> bool:
    """The 'builds' check; when it fails, every other check fails as 'not run'."""
    if built.ok:
        warnings = built.warnings()
        report.add("builds", True, ("compiled with warnings (worth fixing):\n" + "\n".join(warnings[:20]))
                   if warnings else "")
        return True
    lines = built.output.strip().splitlines()
    shown = "\n".join(lines[:60]) + (f"\n... ({len(lines) - 60} more lines)" if len(lines) > 60 else "")
    hints = []
    if re.search(r"(redefinition|conflicting declaration|multiple definition)[^\n]*\bmain\b", built.output):
        hints.append("hint: keep your main() between #ifndef SCANLAB_GRADER and #endif, as the starter does; "
                     "the grader brings its own main.")
    if "Traced" in built.output:
        hints.append("hint: tree_scan_inclusive must work for any T and Op: inside it call op(a, b), never "
                     "seg_combine by name, and use only copies, assignment and `identity` on T values. The "
                     "grader calls it with its own element type (scanlab_driver::Traced).")
    report.add("builds", False,
               f"your file did not compile inside the grader's driver (harness/drivers/{drill}_driver.cpp "
               f"#includes it with SCANLAB_GRADER defined):\n$ {built.reproduce}\n{shown}"
               + ("\n" + "\n".join(hints) if hints else "")
               + "\n(rerun with --keep DIR to keep the build folder)")
    for name in names:
        report.add(name, False, "not run: the submission did not build (see 'builds')")
    return False


@dataclass
class Ran:
    ok: bool
    problem: str = ""
    timed_out: bool = False
    words: array | None = None  # the driver's output file, when it ran to the end


SIGNAL_MEANING = {
    "SIGSEGV": "a read or write outside the memory the program owns",
    "SIGABRT": "abort(): an uncaught exception (std::vector::at out of range?), a failed assert, or a heap error",
    "SIGFPE": "an arithmetic fault (a division by zero?)",
    "SIGBUS": "a misaligned or impossible memory access",
    "SIGILL": "an illegal instruction (a function that falls off its end without returning?)",
}


def run_driver(exe: Path, args: list, timeout: float, expected_words: int) -> Ran:
    """Run the driver once; its last argument is the output file, which must hold expected_words words."""
    command = [str(exe), *map(str, args)]
    output = Path(args[-1])
    output.unlink(missing_ok=True)
    try:
        # In the work folder, with no stdin: what the submission does stays there and cannot wait on input.
        proc = run_process(command, capture_output=True, text=True, errors="replace", timeout=timeout,
                           stdin=subprocess.DEVNULL, cwd=exe.parent)
    except subprocess.TimeoutExpired:
        return Ran(False, f"did not finish within {timeout:g} s (an endless loop, such as a loop variable "
                          "that never grows, or far more work than a scan needs?)", True)
    except OSError as exc:  # the exec itself failed, even after run_process's retries
        return Ran(False, f"the grader could not start its driver ({exc}); a harness problem, not yours")
    if proc.returncode == 0:
        words = read_words(output) if output.is_file() else None
        if words is None or len(words) != expected_words:
            return Ran(False, "the program ended before the grader's driver wrote its results: does your code "
                              "call exit() or quick_exit()?")
        return Ran(True, words=words)
    stderr = proc.stderr.strip().splitlines()
    tail = ("\n    stderr: " + "\n    stderr: ".join(stderr[-4:])) if stderr else ""
    if proc.returncode < 0:
        try:
            name = signal.Signals(-proc.returncode).name
        except ValueError:
            name = f"signal {-proc.returncode}"
        return Ran(False, f"crashed: killed by {name} ({SIGNAL_MEANING.get(name, 'a fatal signal')}){tail}")
    if proc.returncode == DRIVER_ERROR:
        return Ran(False, f"the grader's driver failed (a harness problem, not yours; tell your instructor){tail}")
    return Ran(False, f"the program stopped with exit status {proc.returncode} inside your code "
                      f"(an exit() or a failed check of your own?){tail}")


def write_words(path: Path, words) -> None:
    with open(path, "wb") as f:
        array("q", words).tofile(f)


def read_words(path: Path) -> array:
    words = array("q")
    words.frombytes(path.read_bytes())
    return words


def random_values(n: int, seed: int, salt: str, low: int = -15, high: int = 15) -> list[int]:
    """Seeded small integers, zeros and negatives included, so no wrong answer hides in monotone data."""
    rng = random.Random(f"{seed}/{salt}")
    span = high - low + 1
    return [b % span + low for b in rng.randbytes(n)]


def cycle8(n: int) -> list[int]:
    return [i % 8 + 1 for i in range(n)]


def shown(value: int) -> str:
    if value == POISON:
        return f"{POISON} (the grader's poison: never written)"
    if abs(value) >= abs(POISON) // 2:
        return f"{value} (holds the grader's poison: read from outside the arrays)"
    return str(value)


def first_mismatch(expected, actual) -> tuple[int, int] | None:
    """(count, first index) of the elements that differ, or None."""
    if len(expected) == len(actual) and expected == actual:
        return None
    bad = [i for i, (e, a) in enumerate(zip(expected, actual)) if e != a]
    bad += list(range(min(len(expected), len(actual)), max(len(expected), len(actual))))
    return len(bad), bad[0]


def n_of(case) -> int:
    return len(case.values)


def reproduce_line(drill: str, submission: Path, seed: int) -> str:
    return f"reproduce: python3 harness/grade.py {drill} {submission} --seed {seed}"


@dataclass
class Failure:
    case_label: str
    text: str  # what went wrong, with indices and values
    diagnosis: str = ""
    n: int | None = None  # the case's size, for the one-line list of further failures


def summarise(failures: list[Failure], cases_total: int, reproduce: str) -> str:
    lines = []
    said = ""
    for f in failures[:MAX_CASES_SHOWN]:
        lines.append(f"{f.case_label}:")
        lines += [f"  {line}" for line in f.text.splitlines()]
        if f.diagnosis and f.diagnosis != said:
            lines.append(f"  likely cause: {f.diagnosis}")
            said = f.diagnosis
    if len(failures) > MAX_CASES_SHOWN:
        more = failures[MAX_CASES_SHOWN:]
        sizes = ", ".join(f"n={f.n}" for f in more if f.n is not None)
        lines.append(f"... and {len(more)} more failing case(s)" + (f": {sizes}" if sizes else ""))
    lines.append(f"{len(failures)} of {cases_total} cases failed. {reproduce}")
    return "\n".join(lines)


# ---- drill 01: exclusive <-> inclusive and the total ----------------------------------

@dataclass
class Case01:
    label: str
    values: list[int]

    @cached_property
    def inclusive(self) -> list[int]:
        return list(accumulate(self.values))

    @cached_property
    def exclusive(self) -> list[int]:
        return ([0] + self.inclusive[:-1]) if self.values else []


def drill01_cases(seed: int) -> list[Case01]:
    """The public inputs, then seeded random inputs of sizes the starter never shows."""
    cases = [
        Case01("page example: n=8, in = 3 1 7 0 4 1 6 3", [3, 1, 7, 0, 4, 1, 6, 3]),
        Case01("lesson input: n=256, in[i] = (i % 8) + 1", cycle8(256)),
        Case01("empty: n=0 (nothing to convert; the total of nothing is the identity 0)", []),
        Case01("one element: n=1, in = 5", [5]),
    ]
    drawn = random.Random(f"{seed}/drill01-size").randrange(2001, 5000, 2)
    for n, why in ((2, "the smallest shift"), (255, "a 256-tile minus one"), (257, "a 256-tile plus one"),
                   (1000, "not a power of two"), (drawn, "a size drawn from the seed"),
                   (1_000_003, "large and odd")):
        cases.append(Case01(f"hidden (seed {seed}): n={n}, {why}, random integers -15..15",
                            random_values(n, seed, f"drill01/{n}")))
    return cases


ARRAY_NAMES = ("in", "incl", "excl")


def side_effects(words: array, out_name: str | None, n_out: int) -> list[str]:
    """Writes into an input, or into the guard words around the output."""
    lines = []
    if words[0]:
        array_name, index = ARRAY_NAMES[words[1]], words[2]
        lines.append(f"changed its input {array_name}[{index}]: the conversion must only read its inputs "
                     "(no shifting in place, not even in an input buffer)")
    if out_name and words[3]:
        index, value = words[4], words[5]
        if index < 0:
            where = "before the start (valid indices are 0..n-1): a loop that writes index i - 1 must start at i = 1"
        elif index == n_out:
            where = ("one past the end (valid indices are 0..n-1): a loop that writes index i + 1 must stop "
                     "at i = n - 2")
        else:
            where = "past the end (valid indices are 0..n-1)"
        lines.append(f"wrote {out_name}[{index}] = {value}, {where}")
    return lines


def diagnose_e2i(case: Case01, actual: list[int]) -> str:
    values, excl, expected = case.values, case.exclusive, case.inclusive
    n = len(values)
    if n and all(a == POISON for a in actual):
        return "incl was never written: every element still holds the grader's poison."
    if actual == excl:
        return "incl is excl copied unchanged: add each element's own value, incl[i] = excl[i] + in[i]."
    if n >= 2 and actual[:-1] == excl[1:] and actual[-1] != expected[-1]:
        return ("incl[i] = excl[i + 1] is right everywhere but the last element, where excl[n] does not exist: "
                "that is the total, which the exclusive scan dropped. Add in[i] instead of shifting.")
    if n >= 2 and all(actual[i] == excl[i] + values[i + 1] for i in range(n - 1)):
        return "adds in[i + 1] instead of in[i]: an off-by-one index."
    if n >= 2 and all(actual[i] == excl[i] + values[i - 1] for i in range(1, n)):
        return "adds in[i - 1] instead of in[i]: an off-by-one index."
    bad = [i for i in range(n) if actual[i] != expected[i]]
    if bad == [0]:
        return ("only incl[0] is wrong. This direction has no boundary case: incl[0] = excl[0] + in[0] = in[0]"
                + (" (you wrote the identity 0 there)." if actual[0] == 0 else "."))
    if bad == [n - 1]:
        return "only the last element is wrong: does the loop stop one element early?"
    return ""


def diagnose_i2e(case: Case01, actual: list[int]) -> str:
    incl, expected = case.inclusive, case.exclusive
    n = len(incl)
    if n and all(a == POISON for a in actual):
        return "excl was never written: every element still holds the grader's poison."
    bad = [i for i in range(n) if actual[i] != expected[i]]
    if bad == [0]:
        if actual[0] == POISON:
            return "excl[0] was never written: it must be the identity 0, the sum of nothing."
        if actual[0] == incl[0]:
            return (f"excl[0] is incl[0] = {incl[0]}, but it must be the identity 0: nothing precedes "
                    "element 0.")
        return f"excl[0] should be the identity 0 (the sum of nothing), not {shown(actual[0])}."
    if actual == incl:
        return "excl is incl unchanged: shift it right by one, excl[i] = incl[i - 1], with excl[0] = 0."
    if n >= 2 and actual[:-1] == incl[1:]:
        return ("the inclusive scan shifted the wrong way (excl[i] = incl[i + 1]): the exclusive scan is "
                "incl moved one place to the RIGHT, excl[i] = incl[i - 1].")
    if n >= 3 and len(set(actual[1:])) == 1 and len(set(expected[1:])) > 1:
        return (f"every element from excl[1] on is {shown(actual[1])}: a shift done front to back inside one "
                "buffer reads the slot it has just overwritten, so one value smears down the array. Read "
                "from incl and write to excl (never in place).")
    if bad == [n - 1]:
        return "only the last element is wrong: does the loop stop one element early?"
    if bad and actual[0] == expected[0] and all(actual[i] == POISON for i in bad):
        return "some elements were never written (they still hold the poison): the loop misses part of 1..n-1."
    return ""


def diagnose_total(case: Case01, actual: int) -> str:
    values, excl = case.values, case.exclusive
    n = len(values)
    if abs(actual) >= abs(POISON) // 2:
        return (("n = 0: excl[n - 1] reads excl[SIZE_MAX], which is excl[-1] (n - 1 wraps for an unsigned n), "
                 "outside the array. The total of nothing is the identity 0: return it when n == 0.")
                if n == 0 else "the total holds the grader's poison: it read an element outside in or excl.")
    if n == 0:
        return f"n = 0: the total of nothing is the identity 0, not {actual}."
    if actual == 0 and excl[n - 1] != 0:
        return "returned 0 for a non-empty input: nothing was computed (the starter's stub returns 0)."
    if actual == excl[n - 1]:
        return ("returned excl[n - 1]: that is the sum of everything BEFORE the last element; the total "
                "is excl[n - 1] + in[n - 1].")
    if actual == values[n - 1]:
        return "returned in[n - 1] alone: the total is excl[n - 1] + in[n - 1]."
    if n >= 2 and actual == excl[n - 1] + values[n - 2]:
        return "added in[n - 2]: the element that fell off the end is in[n - 1]."
    if n >= 2 and actual == excl[n - 2] + values[n - 1]:
        return "used excl[n - 2]: the last prefix is excl[n - 1]."
    if n >= 2 and actual == excl[n - 2] + values[n - 2]:
        return "used excl[n - 2] + in[n - 2], which is excl[n - 1]: the last element is still missing."
    return ""


DRILL01_CHECKS = {
    # check name -> (driver mode, output array name or None for the total)
    "exclusive_to_inclusive": ("e2i", "incl"),
    "inclusive_to_exclusive": ("i2e", "excl"),
    "total_from_exclusive": ("total", None),
}


def grade_drill01(submission: Path, workdir: Path, seed: int, timeout: float) -> Report:
    report = Report("drill01", submission.name)
    report.notes.append(f"hidden inputs drawn with seed {seed}; {reproduce_line('drill01', submission, seed)}")
    built = build_submission("drill01", submission, workdir)
    if not builds_check(report, "drill01", built, list(DRILL01_CHECKS)):
        return report

    cases = drill01_cases(seed)
    for number, case in enumerate(cases):
        n = len(case.values)
        write_words(workdir / f"case{number}.in", [n, *case.values, *case.inclusive, *case.exclusive])

    for check, (mode, out_name) in DRILL01_CHECKS.items():
        failures: list[Failure] = []
        for number, case in enumerate(cases):
            n = len(case.values)
            output = workdir / f"case{number}.{mode}.out"
            ran = run_driver(built.exe, [mode, workdir / f"case{number}.in", output], timeout,
                             7 if out_name is None else 6 + n)
            if not ran.ok:
                failures.append(Failure(case.label, ran.problem, n=n))
                if ran.timed_out:
                    failures[-1].text += "\n(the remaining cases of this function were not run)"
                    break
                continue
            words = ran.words
            lines = side_effects(words, out_name, n)
            diagnosis = ""
            if out_name is None:
                expected = case.inclusive[-1] if case.values else 0
                actual = words[6]
                if actual != expected:
                    lines.append(f"returned {shown(actual)}, should be {expected}")
                    diagnosis = diagnose_total(case, actual) if len(failures) < MAX_CASES_SHOWN else ""
            else:
                actual = words[6:].tolist()
                expected = case.inclusive if mode == "e2i" else case.exclusive
                mismatch = first_mismatch(expected, actual)
                if mismatch:
                    count, i = mismatch
                    lines.append(f"{count} element(s) wrong; first at index {i}: {out_name}[{i}] is "
                                 f"{shown(actual[i])}, should be {expected[i]}")
                    if len(failures) < MAX_CASES_SHOWN:  # only the shown ones get a diagnosis
                        diagnosis = (diagnose_e2i if mode == "e2i" else diagnose_i2e)(case, actual)
            if lines:
                failures.append(Failure(case.label, "\n".join(lines), diagnosis, n_of(case)))
        report.add(check, not failures,
                   summarise(failures, len(cases), reproduce_line("drill01", submission, seed)) if failures else "")
    return report


# ---- drill 02: segmented scan through a tree ------------------------------------------

Pair = tuple[int, int]  # (flag 0/1, value)
IDENTITY: Pair = (0, 0)


def seg_op(a: Pair, b: Pair) -> Pair:
    """The reference operator: a head in b cuts a off; otherwise b continues a's run."""
    return b if b[0] else (a[0], a[1] + b[1])


def segmented_reference(flags: list[int], values: list[int], carry: Pair = IDENTITY) -> list[Pair]:
    """The sequential loop that resets at every head (written independently of seg_op)."""
    flag, running = carry
    out = []
    for f, v in zip(flags, values):
        if f:
            flag, running = 1, 0
        running += v
        out.append((flag, running))
    return out


@dataclass
class Case02:
    label: str
    flags: list[int]
    values: list[int]
    carry: Pair = IDENTITY

    @property
    def pairs(self) -> list[Pair]:
        return list(zip(self.flags, self.values))


def heads(n: int, at) -> list[int]:
    flags = [0] * n
    for i in at:
        flags[i] = 1
    return flags


def from_lengths(lengths: list[int]) -> list[int]:
    """Head flags of consecutive segments; a zero-length segment has no element, so no flag."""
    flags = []
    for length in lengths:
        flags += [1] + [0] * (length - 1) if length else []
    return flags


def random_flags(n: int, seed: int, salt: str, one_in: int) -> list[int]:
    rng = random.Random(f"{seed}/{salt}/flags")
    return [1 if b % one_in == 0 else 0 for b in rng.randbytes(n)]


def drill02_cases(seed: int) -> list[Case02]:
    rng = random.Random(f"{seed}/drill02")
    cases = [
        Case02("page example: n=8, 3 1 7 | 0 4 | 1 6 3", [1, 0, 0, 1, 0, 1, 0, 0], [3, 1, 7, 0, 4, 1, 6, 3]),
        Case02("one segment, no heads: n=100", heads(100, []), cycle8(100)),
        Case02("a segment per element: n=33, every flag set", heads(33, range(33)), cycle8(33)),
        Case02("heads at 0 and n-1: n=257", heads(257, (0, 256)), cycle8(257)),
        Case02("empty: n=0", [], []),
        Case02("carry into an open first segment: n=16, heads at 5 and 11, carry (0,100)",
               heads(16, (5, 11)), cycle8(16), (0, 100)),
        Case02("a head at 0 stops the carry: n=16, heads at 0 and 9, carry (0,100)",
               heads(16, (0, 9)), cycle8(16), (0, 100)),
    ]
    lengths = [rng.choice((0, 0, 1, 2, 3, 7, 15)) for _ in range(60)]
    flags = from_lengths(lengths)
    cases.append(Case02(f"hidden (seed {seed}): ragged lengths with empty segments (they have no element and "
                        f"so no flag), n={len(flags)}",
                        flags, random_values(len(flags), seed, "drill02/ragged"), (0, rng.randint(-50, 50))))
    cases.append(Case02(f"hidden (seed {seed}): one element with a head, carry (1,9)", [1], [4], (1, 9)))
    cases.append(Case02(f"hidden (seed {seed}): a head at n-1 only, n=255, carry (0,-7)",
                        heads(255, (254,)), random_values(255, seed, "drill02/255"), (0, -7)))
    drawn = rng.randrange(2001, 5000, 2)
    for n, why, one_in in ((1000, "not a power of two", 8), (4097, "a power of two plus one", 8),
                           (drawn, "a size drawn from the seed", 5), (100_003, "large, sparse heads", 64)):
        carry = (rng.randint(0, 1), rng.randint(-50, 50))
        cases.append(Case02(f"hidden (seed {seed}): random heads (about 1 in {one_in}), n={n}, {why}, "
                            f"carry {carry}",
                            random_flags(n, seed, f"drill02/{n}", one_in), random_values(n, seed, f"drill02/{n}"),
                            carry))
    return cases


def case_words(case: Case02) -> list[int]:
    return [len(case.flags), *case.carry, *case.flags, *case.values]


def pairs_from(words, at: int, n: int) -> list[Pair]:
    flags, values = words[at:at + n].tolist(), words[at + n:at + 2 * n].tolist()
    return list(zip(flags, values))


def pair_text(p: Pair) -> str:
    flag, value = p
    text = f"({flag},{value})"
    if value == POISON:
        return text + " (the grader's poison: never written)"
    if abs(value) >= abs(POISON) // 2:
        return text + " (holds the grader's poison: read from outside the arrays)"
    return text


def first_pair_mismatch(expected: list[Pair], actual: list[Pair]) -> str:
    mismatch = first_mismatch(expected, actual)
    if not mismatch:
        return ""
    count, i = mismatch
    return (f"{count} element(s) wrong; first at index {i}: out[{i}] is {pair_text(actual[i])}, "
            f"should be {pair_text(expected[i])}")


SCHEDULES = {
    "sequential fold of seg_combine": "fold",
    "Hillis-Steele schedule of seg_combine": "hillis-steele",
    "Blelloch schedule of seg_combine": "blelloch",
}
CHECK_OPERATOR = "seg_combine agrees with the segmented operator"
CHECK_IDENTITY = "seg_identity is an identity for seg_combine"
CHECK_ASSOCIATIVE = "seg_combine is associative"
CHECK_TREE_ORDER = "tree_scan_inclusive combines adjacent ranges in order"
CHECK_TREE_DEPTH = "tree_scan_inclusive is a tree (log depth, n log n work)"
CHECK_TILE = "segmented_scan_tile"
DRILL02_CHECKS = [CHECK_OPERATOR, CHECK_IDENTITY, CHECK_ASSOCIATIVE, *SCHEDULES, CHECK_TREE_ORDER,
                  CHECK_TREE_DEPTH, CHECK_TILE]


def operator_samples(cases: list[Case02], seed: int):
    """Pairs, triples and elements drawn from the test inputs, their prefixes and carries.

    The pool holds what a tree actually combines: single elements and partial
    results. Every combination of flags appears in the pairs and the triples.
    """
    rng = random.Random(f"{seed}/drill02/operator")
    pool: set[Pair] = set()
    for case in cases:
        pool.update(case.pairs[:3000])
        pool.update(segmented_reference(case.flags, case.values)[:3000])
        pool.add(case.carry)
    by_flag = {0: sorted(p for p in pool if p[0] == 0), 1: sorted(p for p in pool if p[0] == 1)}
    everything = sorted(pool)
    pairs, triples = [], []
    for fa in (0, 1):
        for fb in (0, 1):
            pairs += [(rng.choice(by_flag[fa]), rng.choice(by_flag[fb])) for _ in range(8)]
            for fc in (0, 1):
                triples += [(rng.choice(by_flag[fa]), rng.choice(by_flag[fb]), rng.choice(by_flag[fc]))
                            for _ in range(8)]
    pairs += [(rng.choice(everything), rng.choice(everything)) for _ in range(400)]
    triples += [tuple(rng.choice(everything) for _ in range(3)) for _ in range(400)]
    elements = [IDENTITY, *rng.sample(everything, min(200, len(everything)))]
    return pairs, triples, elements


def explain_operator(a: Pair, b: Pair, got: Pair) -> str:
    want = seg_op(a, b)
    if b[0]:
        if got[1] != want[1]:
            return "b contains a head, so nothing of a survives past it: the result is b itself."
        return "b contains a head, so the result is b, flag included."
    if got[0] != want[0]:
        return ("the flag of the result says whether a head lies ANYWHERE in the span: a.flag | b.flag. "
                "Dropping a's flag loses a head that a tree will still need when it regroups.")
    return "b has no head, so it continues a's run: value a.value + b.value."


def grade_drill02_operator(report: Report, built: Built, workdir: Path, cases: list[Case02], seed: int,
                           timeout: float, reproduce: str) -> None:
    pairs, triples, elements = operator_samples(cases, seed)
    words = [len(pairs)]
    for a, b in pairs:
        words += [*a, *b]
    words.append(len(triples))
    for a, b, c in triples:
        words += [*a, *b, *c]
    words.append(len(elements))
    for a in elements:
        words += a
    write_words(workdir / "ops.in", words)
    ran = run_driver(built.exe, ["ops", workdir / "ops.in", workdir / "ops.out"], timeout,
                     2 + 2 * len(pairs) + 4 * len(triples) + 4 * len(elements))
    if not ran.ok:
        for name in (CHECK_OPERATOR, CHECK_IDENTITY, CHECK_ASSOCIATIVE):
            report.add(name, False, f"calling seg_combine and seg_identity on sample pairs: {ran.problem}")
        return
    out = ran.words.tolist()
    got = [(out[k], out[k + 1]) for k in range(0, len(out), 2)]
    identity, got = got[0], got[1:]
    combined, got = got[:len(pairs)], got[len(pairs):]
    regrouped, got = got[:2 * len(triples)], got[2 * len(triples):]
    with_identity = got

    bad = [(a, b, r) for (a, b), r in zip(pairs, combined) if r != seg_op(a, b)]
    if bad:
        a, b, r = bad[0]
        report.add(CHECK_OPERATOR, False,
                   f"{len(bad)} of {len(pairs)} pairs drawn from the test inputs are wrong; first: "
                   f"seg_combine(a, b) with a = {pair_text(a)}, b = {pair_text(b)} returned {pair_text(r)}, "
                   f"should be {pair_text(seg_op(a, b))}.\n  likely cause: {explain_operator(a, b, r)}\n{reproduce}")
    else:
        report.add(CHECK_OPERATOR, True)

    broken = []
    for k, a in enumerate(elements):
        left, right = with_identity[2 * k], with_identity[2 * k + 1]
        if left != a or right != a:
            broken.append((a, left, right))
    if broken:
        a, left, right = broken[0]
        report.add(CHECK_IDENTITY, False,
                   f"seg_identity() is {pair_text(identity)}; for a = {pair_text(a)}: seg_combine(identity, a) "
                   f"= {pair_text(left)} and seg_combine(a, identity) = {pair_text(right)}; both must be a "
                   f"({len(broken)} of {len(elements)} elements fail). Blelloch pads the tree with the identity "
                   f"and seeds the root with it, so it must change nothing on either side.\n{reproduce}")
    else:
        report.add(CHECK_IDENTITY, True)

    broken_triples = []
    for k, (a, b, c) in enumerate(triples):
        left, right = regrouped[2 * k], regrouped[2 * k + 1]
        if left != right:
            broken_triples.append((a, b, c, left, right))
    if broken_triples:
        a, b, c, left, right = broken_triples[0]
        report.add(CHECK_ASSOCIATIVE, False,
                   f"seg_combine is not associative: {len(broken_triples)} of {len(triples)} triples drawn from "
                   f"the test inputs break it; first: a = {pair_text(a)}, b = {pair_text(b)}, c = {pair_text(c)}: "
                   f"seg_combine(seg_combine(a, b), c) = {pair_text(left)} but seg_combine(a, seg_combine(b, c)) "
                   f"= {pair_text(right)}. A tree scan brackets the same "
                   f"terms differently for every n and every schedule, so a non-associative operator gives "
                   f"answers that depend on the schedule.\n{reproduce}")
    else:
        report.add(CHECK_ASSOCIATIVE, True)


def grade_drill02_schedules(report: Report, built: Built, workdir: Path, cases: list[Case02], timeout: float,
                            reproduce: str) -> None:
    operator_broken = not (report.check(CHECK_OPERATOR).passed and report.check(CHECK_ASSOCIATIVE).passed)
    for name, mode in SCHEDULES.items():
        failures: list[Failure] = []
        for number, case in enumerate(cases):
            output = workdir / f"case{number}.{mode}.out"
            ran = run_driver(built.exe, [mode, workdir / f"case{number}.in", output], timeout, 2 * n_of(case))
            if not ran.ok:
                failures.append(Failure(case.label, ran.problem, n=n_of(case)))
                if ran.timed_out:
                    break
                continue
            actual = pairs_from(ran.words, 0, len(case.flags))
            text = first_pair_mismatch(segmented_reference(case.flags, case.values), actual)
            if text:
                diagnosis = ("seg_combine itself is wrong or not associative (see those checks); this schedule "
                             "only applies it." if operator_broken else "")
                if mode == "blelloch" and not report.check(CHECK_IDENTITY).passed:
                    diagnosis = "Blelloch pads with seg_identity() and seeds the root with it: see that check."
                failures.append(Failure(case.label + " (the carry is not used here)", text, diagnosis, n_of(case)))
        report.add(name, not failures, summarise(failures, len(cases), reproduce) if failures else "")


KIND_UNSET, KIND_EMPTY, KIND_RANGE, KIND_BROKEN, KIND_OUTSIDE = range(5)
BAD_OVERLAP, BAD_SWAPPED, BAD_GAP, BAD_UNSET, BAD_OUTSIDE = range(1, 6)


def traced_text(kind: int, lo: int, hi: int) -> str:
    return {KIND_UNSET: "a default-constructed T that never held an input",
            KIND_EMPTY: "the identity",
            KIND_RANGE: f"inputs {lo}..{hi}",
            KIND_BROKEN: "an already broken value",
            KIND_OUTSIDE: f"x[{lo}], outside x[0..n-1]"}.get(kind, f"kind {kind}")


def explain_bad_combine(bad: int, a: tuple[int, int, int], b: tuple[int, int, int]) -> str:
    first = f"op(a, b) with a = {traced_text(*a)} and b = {traced_text(*b)}"
    if bad == BAD_OVERLAP:
        return (f"{first}: the ranges overlap, so some inputs are counted twice. In place, a level read a value "
                "that this same level had already updated (the CPU twin of the GPU read-write race). Read one "
                "buffer and write another, or walk from the top index down.")
    if bad == BAD_SWAPPED:
        return (f"{first}: the operands are swapped. Keep the earlier span on the left, op(x[i - offset], x[i]); "
                "+ does not care, but the segmented operator is not commutative.")
    if bad == BAD_GAP:
        return f"{first}: the ranges are not adjacent, so the inputs between them are missing."
    if bad == BAD_UNSET:
        return (f"{first}: one operand was default-constructed and never assigned. Initialise every temporary "
                "from x or from `identity`.")
    if bad == BAD_OUTSIDE:
        return f"{first}: it read outside x[0..n-1]. Check the bounds of every index."
    return first


def tree_sizes(seed: int) -> list[tuple[int, str]]:
    drawn = random.Random(f"{seed}/drill02/tree").randrange(5001, 9000, 2)
    return [(0, "empty"), (1, "one element"), (2, "two"), (3, "three: not a power of two"), (8, "the page's 8"),
            (255, "a 256-tile minus one"), (256, "a power of two"), (257, "a 256-tile plus one"),
            (1000, "not a power of two"), (4097, "a power of two plus one"), (drawn, f"drawn from seed {seed}"),
            (65_537, "large: 2^16 + 1")]


def depth_bound(n: int) -> int:
    """Blelloch: 2 log2 n levels plus the exclusive-to-inclusive combine, and one spare."""
    return 2 * math.ceil(math.log2(n)) + 2 if n > 1 else 2


def work_bound(n: int) -> int:
    """Hillis-Steele does under n ceil(log2 n) combines; Blelloch padded to P < 2n about 2P + n."""
    return n * math.ceil(math.log2(n)) + 4 * n if n > 1 else 4


def grade_drill02_tree(report: Report, built: Built, workdir: Path, seed: int, timeout: float,
                       reproduce: str) -> None:
    order_failures: list[Failure] = []
    depth_failures: list[Failure] = []
    sizes = tree_sizes(seed)
    for n, why in sizes:
        label = f"n={n} ({why})"
        output = workdir / f"tree{n}.out"
        ran = run_driver(built.exe, ["tree", n, output], timeout, 10 + 4 * n)
        if not ran.ok:
            order_failures.append(Failure(label, ran.problem, n=n))
            if ran.timed_out:
                order_failures[-1].text += "\n(the remaining sizes were not run)"
                break
            continue
        w = ran.words
        combines, bad = w[0], w[1]
        a, b = tuple(w[2:5]), tuple(w[5:8])
        guard_changed, guard_index = w[8], w[9]
        kinds, los, his, depths = (w[10 + k * n:10 + (k + 1) * n] for k in range(4))
        lines, diagnosis = [], ""
        if guard_changed:
            lines.append(f"wrote x[{guard_index}], outside x[0..n-1]")
        ok = (kinds == array("q", [KIND_RANGE]) * n and los == array("q", bytes(8 * n))
              and his == array("q", range(n)))
        if not ok:
            i = next(i for i in range(n) if (kinds[i], los[i], his[i]) != (KIND_RANGE, 0, i))
            lines.append(f"x[{i}] holds {traced_text(kinds[i], los[i], his[i])}, should hold inputs 0..{i}")
            if bad:
                diagnosis = explain_bad_combine(bad, a, b)
            elif kinds[i] == KIND_RANGE and los[i] == his[i] == i:
                diagnosis = "x[i] was never combined with anything: is the scan running at all?"
        elif bad:
            lines.append(explain_bad_combine(bad, a, b))
        if lines:
            order_failures.append(Failure(label, "\n".join(lines), diagnosis, n))
        if n == 1000:
            report.notes.append(f"tree_scan_inclusive did {combines} combines at n = 1000 (a sequential loop "
                                "does 999, Hillis-Steele 8977, Blelloch padded to 1024 about 2046)")
        deepest = max(range(n), key=lambda i: depths[i], default=None)
        if deepest is not None and depths[deepest] > depth_bound(n):
            sequential = " That is a left-to-right loop (each x[i] waits for x[i-1]): correct, but not the " \
                         "parallel scan this drill asks for." if depths[deepest] >= n - 1 else ""
            depth_failures.append(Failure(label, f"the longest chain of combines is {depths[deepest]} deep (at "
                                                 f"x[{deepest}]); a tree needs at most 2*ceil(log2 n) + 2 = "
                                                 f"{depth_bound(n)}.{sequential}", n=n))
        elif combines > work_bound(n):
            depth_failures.append(Failure(label, f"{combines} combines for n = {n}; a tree scan needs at most "
                                                 f"n*ceil(log2 n) + 4n = {work_bound(n)} (Hillis-Steele: "
                                                 "n log2 n, Blelloch: about 2n). Is every output summing its "
                                                 "own prefix, or a level repeating work?", n=n))
    report.add(CHECK_TREE_ORDER, not order_failures,
               summarise(order_failures, len(sizes), reproduce) if order_failures else "")
    if order_failures:
        # Depth is a property of a working scan: a stub that does nothing is 0 deep.
        report.add(CHECK_TREE_DEPTH, False, "not measured: tree_scan_inclusive must first produce the right "
                                            "ranges (see the check above)"
                   + (f"\n{summarise(depth_failures, len(sizes), reproduce)}" if depth_failures else ""))
    else:
        report.add(CHECK_TREE_DEPTH, not depth_failures,
                   summarise(depth_failures, len(sizes), reproduce) if depth_failures else "")


def diagnose_tile(case: Case02, actual: list[Pair]) -> str:
    n = len(case.flags)
    expected = segmented_reference(case.flags, case.values, case.carry)
    if n and all(p[1] == POISON for p in actual):
        return "out was never written: every element still holds the grader's poison."
    first_head_after_0 = next((i for i in range(1, n) if case.flags[i]), n)
    first_segment = range(first_head_after_0)
    carry_value = case.carry[1]
    if n and case.flags[0] and carry_value and all(
            actual[i][1] - expected[i][1] == carry_value for i in first_segment):
        return (f"the carry-in (value {carry_value}) leaked into the segment that starts at index 0: a head at "
                "in[0] starts a new segment, so carry (+) in[0] = in[0] and the carry must be dropped. The flag "
                "at index 0 was ignored.")
    if n and not case.flags[0] and carry_value and all(
            expected[i][1] - actual[i][1] == carry_value for i in first_segment):
        return (f"the carry-in (value {carry_value}) is missing from the open first segment: with no head at "
                "in[0], out[i] = carry (+) in[0] (+) ... (+) in[i] must include it.")
    plain = list(accumulate(case.values, initial=carry_value))[1:]
    if n and [p[1] for p in actual] == plain and any(case.flags[1:]):
        return "the scan never restarts: it is a plain prefix sum, and the heads are ignored."
    if [p[1] for p in actual] == [p[1] for p in expected]:
        return ("the values are right but some flags are not: out[i].flag must say whether a head lies in carry, "
                "in[0..i]; the next tile's carry depends on it.")
    return ""


def grade_drill02_tile(report: Report, built: Built, workdir: Path, cases: list[Case02], timeout: float,
                       reproduce: str) -> None:
    failures: list[Failure] = []
    for number, case in enumerate(cases):
        output = workdir / f"case{number}.tile.out"
        ran = run_driver(built.exe, ["tile", workdir / f"case{number}.in", output], timeout, 4 + 2 * n_of(case))
        if not ran.ok:
            failures.append(Failure(case.label, ran.problem, n=n_of(case)))
            if ran.timed_out:
                failures[-1].text += "\n(the remaining cases were not run)"
                break
            continue
        w = ran.words
        lines = []
        if w[0]:
            lines.append(f"changed its input in[{w[1]}]: in is read-only (scan a copy)")
        if w[2]:
            lines.append(f"wrote out[{w[3]}], outside out[0..n-1]")
        actual = pairs_from(w, 4, len(case.flags))
        text = first_pair_mismatch(segmented_reference(case.flags, case.values, case.carry), actual)
        diagnosis = ""
        if text:
            lines.append(text)
            diagnosis = diagnose_tile(case, actual) if len(failures) < MAX_CASES_SHOWN else ""
        if lines:
            failures.append(Failure(case.label, "\n".join(lines), diagnosis, n_of(case)))
    report.add(CHECK_TILE, not failures, summarise(failures, len(cases), reproduce) if failures else "")


def grade_drill02(submission: Path, workdir: Path, seed: int, timeout: float) -> Report:
    report = Report("drill02", submission.name)
    reproduce = reproduce_line("drill02", submission, seed)
    report.notes.append(f"hidden inputs drawn with seed {seed}; {reproduce}")
    built = build_submission("drill02", submission, workdir)
    if not builds_check(report, "drill02", built, DRILL02_CHECKS):
        return report
    cases = drill02_cases(seed)
    for number, case in enumerate(cases):
        write_words(workdir / f"case{number}.in", case_words(case))
    grade_drill02_operator(report, built, workdir, cases, seed, timeout, reproduce)
    grade_drill02_schedules(report, built, workdir, cases, timeout, reproduce)
    grade_drill02_tree(report, built, workdir, seed, timeout, reproduce)
    grade_drill02_tile(report, built, workdir, cases, timeout, reproduce)
    return report


# ---- drill 03: the work-and-depth analysis ---------------------------------------------

# Every numeric slot of exercises/03_scan_analysis.md, in order, with what it is.
SLOTS03 = {
    "serial_adds_1024": "adds of the sequential loop at n = 1024",
    "hs_threads_1024": "Hillis-Steele threads in the block",
    "hs_levels_1024": "Hillis-Steele levels",
    "hs_adds_1024": "Hillis-Steele adds",
    "hs_barriers_1024": "Hillis-Steele barriers, double-buffered: one per level",
    "bl_threads_1024": "Blelloch threads in the block",
    "bl_levels_1024": "Blelloch levels (up-sweep and down-sweep)",
    "bl_adds_1024": "Blelloch adds",
    "bl_barriers_1024": "Blelloch barriers",
    "extra_work_factor_1024": "Hillis-Steele adds / Blelloch adds",
    "hs_avg_utilisation_pct_1024": "Hillis-Steele adds / (levels x threads), in percent",
    "bl_avg_utilisation_pct_1024": "Blelloch adds / (levels x threads), in percent",
    "hs_levels_under_25pct_1024": "Hillis-Steele levels with active / threads strictly below 25 %",
    "bl_levels_under_25pct_1024": "Blelloch levels with active / threads strictly below 25 %",
    "hs_adds_per_byte_1024": "Hillis-Steele adds / 8n bytes",
    "bl_adds_per_byte_1024": "Blelloch adds / 8n bytes",
    "hs_levels_1000": "Hillis-Steele levels at n = 1000",
    "hs_adds_1000": "Hillis-Steele adds at n = 1000",
    "bl_padded_n_1000": "the power of two Blelloch pads n = 1000 to",
    "bl_levels_1000": "Blelloch levels at n = 1000",
    "bl_adds_1000": "Blelloch adds at n = 1000, every add of the padded tree",
    "warp_scan_steps_32": "shuffle steps of a 32-lane warp scan",
    "warp_scan_steps_64": "shuffle steps of a 64-lane wavefront scan",
    "shfl_block_barriers_1024": "barriers of the warp-shuffle block scan",
    "shfl_block_adds_1024": "adds of the warp-shuffle block scan",
}

# Wrong answers worth a sentence: slot -> {wrong value: why}.
HINTS03 = {
    "serial_adds_1024": {1024: "the first element needs no add: n - 1."},
    "hs_adds_1024": {10240: "n log2 n gives every thread an add at every level, but threads tid < d have nothing "
                            "to their left and only copy."},
    "hs_barriers_1024": {20: "20 is the register-staged variant (two barriers a level); the model is "
                             "double-buffered, one barrier a level."},
    "bl_threads_1024": {1024: "Blelloch's block has one thread per PAIR: n/2."},
    "bl_levels_1024": {10: "that is one sweep; the up-sweep and the down-sweep have log2 n levels each."},
    "bl_barriers_1024": {10: "one barrier per level, and there are levels in both sweeps."},
    "bl_adds_1024": {1023: "that is the up-sweep alone; the down-sweep does as many again.",
                     2048: "each sweep touches the n - 1 internal nodes of the tree: 2(n - 1)."},
    "bl_levels_under_25pct_1024": {16: "16 is what 1024 threads would give; Blelloch runs n/2 = 512 threads, "
                                       "one per pair."},
    "bl_adds_1000": {1998: "Blelloch pads to 1024, and every add of the padded tree is executed and counted."},
    "bl_levels_1000": {19: "the padded tree has 1024 leaves: log2 1024 levels per sweep."},
}

PROSE_PLACEHOLDER = "_(write your answer here)_"


def parse_slots(text: str) -> dict[str, str]:
    """name -> the raw text after `=`, for every known slot line (the first one wins)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        m = re.match(r"^\s*`?([a-z][a-z0-9_]*)\s*=\s*(.*?)`?\s*$", line)
        if m and m.group(1) not in found:
            found[m.group(1)] = m.group(2)
    return found


def parse_number(raw: str) -> float | None:
    """None when unanswered; raises ValueError when not a number."""
    text = raw.split("#")[0].strip().strip("`").strip()
    text = re.sub(r"\s*(%|x|X|×)$", "", re.sub(r"^(~|≈|about)\s*", "", text))
    if not text.replace("_", "").strip():
        return None
    return float(text.replace(",", "").replace("_", ""))


def prose_answers(text: str) -> list[tuple[str, str]]:
    """(question heading, answer text) for every question that asks for prose."""
    answers = []
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        heading, _, body = section.partition("\n")
        if "**Answer:**" not in body:
            continue
        answer = body.split("**Answer:**", 1)[1].strip()
        answers.append((heading.strip(), "" if answer in ("", PROSE_PLACEHOLDER) else answer))
    return answers


_COUNTED: dict[tuple[str, int], tuple[dict[str, str], str, str]] = {}


def counted_slots(workdir: Path, timeout: float) -> tuple[dict[str, str] | None, str, str]:
    """Build and run the counting program: (slots, the command, why it failed).

    Remembered per version of the source for the life of the process, so a
    batch of gradings compiles it once."""
    key = (str(COUNTING_PROGRAM), COUNTING_PROGRAM.stat().st_mtime_ns)
    if key not in _COUNTED:
        result = _count(workdir, timeout)
        if result[0] is None:
            return result
        _COUNTED[key] = result
    return _COUNTED[key]


def _count(workdir: Path, timeout: float) -> tuple[dict[str, str] | None, str, str]:
    built = compile_cxx(COUNTING_PROGRAM, workdir / "03_scan_analysis")
    if not built.ok:
        return None, built.reproduce, f"it did not compile:\n{built.output}"
    command = [str(built.exe), "--n", "1024,1000", "--slots"]
    try:
        proc = run_process(command, capture_output=True, text=True, timeout=max(timeout, 60))
    except subprocess.TimeoutExpired:
        return None, shlex.join(command), "it did not finish"
    except OSError as exc:
        return None, shlex.join(command), f"it could not be started: {exc}"
    if proc.returncode != 0:
        return None, shlex.join(command), f"exit status {proc.returncode}\n{proc.stdout}{proc.stderr}"
    return parse_slots(proc.stdout), shlex.join(command), ""


def grade_drill03(submission: Path, workdir: Path, seed: int, timeout: float) -> Report:
    del seed  # nothing random: the answers are counts
    report = Report("drill03", submission.name)
    text = submission.read_text(encoding="utf-8", errors="replace")
    workdir.mkdir(parents=True, exist_ok=True)
    reference, command, why = counted_slots(workdir, timeout)
    if reference is None or not set(SLOTS03) <= set(reference):
        missing = sorted(set(SLOTS03) - set(reference or {}))
        report.add("reference counting program", False,
                   "a harness problem, not yours (tell your instructor): solutions/03_scan_analysis.cpp "
                   f"could not provide the reference numbers.\n$ {command}\n{why or f'missing slots: {missing}'}")
        return report

    answers = parse_slots(text)
    for slot, what in SLOTS03.items():
        counted = reference[slot]
        source = "counted by solutions/03_scan_analysis.cpp"
        if slot not in answers:
            report.add(slot, False, f"missing: the line `{slot} = ____` is not in the file ({what}).")
            continue
        try:
            value = parse_number(answers[slot])
        except ValueError:
            report.add(slot, False, f"not a number: {answers[slot]!r} ({what}; {source}: {counted}).")
            continue
        if value is None:
            report.add(slot, False, f"not answered: the line still reads `{slot} = ____` ({what}).")
            continue
        decimal = "." in counted
        right = abs(value - float(counted)) <= 0.01 + 1e-9 if decimal else value == float(counted)
        if right:
            report.add(slot, True)
            continue
        shown_value = f"{value:g}" if not decimal else answers[slot].strip()
        feedback = f"you wrote {shown_value}; {source}: {counted} ({what}"
        feedback += ", accepted within 0.01)." if decimal else ", exact)."
        hint = HINTS03.get(slot, {}).get(value)
        if hint:
            feedback += f"\n  likely cause: {hint}"
        report.add(slot, False, feedback)

    for heading, answer in prose_answers(text):
        if answer:
            flat = " ".join(answer.split())
            report.notes.append(f"{heading} (prose, for the instructor): "
                                f"{flat if len(flat) <= 1200 else flat[:1200] + ' ...'}")
        else:
            report.notes.append(f"{heading}: prose answer not written yet")
    return report


# ---- entry point ---------------------------------------------------------------------------

GRADERS: dict[str, Callable[[Path, Path, int, float], Report]] = {
    "drill01": grade_drill01,
    "drill02": grade_drill02,
    "drill03": grade_drill03,
}


def grade(exercise: str, submission: Path, workdir: Path, seed: int, timeout: float | None = None) -> Report:
    """Grade one drill submission; `timeout` bounds each driver run (default TIMEOUT_S)."""
    return GRADERS[exercise](Path(submission), Path(workdir), seed, TIMEOUT_S if timeout is None else timeout)
