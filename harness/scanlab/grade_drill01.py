"""Drill 01 (exercises/01_exclusive_to_inclusive.cpp): exclusive <-> inclusive and the total.

The inputs: the public ones the starter's sandbox and the lesson page show (8, 256, 0, 1), then
hidden ones drawn from the grading seed (drill01_sizes says why each is there). The starter and
this file are public, so what keeps a hidden input hidden is the seed: grade.py draws a fresh one
for every grading unless the instructor fixes one, and in course mode no student text names the
seed, a hidden size, or a hidden value (the full labels are the instructor's detail). A file right
only for the sizes it has seen still meets sizes it has not.
"""

from __future__ import annotations

import random
from array import array
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import accumulate
from pathlib import Path

from .drill_common import (Failure, GUARD, Job, MAX_CASES_SHOWN, POISON, add_cases, big_values, build_submission,
                           builds_check, cycle8, first_mismatch, hidden_note, n_of, near_poison, note_dropped,
                           problem_in_words, reproduce_line, run_jobs, shown)
from .grading import Report


# ---- drill 01: the cases ------------------------------------------------------------------

TILE = 256  # the lesson's tile: the edge cases sit either side of it
LARGE = (100_000, 2_000_000)  # where the large sizes are drawn
# The three large sizes together stay under this, so one run of all the cases (exclusive_to_inclusive
# dumps in, excl and incl: 24 bytes an element) fits the sandbox's 64 MiB file size limit, and a
# grade takes about as long as it did with one large size of a million.
LARGE_TOTAL = 2_500_000
VALUES = "random integers -15..15"
# random_values' draw (b % 31 - 15 for each random byte) as a table, so millions of values are made
# by bytes.translate instead of a Python loop: the same numbers for the same seed and salt.
SMALL_VALUES = bytes(((b % 31) - 15) & 0xFF for b in range(256))


def small_values(n: int, seed: int, salt: str) -> array:
    """drill_common.random_values(n, seed, salt) as an array('q'), fast enough for millions."""
    signed = array("b")
    signed.frombytes(random.Random(f"{seed}/{salt}").randbytes(n).translate(SMALL_VALUES))
    return array("q", signed)


def guarded01(values: array) -> array:
    """An array's storage as the driver lays it out: poisoned guard words either side."""
    guard = array("q", [POISON]) * GUARD
    return guard + values + guard


@dataclass(eq=False)
class Case01:
    """One input of drill 01. The cases of a seed are made once and shared by every submission
    graded with it (a class): treat them as read-only."""
    label: str  # the full label (self-study, and the instructor in course mode): size, values, seed
    values: array  # int64; a list is taken and converted
    hidden: str = ""  # a hidden case: its name for a course-mode student, never its size ("": public)

    def __post_init__(self):
        if not (isinstance(self.values, array) and self.values.typecode == "q"):
            self.values = array("q", self.values)

    @cached_property
    def inclusive(self) -> array:
        return array("q", accumulate(self.values))

    @cached_property
    def exclusive(self) -> array:
        return (array("q", [0]) + self.inclusive[:-1]) if self.values else array("q")

    @cached_property
    def small(self) -> bool:
        """Every value and prefix far below the poison: a number near it was read from outside."""
        if not self.values:
            return True
        limit = abs(POISON) // 4
        return max(max(a) for a in (self.values, self.inclusive)) < limit and \
            min(min(a) for a in (self.values, self.inclusive)) > -limit


def draw_large(rng: random.Random) -> dict[str, int]:
    """The three large sizes: each anywhere in LARGE, together at most LARGE_TOTAL. They are drawn in
    a random order, each from what the ones before it left, so none is always the small one."""
    low, high = LARGE
    draws = {
        "odd": lambda lo, hi: rng.randrange(lo | 1, hi + 1, 2),
        "whole tiles": lambda lo, hi: 1024 * rng.randrange(-(-lo // 1024), hi // 1024 + 1),
        "any": lambda lo, hi: rng.randrange(lo, hi + 1),
    }
    order = list(draws)
    rng.shuffle(order)
    left, sizes = LARGE_TOTAL, {}
    for k, name in enumerate(order):
        reserve = (low + 1024) * (len(order) - k - 1)  # room for the ones still to draw
        sizes[name] = draws[name](low, min(high, left - reserve))
        left -= sizes[name]
    return sizes


def drill01_sizes(seed: int) -> list[tuple[str, int, str, str]]:
    """The hidden cases of a seed: (salt, n, why (the instructor's label), its course-mode name).
    Sizes only, cheap: the cases themselves are drill01_cases."""
    rng = random.Random(f"{seed}/drill01-sizes")
    mid = rng.randrange(1000, 10_000)
    while mid % TILE == 0:
        mid = rng.randrange(1000, 10_000)
    overflow = rng.randrange(1000, 5000)
    large = draw_large(rng)
    return [
        ("tiny", 2, "the smallest shift", "a tiny size"),
        ("tile-1", TILE - 1, "a 256-tile minus one", "one element short of a tile"),
        ("tile+1", TILE + 1, "a 256-tile plus one", "one element past a tile"),
        ("mid", mid, "drawn, a few tiles and a part (not a multiple of 256)", "a middling size, not whole tiles"),
        ("overflow", overflow, "drawn, values -2^33..2^34 whose prefix sums pass 2^40: a 32-bit (int) accumulator "
                               "or temporary overflows; long long does not",
         "large values: an int sum or temporary overflows, a long long does not"),
        ("large-odd", large["odd"], "large and odd (drawn, 10^5..2*10^6)", "a large odd size"),
        ("large-tiles", large["whole tiles"], "large and even, a multiple of 1024 (drawn, 10^5..2*10^6)",
         "a large even size, whole tiles"),
        ("large", large["any"], "large (drawn, 10^5..2*10^6)", "a large size"),
    ]


@lru_cache(maxsize=2)
def drill01_cases(seed: int) -> list[Case01]:
    """The public inputs, then the seed's hidden ones (drill01_sizes). Made once per seed: read-only."""
    cases = [
        Case01("page example: n=8, in = 3 1 7 0 4 1 6 3", [3, 1, 7, 0, 4, 1, 6, 3]),
        Case01("lesson input: n=256, in[i] = (i % 8) + 1", cycle8(256)),
        Case01("empty: n=0 (nothing to convert; the total of nothing is the identity 0)", []),
        Case01("one element: n=1, in = 5", [5]),
    ]
    sizes = drill01_sizes(seed)
    for k, (salt, n, why, says) in enumerate(sizes, 1):
        big = salt == "overflow"
        values = big_values(n, seed, f"drill01/{salt}") if big else small_values(n, seed, f"drill01/{salt}")
        cases.append(Case01(f"hidden (seed {seed}): n={n}, {why}" + ("" if big else f", {VALUES}"), values,
                            f"hidden case {k} of {len(sizes)} ({says})"))
    return cases


# ---- what each run gets and what a right run leaves ------------------------------------------

# What each mode's run is given, in the order of the function's parameters, and what it writes.
DRILL01_INPUTS = {"e2i": ("in", "excl"), "i2e": ("incl",), "total": ("in", "excl")}


def drill01_arrays(case: Case01) -> dict[str, array]:
    return {"in": case.values, "incl": case.inclusive, "excl": case.exclusive}


def drill01_input(mode: str, case: Case01) -> bytes:
    """The input file of one case: n, then only the arrays the function reads (never its answer)."""
    arrays = drill01_arrays(case)
    words = array("q", [len(case.values)])
    for name in DRILL01_INPUTS[mode]:
        words += arrays[name]
    return words.tobytes()


@lru_cache(maxsize=1)
def drill01_prepared(seed: int) -> tuple[dict[str, list[bytes]], dict[str, list[array]]]:
    """A seed's input files (mode -> one per case) and the dumps of a right run (right_dump01), made
    once per seed like its cases: a class shares them (its workers fork from the process that made
    them), so a grade spends nothing on them. Read-only."""
    cases = drill01_cases(seed)
    inputs = {mode: [drill01_input(mode, case) for case in cases] for mode in ("e2i", "i2e")}
    inputs["total"] = inputs["e2i"]  # the same arrays: in and excl
    return inputs, {mode: [right_dump01(mode, case) for case in cases] for mode in DRILL01_INPUTS}


def right_dump01(mode: str, case: Case01) -> array:
    """The dump of a run that read its inputs only, wrote every output slot right and nothing else:
    a run whose dump equals it word for word passes without further judging."""
    arrays = drill01_arrays(case)
    dump = array("q")
    for name in DRILL01_INPUTS[mode]:
        dump += guarded01(arrays[name])
    if mode == "total":
        dump.append(case.inclusive[-1] if case.values else 0)
    else:
        dump += guarded01(case.inclusive if mode == "e2i" else case.exclusive)
    return dump


def drill01_output_words(mode: str, n: int) -> int:
    return (len(DRILL01_INPUTS[mode]) + (mode != "total")) * (n + 2 * GUARD) + (mode == "total")


# ---- judging one run: each finding in full words and in hidden-case words ---------------------------
# A hidden case's words (course mode) name no size, no index that gives one away, no value.

def index_words(index: int, n: int) -> str:
    """An index outside 0..n-1 relative to n (n, n + 1, ...), never as a number that gives n away."""
    return str(index) if index < n else "n" if index == n else f"n + {index - n}"


def changed_input(name: str, written: array, dumped: array) -> tuple[str, str]:
    """Where the submission wrote into a read-only input (guard words included), or ("", "")."""
    if dumped == written:
        return "", ""
    k = next(k for k in range(len(written)) if dumped[k] != written[k])
    why = "the conversion must only read its inputs (no shifting in place, not even in an input buffer)"
    n = len(written) - 2 * GUARD
    where = "" if 0 <= k - GUARD < n else f"[{index_words(k - GUARD, n)}], outside it"
    return f"changed its input {name}[{k - GUARD}]: {why}", f"changed its input {name}{where}: {why}"


def guard_written(out_name: str, storage: array, n: int) -> tuple[str, str]:
    """The first guard word around the output that no longer holds the poison, or ("", "")."""
    k = next((k for k in (*range(GUARD), *range(GUARD + n, n + 2 * GUARD)) if storage[k] != POISON), None)
    if k is None:
        return "", ""
    index, value = k - GUARD, storage[k]
    if index < 0:
        where = "before the start (valid indices are 0..n-1): a loop that writes index i - 1 must start at i = 1"
    elif index == n:
        where = "one past the end (valid indices are 0..n-1): a loop that writes index i + 1 must stop at i = n - 2"
    else:
        where = "past the end (valid indices are 0..n-1)"
    return f"wrote {out_name}[{index}] = {value}, {where}", f"wrote {out_name}[{index_words(index, n)}], {where}"


def poison_words(value: int, small: bool) -> str:
    if value == POISON:
        return " (it still holds the grader's poison: never written)"
    if near_poison(value, small):
        return " (it holds the grader's poison plus a little: read from outside the arrays)"
    return ""


def mismatch_words(out_name: str, n: int, count: int, i: int, value: int, small: bool) -> str:
    how = "every element" if count == n else "one element" if count == 1 else "some elements"
    first = (f"{out_name}[0]" if i == 0 else f"the last one, {out_name}[n - 1]" if i == n - 1
             else "in the first half" if 2 * i < n else "in the second half")
    return f"{how} of {out_name} wrong; the first wrong one is {first}{poison_words(value, small)}"


def judge_drill01(mode: str, out_name: str | None, case: Case01,
                  words: array) -> tuple[list[str], list[str], array | int]:
    """(what went wrong with the side effects, the same in hidden-case words, the result) of one run's raw dump."""
    n = len(case.values)
    size = n + 2 * GUARD
    arrays = drill01_arrays(case)
    lines, in_words = [], []
    for k, name in enumerate(DRILL01_INPUTS[mode]):
        full, said = changed_input(name, guarded01(arrays[name]), words[k * size:(k + 1) * size])
        if full:
            lines.append(full)
            in_words.append(said)
            break  # the first changed input is enough
    at = len(DRILL01_INPUTS[mode]) * size
    if out_name is None:
        return lines, in_words, words[at]
    storage = words[at:at + size]
    full, said = guard_written(out_name, storage, n)
    if full:
        lines.append(full)
        in_words.append(said)
    return lines, in_words, storage[GUARD:GUARD + n]


# ---- diagnoses: (in full, in hidden-case words) ---------------------------------------------------

def diagnose_e2i(case: Case01, actual: array) -> tuple[str, str]:
    values, excl, expected = case.values, case.exclusive, case.inclusive
    n = len(values)
    if n and all(a == POISON for a in actual):
        said = "incl was never written: every element still holds the grader's poison."
    elif actual == excl:
        said = "incl is excl copied unchanged: add each element's own value, incl[i] = excl[i] + in[i]."
    elif n >= 2 and actual[:-1] == excl[1:] and actual[-1] == POISON:
        # incl[i] == excl[i + 1] for every right answer: only the last slot tells the two mistakes apart
        said = ("only the last element is wrong, and it was never written (it still holds the grader's poison): "
                "does the loop stop one short (i < n - 1)? Every element, the last included, is excl[i] + in[i]. "
                "(The same shows if incl[n - 1] was read from excl[n], one past the end of excl.)")
    elif n >= 2 and actual[:-1] == excl[1:] and actual[-1] != expected[-1]:
        said = ("incl[i] = excl[i + 1] is right everywhere but the last element, where excl[n] does not exist: "
                "that is the total, which the exclusive scan dropped. Add in[i] instead of shifting.")
    elif n >= 2 and all(actual[i] == excl[i] + values[i + 1] for i in range(n - 1)):
        said = "adds in[i + 1] instead of in[i]: an off-by-one index."
    elif n >= 2 and all(actual[i] == excl[i] + values[i - 1] for i in range(1, n)):
        said = "adds in[i - 1] instead of in[i]: an off-by-one index."
    else:
        bad = [i for i in range(n) if actual[i] != expected[i]]
        if bad == [0]:
            said = ("only incl[0] is wrong. This direction has no boundary case: incl[0] = excl[0] + in[0] = in[0]"
                    + (" (you wrote the identity 0 there)." if actual[0] == 0 else "."))
        elif bad == [n - 1]:
            said = "only the last element is wrong: does the loop stop one element early?"
        else:
            said = ""
    return said, said


def diagnose_i2e(case: Case01, actual: array) -> tuple[str, str]:
    incl, expected = case.inclusive, case.exclusive
    n = len(incl)
    if n and all(a == POISON for a in actual):
        said = "excl was never written: every element still holds the grader's poison."
        return said, said
    bad = [i for i in range(n) if actual[i] != expected[i]]
    if bad == [0]:
        if actual[0] == POISON:
            said = "excl[0] was never written: it must be the identity 0, the sum of nothing."
            return said, said
        if actual[0] == incl[0]:
            return (f"excl[0] is incl[0] = {incl[0]}, but it must be the identity 0: nothing precedes element 0.",
                    "excl[0] is incl[0], but it must be the identity 0: nothing precedes element 0.")
        return (f"excl[0] should be the identity 0 (the sum of nothing), not {shown(actual[0], case.small)}.",
                "excl[0] should be the identity 0 (the sum of nothing).")
    if actual == incl:
        said = "excl is incl unchanged: shift it right by one, excl[i] = incl[i - 1], with excl[0] = 0."
    elif n >= 2 and actual[1:] == incl[1:]:
        said = ("excl[i] = incl[i] from excl[1] on: no shift. The exclusive scan is incl moved one place to the "
                "right, excl[i] = incl[i - 1] (excl[0] = 0 is right).")
    elif bad == [n - 1] and actual[-1] == POISON:
        said = ("only the last element is wrong, and it was never written (it still holds the grader's poison): "
                "does the loop stop one short (i < n - 1)?")
    elif n >= 3 and actual[:-1] == incl[1:]:
        said = ("the inclusive scan shifted the wrong way (excl[i] = incl[i + 1]): the exclusive scan is "
                "incl moved one place to the RIGHT, excl[i] = incl[i - 1].")
    elif n >= 3 and len(set(actual[1:])) == 1 and len(set(expected[1:])) > 1:
        smear = ("a shift done front to back inside one buffer reads the slot it has just overwritten, so one value "
                 "smears down the array. Read from incl and write to excl (never in place).")
        return (f"every element from excl[1] on is {shown(actual[1], case.small)}: {smear}",
                f"every element from excl[1] on holds the same value: {smear}")
    elif bad == [n - 1]:
        said = "only the last element is wrong: does the loop stop one element early?"
    elif bad and actual[0] == expected[0] and all(actual[i] == POISON for i in bad):
        said = "some elements were never written (they still hold the poison): the loop misses part of 1..n-1."
    else:
        said = ""
    return said, said


def diagnose_total(case: Case01, actual: int) -> tuple[str, str]:
    values, excl = case.values, case.exclusive
    n = len(values)
    if actual == POISON or near_poison(actual, case.small):
        said = (("n = 0: excl[n - 1] reads excl[SIZE_MAX], which is excl[-1] (n - 1 wraps for an unsigned n), "
                 "outside the array. The total of nothing is the identity 0: return it when n == 0.")
                if n == 0 else "the total holds the grader's poison: it read an element outside in or excl.")
    elif n == 0:
        return (f"n = 0: the total of nothing is the identity 0, not {actual}.",
                "n = 0: the total of nothing is the identity 0.")
    elif actual == 0 and excl[n - 1] != 0:
        said = "returned 0 for a non-empty input: nothing was computed (the starter's stub returns 0)."
    elif actual == excl[n - 1]:
        said = ("returned excl[n - 1]: that is the sum of everything BEFORE the last element; the total "
                "is excl[n - 1] + in[n - 1].")
    elif actual == values[n - 1]:
        said = "returned in[n - 1] alone: the total is excl[n - 1] + in[n - 1]."
    elif n >= 2 and actual == excl[n - 1] + values[n - 2]:
        said = "added in[n - 2]: the element that fell off the end is in[n - 1]."
    elif n >= 2 and actual == excl[n - 2] + values[n - 1]:
        said = "used excl[n - 2]: the last prefix is excl[n - 1]."
    elif n >= 2 and actual == excl[n - 2] + values[n - 2]:
        said = "used excl[n - 2] + in[n - 2], which is excl[n - 1]: the last element is still missing."
    else:
        said = ""
    return said, said


# ---- grading ----------------------------------------------------------------------------------------

DRILL01_CHECKS = {
    # check name -> (driver mode, output array name or None for the total)
    "exclusive_to_inclusive": ("e2i", "incl"),
    "inclusive_to_exclusive": ("i2e", "excl"),
    "total_from_exclusive": ("total", None),
}


def judge_case(mode: str, out_name: str | None, case: Case01, words: array, diagnose: bool) -> Failure | None:
    """One finished run of one case: None when it is right, else its Failure in every mode's words."""
    n = len(case.values)
    lines, in_words, actual = judge_drill01(mode, out_name, case, words)
    safe = list(lines)  # what the submission did, never what it should have done
    diagnosis = said = ""
    if out_name is None:
        expected = case.inclusive[-1] if case.values else 0
        if actual != expected:
            safe.append(f"returned {shown(actual, case.small)}")
            lines.append(f"{safe[-1]}, should be {expected}")
            in_words.append(f"returned a wrong total{poison_words(actual, case.small)}")
            if diagnose:
                diagnosis, said = diagnose_total(case, actual)
    else:
        expected = case.inclusive if mode == "e2i" else case.exclusive
        mismatch = first_mismatch(expected, actual)
        if mismatch:
            count, i = mismatch
            safe.append(f"{count} element(s) wrong; first at index {i}: {out_name}[{i}] is "
                        f"{shown(actual[i], case.small)}")
            lines.append(f"{safe[-1]}, should be {expected[i]}")
            in_words.append(mismatch_words(out_name, n, count, i, actual[i], case.small))
            if diagnose:
                diagnosis, said = (diagnose_e2i if mode == "e2i" else diagnose_i2e)(case, actual)
    if not lines:
        return None
    return Failure(case.label, "\n".join(lines), diagnosis, n_of(case), "\n".join(safe), case.hidden or None,
                   "\n".join(in_words), said)


def grade_drill01(submission: Path, workdir: Path, seed: int, timeout: float,
                  grading_mode: str = "self-study") -> Report:
    # grading_mode, not mode: below, `mode` is the driver's mode of each function (e2i, i2e, total)
    report = Report("drill01", submission.name, mode=grading_mode)
    reproduce = reproduce_line("drill01", submission, seed)
    hidden_note(report, seed, reproduce)
    with ThreadPoolExecutor(max_workers=1) as background:  # the inputs are made while the compiler works
        building = background.submit(build_submission, "drill01", submission, workdir)
        cases = drill01_cases(seed)
        inputs, right = drill01_prepared(seed)
        jobs = [Job(check, number, mode, drill01_output_words(mode, len(case.values)), inputs[mode][number])
                for check, (mode, _) in DRILL01_CHECKS.items() for number, case in enumerate(cases)]
        linked = building.result()
    if not builds_check(report, linked, list(DRILL01_CHECKS)):
        return report
    runs = run_jobs(linked.exe, jobs, timeout)
    del jobs
    note_dropped(report, runs.values())

    for check, (mode, out_name) in DRILL01_CHECKS.items():
        failures: list[Failure] = []
        for number, case in enumerate(cases):
            ran = runs.pop((check, number), None)
            if ran is None:
                break  # skipped: an earlier case of this function timed out
            if not ran.ok:
                failures.append(Failure(case.label, ran.problem, n=n_of(case), hidden=case.hidden or None,
                                        in_words=problem_in_words(ran.problem)))
                if ran.timed_out:
                    not_run = "\n(the remaining cases of this function were not run)"
                    failures[-1].text += not_run
                    failures[-1].in_words += not_run
                    break
                continue
            if ran.words == right[mode][number]:
                continue
            failure = judge_case(mode, out_name, case, ran.words, len(failures) < MAX_CASES_SHOWN)
            if failure is not None:  # only the shown ones get a diagnosis
                failures.append(failure)
        add_cases(report, check, failures, len(cases), reproduce)
    return report
