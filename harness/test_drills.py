"""The A05 drills: graders, starters, solutions, sample output.

Everything here runs on the CPU with plain g++, CI included. The graders
(scanlab/grade_drills.py) are exercised end to end: every reference answer
passes every check and every untouched starter fails the way
exercises/README.md says. The known wrong submissions, each with the check it
must fail and its diagnosis, are harness/corpus/'s (test_corpus.py grades them
all); three are graded here too, for what a manifest cannot hold: the time a
hang costs, the exact compile command, the shape of the Gradescope JSON.
Gradings are started together in a thread pool when the module's first test
asks for one, so the compiles overlap.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from array import array
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from scanlab import EXIT_FAIL, EXIT_PASS, EXIT_USAGE
from scanlab import drill_common, registry, scan_counts
from scanlab import grade_drills as gd
from scanlab.grading import Report, max_score, points_table
from scanlab.paths import REPO
from scanlab.run import parse_table, run

EXERCISES = REPO / "exercises"
SOLUTIONS = REPO / "solutions"
CORPUS = REPO / "harness" / "corpus"
GRADE = REPO / "harness" / "grade.py"
README = EXERCISES / "README.md"

# The drills scanlab/grade_drills.py grades (harness/exercises.toml): drill id -> submission file name.
FILES = {e.id: e.file for e in registry.EXERCISES.values() if e.grader == "scanlab.grade_drills"}
SOLUTION_SEEDS = (1, 987_654)  # two draws of the hidden sizes and values
# A file right only for the sizes the starter, the README and old feedback showed must fail whatever the seed.
KNOWN_SIZES_ONLY = REPO / "harness" / "corpus" / "drill01" / "h_known_sizes_only.cpp"
KNOWN_SIZES_SEEDS = (1, 11, 2024, 31_337, 987_654)
HANG_TIMEOUT_S = 2.0  # per driver run, for the endless loop of corpus/drill02/w_hang.cpp only

# Tests that compile with g++ (submissions into drivers, or the drill programs) are
# marked slow: a few seconds each at most, and CI runs them (no GPU needed).
slow = pytest.mark.slow


# ---- gradings, started together ----------------------------------------------------

def _jobs() -> dict[str, tuple[str, Path, int, float | None]]:
    jobs = {}
    for drill, name in FILES.items():
        for seed in SOLUTION_SEEDS[:1] if drill == "drill03" else SOLUTION_SEEDS:  # drill03 draws nothing
            jobs[f"solution-{drill}-seed{seed}"] = (drill, SOLUTIONS / name, seed, None)
        jobs[f"starter-{drill}"] = (drill, EXERCISES / name, 7, None)
    jobs["w_hang"] = ("drill02", CORPUS / "drill02" / "w_hang.cpp", 11, HANG_TIMEOUT_S)
    for stem in ("w_missing_semicolon", "w_identity_incl0"):
        jobs[stem] = ("drill01", CORPUS / "drill01" / f"{stem}.cpp", 11, None)
    return jobs


class Gradings:
    def __init__(self, root: Path):
        self.root = root
        self.pool = ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2), thread_name_prefix="grade")
        self.futures: dict[str, Future] = {}
        self.elapsed: dict[str, float] = {}
        for key, job in _jobs().items():
            self.futures[key] = self.pool.submit(self._grade, key, *job)

    def _grade(self, key: str, drill: str, path: Path, seed: int, timeout: float | None) -> Report:
        start = time.monotonic()
        report = gd.grade(drill, path, self.root / key, seed, timeout=timeout)
        self.elapsed[key] = time.monotonic() - start
        return report

    def __getitem__(self, key: str) -> Report:
        return self.futures[key].result()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    gradings = Gradings(tmp_path_factory.mktemp("drill-gradings"))
    yield gradings
    gradings.pool.shutdown(wait=True)


def failed_names(report: Report) -> set[str]:
    return {c.name for c in report.failed()}


# ---- the reference answers -------------------------------------------------------------

@slow
@pytest.mark.parametrize("drill, seed", [(d, s) for d in sorted(FILES) for s in SOLUTION_SEEDS
                                         if d != "drill03" or s == SOLUTION_SEEDS[0]],
                         ids=lambda v: f"seed{v}" if isinstance(v, int) else v)
def test_solution_passes_every_check(graded, drill, seed):
    report = graded[f"solution-{drill}-seed{seed}"]
    assert report.passed, report.text()
    assert [c.name for c in report.checks] == list(points_table()[drill])  # every check, in order
    assert all(c.feedback == "" for c in report.checks), report.text()  # not even a warning


@slow
def test_solution_notes_record_the_seed_and_the_prose(graded):
    assert any("--seed 1" in note for note in graded["solution-drill01-seed1"].notes)
    notes = graded["solution-drill03-seed1"].notes
    assert len(notes) == 7 and all("(prose, for the instructor)" in n for n in notes), notes
    drawn = gd.drawn_tree_size(1)
    tree = [n for n in graded["solution-drill02-seed1"].notes if f"combines at n = {drawn}," in n]
    levels = math.ceil(math.log2(drawn))  # the reference is Hillis-Steele: n*L - (2^L - 1) combines
    assert tree and f"did {drawn * levels - (2 ** levels - 1)} combines" in tree[0], tree


def drill03_answers() -> set[str]:
    """Drill 03's answers that a report could leak: every count of 100 or more and every decimal. (A smaller
    whole number, such as 2 or 10, is in every report for other reasons: points, seeds, numbers of checks.)"""
    return {v for v in scan_counts.reference_slots().values() if "." in v or int(v) >= 100}


def numbers_in(text: str) -> set[str]:
    return set(re.findall(r"(?<![\d.])\d+(?:\.\d+)?(?![\d.])", text))


@slow
def test_drill02_reports_never_hold_a_drill03_answer(graded, tmp_path):
    """The combine count drill 02 notes is drill 03's hs_adds_N at a size drill 03 asks about: noted only at the
    seed-drawn size, which never is one, for a Hillis-Steele (the solution) and a Blelloch submission."""
    answers = drill03_answers()
    assert {"2189", "4097", "1022", "511", "5249"} <= answers  # hs_adds_300 and _512, bl_adds, serial, shuffle
    reports = [graded[f"solution-drill02-seed{seed}"] for seed in SOLUTION_SEEDS]
    blelloch = REPO / "harness" / "corpus" / "drill02" / "c_blelloch_driver_names.cpp"
    reports += [gd.grade("drill02", blelloch, tmp_path / f"blelloch-{seed}", seed) for seed in SOLUTION_SEEDS]
    for report in reports:
        assert report.passed, report.text()
        assert any("combines at n = " in note for note in report.notes), report.text()
        leaked = numbers_in(report.text()) & answers
        assert not leaked, f"the report holds drill 03's answers {sorted(leaked)}:\n{report.text()}"
    asked = {int(name.rsplit("_", 1)[1]) for name in scan_counts.reference_slots()}
    assert {32, 64, 300, 512, 1024} <= asked
    assert not {gd.drawn_tree_size(seed) for seed in range(2000)} & asked


# ---- the untouched starters ----------------------------------------------------------------

@slow
def test_starter01_grading_fails_every_function_on_poisoned_outputs(graded):
    report = graded["starter-drill01"]
    assert report.check("builds").passed and report.check("builds").feedback == ""  # no warnings either
    for check, name in (("exclusive_to_inclusive", "incl"), ("inclusive_to_exclusive", "excl")):
        feedback = report.check(check).feedback
        # The grader poisons outputs, so the free excl[0] of the sandbox is gone: 256 and 256.
        assert (f"lesson input: n=256, in[i] = (i % 8) + 1:\n  256 element(s) wrong; first at index 0: "
                f"{name}[0] is -999999999 (the grader's poison: never written)") in feedback, feedback
    total = report.check("total_from_exclusive").feedback
    assert "returned 0, should be 1152" in total and "the starter's stub returns 0" in total, total


@slow
def test_starter02_grading_fails_instructively(graded):
    report = graded["starter-drill02"]
    assert report.check("builds").feedback == ""  # no warnings
    assert failed_names(report) == set(gd.DRILL02_CHECKS), report.text()
    # "return b" is associative, just useless: associativity counts only for the right operator
    assert report.check(gd.CHECK_ASSOCIATIVE).feedback.startswith("not counted yet: seg_combine must first agree")
    assert report.score == 0 and report.max_score == max_score("drill02"), report.text()
    assert "b has no head, so it continues a's run" in report.check(gd.CHECK_OPERATOR).feedback
    assert "never written" in report.check(gd.CHECK_TILE).feedback
    assert "is the scan running at all?" in report.check(gd.CHECK_TREE_ORDER).feedback
    assert "not measured" in report.check(gd.CHECK_TREE_DEPTH).feedback  # a no-op is 0 deep, and not a tree


@slow
def test_starter03_grading_lists_every_slot_as_unanswered(graded):
    report = graded["starter-drill03"]
    assert [c.name for c in report.checks] == list(gd.SLOTS03)
    assert all(not c.passed and c.feedback.startswith("not answered") for c in report.checks)
    assert len(report.notes) == 7 and all(n.endswith("prose answer not written yet") for n in report.notes)


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory) -> Path:
    """Both Makefiles' `all`, into a temporary BUILD: the binaries the README runs."""
    build = tmp_path_factory.mktemp("drill-build")
    for folder in (EXERCISES, SOLUTIONS):
        result = run(["make", "-s", "-j2", "-C", folder, "all", f"BUILD={build}"], timeout=600)
        assert result.returncode == 0, result.describe()
    return build


MISMATCH_HEADER = ["input", "n", "check", "mismatches", "first bad", "expected", "actual"]


@slow
def test_starter01_sandbox_shows_256_against_255(build_dir):
    result = run([build_dir / "exercises" / "01_exclusive_to_inclusive"])
    assert result.returncode == EXIT_FAIL, result.describe()
    rows = {(r["input"], r["n"], r["check"]): r for r in parse_table(result.stdout, MISMATCH_HEADER)}
    assert rows[("cycle8", "256", "exclusive -> inclusive")]["mismatches"] == "256"
    assert rows[("cycle8", "256", "inclusive -> exclusive")]["mismatches"] == "255"
    assert rows[("cycle8", "256", "inclusive -> exclusive")]["first bad"] == "1"  # excl[0] = 0 by accident
    assert rows[("cycle8", "256", "total from exclusive")]["expected"] == "1152"
    assert result.last_line == "FAILED: 11 of 15 checks mismatched the sequential reference"


@slow
def test_starter02_sandbox_fails_but_for_the_empty_case_and_associativity(build_dir):
    result = run([build_dir / "exercises" / "02_segmented_scan"])
    assert result.returncode == EXIT_FAIL, result.describe()
    header = ["case", "n", "carry", "mismatches", "first bad", "expected", "actual"]
    rows = {r["case"]: r for r in parse_table(result.stdout, header)}
    passing = {name for name, r in rows.items() if r["mismatches"] == "0"}
    assert passing == {"empty", "associativity triples"}, rows
    assert result.last_line == "FAILED: 8 of 10 checks mismatched"


@pytest.mark.parametrize("program", ["01_exclusive_to_inclusive", "02_segmented_scan"])
def test_starter_and_solution_share_the_same_sandbox(program):
    """The self-check below #ifndef SCANLAB_GRADER must not drift between the two."""
    def sandbox(path: Path) -> str:
        text = path.read_text()
        return text[text.index("\n#ifndef SCANLAB_GRADER\n"):]

    assert sandbox(EXERCISES / f"{program}.cpp") == sandbox(SOLUTIONS / f"{program}.cpp")


# ---- corpus entries graded in-process: what the manifest cannot check -----------------------------

@slow
def test_a_hang_is_a_failing_check_not_a_stuck_grader(graded):
    report = graded["w_hang"]
    assert report.check(gd.CHECK_OPERATOR).passed  # the parts that do finish are still graded
    feedback = report.check(gd.CHECK_TREE_ORDER).feedback
    limits = drill_common.run_limits(HANG_TIMEOUT_S)  # a spin meets the CPU limit, or the wall limit under load
    assert (f"CPU time limit {limits.cpu_s:g} s exceeded" in feedback
            or f"time limit {limits.wall_s:g} s exceeded" in feedback), feedback
    # One timeout per function that hangs, then its remaining cases are skipped.
    assert graded.elapsed["w_hang"] < 2 * drill_common.run_limits(HANG_TIMEOUT_S).wall_s + 20


FILL_MEMORY = r"""
#include <cstring>
int main() {
    for (;;) { char* p = new char[64 << 20]; std::memset(p, 1, 64 << 20); }  // page by page, until new fails
}
"""


@slow
def test_a_run_that_fills_its_memory_meets_the_memory_limit_on_a_loaded_machine(tmp_path, busy_core, graded):
    """A driver run that touches memory until it fails must be told "memory limit", not a time limit, however
    busy the machine (CI's three shards on two cores turned drill01/h_alloc.cpp into a time limit twice: the
    fill needs a second or so of CPU, but waited for a core past every wall limit). The run's wall clock
    leaves out the time it waited for a CPU (sandbox.WALL_CAP): here it shares one core with enough spinners
    to take about 1.7 times its wall limit. (The fill's own time varies from 0.6 s to 2 s with the state of the
    machine's memory, so the spinners are counted from the slower of two runs alone.)"""
    source = tmp_path / "fill.cpp"
    source.write_text(FILL_MEMORY)
    subprocess.run(["g++", "-O1", "-o", str(tmp_path / "fill"), str(source)], check=True, timeout=120)
    limits = drill_common.run_limits(gd.TIMEOUT_S)
    for grading in graded.futures.values():  # the load is the spinners only: the module's gradings are done
        grading.exception()
    with gd.Sandbox(gpu=False) as box:
        box.put("fill", tmp_path / "fill", executable=True)
        memory = f"memory limit {limits.memory_bytes >> 30} GiB exceeded"
        alone = max((box.run(["./fill"], limits) for _ in range(2)), key=lambda run: run.wall_s)
        assert alone.limit == memory, alone.describe()
        spinners = max(1, round(1.7 * limits.wall_s / alone.wall_s) - 1)  # 1.7 times the limit, well below the cap
        for _ in range(3):  # part of a fill's time alone may be no CPU's: more spinners if it did not wait
            with busy_core(spinners) as pin:
                out = box.run([*pin, "./fill"], limits)
            if out.wall_s > limits.wall_s or out.limit != memory:
                break
            spinners *= 2
    busy_core.waited(out, limits.wall_s, spinners)
    assert out.limit == memory, out.describe()


@slow
def test_a_compile_error_shows_the_command_and_the_compiler(graded):
    feedback = graded["w_missing_semicolon"].check("builds").feedback
    command = next(line for line in feedback.splitlines() if line.startswith("$ "))
    # The submission is compiled alone, under its own name, so the messages name the student's file.
    assert shlex.split(command[2:])[1:] == [*gd.CXX_FLAGS, "-x", "c++", "-c", "-DSCANLAB_GRADER",
                                            "w_missing_semicolon.cpp", "-o", "submission.o"], command
    assert "w_missing_semicolon.cpp:8:66: error: expected" in feedback
    assert "driver" not in feedback  # nothing of the grader's own code is blamed


# ---- drill 01's hidden sizes: drawn from the seed, wide, and never the ones shown ------------------

SHOWN_SIZES = {0, 1, 8, 256, 1000}  # the starter's sandbox and the lesson page


def test_drill01_hidden_sizes_are_drawn_wide_and_fit_one_run():
    """Every size says why it is there (drill01_sizes); the large ones are drawn over 10^5..2*10^6,
    odd, whole 1024-tiles and either parity, and all of one seed's cases fit one run's output file."""
    low, high = gd.LARGE
    limit = drill_common.run_limits(gd.TIMEOUT_S).file_bytes
    larges, public = set(), [len(c.values) for c in gd.drill01_cases(1)[:4]]
    assert public == [8, 256, 0, 1]  # the public cases come first, in every mode
    for seed in range(300):
        sizes = {salt: n for salt, n, _, _ in gd.drill01_sizes(seed)}
        assert (sizes["tiny"], sizes["tile-1"], sizes["tile+1"]) == (2, gd.TILE - 1, gd.TILE + 1)
        assert 1000 <= sizes["mid"] < 10_000 and sizes["mid"] % gd.TILE, sizes
        assert 1000 <= sizes["overflow"] < 5000, sizes
        large = (sizes["large-odd"], sizes["large-tiles"], sizes["large"])
        assert all(low <= n <= high for n in large) and sum(large) <= gd.LARGE_TOTAL, sizes
        assert sizes["large-odd"] % 2 == 1 and sizes["large-tiles"] % 1024 == 0, sizes
        everything = public + list(sizes.values())
        words = sum(1 + gd.drill01_output_words("e2i", n) for n in everything)  # the largest run's dump
        assert 8 * words < limit, f"seed {seed}: one run writes {8 * words} bytes, over the {limit}-byte limit"
        assert not SHOWN_SIZES & set(large) and large[0] != 1_000_003
        larges.add(large)
    assert len(larges) == 300  # a seed is not a choice among a few size sets
    for k, spread in enumerate(zip(*larges)):  # each one ranges over most of LARGE
        assert min(spread) < low + (high - low) // 10 and max(spread) > high - (high - low) // 4, (k, min(spread),
                                                                                                max(spread))


def test_drill01_hidden_cases_keep_the_classic_mistakes_covered():
    """harness/README.md, 'What a submission can and cannot do', point 8: values that overflow 32 bits,
    sizes that are no multiple of a tile, n = 0 and n = 1; each hidden case has a course-mode name
    without a number in it."""
    cases = gd.drill01_cases(3)
    sizes = [len(c.values) for c in cases]
    assert 0 in sizes and 1 in sizes and any(n % gd.TILE for n in sizes if n > gd.TILE)
    overflow = [c for c in cases if "32-bit (int) accumulator" in c.label]
    assert len(overflow) == 1 and max(overflow[0].inclusive) > 1 << 40
    hidden = [c for c in cases if c.hidden]
    assert [c.label.startswith("hidden (seed 3): n=") for c in cases] == [bool(c.hidden) for c in cases]
    assert [c.hidden.split(" (")[0] for c in hidden] == [f"hidden case {k} of {len(hidden)}"
                                                          for k in range(1, len(hidden) + 1)]
    assert not any(re.search(r"\d", c.hidden.split(" (", 1)[1]) for c in hidden), [c.hidden for c in hidden]
    # the fast draw gives random_values' numbers
    assert gd.small_values(1000, 3, "x").tolist() == drill_common.random_values(1000, 3, "x")


@slow
@pytest.mark.parametrize("seed", KNOWN_SIZES_SEEDS)
def test_drill01_a_file_fitted_to_the_shown_sizes_fails_under_every_seed(seed, tmp_path):
    report = gd.grade("drill01", KNOWN_SIZES_ONLY, tmp_path / "work", seed)
    assert failed_names(report) == set(gd.DRILL01_CHECKS), report.text()
    large = [n for salt, n, _, _ in gd.drill01_sizes(seed) if salt.startswith("large")]
    for name in gd.DRILL01_CHECKS:
        feedback = report.check(name).feedback
        # self-study: the student grades themselves, and sees the sizes and the seed
        assert f"n={large[0]}" in feedback and f"hidden (seed {seed}): n=" in feedback, feedback
        assert "page example" not in feedback and "lesson input" not in feedback, feedback  # right where shown
        assert f"--seed {seed}" in feedback, feedback


# ---- untrusted submissions: what each run sees, forged values, unusual but correct code ----------

def words_of(data: bytes) -> list[int]:
    return array("q", data).tolist()


def test_drill01_inputs_hold_only_what_each_function_reads():
    case = gd.Case01("page", [3, 1, 7, 0, 4, 1, 6, 3])
    incl, excl = [3, 4, 11, 11, 15, 16, 22, 25], [0, 3, 4, 11, 11, 15, 16, 22]
    assert words_of(gd.drill01_input("e2i", case)) == [8, *case.values, *excl]
    assert words_of(gd.drill01_input("i2e", case)) == [8, *incl]
    assert words_of(gd.drill01_input("total", case)) == [8, *case.values, *excl]
    assert 25 not in words_of(gd.drill01_input("total", case))  # the total itself is never handed over


class RecordingSandbox(gd.Sandbox):
    """A real sandbox that remembers what the grader put into it."""
    seen: list[dict[str, bytes]] = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.files: dict[str, bytes] = {}
        RecordingSandbox.seen.append(self.files)

    def put(self, name, data, executable=None):
        self.files[name] = data.read_bytes() if isinstance(data, Path) else data
        return super().put(name, data, executable)


@slow
@pytest.mark.parametrize("drill", ["drill01", "drill02"])
def test_each_function_runs_in_a_fresh_sandbox_with_only_its_inputs(drill, tmp_path, monkeypatch):
    monkeypatch.setattr(drill_common, "Sandbox", RecordingSandbox)
    RecordingSandbox.seen = []
    report = gd.grade(drill, SOLUTIONS / FILES[drill], tmp_path / "work", seed=5)
    assert report.passed, report.text()
    build, *runs = RecordingSandbox.seen
    assert set(build) <= {FILES[drill], gd.SHIM_NAME, "driver.o"}, set(build)
    assert build[FILES[drill]] == (SOLUTIONS / FILES[drill]).read_bytes()
    if drill == "drill02":
        # The tree's trace is judged last, in a sandbox of its own holding the harness's judge (never linked
        # with the submission: the cached program, byte for byte) and the trace, nothing of the submission.
        *runs, judging = runs
        assert set(judging) == {"judge", "trace.bin"}, set(judging)
        assert judging["judge"] == gd.harness_program("drill02_judge").path.read_bytes()
        assert judging["judge"] not in [files.get("driver") for files in runs]
    # One run per function, holding the driver and that function's cases in order, nothing more.
    given = []
    for files in runs:
        assert "driver" in files, set(files)
        cases = {name: data for name, data in files.items() if name != "driver"}
        assert list(cases) == [f"case{k}.bin" for k in range(len(cases))], list(cases)
        given.append(list(cases.values()))
    if drill == "drill01":
        cases = gd.drill01_cases(5)
        expected = [[gd.drill01_input(mode, case) for case in cases] for mode in gd.DRILL01_INPUTS]
        assert sorted(given) == sorted(expected)
    else:
        cases = gd.drill02_cases(5)
        schedule = [gd.schedule_input(c) for c in cases]
        expected = [[gd.ops_job(gd.operator_samples(cases, 5)).data], [], [gd.tile_input(c) for c in cases],
                    schedule, schedule, schedule]  # tree: sizes on the command line, no file
        assert sorted(given) == sorted(expected)
        for case in cases:  # a schedule run gets no carry, a tile run gets it
            words = words_of(gd.schedule_input(case))
            assert words == [len(case.flags), *case.flags, *case.values]


CRASH_ON_ONE = """
#include <cstddef>
#include <cstdlib>
void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    if (n == 1) std::abort();  // only the one-element case
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}
void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) excl[i] = i ? incl[i - 1] : 0;
}
long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n ? excl[n - 1] + in[n - 1] : 0;
}
"""


@slow
def test_a_run_that_dies_part_way_is_repeated_case_by_case(tmp_path, monkeypatch):
    """The crash loses the whole run's dumps; case by case, every other case is judged and passes."""
    monkeypatch.setattr(drill_common, "Sandbox", RecordingSandbox)
    RecordingSandbox.seen = []
    source = tmp_path / FILES["drill01"]
    source.write_text(CRASH_ON_ONE)
    report = gd.grade("drill01", source, tmp_path / "work", seed=5)
    cases = gd.drill01_cases(5)
    failed = report.check("exclusive_to_inclusive")
    assert not failed.passed and "SIGABRT" in failed.feedback, failed.feedback
    assert f"1 of {len(cases)} cases failed" in failed.feedback, failed.feedback
    assert "one element: n=1" in failed.feedback
    assert report.check("inclusive_to_exclusive").passed and report.check("total_from_exclusive").passed
    # Three runs of all the cases, then one run per case of the function that crashed.
    sizes = sorted(len(files) - 1 for files in RecordingSandbox.seen[1:])
    assert sizes == [1] * len(cases) + [len(cases)] * 3, sizes


def transformed(drill: str, old: str, new: str) -> str:
    text = (SOLUTIONS / FILES[drill]).read_text()
    assert text.count(old) == 1, old
    return text.replace(old, new)


FORGED_TREE = """    if (src != x) std::copy(src, src + n, x);
    if constexpr (sizeof(T) == sizeof(unsigned long long) && !std::is_arithmetic<T>::value) {
        if (n > 1) {  // flip one bit of the last element's bytes: a value no one ever handed out
            unsigned long long bits = 0;
            std::memcpy(&bits, static_cast<const void*>(&x[n - 1]), sizeof bits);
            bits ^= 1;
            std::memcpy(static_cast<void*>(&x[n - 1]), &bits, sizeof bits);
        }
    }
"""


@slow
def test_a_forged_traced_value_is_caught(tmp_path):
    text = transformed("drill02", "    if (src != x) std::copy(src, src + n, x);\n", FORGED_TREE)
    text = "#include <cstring>\n#include <type_traits>\n" + text
    path = tmp_path / "forged.cpp"
    path.write_text(text)
    report = gd.grade("drill02", path, tmp_path / "work", seed=3)
    assert failed_names(report) == {gd.CHECK_TREE_ORDER, gd.CHECK_TREE_DEPTH}, report.text()
    assert "holds a value the grader never issued" in report.check(gd.CHECK_TREE_ORDER).feedback


# ---- drill 02's judge: the trace is hostile input ----------------------------------------------

def trace_words(n: int, log: list[tuple[int, int]], final: list[int], combines: int | None = None) -> array:
    """A trace as drill02_driver.cpp writes one (drill02_trace.hpp): n, total, combines, log_len, the log
    (a | b << 32, as int64), the index every slot holds at the end."""
    packed = [(a | b << 32) - (1 << 64 if (a | b << 32) >= 1 << 63 else 0) for a, b in log]
    total = n + 2 * gd.GUARD
    return array("q", [n, total, len(log) if combines is None else combines, len(log), *packed, *final])


def hillis_steele_trace(n: int) -> array:
    """The trace of a right double-buffered Hillis-Steele scan, numbered by the driver's public rule."""
    total = n + 2 * gd.GUARD
    slots = list(range(1, total + 1))  # the inputs and guards by position
    log: list[tuple[int, int]] = []
    offset = 1
    while offset < n:
        now = list(slots)
        for i in range(offset, n):
            log.append((slots[gd.GUARD + i - offset], slots[gd.GUARD + i]))
            now[gd.GUARD + i] = total + 1 + len(log)  # the j-th combine's result: total + 2 + j
        slots, offset = now, offset * 2
    return trace_words(n, log, slots)


def judge_one(trace: array, n: int) -> gd.Ran:
    judge = gd.harness_program("drill02_judge")
    assert judge.path is not None, judge.problem
    ran, = gd.run_judge(judge.path, [trace], [str(n)], [gd.judged_words(n)])
    return ran


@slow
def test_the_judge_recomputes_ranges_and_depths_from_the_log():
    ran = judge_one(hillis_steele_trace(8), 8)
    assert ran.ok, ran.problem
    w, total = ran.words, 8 + 2 * gd.GUARD
    kinds, los, his, depths = (w[8 + k * total:8 + (k + 1) * total][gd.GUARD:gd.GUARD + 8].tolist() for k in range(4))
    assert w[0] == 17 and w[1] == 0  # 7 + 6 + 4 combines, none bad
    assert kinds == [gd.KIND_RANGE] * 8 and los == [0] * 8 and his == list(range(8)), (kinds, los, his)
    assert depths == [0, 1, 2, 2, 3, 3, 3, 3], depths


MALFORMED_TRACES = {
    # name: (the trace of n = 3, the judge's reason)
    "truncated": (hillis_steele_trace(3)[:-2], "words, should be"),
    "huge-word-count": (None, "it claims"),  # the word count before the trace
    "huge-log": (trace_words(3, [], list(range(1, 20)))[:3] + array("q", [1 << 40]) + array("q", range(1, 20)),
                 "more than the driver keeps"),
    "combines-not-logged": (trace_words(3, [], list(range(1, 20)), combines=5), "combines with a log of 0"),
    "other-size": (trace_words(4, [], list(range(1, 21))), "the grader asked for n = 3"),
    "final-id-not-32-bit": (trace_words(3, [], [*range(1, 19), 1 << 40]), "not a 32-bit index"),
    "negative-id": (trace_words(3, [], [*range(1, 19), -1]), "not a 32-bit index"),
}


@slow
@pytest.mark.parametrize("name", sorted(MALFORMED_TRACES))
def test_the_judge_fails_a_malformed_trace_cleanly(name, tmp_path):
    """A trace the driver never writes (forged, or the driver's memory overwritten) is an error exit of the
    judge with its reason, never a crash and never a pass: the grader fails that size."""
    trace, reason = MALFORMED_TRACES[name]
    judge = gd.harness_program("drill02_judge")
    assert judge.path is not None, judge.problem
    if trace is None:  # the driver's per-case word count itself is absurd
        with gd.Sandbox(gpu=False) as box:
            box.put("judge", judge.path, executable=True)
            box.put("trace.bin", array("q", [1 << 60, 3, 19]).tobytes())
            out = box.run(["./judge", "trace.bin", "judged.bin", "3"], gd.JUDGE_LIMITS)
        assert out.returncode == gd.JUDGE_MALFORMED and reason in out.stderr, (out.describe(), out.stderr)
        return
    ran = judge_one(trace, 3)
    assert not ran.ok and ran.words is None, ran
    assert "not one the grader's driver writes" in ran.problem and reason in ran.problem, ran.problem
    # Through the grader: the size fails the order check, and depth is not measured.
    runs = {("tree", 3): gd.Ran(True, words=trace)}
    for k, (size, _) in enumerate(gd.tree_sizes(5)[:3]):
        runs[("tree", k)] = gd.Ran(True, words=hillis_steele_trace(size))
    gd.judge_tree(runs, 5)
    report = Report("drill02", "malformed.cpp")
    gd.grade_drill02_tree(report, runs, 5, "reproduce: -")
    order = report.check(gd.CHECK_TREE_ORDER)
    assert not order.passed and "n=3 (three: not a power of two)" in order.feedback, order.feedback
    assert "1 of 12 cases failed" in order.feedback and "not one the grader's driver writes" in order.feedback
    assert not report.check(gd.CHECK_TREE_DEPTH).passed


@slow
def test_the_judge_treats_ids_not_yet_made_as_forged():
    """Ids follow a public rule, so a submission can write any; the judge lets the j-th combine use only the
    inputs, the identity and results 0..j-1, and a final slot only results that the log holds."""
    total = 3 + 2 * gd.GUARD
    x0, x1, x2 = gd.GUARD + 1, gd.GUARD + 2, gd.GUARD + 3
    ahead = judge_one(trace_words(3, [(x0, total + 2), (x0, x1)], [*range(1, x0), x0, total + 3, total + 9,
                                                                   *range(x2 + 1, total + 1)]), 3)
    assert ahead.ok, ahead.problem
    w = ahead.words
    kinds = w[8:8 + total].tolist()
    assert w[1] == gd.BAD_FORGED and w[5] == gd.KIND_FORGED, w[:8]  # combine 0 used its own result
    assert kinds[gd.GUARD:gd.GUARD + 3] == [gd.KIND_RANGE, gd.KIND_RANGE, gd.KIND_FORGED], kinds


# A tree that does quadratic work for the mid sizes: every output a fresh left fold of its prefix.
QUADRATIC_TREE = """    if (n > 3000 && n < 10000) {
        std::vector<T> prefix(x, x + n);
        for (std::size_t i = 1; i < n; ++i) {
            T sum = prefix[0];
            for (std::size_t k = 1; k <= i; ++k) sum = op(sum, prefix[k]);
            x[i] = sum;
        }
        return;
    }
    std::vector<T> buffer(x, x + n);"""


@slow
def test_a_trace_past_the_cap_is_untraced_and_judged_case_by_case(tmp_path):
    """n = 4097 and the drawn size each need more than the log holds: the run of all sizes stops when its
    budget is spent, each size runs alone, and those two come back as untraced values, far too much work."""
    path = tmp_path / "quadratic.cpp"
    path.write_text(transformed("drill02", "    std::vector<T> buffer(x, x + n);", QUADRATIC_TREE))
    report = gd.grade("drill02", path, tmp_path / "work", seed=3)
    assert failed_names(report) == {gd.CHECK_TREE_ORDER, gd.CHECK_TREE_DEPTH}, report.text()
    order = report.check(gd.CHECK_TREE_ORDER).feedback
    assert f"a value made after the grader stopped tracing ({gd.TRACE_CAP} combines" in order, order
    assert "2 of 12 cases failed" in order and "n=4097" in order, order


HELPERS = """
using namespace std;
// Names the grader's drivers use for their own code: none of them may clash.
int run(int x) { return x; }
int fail(const char*, const char*) { return 1; }
vector<long long> readWords(const char*) { return {}; }
bool same(int a, int b) { return a == b; }
long long fold(long long a) { return a; }
long long combine(long long a, long long b) { return a + b; }
namespace scanlab_io { int kGuard = 3; }
#define kPoison 0
#define Guarded int
#define writeWordsAndExit(a, b) nothing
"""


def unusual(drill: str, how: str) -> bytes:
    text = (SOLUTIONS / FILES[drill]).read_text()
    if how == "helpers":
        marker = "#include <vector>\n"
        assert text.count(marker) == 1
        text = text.replace(marker, marker + HELPERS)
        return text.encode()
    assert how == "crlf-bom"
    return b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode()


@slow
@pytest.mark.parametrize("drill", ["drill01", "drill02"])
@pytest.mark.parametrize("how", ["helpers", "crlf-bom"])
def test_unusual_but_correct_submissions_pass(drill, how, tmp_path):
    path = tmp_path / FILES[drill]
    path.write_bytes(unusual(drill, how))
    report = gd.grade(drill, path, tmp_path / "work", seed=8)
    assert report.passed, report.text()


@slow
def test_an_int_accumulator_fails_the_overflow_case(tmp_path):
    path = tmp_path / "int_sum.cpp"
    path.write_text(transformed("drill01", "    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];\n",
                                "    for (std::size_t i = 0; i < n; ++i) {\n"
                                "        int sum = excl[i] + in[i];  // 32 bits: wraps past 2^31\n"
                                "        incl[i] = sum;\n    }\n"))
    report = gd.grade("drill01", path, tmp_path / "work", seed=2)
    assert failed_names(report) == {"exclusive_to_inclusive"}, report.text()
    feedback = report.check("exclusive_to_inclusive").feedback
    assert "a 32-bit (int) accumulator or temporary overflows" in feedback
    assert f"1 of {len(gd.drill01_cases(2))} cases failed" in feedback, feedback
    assert "holds the grader's poison" not in feedback, feedback


@slow
def test_a_changed_signature_is_named_at_link_time(tmp_path):
    path = tmp_path / "int_n.cpp"
    path.write_text(transformed("drill01", "long long total_from_exclusive(const long long* in, const long long* excl, "
                                           "std::size_t n) {",
                                "long long total_from_exclusive(const long long* in, const long long* excl, int n) {"))
    report = gd.grade("drill01", path, tmp_path / "work", seed=2)
    assert failed_names(report) == {"builds", *gd.DRILL01_CHECKS}, report.text()
    assert ("your file does not define total_from_exclusive(const long long*, const long long*, std::size_t) "
            "(the starter's signature)") in report.check("builds").feedback


@slow
def test_a_submission_may_not_replace_what_the_driver_calls(tmp_path):
    path = tmp_path / "fwrite.cpp"
    path.write_text((SOLUTIONS / FILES["drill01"]).read_text() + (
        '\nextern "C" std::size_t fwrite(const void*, std::size_t size, std::size_t count, std::FILE*) {\n'
        "    return size * 0 + count;  // pretends every write worked\n}\n"))
    report = gd.grade("drill01", path, tmp_path / "work", seed=2)
    assert failed_names(report) == {"builds", *gd.DRILL01_CHECKS}, report.text()
    assert "the grader's own driver uses" in report.check("builds").feedback
    assert "fwrite" in report.check("builds").feedback


@slow
def test_the_driver_is_built_once_into_the_cache_outside_the_repository(tmp_path, monkeypatch):
    monkeypatch.setenv("SCANLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(drill_common, "_DRIVERS", {})
    first = gd.driver_object("drill01")
    assert first.path is not None and first.path.is_file(), first.problem
    assert first.path.is_relative_to(tmp_path / "cache") and not first.path.is_relative_to(REPO)
    assert "fwrite" in first.undefined and "main" in first.strong
    stamp = first.path.stat().st_mtime_ns
    monkeypatch.setattr(drill_common, "_DRIVERS", {})  # a new process: found in the cache, not rebuilt
    assert gd.driver_object("drill01").path == first.path and first.path.stat().st_mtime_ns == stamp
    assert [p.name for p in (tmp_path / "cache" / "drivers").iterdir() if p.name.startswith(".")] == []


@slow
def test_the_judge_is_built_once_into_the_cache_and_keyed_by_its_sources(tmp_path, monkeypatch):
    monkeypatch.setenv("SCANLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(drill_common, "_PROGRAMS", {})
    first = gd.harness_program("drill02_judge")
    assert first.path is not None and first.path.is_file() and os.access(first.path, os.X_OK), first.problem
    assert first.path.is_relative_to(tmp_path / "cache") and not first.path.is_relative_to(REPO)
    stamp = first.path.stat().st_mtime_ns
    monkeypatch.setattr(drill_common, "_PROGRAMS", {})  # a new process: found in the cache, not rebuilt
    assert gd.harness_program("drill02_judge").path == first.path and first.path.stat().st_mtime_ns == stamp
    assert [p.name for p in (tmp_path / "cache" / "drivers").iterdir() if p.name.startswith(".")] == []
    # The id rule is shared with the driver: a change to it is a new judge and a new driver.
    assert "drill02_trace.hpp" in drill_common.SOURCES["drill02_judge"]
    assert "drill02_trace.hpp" in drill_common.SOURCES["drill02"]


# ---- drill 03's answers: parsing, tolerance, hints -------------------------------------------------

def test_drill03_slots_are_the_same_in_the_starter_and_the_reference():
    for path in (EXERCISES / FILES["drill03"], SOLUTIONS / FILES["drill03"]):
        names = [m.group(1) for m in re.finditer(r"^    ([a-z][a-z0-9_]*) = ", path.read_text(), re.M)]
        assert names == list(gd.SLOTS03), path
    headings = [re.findall(r"^## .*$", p.read_text(), re.M) for p in (EXERCISES / FILES["drill03"],
                                                                       SOLUTIONS / FILES["drill03"])]
    assert headings[0] == headings[1]


@pytest.mark.parametrize("raw, value", [
    ("9217", 9217), ("9,217", 9217), ("4.5x", 4.5), ("19.98 %", 19.98), ("`14`", 14),
    ("10  # one per level", 10), ("____", None), ("", None), (" ___ ", None),
])
def test_drill03_number_parsing(raw, value):
    assert gd.parse_number(raw) == value


def test_drill03_number_parsing_rejects_words():
    with pytest.raises(ValueError):
        gd.parse_number("about ten")


@slow
def test_drill03_wrong_answers_fail_with_counts_and_hints(tmp_path):
    text = (SOLUTIONS / FILES["drill03"]).read_text()

    def swap(old: str, new: str):
        nonlocal text
        assert text.count(old) == 1, old
        text = text.replace(old, new)

    swap("bl_levels_under_25pct_1024 = 14", "bl_levels_under_25pct_1024 = 16")  # counted with 1024 threads
    swap("hs_adds_512 = 4097", "hs_adds_512 = 4608")  # n log2 n
    swap("extra_work_factor_512 = 4.01", "extra_work_factor_512 = 4.0x")  # within 0.01: right
    swap("hs_avg_utilisation_pct_1024 = 90.01", "hs_avg_utilisation_pct_1024 = 90.03")  # off by 0.02
    swap("bl_adds_512 = 1022", "bl_adds_512 = 1,022")  # right
    swap("bl_threads_512 = 256", "bl_threads_512 = lots")
    swap("    warp_scan_steps_64 = 6\n", "")
    swap("bl_adds_300 = 1022", "bl_adds_300 = ____")
    path = tmp_path / "answers.md"
    path.write_text(text)
    report = gd.grade("drill03", path, tmp_path / "work", seed=0)
    assert failed_names(report) == {"bl_levels_under_25pct_1024", "hs_adds_512", "hs_avg_utilisation_pct_1024",
                                    "bl_threads_512", "warp_scan_steps_64", "bl_adds_300"}, report.text()
    assert "you wrote 16; counted by the harness (harness/scanlab/scan_counts.py): 14" in \
        report.check("bl_levels_under_25pct_1024").feedback
    assert "Blelloch runs n/2 = 512 threads" in report.check("bl_levels_under_25pct_1024").feedback
    assert "threads tid < d have nothing to their left" in report.check("hs_adds_512").feedback
    assert "accepted within 0.01" in report.check("hs_avg_utilisation_pct_1024").feedback
    assert report.check("bl_threads_512").feedback.startswith("not a number: 'lots'")
    assert report.check("warp_scan_steps_64").feedback.startswith("missing")
    assert report.check("bl_adds_300").feedback.startswith("not answered")


@pytest.mark.parametrize("mode", ["self-study", "course"])
def test_drill03_without_the_counter_says_answered_checked_by_your_instructor(tmp_path, monkeypatch, mode):
    """The student release leaves scan_counts.py out: a filled-in sheet is answered, not 25 failures."""
    from scanlab import grade_drill03
    monkeypatch.setattr(grade_drill03, "scan_counts", None)
    path = tmp_path / "answers.md"
    path.write_text((SOLUTIONS / FILES["drill03"]).read_text())
    report = gd.grade("drill03", path, tmp_path / "work", seed=0, mode=mode)
    assert report.passed and report.score == 0 and all(c.unchecked for c in report.checks), report.text()
    text = report.text()
    assert text.count("  ANSWERED  ") == len(gd.SLOTS03) and "FAIL" not in text, text
    assert text.splitlines()[-1].startswith(f"{len(gd.SLOTS03)} of {len(gd.SLOTS03)} answered, checked by your "
                                            "instructor"), text
    # An unanswered slot and a word still fail: the form is checked here.
    path.write_text(path.read_text().replace("hs_adds_512 = 4097", "hs_adds_512 = ____")
                    .replace("bl_threads_512 = 256", "bl_threads_512 = lots"))
    report = gd.grade("drill03", path, tmp_path / "work", seed=0, mode=mode)
    assert not report.passed and failed_names(report) == {"hs_adds_512", "bl_threads_512"}, report.text()
    assert report.text().splitlines()[-1].endswith("; the others: 2 failed"), report.text()


@pytest.mark.parametrize("mode", ["self-study", "course"])
def test_drill03_lab1_barrier_counts_get_the_convention_hint(tmp_path, mode):
    """Lab 1's table counts the load's barrier (10 and 20 at 512); the drill does not (9 and 18)."""
    text = (SOLUTIONS / FILES["drill03"]).read_text()
    for old, new in (("hs_barriers_512 = 9", "hs_barriers_512 = 10"), ("bl_barriers_512 = 18", "bl_barriers_512 = 20")):
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = tmp_path / "answers.md"
    path.write_text(text)
    report = gd.grade("drill03", path, tmp_path / "work", seed=0, mode=mode)
    assert failed_names(report) == {"hs_barriers_512", "bl_barriers_512"}, report.text()
    for name in ("hs_barriers_512", "bl_barriers_512"):
        assert "the way Lab 1's barriers/tile column does" in report.check(name).feedback, report.text()


# ---- the counting program against closed forms ----------------------------------------------

@pytest.fixture(scope="module")
def counting_program(build_dir) -> Path:
    return build_dir / "solutions" / "03_scan_analysis"


def closed_forms(n: int) -> dict[str, str]:
    """What the model in exercises/03_scan_analysis.md gives, by formula."""
    levels = math.ceil(math.log2(n)) if n > 1 else 0  # Hillis-Steele: ceil(log2 n) levels on n threads
    hs_adds = n * levels - (2 ** levels - 1)  # level k: n - 2^k adds
    p = 2 ** levels  # Blelloch pads to the next power of two
    bl_threads = max(1, p // 2)
    bl_levels = 2 * levels
    bl_adds = 2 * (p - 1)
    hs_under = sum(1 for k in range(levels) if 4 * (n - 2 ** k) < n)
    bl_under = 2 * max(0, levels - 3)  # per sweep, level k uses 2^-k of the threads

    def pct(part, whole):
        return "-" if whole == 0 else f"{100 * part / whole:.2f}"

    def ratio(a, b):
        return "-" if b == 0 else f"{a / b:.2f}"

    return {
        f"serial_adds_{n}": str(n - 1),
        f"hs_threads_{n}": str(n), f"hs_levels_{n}": str(levels), f"hs_adds_{n}": str(hs_adds),
        f"hs_barriers_{n}": str(levels), f"hs_avg_utilisation_pct_{n}": pct(hs_adds, levels * n),
        f"hs_levels_under_25pct_{n}": str(hs_under),
        f"bl_padded_n_{n}": str(p), f"bl_threads_{n}": str(bl_threads), f"bl_levels_{n}": str(bl_levels),
        f"bl_adds_{n}": str(bl_adds), f"bl_barriers_{n}": str(bl_levels),
        f"bl_avg_utilisation_pct_{n}": pct(bl_adds, bl_levels * bl_threads),
        f"bl_levels_under_25pct_{n}": str(bl_under),
        f"extra_work_factor_{n}": ratio(hs_adds, bl_adds),
        f"hs_adds_per_byte_{n}": ratio(hs_adds, 8 * n), f"bl_adds_per_byte_{n}": ratio(bl_adds, 8 * n),
    }


# 1: no levels at all; 2, 3: the smallest trees; 7, 100, 300, 1000, 1025: not powers of two (300 is
# the drill's, 1025 pads to 2048 and gives Hillis-Steele one level under 25 %); 8, 512 (the drill's
# counted tile), 1024, 4096: powers of two.
COUNT_SIZES = [1, 2, 3, 7, 8, 100, 300, 512, 1000, 1024, 1025, 4096]


@slow
def test_counting_program_matches_the_closed_forms(counting_program):
    result = run([counting_program, "--n", ",".join(map(str, COUNT_SIZES)), "--slots"])
    assert result.returncode == EXIT_PASS, result.describe()
    slots = gd.parse_slots(result.stdout)
    for n in COUNT_SIZES:
        for name, value in closed_forms(n).items():
            assert slots[name] == value, f"{name}: counted {slots[name]}, closed form {value}"
    # The page's figures, at n = 1024.
    assert slots["hs_adds_1024"] == "9217" and slots["bl_adds_1024"] == "2046"
    assert slots["bl_levels_under_25pct_1024"] == "14" and slots["bl_levels_1024"] == "20"
    assert slots["extra_work_factor_1024"] == "4.50"
    assert slots["hs_levels_under_25pct_1025"] == "1"


@slow
def test_counting_program_shuffle_scan_matches_its_closed_form(counting_program):
    slots = gd.parse_slots(run([counting_program, "--slots"]).stdout)
    warp, block = 32, 1024
    warps = block // warp
    per_warp = warp * 5 - (warp - 1)  # Hillis-Steele over 32 lanes
    totals = warps * 5 - (warps - 1)  # warp 0 scans the 32 warp totals
    add_back = (warps - 1) * warp
    assert slots["shfl_block_adds_1024"] == str(warps * per_warp + totals + add_back) == "5249"
    assert slots["warp_scan_steps_32"] == "5" and slots["warp_scan_steps_64"] == "6"
    assert slots["shfl_block_barriers_1024"] == "2"


@slow
@pytest.mark.parametrize("args", [["--n", "0"], ["--n", "abc"], ["--n", "5,"], ["--n"], ["--bogus"],
                                  ["--n", "16777217"]], ids=lambda a: " ".join(a) or "none")
def test_counting_program_rejects_bad_flags(counting_program, args):
    result = run([counting_program, *args])
    assert result.returncode == EXIT_USAGE, result.describe()
    assert "usage:" in result.stderr


@slow
def test_counting_program_help(counting_program):
    result = run([counting_program, "--help"])
    assert result.returncode == EXIT_PASS and "--slots" in result.stdout and "exit status" in result.stdout


# ---- the README's sample output ----------------------------------------------------------------

SAMPLE = re.compile(r"^`\$ (?P<command>[^`]+)` \(exit status (?P<status>\d+)\)\n\n```text\n(?P<output>.*?)^```$",
                    re.M | re.S)


def readme_samples() -> list[re.Match]:
    text = README.read_text()
    section = text[text.index("\n## Sample sandbox output\n"):]
    return list(SAMPLE.finditer(section))


def test_readme_has_a_sample_for_every_program_pass_and_fail():
    commands = [m["command"] for m in readme_samples()]
    for program in ("01_exclusive_to_inclusive", "02_segmented_scan"):
        assert f"../build/solutions/{program}" in commands and f"../build/exercises/{program}" in commands
    # Drill 03's answers stay in solutions/: no sample of the counting program, no `slot = number` line.
    assert not any("03_scan_analysis" in c and "grade.py" not in c for c in commands)
    assert "python3 ../harness/grade.py drill03 03_scan_analysis.md" in commands
    text = README.read_text()
    assert not re.search(r"^\s*`?[a-z][a-z0-9_]*_(512|1024|300|1000|32|64)\s*=\s*[0-9]", text, re.M), \
        "exercises/README.md gives a drill 03 answer away"
    statuses = {m["command"]: m["status"] for m in readme_samples()}
    assert {c for c, s in statuses.items() if s == "0"} == {c for c in commands if "/solutions/" in c}


def test_readme_sections():
    text = README.read_text()
    assert "## Day 31: shift-then-scan\n" in text
    assert text.index("## Day 31: shift-then-scan") < text.index("## Running and grading")
    assert "### Why 256 and 255" in text


@slow
@pytest.mark.parametrize("sample", range(5), ids=lambda i: f"sample{i}")
def test_readme_sample_output_is_what_the_program_prints(build_dir, sample):
    samples = readme_samples()
    assert len(samples) == 5
    m = samples[sample]
    command = shlex.split(m["command"])
    if command[0] == "python3":
        command[0] = sys.executable
    command = [str(build_dir) + c[len("../build"):] if c.startswith("../build/") else c for c in command]
    proc = subprocess.run(command, capture_output=True, text=True, cwd=EXERCISES, timeout=300)
    assert proc.stderr == ""
    assert proc.returncode == int(m["status"])
    assert proc.stdout == m["output"], (
        f"exercises/README.md is stale for `{m['command']}`: paste the program's current output.\n"
        f"--- README ---\n{m['output']}--- now ---\n{proc.stdout}")


# ---- the Makefiles ---------------------------------------------------------------------------------

@slow
def test_exercises_make_run_reports_each_starter_and_exits_0(build_dir):
    result = run(["make", "-C", EXERCISES, "run", f"BUILD={build_dir}", f"PYTHON={sys.executable}",
                  "NVIDIA_SMI=false"], timeout=600)
    assert result.returncode == 0, result.describe()
    for line in ("==== 01_exclusive_to_inclusive: exit status 1", "==== 02_segmented_scan: exit status 1",
                 "==== 03_scan_analysis.md: exit status 1",
                 "skipped day31: no NVIDIA GPU (nvidia-smi -L failed or nvidia-smi is not installed); grade it on a "
                 "GPU machine or in the Colab notebook, ../harness/colab/scan-lab.ipynb"):
        assert line in result.stdout.splitlines(), result.describe()


STRETCH_STEMS = [Path(e.file).stem for e in registry.EXERCISES.values() if e.stretch]
COLAB_STRETCH = ("run-stretch: no usable GPU here (each bench said why); run the stretch drills on a GPU machine "
                 "or in the Colab notebook, ../harness/colab/scan-lab.ipynb")


@pytest.mark.parametrize("status", [3, 1], ids=["no-usable-gpu", "starters-on-a-gpu"])
def test_exercises_make_run_stretch_without_a_gpu_names_the_colab_route_once(tmp_path, status):
    """The benches exit 3 without a usable GPU (their own line each); run-stretch then names the Colab
    route once, as make run does for Day 31, and not the starting-state line (nothing ran). Faked:
    benches that are already built (newer than their sources; NVCC=/bin/false builds nothing) and
    exit with `status`, each with the line a real one prints."""
    cuda = tmp_path / "exercises" / "cuda"
    cuda.mkdir(parents=True)
    for stem in STRETCH_STEMS:
        bench = cuda / stem
        bench.write_text(f"#!/bin/sh\necho '{stem}: no usable GPU: no CUDA-capable device is detected "
                         f"(cudaErrorNoDevice)' >&2\nexit 3\n" if status == 3 else f"#!/bin/sh\nexit {status}\n")
        bench.chmod(0o755)
    result = run(["make", "--no-print-directory", "-C", EXERCISES, "run-stretch", f"BUILD={tmp_path}", "NVCC=/bin/false"],
                 timeout=120)
    assert result.returncode == 0, result.describe()
    lines = result.stdout.splitlines()
    assert [line for line in lines if line.startswith("==== ") and "exit status" in line] == \
        [f"==== {stem}: exit status {status}" for stem in STRETCH_STEMS], result.describe()
    colab = [line for line in lines if "Colab" in line]
    starting = "run-stretch: a starter that fails is in its starting state; fill in the TODOs and run again"
    if status == 3:
        assert colab == [COLAB_STRETCH], result.describe()
        assert starting not in lines and result.stderr.count("no usable GPU") == len(STRETCH_STEMS), result.describe()
    else:
        assert colab == [] and lines[-1] == starting, result.describe()


@slow
def test_solutions_make_run_passes(build_dir):
    result = run(["make", "-C", SOLUTIONS, "run", f"BUILD={build_dir}", f"PYTHON={sys.executable}",
                  "NVIDIA_SMI=false"], timeout=600)
    assert result.returncode == 0, result.describe()
    assert "make run: every solution passed" in result.stdout.splitlines(), result.describe()


@slow
def test_solutions_make_run_fails_when_a_solution_fails(tmp_path):
    # A copy of the repository's solutions/ next to a link to harness/, with one answer broken.
    (tmp_path / "harness").symlink_to(REPO / "harness")
    shutil.copytree(SOLUTIONS, tmp_path / "solutions")
    broken = tmp_path / "solutions" / FILES["drill02"]
    text = broken.read_text()
    assert text.count("    if (b.flag) return b;\n") == 1
    broken.write_text(text.replace("    if (b.flag) return b;\n", ""))
    result = run(["make", "-C", tmp_path / "solutions", "run", f"BUILD={tmp_path / 'build'}",
                  f"PYTHON={sys.executable}", "NVIDIA_SMI=false"], timeout=600)
    assert result.returncode != 0, result.describe()
    assert "make run: FAILED: 02_segmented_scan" in result.stdout, result.describe()
    assert "PASS: every simulated scan matched" in result.stdout  # the others still ran
    assert (tmp_path / "build" / "solutions" / "03_scan_analysis").exists()
    # Nothing was built next to the sources.
    assert sorted(p.name for p in (tmp_path / "solutions").iterdir()) == sorted(p.name for p in SOLUTIONS.iterdir())


# ---- Gradescope JSON and the command line ----------------------------------------------------------

@slow
def test_gradescope_json_shape(graded, tmp_path):
    report = graded["w_identity_incl0"]
    path = tmp_path / "results.json"
    report.write_json(path)
    data = json.loads(path.read_text())
    points = points_table()["drill01"]
    assert data["score"] == 2 and "drill01" in data["output"]  # e2i and the total; "builds" is worth 0
    assert [t["name"] for t in data["tests"]] == ["builds", *gd.DRILL01_CHECKS]
    for test in data["tests"]:
        assert set(test) >= {"name", "score", "max_score", "status", "output", "visibility"}
        assert test["status"] in ("passed", "failed") and test["max_score"] == points[test["name"]].points
        assert test["score"] == (test["max_score"] if test["status"] == "passed" else 0)
        assert test["visibility"] == points[test["name"]].visibility
    failed = [t for t in data["tests"] if t["status"] == "failed"]
    assert len(failed) == 1 and "must be the identity 0" in failed[0]["output"]


@slow
def test_grade_cli_exit_statuses_and_json(tmp_path):
    listed = run([sys.executable, GRADE, "--list"])
    assert listed.returncode == EXIT_PASS and all(d in listed.stdout for d in FILES), listed.describe()
    out = tmp_path / "results.json"
    passed = run([sys.executable, GRADE, "drill01", SOLUTIONS / FILES["drill01"], "--seed", "4", "--json", out])
    assert passed.returncode == EXIT_PASS, passed.describe()
    assert json.loads(out.read_text())["score"] == max_score("drill01") == 3
    failed = run([sys.executable, GRADE, "drill01", CORPUS / "drill01" / "w_total_excl_only.cpp", "--seed", "4"])
    assert failed.returncode == EXIT_FAIL, failed.describe()
    assert "FAIL  total_from_exclusive" in failed.stdout and "--seed 4" in failed.stdout
    assert run([sys.executable, GRADE, "drill02", tmp_path / "missing.cpp"]).returncode == EXIT_USAGE


@slow
def test_grader_copes_with_odd_submission_paths(tmp_path):
    odd = tmp_path / "my work (v2)" / "answer's $file.cpp"
    odd.parent.mkdir()
    shutil.copyfile(SOLUTIONS / FILES["drill01"], odd)
    report = gd.grade("drill01", odd, tmp_path / "work dir", seed=3)
    assert report.passed, report.text()
    assert any("compiled as submission.cpp" in note for note in report.notes), report.notes
    # The reproduce line is shell-quoted: the shell gives back the exact path.
    line = next(note for note in report.notes if "reproduce: " in note)
    command = shlex.split(line.split("reproduce: ", 1)[1])
    assert command == ["python3", "harness/grade.py", "drill01", str(odd), "--seed", "3"], line


def test_reproduce_line_is_relative_to_the_repository_root_inside_it():
    line = gd.reproduce_line("drill02", CORPUS / "drill02" / "w_hang.cpp", 7)
    assert line == "reproduce: python3 harness/grade.py drill02 harness/corpus/drill02/w_hang.cpp --seed 7"
