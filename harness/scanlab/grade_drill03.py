"""Drill 03 (exercises/03_scan_analysis.md): the work-and-depth numbers, against the harness's counts."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

try:
    from . import scan_counts
except ImportError:  # the student release leaves the counter out: run, it prints drill 03's answers
    scan_counts = None
from .grading import TOO_LARGE, Report, read_submission


# ---- drill 03: the work-and-depth analysis ---------------------------------------------

# The drill's sizes (exercises/03_scan_analysis.md): the counts at COUNTED (the lessons print the
# 1024-element tile's, so those are no question), utilisation and intensity at PAGE (derived from the
# page's figures), and a tile that is not a power of two at UNEVEN (padded to COUNTED).
COUNTED, PAGE, UNEVEN = 512, 1024, 300

# Every numeric slot of exercises/03_scan_analysis.md, in order, with what it is.
SLOTS03 = {
    f"serial_adds_{COUNTED}": f"adds of the sequential loop at n = {COUNTED}",
    f"hs_threads_{COUNTED}": "Hillis-Steele threads in the block",
    f"hs_levels_{COUNTED}": "Hillis-Steele levels",
    f"hs_adds_{COUNTED}": "Hillis-Steele adds",
    f"hs_barriers_{COUNTED}": "Hillis-Steele barriers, double-buffered: one per level",
    f"bl_threads_{COUNTED}": "Blelloch threads in the block",
    f"bl_levels_{COUNTED}": "Blelloch levels (up-sweep and down-sweep)",
    f"bl_adds_{COUNTED}": "Blelloch adds",
    f"bl_barriers_{COUNTED}": "Blelloch barriers",
    f"extra_work_factor_{COUNTED}": "Hillis-Steele adds / Blelloch adds",
    f"hs_avg_utilisation_pct_{PAGE}": f"Hillis-Steele adds / (levels x threads), in percent, at n = {PAGE}",
    f"bl_avg_utilisation_pct_{PAGE}": "Blelloch adds / (levels x threads), in percent",
    f"hs_levels_under_25pct_{PAGE}": "Hillis-Steele levels with active / threads strictly below 25 %",
    f"bl_levels_under_25pct_{PAGE}": "Blelloch levels with active / threads strictly below 25 %",
    f"hs_adds_per_byte_{PAGE}": "Hillis-Steele adds / 8n bytes",
    f"bl_adds_per_byte_{PAGE}": "Blelloch adds / 8n bytes",
    f"hs_levels_{UNEVEN}": f"Hillis-Steele levels at n = {UNEVEN}",
    f"hs_adds_{UNEVEN}": f"Hillis-Steele adds at n = {UNEVEN}",
    f"bl_padded_n_{UNEVEN}": f"the power of two Blelloch pads n = {UNEVEN} to",
    f"bl_levels_{UNEVEN}": f"Blelloch levels at n = {UNEVEN}",
    f"bl_adds_{UNEVEN}": f"Blelloch adds at n = {UNEVEN}, every add of the padded tree",
    "warp_scan_steps_32": "shuffle steps of a 32-lane warp scan",
    "warp_scan_steps_64": "shuffle steps of a 64-lane wavefront scan",
    "shfl_block_barriers_1024": "barriers of the warp-shuffle block scan",
    "shfl_block_adds_1024": "adds of the warp-shuffle block scan",
}

# Two ways to count barriers: the drill (and the page) count one barrier per level of the tree;
# Lab 1's "barriers/tile" column counts every __syncthreads() the kernel runs, the one after
# loading the tile included (and Blelloch's after clearing the root).
LAB1_BARRIERS = ("that counts the way Lab 1's barriers/tile column does, every __syncthreads() including "
                 "the one after loading the tile; this drill counts one barrier per level of the tree and "
                 "leaves the load's barrier out (see the definitions at the top).")

# Wrong answers worth a sentence: slot -> {wrong value: why}. The wrong values are written as what
# they are (n log2 n, one sweep, Lab 1's count ...), from the size, not as bare numbers.
_L = COUNTED.bit_length() - 1  # log2 of the counted tile
HINTS03 = {
    f"serial_adds_{COUNTED}": {COUNTED: "the first element needs no add: n - 1."},
    f"hs_adds_{COUNTED}": {COUNTED * _L: "n log2 n gives every thread an add at every level, but threads tid < d "
                                         "have nothing to their left and only copy."},
    f"hs_barriers_{COUNTED}": {2 * _L: "that is the register-staged variant (two barriers a level); the model is "
                                       "double-buffered, one barrier a level.",
                               _L + 1: LAB1_BARRIERS + " That is Lab 1's count for the double-buffered kernel.",
                               2 * _L + 1: LAB1_BARRIERS + " That is Lab 1's count for the register-staged kernel, "
                                                           "which the model is not."},
    f"bl_threads_{COUNTED}": {COUNTED: "Blelloch's block has one thread per PAIR: n/2."},
    f"bl_levels_{COUNTED}": {_L: "that is one sweep; the up-sweep and the down-sweep have log2 n levels each."},
    f"bl_barriers_{COUNTED}": {_L: "one barrier per level, and there are levels in both sweeps.",
                               2 * _L + 2: LAB1_BARRIERS + " That is Lab 1's count, which adds the barriers after "
                                                           "the load and after clearing the root."},
    f"bl_adds_{COUNTED}": {COUNTED - 1: "that is the up-sweep alone; the down-sweep does as many again.",
                           2 * COUNTED: "each sweep touches the n - 1 internal nodes of the tree: 2(n - 1)."},
    f"bl_levels_under_25pct_{PAGE}": {16: "16 is what 1024 threads would give; Blelloch runs n/2 = 512 "
                                          "threads, one per pair."},
    f"bl_adds_{UNEVEN}": {2 * (UNEVEN - 1): f"Blelloch pads to {COUNTED}, and every add of the padded tree is "
                                            "executed and counted."},
    f"bl_levels_{UNEVEN}": {2 * _L - 1: f"the padded tree has {COUNTED} leaves: log2 of that many levels per sweep."},
}

# The same wrong answers, in course mode: the same idea, without a number or a closed form that
# is the count itself (or another slot's count). Every key of HINTS03 has one.
HINTS03_COURSE = {
    f"serial_adds_{COUNTED}": {COUNTED: "the first element needs no add."},
    f"hs_adds_{COUNTED}": {COUNTED * _L: HINTS03[f"hs_adds_{COUNTED}"][COUNTED * _L]},
    f"hs_barriers_{COUNTED}": {2 * _L: HINTS03[f"hs_barriers_{COUNTED}"][2 * _L],
                               _L + 1: LAB1_BARRIERS,
                               2 * _L + 1: LAB1_BARRIERS + " It is also the register-staged kernel's count."},
    f"bl_threads_{COUNTED}": {COUNTED: "Blelloch's block has one thread per PAIR of elements."},
    f"bl_levels_{COUNTED}": {_L: "that is one sweep; the down-sweep walks the tree back and has its own levels."},
    f"bl_barriers_{COUNTED}": {_L: HINTS03[f"bl_barriers_{COUNTED}"][_L], 2 * _L + 2: LAB1_BARRIERS},
    f"bl_adds_{COUNTED}": {COUNTED - 1: HINTS03[f"bl_adds_{COUNTED}"][COUNTED - 1],
                           2 * COUNTED: "each sweep adds only at the internal nodes of the tree, not at every "
                                        "element."},
    f"bl_levels_under_25pct_{PAGE}": {16: "that is what a block of one thread per element would give; Blelloch "
                                          "runs one thread per pair."},
    f"bl_adds_{UNEVEN}": {2 * (UNEVEN - 1): "Blelloch pads the tile to the next power of two, and every add of the "
                                            "padded tree is executed and counted."},
    f"bl_levels_{UNEVEN}": {2 * _L - 1: "count the levels of the padded tree (the next power of two), in both "
                                        "sweeps."},
}

PROSE_PLACEHOLDER = "_(write your answer here)_"


# The answer sheet is parsed in the grader's own process, so nothing in it may cost more than a
# pass over the text: plain string methods and one regex that cannot backtrack (a single character
# class, nothing after it). The regexes this replaced took minutes on one line of 100,000 spaces.
# What is read is bounded as well: the sheet is about 200 lines and a slot line about 40 characters.
MAX_LINES = 20_000  # lines read for answers; the rest of the file is not read
MAX_LINE_CHARS = 2_000  # a slot line longer than this is not read (its slot says why)
MAX_PROSE = 40  # prose answers listed for the instructor (the sheet asks for 8)
_NAME = re.compile(r"[a-z][a-z0-9_]*")  # one greedy class, nothing after it: linear, no backtracking
_SUFFIXES = ("%", "x", "X", "×")  # a trailing percent or times sign is ignored
_PREFIXES = ("~", "≈", "about")  # so is a leading "about"


@dataclass
class Sheet:
    """What the answer file says: every slot line's raw value, and what was too large to read."""
    slots: dict[str, str] = field(default_factory=dict)  # name -> the raw text after `=` (the first line wins)
    too_long: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (line number, its length)
    long_lines: int = 0  # slot-like lines (`name = ...`) over MAX_LINE_CHARS, whatever their name
    lines_left_out: bool = False  # the file has more than MAX_LINES lines
    text: str = ""  # the lines that were read, as they were (what prose_answers reads)


def slot_line(line: str) -> tuple[str, str] | None:
    r"""(name, raw value) when `line` reads `name = value` (optionally in back-ticks), else None.

    The same lines and values as the regex ^\s*`?([a-z][a-z0-9_]*)\s*=\s*(.*?)`?\s*$ gave:
    str.strip() strips exactly what \s matches, and the value loses one closing back-tick."""
    rest = line.lstrip()
    if rest.startswith("`"):
        rest = rest[1:]
    name = _NAME.match(rest)
    if name is None:
        return None
    rest = rest[name.end():].lstrip()
    if not rest.startswith("="):
        return None
    value = rest[1:].strip()
    return name.group(0), value[:-1] if value.endswith("`") else value


def read_sheet(text: str) -> Sheet:
    """Every slot line of the first MAX_LINES lines, each line looked at once."""
    sheet = Sheet(text=text)
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        sheet.lines_left_out, lines = True, lines[:MAX_LINES]
        sheet.text = "".join(text.splitlines(keepends=True)[:MAX_LINES])
    for number, line in enumerate(lines, 1):
        found = slot_line(line)
        if found is None:
            continue
        name, value = found
        first = name not in sheet.slots and name not in sheet.too_long
        if len(line) > MAX_LINE_CHARS:
            sheet.long_lines += 1
            if first:
                sheet.too_long[name] = (number, len(line))
        elif first:
            sheet.slots[name] = value
    return sheet


def parse_slots(text: str) -> dict[str, str]:
    """name -> the raw text after `=`, for every slot line that was read (the first one wins)."""
    return read_sheet(text).slots


def parse_number(raw: str) -> float | None:
    """None when unanswered; raises ValueError when not a number. Linear in len(raw)."""
    text = raw.partition("#")[0].strip().strip("`").strip()
    for prefix in _PREFIXES:
        if text.startswith(prefix):
            text = text[len(prefix):].lstrip()
            break
    if text.endswith(_SUFFIXES):
        text = text[:-1].rstrip()
    if not text.replace("_", "").strip():
        return None
    return float(text.replace(",", "").replace("_", ""))


def prose_answers(text: str) -> list[tuple[str, str]]:
    """(question heading, answer text) for every question that asks for prose."""
    answers = []
    for section in re.split(r"^## ", text, flags=re.M)[1:]:  # a literal after an anchor: linear
        heading, _, body = section.partition("\n")
        if "**Answer:**" not in body:
            continue
        answer = body.split("**Answer:**", 1)[1].strip()
        answers.append((heading.strip(), "" if answer in ("", PROSE_PLACEHOLDER) else answer))
    return answers


COUNTED_BY = "counted by the harness (harness/scanlab/scan_counts.py)"
NO_COUNTER_SHORT = "this copy of the harness has no reference counts, so it cannot check the value."
NO_COUNTER = ("drill 03: this is the student release, which leaves out the harness's counter (it would print the "
              "answers): each number is checked for its form only (answered, and a number). A number is "
              "'answered, checked by your instructor'; an unanswered slot or one that is not a number fails. "
              "Your instructor's grader checks the values.")


def grade_drill03(submission: Path, workdir: Path, seed: int, timeout: float, mode: str = "self-study") -> Report:
    del seed, workdir, timeout  # nothing random, nothing built, nothing run: the answers are counts
    report = Report("drill03", submission.name, mode=mode)
    data = read_submission(submission)
    if data is None:
        for slot in SLOTS03:
            report.add(slot, False, f"not read: {TOO_LARGE}.")
        return report
    text = data.decode("utf-8", errors="replace")
    # harness-owned: grading never needs solutions/. The student release has no counter (it would
    # print the answers), so there only the form of each answer is checked.
    reference = scan_counts.reference_slots() if scan_counts is not None else None
    if reference is None:
        report.notes.append(NO_COUNTER)

    sheet = read_sheet(text)
    if sheet.lines_left_out:
        report.notes.append(f"your file has more than {MAX_LINES:,} lines: only the first {MAX_LINES:,} were read "
                            "(the answer sheet has about 200).")
    if sheet.long_lines:
        report.notes.append(f"{sheet.long_lines:,} line(s) of the form `name = ...` are over {MAX_LINE_CHARS:,} "
                            "characters long and were not read (an answer line is about 40).")
    answers = sheet.slots
    for slot, what in SLOTS03.items():
        counted = reference[slot] if reference is not None else None
        if slot in sheet.too_long:
            number, length = sheet.too_long[slot]
            report.add(slot, False, f"not read: the line `{slot} = ...` (line {number:,}) is {length:,} characters "
                                    f"long; an answer line is read only up to {MAX_LINE_CHARS:,} ({what}).")
            continue
        if slot not in answers:
            report.add(slot, False, f"missing: the line `{slot} = ____` is not in the file ({what}).")
            continue
        try:
            value = parse_number(answers[slot])
        except ValueError:
            report.add(slot, False, f"not a number: {answers[slot]!r} ({what}; {COUNTED_BY}: {counted}).",
                       student=f"not a number: {answers[slot]!r} ({what}).")
            continue
        if value is None:
            report.add(slot, False, f"not answered: the line still reads `{slot} = ____` ({what}).")
            continue
        if counted is None:
            report.add(slot, True, f"answered ({answers[slot].strip()}), checked by your instructor: "
                                   f"{NO_COUNTER_SHORT}", unchecked=True)
            continue
        decimal = "." in counted
        right = abs(value - float(counted)) <= 0.01 + 1e-9 if decimal else value == float(counted)
        if right:
            report.add(slot, True)
            continue
        shown_value = f"{value:g}" if not decimal else answers[slot].strip()
        rule = "accepted within 0.01" if decimal else "exact"
        feedback = f"you wrote {shown_value}; {COUNTED_BY}: {counted} ({what}, {rule})."
        student = (f"you wrote {shown_value}: not the count ({what}; "
                   + ("decimals are accepted within 0.01 of it)." if decimal else "whole numbers must be exact)."))
        hint = HINTS03.get(slot, {}).get(value)
        if hint:
            feedback += f"\n  likely cause: {hint}"
            student += f"\n  likely cause: {HINTS03_COURSE[slot][value]}"
        report.add(slot, False, feedback, student=student)

    answered = prose_answers(sheet.text)
    for heading, answer in answered[:MAX_PROSE]:
        heading = heading if len(heading) <= 200 else heading[:200] + " ..."
        if answer:
            flat = " ".join(answer.split())
            report.notes.append(f"{heading} (prose, for the instructor): "
                                f"{flat if len(flat) <= 1200 else flat[:1200] + ' ...'}")
        else:
            report.notes.append(f"{heading}: prose answer not written yet")
    if len(answered) > MAX_PROSE:
        report.notes.append(f"and {len(answered) - MAX_PROSE:,} more **Answer:** sections, not listed (the sheet "
                            "has 8).")
    return report
