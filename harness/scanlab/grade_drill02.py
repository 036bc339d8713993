"""Drill 02 (exercises/02_segmented_scan.cpp): a segmented scan through a tree."""

from __future__ import annotations

import math
import random
from array import array
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import accumulate
from pathlib import Path

from .drill_common import (Failure, GUARD, Job, MAX_CASES_SHOWN, POISON, Ran, add_cases, big_values, build_submission,
                           builds_check, cycle8, first_mismatch, gated, guarded, harness_program, hidden_note, n_of,
                           near_poison, note_dropped, random_values, reproduce_line, run_jobs, run_judge,
                           student_reproduce, words_bytes)
from .grading import Report


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


@dataclass(eq=False)
class Case02:
    """One input of drill 02; like Case01, made once per seed and shared, with what derives from it."""
    label: str
    flags: list[int]
    values: list[int]
    carry: Pair = IDENTITY

    @cached_property
    def reference(self) -> list[Pair]:
        """The right inclusive segmented scan, without the carry (the schedules get none)."""
        return segmented_reference(self.flags, self.values)

    @cached_property
    def reference_carried(self) -> list[Pair]:
        """The same, continuing the carry (segmented_scan_tile)."""
        return segmented_reference(self.flags, self.values, self.carry)

    @cached_property
    def schedule_input(self) -> bytes:
        return words_bytes([len(self.flags), *self.flags, *self.values])

    @cached_property
    def tile_input(self) -> bytes:
        return words_bytes([len(self.flags), *self.carry, *self.flags, *self.values])

    @cached_property
    def schedule_dump(self) -> array:
        """What a schedule run of a right seg_combine dumps: flags, then values."""
        return array("q", [p[0] for p in self.reference] + [p[1] for p in self.reference])

    @cached_property
    def tile_dump(self) -> array:
        """What a right segmented_scan_tile run dumps: in untouched, out right, every guard intact."""
        ones = [1] * GUARD
        return array("q", ones + self.flags + ones) + guarded(self.values) + array(
            "q", ones + [p[0] for p in self.reference_carried] + ones) + guarded(
            [p[1] for p in self.reference_carried])

    @property
    def pairs(self) -> list[Pair]:
        return list(zip(self.flags, self.values))

    @cached_property
    def small(self) -> bool:
        """Every value and prefix far below the poison: a number near it was read from outside."""
        prefixes = self.reference_carried
        return all(abs(v) < abs(POISON) // 4 for v in (*self.values, *(p[1] for p in prefixes), self.carry[1]))


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


@lru_cache(maxsize=4)
def drill02_cases(seed: int) -> list[Case02]:
    """The public inputs, then seeded random ones (made once per seed: treat them as read-only)."""
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
                           (drawn, "a size drawn from the seed", 5)):
        carry = (rng.randint(0, 1), rng.randint(-50, 50))
        cases.append(Case02(f"hidden (seed {seed}): random heads (about 1 in {one_in}), n={n}, {why}, "
                            f"carry {carry}",
                            random_flags(n, seed, f"drill02/{n}", one_in), random_values(n, seed, f"drill02/{n}"),
                            carry))
    carry = (0, rng.randint(1 << 34, 1 << 35))
    cases.append(Case02(f"hidden (seed {seed}): n=1001, long segments (heads about 1 in 256), values -2^33..2^34 "
                        f"and carry {carry}: the sums pass 2^40, so a 32-bit (int) accumulator or temporary "
                        "overflows; long long does not",
                        random_flags(1001, seed, "drill02/1001", 256), big_values(1001, seed, "drill02/1001"), carry))
    carry = (rng.randint(0, 1), rng.randint(-50, 50))
    cases.append(Case02(f"hidden (seed {seed}): random heads (about 1 in 64), n=100003, large, sparse heads, "
                        f"carry {carry}",
                        random_flags(100_003, seed, "drill02/100003", 64),
                        random_values(100_003, seed, "drill02/100003"), carry))
    return cases


def schedule_input(case: Case02) -> bytes:
    """The input file of a schedule case: n, flags, values. The carry is not used there, and no answer is given."""
    return case.schedule_input


def tile_input(case: Case02) -> bytes:
    """The input file of a segmented_scan_tile case: n, the carry, flags, values."""
    return case.tile_input


def pairs_from(words, at: int, n: int) -> list[Pair]:
    flags, values = words[at:at + n].tolist(), words[at + n:at + 2 * n].tolist()
    return list(zip(flags, values))


def pair_text(p: Pair, small: bool = True) -> str:
    flag, value = p
    text = f"({flag},{value})"
    if value == POISON:
        return text + " (the grader's poison: never written)"
    if near_poison(value, small):
        return text + " (holds the grader's poison: read from outside the arrays)"
    return text


def first_pair_mismatch(expected: list[Pair], actual: list[Pair], small: bool = True,
                        with_expected: bool = True) -> str:
    """with_expected=False (course mode): where and what, without what it should be."""
    mismatch = first_mismatch(expected, actual)
    if not mismatch:
        return ""
    count, i = mismatch
    text = f"{count} element(s) wrong; first at index {i}: out[{i}] is {pair_text(actual[i], small)}"
    return f"{text}, should be {pair_text(expected[i], small)}" if with_expected else text


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
        pool.update(case.reference[:3000])
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


@lru_cache(maxsize=4)
def drill02_samples(seed: int):
    """operator_samples of the seed's cases, made once per seed."""
    return operator_samples(drill02_cases(seed), seed)


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


def ops_job(samples) -> Job:
    """The run of seg_combine and seg_identity on the sample pairs, triples and elements."""
    pairs, triples, elements = samples
    words = [len(pairs)]
    for a, b in pairs:
        words += [*a, *b]
    words.append(len(triples))
    for a, b, c in triples:
        words += [*a, *b, *c]
    words.append(len(elements))
    for a in elements:
        words += a
    return Job("ops", 0, "ops", 2 + 2 * len(pairs) + 4 * len(triples) + 4 * len(elements), words_bytes(words))


def grade_drill02_operator(report: Report, ran: Ran, samples, reproduce: str) -> None:
    pairs, triples, elements = samples
    values = [v for pair in (*(p for ab in pairs for p in ab), *(p for abc in triples for p in abc), *elements)
              for v in pair]
    small = all(abs(v) < abs(POISON) // 4 for v in values)

    def pt(p: Pair) -> str:
        return pair_text(p, small)

    if not ran.ok:
        for name in (CHECK_OPERATOR, CHECK_IDENTITY, CHECK_ASSOCIATIVE):
            report.add(name, False, f"calling seg_combine and seg_identity on sample pairs: {ran.problem}")
        return
    # Identity and associativity count only for the right operator: the starter's `return b`
    # is associative, and any constant operator has an identity of sorts.
    operator_right = True
    gate_why = ("seg_combine must first agree with the segmented operator (see that check); an identity and "
                "associativity only count for the right operator.")
    out = ran.words.tolist()
    got = [(out[k], out[k + 1]) for k in range(0, len(out), 2)]
    identity, got = got[0], got[1:]
    combined, got = got[:len(pairs)], got[len(pairs):]
    regrouped, got = got[:2 * len(triples)], got[2 * len(triples):]
    with_identity = got

    bad = [(a, b, r) for (a, b), r in zip(pairs, combined) if r != seg_op(a, b)]
    if bad:
        a, b, r = bad[0]
        operator_right = False
        said = (f"{len(bad)} of {len(pairs)} pairs drawn from the test inputs are wrong; first: "
                f"seg_combine(a, b) with a = {pt(a)}, b = {pt(b)} returned {pt(r)}")
        cause = f"\n  likely cause: {explain_operator(a, b, r)}\n"
        report.add(CHECK_OPERATOR, False, f"{said}, should be {pt(seg_op(a, b))}.{cause}{reproduce}",
                   student=f"{said}.{cause}{student_reproduce(reproduce)}")
    else:
        report.add(CHECK_OPERATOR, True)

    broken = []
    for k, a in enumerate(elements):
        left, right = with_identity[2 * k], with_identity[2 * k + 1]
        if left != a or right != a:
            broken.append((a, left, right))
    if broken:
        a, left, right = broken[0]
        said = (f"seg_identity() is {pt(identity)}; for a = {pt(a)}: seg_combine(identity, a) "
                f"= {pt(left)} and seg_combine(a, identity) = {pt(right)}; both must be a "
                f"({len(broken)} of {len(elements)} elements fail). Blelloch pads the tree with the identity "
                f"and seeds the root with it, so it must change nothing on either side.\n")
        # "both must be a": the property, with the a the submission was given
        report.add(CHECK_IDENTITY, False, said + reproduce, student=said + student_reproduce(reproduce))
    else:
        gated(report, CHECK_IDENTITY, True, "", operator_right, gate_why)

    broken_triples = []
    for k, (a, b, c) in enumerate(triples):
        left, right = regrouped[2 * k], regrouped[2 * k + 1]
        if left != right:
            broken_triples.append((a, b, c, left, right))
    if broken_triples:
        a, b, c, left, right = broken_triples[0]
        said = (f"seg_combine is not associative: {len(broken_triples)} of {len(triples)} triples drawn from "
                f"the test inputs break it; first: a = {pt(a)}, b = {pt(b)}, c = {pt(c)}: "
                f"seg_combine(seg_combine(a, b), c) = {pt(left)} but seg_combine(a, seg_combine(b, c)) "
                f"= {pt(right)}. A tree scan brackets the same "
                f"terms differently for every n and every schedule, so a non-associative operator gives "
                f"answers that depend on the schedule.\n")
        report.add(CHECK_ASSOCIATIVE, False, said + reproduce, student=said + student_reproduce(reproduce))
    else:
        gated(report, CHECK_ASSOCIATIVE, True, "", operator_right, gate_why)


def schedule_jobs(cases: list[Case02]) -> list[Job]:
    return [Job(mode, number, mode, 2 * n_of(case), schedule_input(case))
            for mode in SCHEDULES.values() for number, case in enumerate(cases)]


def grade_drill02_schedules(report: Report, runs: dict[tuple[str, int], Ran], cases: list[Case02],
                            reproduce: str) -> None:
    operator_broken = not (report.check(CHECK_OPERATOR).passed and report.check(CHECK_ASSOCIATIVE).passed)
    for name, mode in SCHEDULES.items():
        failures: list[Failure] = []
        for number, case in enumerate(cases):
            ran = runs.get((mode, number))
            if ran is None:
                break  # skipped: an earlier case timed out
            if not ran.ok:
                failures.append(Failure(case.label, ran.problem, n=n_of(case)))
                if ran.timed_out:
                    failures[-1].text += "\n(the remaining cases were not run)"
                    break
                continue
            if ran.words == case.schedule_dump:
                continue
            actual = pairs_from(ran.words, 0, len(case.flags))
            reference = case.reference
            text = first_pair_mismatch(reference, actual, case.small)
            if text:
                diagnosis = ("seg_combine itself is wrong or not associative (see those checks); this schedule "
                             "only applies it." if operator_broken else "")
                if mode == "blelloch" and not report.check(CHECK_IDENTITY).passed:
                    diagnosis = "Blelloch pads with seg_identity() and seeds the root with it: see that check."
                failures.append(Failure(case.label + " (the carry is not used here)", text, diagnosis, n_of(case),
                                        first_pair_mismatch(reference, actual, case.small, with_expected=False)))
        add_cases(report, name, failures, len(cases), reproduce)


# The judge's verdict on the driver's trace of tree_scan_inclusive (drill02_judge.cpp, enum Kind and enum Bad).
KIND_UNSET, KIND_EMPTY, KIND_RANGE, KIND_BROKEN, KIND_OUTSIDE, KIND_FORGED, KIND_UNTRACED = range(7)
BAD_OVERLAP, BAD_SWAPPED, BAD_GAP, BAD_UNSET, BAD_OUTSIDE, BAD_FORGED = range(1, 7)
TRACE_CAP = 1 << 22  # combines the driver logs per case (drill02_trace.hpp kTraceCap)


def traced_text(kind: int, lo: int, hi: int) -> str:
    return {KIND_UNSET: "a default-constructed T that never held an input",
            KIND_EMPTY: "the identity",
            KIND_RANGE: f"inputs {lo}..{hi}",
            KIND_BROKEN: "an already broken value",
            KIND_OUTSIDE: f"x[{lo}], outside x[0..n-1]",
            KIND_FORGED: "a value the grader never issued (made up, or memory that never held a T)",
            KIND_UNTRACED: f"a value made after the grader stopped tracing ({TRACE_CAP} combines: far more work "
                           "than a scan needs)"}.get(kind, f"kind {kind}")


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
    if bad == BAD_FORGED:
        return (f"{first}: an operand is not a T value the grader handed out or op returned. tree_scan_inclusive "
                "may only copy T values, assign them, and combine them with op; it must not make them up.")
    return first


def drawn_tree_size(seed: int) -> int:
    """Odd, 5001..8999: never a size drill 03 asks about (512, 1024, 300 and the warp sizes), so the
    combine count the report notes at this size is never one of drill 03's answers."""
    return random.Random(f"{seed}/drill02/tree").randrange(5001, 9000, 2)


def tree_sizes(seed: int) -> list[tuple[int, str]]:
    drawn = drawn_tree_size(seed)
    return [(0, "empty"), (1, "one element"), (2, "two"), (3, "three: not a power of two"), (8, "the page's 8"),
            (255, "a 256-tile minus one"), (256, "a power of two"), (257, "a 256-tile plus one"),
            (1000, "not a power of two"), (4097, "a power of two plus one"), (drawn, f"hidden: drawn from seed {seed}"),
            (65_537, "large: 2^16 + 1")]


def depth_bound(n: int) -> int:
    """Blelloch: 2 log2 n levels plus the exclusive-to-inclusive combine, and one spare."""
    return 2 * math.ceil(math.log2(n)) + 2 if n > 1 else 2


def work_bound(n: int) -> int:
    """Hillis-Steele does under n ceil(log2 n) combines; Blelloch padded to P < 2n about 2P + n."""
    return n * math.ceil(math.log2(n)) + 4 * n if n > 1 else 4


def tree_jobs(seed: int) -> list[Job]:
    """tree_scan_inclusive runs: the size is the whole input (the driver makes the traced elements).
    Their dumps are traces of any length (drill02_trace.hpp), judged afterwards by judge_tree."""
    return [Job("tree", number, "tree", None, arg=str(n)) for number, (n, _) in enumerate(tree_sizes(seed))]


def judged_words(n: int) -> int:
    """The judge's words for one size: combines, bad, the bad pair, then kind, lo, hi, depth of every slot."""
    return 8 + 4 * (n + 2 * GUARD)


def judge_tree(runs: dict[tuple[str, int], Ran], seed: int) -> None:
    """Replace every finished tree run's trace with the judge's words (drill02_judge.cpp).

    The judge runs now, after the submission's process has ended, in a fresh sandbox that holds only
    the judge and the traces: nothing of the submission can reach it, and it recomputes every range
    and depth from the log. All sizes are judged in one run; if that fails (a malformed trace: the
    driver never writes one), each size is judged alone, so only the forged ones fail."""
    sizes = [n for n, _ in tree_sizes(seed)]
    numbers = [k for k in range(len(sizes)) if (ran := runs.get(("tree", k))) is not None and ran.ok]
    if not numbers:
        return
    judge = harness_program("drill02_judge")

    def judged(ks: list[int]) -> list[Ran]:
        if judge.path is None:
            return [Ran(False, "the grader could not build its judge of the trace (a harness problem, not yours; "
                               f"tell your instructor):\n{judge.problem}") for _ in ks]
        return run_judge(judge.path, [runs[("tree", k)].words for k in ks], [str(sizes[k]) for k in ks],
                         [judged_words(sizes[k]) for k in ks])

    verdicts = judged(numbers)
    if len(numbers) > 1 and judge.path is not None and not all(v.ok for v in verdicts):
        verdicts = [judged([k])[0] for k in numbers]
    for k, verdict in zip(numbers, verdicts):
        verdict.dropped = runs[("tree", k)].dropped
        runs[("tree", k)] = verdict


def moved_guard(kinds: array, los: array, n: int) -> int | None:
    """The first guard slot (relative index) that no longer holds its own guard value, or None."""
    for k in (*range(GUARD), *range(GUARD + n, n + 2 * GUARD)):
        if kinds[k] != KIND_OUTSIDE or los[k] != k - GUARD:
            return k - GUARD
    return None


def grade_drill02_tree(report: Report, runs: dict[tuple[str, int], Ran], seed: int, reproduce: str) -> None:
    """From the judge's words (judge_tree has run): the order check and the depth and work check."""
    order_failures: list[Failure] = []
    depth_failures: list[Failure] = []
    sizes = tree_sizes(seed)
    for number, (n, why) in enumerate(sizes):
        label = f"hidden: n={n} ({why[len('hidden: '):]})" if why.startswith("hidden") else f"n={n} ({why})"
        ran = runs.get(("tree", number))
        if ran is None:
            break  # skipped: an earlier size timed out
        if not ran.ok:
            order_failures.append(Failure(label, ran.problem, n=n))
            if ran.timed_out:
                order_failures[-1].text += "\n(the remaining sizes were not run)"
                break
            continue
        w = ran.words
        total = n + 2 * GUARD
        combines, bad = w[0], w[1]
        a, b = tuple(w[2:5]), tuple(w[5:8])
        all_kinds, all_los, all_his, all_depths = (w[8 + k * total:8 + (k + 1) * total] for k in range(4))
        kinds, los, his, depths = (x[GUARD:GUARD + n] for x in (all_kinds, all_los, all_his, all_depths))
        lines, diagnosis = [], ""
        guard = moved_guard(all_kinds, all_los, n)
        if guard is not None:
            lines.append(f"wrote x[{guard}], outside x[0..n-1]")
        safe = list(lines)
        ok = (kinds == array("q", [KIND_RANGE]) * n and los == array("q", bytes(8 * n))
              and his == array("q", range(n)))
        if not ok:
            i = next(i for i in range(n) if (kinds[i], los[i], his[i]) != (KIND_RANGE, 0, i))
            safe.append(f"x[{i}] holds {traced_text(kinds[i], los[i], his[i])}")
            lines.append(f"{safe[-1]}, should hold inputs 0..{i}")
            if bad:
                diagnosis = explain_bad_combine(bad, a, b)
            elif kinds[i] == KIND_RANGE and los[i] == his[i] == i:
                diagnosis = "x[i] was never combined with anything: is the scan running at all?"
        elif bad:
            lines.append(explain_bad_combine(bad, a, b))
            safe.append(lines[-1])
        if lines:
            order_failures.append(Failure(label, "\n".join(lines), diagnosis, n, "\n".join(safe)))
        if n == drawn_tree_size(seed):
            # Only at the drawn size, and with no comparison with Hillis-Steele's or Blelloch's counts: at a
            # size drill 03 asks about (512, 1024, 300) this count would be one of its answers (hs_adds_300).
            # Course mode keeps the seed and the size for the instructor.
            said = "drill 03 counts what the two trees do"
            report.note(f"tree_scan_inclusive did {combines} combines at n = {n}, the size drawn from seed {seed} "
                        f"(a sequential loop does n - 1 = {n - 1}; {said})",
                        student=f"tree_scan_inclusive did {combines} combines at a size drawn for this grade (a "
                                f"sequential loop does n - 1; {said})")
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
    add_cases(report, CHECK_TREE_ORDER, order_failures, len(sizes), reproduce)
    if order_failures:
        # Depth is a property of a working scan: a stub that does nothing is 0 deep.
        add_cases(report, CHECK_TREE_DEPTH, depth_failures, len(sizes), reproduce,
                  head="not measured: tree_scan_inclusive must first produce the right ranges (see the check above)")
    else:
        add_cases(report, CHECK_TREE_DEPTH, depth_failures, len(sizes), reproduce)


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


def tile_jobs(cases: list[Case02]) -> list[Job]:
    return [Job("tile", number, "tile", 4 * (n_of(case) + 2 * GUARD), tile_input(case))
            for number, case in enumerate(cases)]


def judge_tile(case: Case02, words: array) -> tuple[list[str], list[Pair]]:
    """(side effects, result) from the raw storage of in and out, guards included."""
    n = n_of(case)
    total = n + 2 * GUARD
    lines = []
    in_flags, in_values = words[:total], words[total:2 * total]
    out_flags, out_values = words[2 * total:3 * total], words[3 * total:]
    written_flags = array("q", [1] * GUARD + case.flags + [1] * GUARD)
    written_values = guarded(case.values)
    if in_flags != written_flags or in_values != written_values:
        k = next(k for k in range(total) if (in_flags[k], in_values[k]) != (written_flags[k], written_values[k]))
        lines.append(f"changed its input in[{k - GUARD}]: in is read-only (scan a copy)")
    k = next((k for k in (*range(GUARD), *range(GUARD + n, total)) if (out_flags[k], out_values[k]) != (1, POISON)),
             None)
    if k is not None:
        lines.append(f"wrote out[{k - GUARD}], outside out[0..n-1]")
    return lines, list(zip(out_flags[GUARD:GUARD + n].tolist(), out_values[GUARD:GUARD + n].tolist()))


def grade_drill02_tile(report: Report, runs: dict[tuple[str, int], Ran], cases: list[Case02],
                       reproduce: str) -> None:
    failures: list[Failure] = []
    for number, case in enumerate(cases):
        ran = runs.get(("tile", number))
        if ran is None:
            break  # skipped: an earlier case timed out
        if not ran.ok:
            failures.append(Failure(case.label, ran.problem, n=n_of(case)))
            if ran.timed_out:
                failures[-1].text += "\n(the remaining cases were not run)"
                break
            continue
        if ran.words == case.tile_dump:
            continue
        lines, actual = judge_tile(case, ran.words)
        safe = list(lines)
        reference = case.reference_carried
        text = first_pair_mismatch(reference, actual, case.small)
        diagnosis = ""
        if text:
            lines.append(text)
            safe.append(first_pair_mismatch(reference, actual, case.small, with_expected=False))
            diagnosis = diagnose_tile(case, actual) if len(failures) < MAX_CASES_SHOWN else ""
        if lines:
            failures.append(Failure(case.label, "\n".join(lines), diagnosis, n_of(case), "\n".join(safe)))
    add_cases(report, CHECK_TILE, failures, len(cases), reproduce)


def grade_drill02(submission: Path, workdir: Path, seed: int, timeout: float, mode: str = "self-study") -> Report:
    report = Report("drill02", submission.name, mode=mode)
    reproduce = reproduce_line("drill02", submission, seed)
    hidden_note(report, seed, reproduce)
    with ThreadPoolExecutor(max_workers=1) as background:  # the inputs are made while the compiler works
        building = background.submit(build_submission, "drill02", submission, workdir)
        cases = drill02_cases(seed)
        samples = drill02_samples(seed)
        # In case order within each function: a timeout skips that function's later cases.
        jobs = [ops_job(samples), *tree_jobs(seed), *tile_jobs(cases), *schedule_jobs(cases)]
        linked = building.result()
    if not builds_check(report, linked, DRILL02_CHECKS):
        return report
    runs = run_jobs(linked.exe, jobs, timeout)
    note_dropped(report, runs.values())
    judge_tree(runs, seed)
    grade_drill02_operator(report, runs[("ops", 0)], samples, reproduce)
    grade_drill02_schedules(report, runs, cases, reproduce)
    grade_drill02_tree(report, runs, seed, reproduce)
    grade_drill02_tile(report, runs, cases, reproduce)
    return report
