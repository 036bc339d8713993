"""Drill 01 (exercises/01_exclusive_to_inclusive.cpp): exclusive <-> inclusive and the total."""

from __future__ import annotations

import random
from array import array
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from itertools import accumulate
from pathlib import Path

from .drill_common import (Failure, GUARD, Job, MAX_CASES_SHOWN, POISON, add_cases, big_values, build_submission,
                           builds_check, cycle8, dropped_note, first_mismatch, guarded, n_of, near_poison,
                           random_values, reproduce_line, run_jobs, shown, words_bytes)
from .grading import Report


# ---- drill 01: exclusive <-> inclusive and the total ----------------------------------

@dataclass(eq=False)
class Case01:
    """One input of drill 01. The cases of a seed are made once and shared by every submission
    graded with it (a class), so what is derived from them is kept here too."""
    label: str
    values: list[int]
    inputs: dict[str, bytes] = field(default_factory=dict, repr=False)  # mode -> input file
    dumps: dict[str, array] = field(default_factory=dict, repr=False)  # mode -> a right run's dump

    @cached_property
    def inclusive(self) -> list[int]:
        return list(accumulate(self.values))

    @cached_property
    def exclusive(self) -> list[int]:
        return ([0] + self.inclusive[:-1]) if self.values else []

    @cached_property
    def small(self) -> bool:
        """Every value and prefix far below the poison: a number near it was read from outside."""
        return all(abs(v) < abs(POISON) // 4 for v in (*self.values, *self.inclusive))


@lru_cache(maxsize=4)
def drill01_cases(seed: int) -> list[Case01]:
    """The public inputs, then seeded random inputs of sizes the starter never shows (made once per
    seed: treat them as read-only)."""
    cases = [
        Case01("page example: n=8, in = 3 1 7 0 4 1 6 3", [3, 1, 7, 0, 4, 1, 6, 3]),
        Case01("lesson input: n=256, in[i] = (i % 8) + 1", cycle8(256)),
        Case01("empty: n=0 (nothing to convert; the total of nothing is the identity 0)", []),
        Case01("one element: n=1, in = 5", [5]),
    ]
    drawn = random.Random(f"{seed}/drill01-size").randrange(2001, 5000, 2)
    for n, why in ((2, "the smallest shift"), (255, "a 256-tile minus one"), (257, "a 256-tile plus one"),
                   (1000, "not a power of two"), (drawn, "a size drawn from the seed")):
        cases.append(Case01(f"hidden (seed {seed}): n={n}, {why}, random integers -15..15",
                            random_values(n, seed, f"drill01/{n}")))
    cases.append(Case01(f"hidden (seed {seed}): n=1001, values -2^33..2^34 whose prefix sums pass 2^40: a 32-bit "
                        "(int) accumulator or temporary overflows; long long does not",
                        big_values(1001, seed, "drill01/1001")))
    cases.append(Case01(f"hidden (seed {seed}): n=1000003, large and odd, random integers -15..15",
                        random_values(1_000_003, seed, "drill01/1000003")))
    return cases


# What each mode's run is given, in the order of the function's parameters, and what it writes.
DRILL01_INPUTS = {"e2i": ("in", "excl"), "i2e": ("incl",), "total": ("in", "excl")}


def drill01_arrays(case: Case01) -> dict[str, list[int]]:
    return {"in": case.values, "incl": case.inclusive, "excl": case.exclusive}


def drill01_input(mode: str, case: Case01) -> bytes:
    """The input file of one case: n, then only the arrays the function reads (never its answer)."""
    if mode not in case.inputs:
        arrays = drill01_arrays(case)
        words = [len(case.values)]
        for name in DRILL01_INPUTS[mode]:
            words += arrays[name]
        case.inputs[mode] = words_bytes(words)
    return case.inputs[mode]


def right_dump01(mode: str, case: Case01) -> array:
    """The dump of a run that read its inputs only, wrote every output slot right and nothing else:
    a run whose dump equals it word for word passes without further judging."""
    if mode not in case.dumps:
        arrays = drill01_arrays(case)
        dump = array("q")
        for name in DRILL01_INPUTS[mode]:
            dump += guarded(arrays[name])
        if mode == "total":
            dump.append(case.inclusive[-1] if case.values else 0)
        else:
            dump += guarded(case.inclusive if mode == "e2i" else case.exclusive)
        case.dumps[mode] = dump
    return case.dumps[mode]


def drill01_output_words(mode: str, n: int) -> int:
    return (len(DRILL01_INPUTS[mode]) + (mode != "total")) * (n + 2 * GUARD) + (mode == "total")



def changed_input(name: str, written: array, dumped: array) -> str:
    """Where the submission wrote into a read-only input (guard words included), or ""."""
    if dumped == written:
        return ""
    k = next(k for k in range(len(written)) if dumped[k] != written[k])
    return (f"changed its input {name}[{k - GUARD}]: the conversion must only read its inputs "
            "(no shifting in place, not even in an input buffer)")


def guard_written(out_name: str, storage: array, n: int) -> str:
    """The first guard word around the output that no longer holds the poison, or ""."""
    k = next((k for k in (*range(GUARD), *range(GUARD + n, n + 2 * GUARD)) if storage[k] != POISON), None)
    if k is None:
        return ""
    index, value = k - GUARD, storage[k]
    if index < 0:
        where = "before the start (valid indices are 0..n-1): a loop that writes index i - 1 must start at i = 1"
    elif index == n:
        where = "one past the end (valid indices are 0..n-1): a loop that writes index i + 1 must stop at i = n - 2"
    else:
        where = "past the end (valid indices are 0..n-1)"
    return f"wrote {out_name}[{index}] = {value}, {where}"


def judge_drill01(mode: str, out_name: str | None, case: Case01, words: array) -> tuple[list[str], list[int] | int]:
    """(what went wrong with the side effects, the result) of one run's raw dump."""
    n = len(case.values)
    size = n + 2 * GUARD
    arrays = drill01_arrays(case)
    lines = []
    for k, name in enumerate(DRILL01_INPUTS[mode]):
        changed = changed_input(name, guarded(arrays[name]), words[k * size:(k + 1) * size])
        if changed:
            lines.append(changed)
            break  # the first changed input is enough
    at = len(DRILL01_INPUTS[mode]) * size
    if out_name is None:
        return lines, words[at]
    storage = words[at:at + size]
    written = guard_written(out_name, storage, n)
    if written:
        lines.append(written)
    return lines, storage[GUARD:GUARD + n].tolist()


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
        return f"excl[0] should be the identity 0 (the sum of nothing), not {shown(actual[0], case.small)}."
    if actual == incl:
        return "excl is incl unchanged: shift it right by one, excl[i] = incl[i - 1], with excl[0] = 0."
    if n >= 2 and actual[:-1] == incl[1:]:
        return ("the inclusive scan shifted the wrong way (excl[i] = incl[i + 1]): the exclusive scan is "
                "incl moved one place to the RIGHT, excl[i] = incl[i - 1].")
    if n >= 3 and len(set(actual[1:])) == 1 and len(set(expected[1:])) > 1:
        return (f"every element from excl[1] on is {shown(actual[1], case.small)}: a shift done front to back inside one "
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
    if actual == POISON or near_poison(actual, case.small):
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


def grade_drill01(submission: Path, workdir: Path, seed: int, timeout: float,
                  grading_mode: str = "self-study") -> Report:
    # grading_mode, not mode: below, `mode` is the driver's mode of each function (e2i, i2e, total)
    report = Report("drill01", submission.name, mode=grading_mode)
    reproduce = reproduce_line("drill01", submission, seed)
    report.notes.append(f"hidden inputs drawn with seed {seed}; {reproduce}")
    with ThreadPoolExecutor(max_workers=1) as background:  # the inputs are made while the compiler works
        building = background.submit(build_submission, "drill01", submission, workdir)
        cases = drill01_cases(seed)
        jobs = [Job(check, number, mode, drill01_output_words(mode, len(case.values)), drill01_input(mode, case))
                for check, (mode, _) in DRILL01_CHECKS.items() for number, case in enumerate(cases)]
        linked = building.result()
    if not builds_check(report, linked, list(DRILL01_CHECKS)):
        return report
    runs = run_jobs(linked.exe, jobs, timeout)
    report.notes.extend(dropped_note(runs.values()))

    for check, (mode, out_name) in DRILL01_CHECKS.items():
        failures: list[Failure] = []
        for number, case in enumerate(cases):
            n = len(case.values)
            ran = runs.get((check, number))
            if ran is None:
                break  # skipped: an earlier case of this function timed out
            if not ran.ok:
                failures.append(Failure(case.label, ran.problem, n=n))
                if ran.timed_out:
                    failures[-1].text += "\n(the remaining cases of this function were not run)"
                    break
                continue
            if ran.words == right_dump01(mode, case):
                continue
            lines, actual = judge_drill01(mode, out_name, case, ran.words)
            safe = list(lines)  # what the submission did, never what it should have done
            diagnosis = ""
            if out_name is None:
                expected = case.inclusive[-1] if case.values else 0
                if actual != expected:
                    safe.append(f"returned {shown(actual, case.small)}")
                    lines.append(f"{safe[-1]}, should be {expected}")
                    diagnosis = diagnose_total(case, actual) if len(failures) < MAX_CASES_SHOWN else ""
            else:
                expected = case.inclusive if mode == "e2i" else case.exclusive
                mismatch = first_mismatch(expected, actual)
                if mismatch:
                    count, i = mismatch
                    safe.append(f"{count} element(s) wrong; first at index {i}: {out_name}[{i}] is "
                                f"{shown(actual[i], case.small)}")
                    lines.append(f"{safe[-1]}, should be {expected[i]}")
                    if len(failures) < MAX_CASES_SHOWN:  # only the shown ones get a diagnosis
                        diagnosis = (diagnose_e2i if mode == "e2i" else diagnose_i2e)(case, actual)
            if lines:
                failures.append(Failure(case.label, "\n".join(lines), diagnosis, n_of(case), "\n".join(safe)))
        add_cases(report, check, failures, len(cases), reproduce)
    return report
