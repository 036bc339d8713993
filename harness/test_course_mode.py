"""Course mode, points from harness/exercises.toml, honest scores, drill 03 without solutions/.

Course mode never shows a student an expected value. Each test here
grades a wrong submission in both modes and proves two things at once: the
self-study feedback shows the expected values (so the search has something to
find, and the test can fail), and the course-mode text a student sees (the
report with instructor=False, and every Gradescope output but the hidden
instructor test) holds none of them. The drills are graded for real (g++ on
the CPU), with wrong submissions made by mutating solutions/; Day 31 goes
through `evaluate` with made-up runner dumps, as test_day31_exercise.py does.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from scanlab import EXIT_FAIL, EXIT_PASS, registry
from scanlab import grade_day31 as d31
from scanlab import grade_drills as gd
from scanlab import scan_counts
from scanlab.day31_fakes import CASE, SENTENCE, fake_run
from scanlab.grading import (INSTRUCTOR_TEST, Check, PointsError, Report, max_score, points_table,
                             require_points)
from scanlab.paths import REPO

EXERCISES = REPO / "exercises"
SOLUTIONS = REPO / "solutions"
GRADE = REPO / "harness" / "grade.py"
FILES = {e.id: e.file for e in registry.EXERCISES.values()}  # harness/exercises.toml
DRILLS = [e for e in registry.COURSE if e not in registry.NEEDS_GPU]  # the course's CPU exercises
SEED = 5
slow = pytest.mark.slow
# Course mode hides the seed and the hidden sizes: drill 01's corpus entries with one mistake each (and
# one that does not build, two right ones that print or keep their main), and a file fitted to the sizes
# the grader used to show, graded with a seed of five digits (a token no report holds by chance).
HIDE_SEED = 48611
CORPUS01 = REPO / "harness" / "corpus" / "drill01"
HIDE_FILES = [CORPUS01 / f"{stem}.cpp" for stem in (
    "w_crash_unsized_vector", "w_identity_incl0", "w_shift_in_place", "w_missing_semicolon", "w_no_shift",
    "w_writes_one_past_end", "c_prints", "w_both_stop_short", "w_total_excl_only", "w_total_empty_wraps",
    "c_unguarded_main_prints_pass", "w_shift_wrong_direction", "h_known_sizes_only")]

# Wrong submissions, made from the reference answers: (old, new) replacements.
MUTATIONS = {
    "drill01": [("incl[i] = excl[i] + in[i];", "incl[i] = excl[i] + in[i] + 1;"),
                ("excl[i] = incl[i - 1];", "excl[i] = incl[i - 1] - 3;"),
                ("return excl[n - 1] + in[n - 1];", "return excl[n - 1] + in[n - 1] + 7;")],
    # off by one in every combine: the operator, the schedules and the tile all fail
    "drill02": [("return Seg{a.flag, a.value + b.value};", "return Seg{a.flag, a.value + b.value + 1};")],
    "drill02-nocompile": [("if (b.flag) return b;", "if (b.flag) return b")],
}


def mutated(folder: Path, key: str) -> Path:
    drill = key.split("-")[0]
    text = (SOLUTIONS / FILES[drill]).read_text()
    for old, new in MUTATIONS[key]:
        assert text.count(old) == 1, f"solutions/{FILES[drill]} no longer has {old!r} once: update MUTATIONS"
        text = text.replace(old, new)
    path = folder / f"{key}.cpp"
    path.write_text(text)
    return path


def drill03_wrong_answers(folder: Path) -> Path:
    """Every number wrong (junk values, and the wrong values that have a hint), no prose: the
    starter filled in, so no answer reaches the report but through the grader."""
    hinted = {slot: next(iter(values)) for slot, values in gd.HINTS03.items()}
    text = (EXERCISES / FILES["drill03"]).read_text()
    for k, slot in enumerate(gd.SLOTS03):
        wrong = hinted.get(slot, 700_001 + k)
        text, count = re.subn(rf"^(    {slot} = ).*$", lambda m: f"{m.group(1)}{wrong}", text, flags=re.M)
        assert count == 1, slot
    path = folder / "03_wrong.md"
    path.write_text(text)
    return path


# ---- gradings, started together ------------------------------------------------------

class Gradings:
    def __init__(self, root: Path):
        self.pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="course")
        self.futures: dict[str, Future] = {}
        jobs = {
            "drill01-wrong": ("drill01", mutated(root, "drill01")),
            "drill02-wrong": ("drill02", mutated(root, "drill02")),
            "drill03-wrong": ("drill03", drill03_wrong_answers(root)),
        }
        for key, (drill, path) in jobs.items():
            for mode in ("self-study", "course"):
                self._submit(f"{key}-{mode}", drill, path, mode, root)
        for drill in DRILLS:
            self._submit(f"{drill}-starter", drill, EXERCISES / FILES[drill], "course", root)
        self._submit("drill01-nocompile", "drill01", CORPUS01 / "w_missing_semicolon.cpp",
                     "course", root)
        self._submit("drill02-nocompile", "drill02", mutated(root, "drill02-nocompile"), "course", root)
        for path in HIDE_FILES:
            self._submit(f"hide-{path.stem}", "drill01", path, "course", root, HIDE_SEED)

    def _submit(self, key: str, drill: str, path: Path, mode: str, root: Path, seed: int = SEED) -> None:
        self.futures[key] = self.pool.submit(gd.grade, drill, path, root / key, seed, mode=mode)

    def __getitem__(self, key: str) -> Report:
        return self.futures[key].result()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    gradings = Gradings(tmp_path_factory.mktemp("course-gradings"))
    yield gradings
    gradings.pool.shutdown(wait=True)


# ---- what a student sees, and the search for expected values ---------------------------

def student_views(report: Report) -> dict[str, str]:
    """Every text a student can see: the report without instructor lines, and each Gradescope
    output that is not hidden from students (the top-level output included)."""
    data = json.loads(json.dumps(report.gradescope(1.0)))
    views = {"text(instructor=False)": report.text(instructor=False), "gradescope output": data["output"]}
    for test in data["tests"]:
        if test["visibility"] != "hidden":
            views[f"gradescope test {test['name']!r}"] = test["output"]
    return views


SHOULD = re.compile(r"should (?:be|hold) (\([01],-?\d+\)|-?\d+(?:\.\d+)?|inputs \d+\.\.\d+)")
COUNTED = re.compile(r"counted by [^:]+: (-?\d+(?:\.\d+)?)")


def number_tokens(text: str) -> set[str]:
    """Whole numbers and decimals as written, a sentence's full stop after them allowed."""
    return set(re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?(?!\w|\.\d)", text))


def expected_values(full_text: str) -> set[str]:
    """Values the self-study text shows only as expectations: 'should be X', 'counted ...: X'.

    A value that also appears elsewhere in the full text (an input in a case label, a size)
    is not an answer to hide, so it is left out; small values (one digit) are too common in
    prose to search for, and their lines are covered by the 'should be' search."""
    found = set()
    for match in (*SHOULD.finditer(full_text), *COUNTED.finditer(full_text)):
        found |= number_tokens(match.group(1))
    rest = COUNTED.sub("", SHOULD.sub("", full_text))
    return {v for v in found - number_tokens(rest) if len(v.lstrip("-")) >= 2}


def assert_no_expected_values(self_study: Report, course: Report) -> None:
    # The self-study checks and the notes course mode also shows (not the instructor-only ones,
    # such as Day 31's table of reference totals, which is tested on its own).
    full = "\n".join([*(c.feedback for c in self_study.checks), *(n for n in self_study.notes if n in course.notes)])
    hidden = expected_values(full)
    assert hidden, f"the self-study feedback shows no expected value: the search below proves nothing\n{full}"
    for where, text in student_views(course).items():
        assert not SHOULD.search(text) and "counted by" not in text, f"{where} shows an expected value:\n{text}"
        leaked = hidden & number_tokens(text)
        assert not leaked, f"{where} shows expected value(s) {sorted(leaked)}:\n{text}"
    # The instructor still gets them: in report.txt's text and in the hidden test.
    instructor = course.text(instructor=True)
    assert hidden <= number_tokens(instructor), sorted(hidden - number_tokens(instructor))
    tests = course.gradescope()["tests"]
    extra = [t for t in tests if t["name"] == f"{course.exercise}: {INSTRUCTOR_TEST}"]
    assert len(extra) == 1 and extra[0]["visibility"] == "hidden" and extra[0]["max_score"] == 0
    assert extra[0]["status"] == "passed" and extra[0]["score"] == 0
    assert hidden <= number_tokens(extra[0]["output"])


def same_checks_and_scores(self_study: Report, course: Report) -> None:
    """The mode changes words, never verdicts or points."""
    assert [(c.name, c.passed, c.max_score) for c in self_study.checks] == \
        [(c.name, c.passed, c.max_score) for c in course.checks]
    assert all(c.detail == "" for c in self_study.checks) and not self_study.instructor_notes
    assert not any(t["name"].endswith(INSTRUCTOR_TEST) for t in self_study.gradescope()["tests"])


@slow
@pytest.mark.parametrize("drill", DRILLS)
def test_course_mode_shows_no_expected_value(graded, drill):
    # The search finds the expected values of the self-study text (at least one, or it fails) in
    # every student view of the course-mode report; none may be there.
    self_study, course = graded[f"{drill}-wrong-self-study"], graded[f"{drill}-wrong-course"]
    assert not course.passed and len(course.failed()) >= 3, course.text()
    same_checks_and_scores(self_study, course)
    assert_no_expected_values(self_study, course)


@slow
def test_course_mode_still_says_where_what_and_why(graded):
    drill01 = graded["drill01-wrong-course"]
    feedback = drill01.check("total_from_exclusive").feedback
    assert "returned 32" in feedback and "page example" in feedback, feedback  # 25 + 7: what it produced
    e2i = drill01.check("exclusive_to_inclusive").feedback
    assert "first at index 0: incl[0] is 4" in e2i and "reproduce: python3 harness/grade.py" in e2i, e2i
    drill02 = graded["drill02-wrong-course"]
    assert "likely cause: b has no head, so it continues a's run" in \
        drill02.check(gd.CHECK_OPERATOR).feedback
    # the tree note keeps the submission's own count, at a size drawn for this grade (never n = 1000,
    # whose Hillis-Steele count is drill 03's answer), and never compares it with drill 03's answers
    assert any(n.startswith("tree_scan_inclusive did ") and "combines at a size drawn for this grade" in n
               for n in drill02.notes), drill02.notes
    assert not any(answer in n for n in drill02.notes + drill02.instructor_notes for answer in ("8977", "2046"))
    drill03 = graded["drill03-wrong-course"]
    check = drill03.check("bl_levels_under_25pct_1024")
    assert check.feedback.startswith("you wrote 16: not the count") and "one thread per pair" in check.feedback
    assert "512" not in check.feedback and "14" in check.detail


# ---- course mode hides the seed and the hidden inputs ------------------------------------------

def drawn_sizes(seed: int) -> set[str]:
    """The drill 01 sizes a seed draws, and the indices next to them (n - 1 is the last element, n one
    past the end), as number tokens: none may reach a course-mode student."""
    drawn = [n for salt, n, _, _ in gd.drill01_sizes(seed) if salt not in ("tiny", "tile-1", "tile+1")]
    return {str(k) for n in drawn for k in (n - 1, n, n + 1)}


def hidden_blocks(text: str) -> list[list[str]]:
    """The course-mode blocks of hidden cases: a 'hidden case K of H (...)' line and its indented lines."""
    blocks: list[list[str]] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("hidden case "):
            blocks.append([line])
            inside = True
        elif inside and line.startswith("  "):
            blocks[-1].append(line)
        else:
            inside = False
    return blocks


def assert_hides_the_seed_and_sizes(report: Report, seed: int, views: dict[str, str]) -> int:
    """No student view holds the seed, `--seed`, a drawn size (or n - 1, n + 1), a hidden case's full
    label, or in a hidden case's block any number of three digits or more; the instructor's detail
    holds the seed. Returns how many hidden-case blocks the views showed."""
    drawn = drawn_sizes(seed)
    # The drawn sizes are at least 1000 and not numbers a public case prints (values up to 1152, the
    # lesson input's total): with this seed, a token found is a leak, never a coincidence.
    assert all(int(k) > 1200 for k in drawn), f"seed {seed} draws a size near the public numbers: pick another"
    shown = 0
    for where, text in views.items():
        tokens = number_tokens(text)
        assert str(seed) not in tokens and "--seed" not in text, f"{where} shows the seed:\n{text}"
        assert not drawn & tokens, f"{where} shows hidden size(s) {sorted(drawn & tokens)}:\n{text}"
        assert "hidden (seed" not in text, f"{where} shows a hidden case's full label:\n{text}"
        for block in hidden_blocks(text):
            shown += 1
            assert re.fullmatch(r"hidden case \d+ of \d+ \(\D+\):", block[0]), block[0]
            big = {t for t in number_tokens("\n".join(block[1:])) if len(t.lstrip("-")) >= 3}
            assert not big, f"{where}: a hidden case shows {sorted(big)}:\n" + "\n".join(block)
    instructor = report.text(instructor=True) + report.instructor_text()
    assert f"hidden inputs drawn with seed {seed}; reproduce: " in instructor and f"--seed {seed}" in instructor
    return shown


@slow
@pytest.mark.parametrize("path", HIDE_FILES, ids=lambda p: p.stem)
def test_course_mode_hides_the_seed_and_the_hidden_sizes(graded, path):
    report = graded[f"hide-{path.stem}"]
    views = student_views(report)
    shown = assert_hides_the_seed_and_sizes(report, HIDE_SEED, views)
    if path.stem == "h_known_sizes_only":  # right on every size it was shown: only hidden cases fail
        assert shown >= 3 * len(gd.DRILL01_CHECKS), views  # the blocks the search above went through
        for name in gd.DRILL01_CHECKS:
            check = report.check(name)
            assert not check.passed and check.feedback.startswith("hidden case "), check.feedback
            assert gd.NO_SEED in check.feedback, check.feedback
            # the instructor still gets the sizes and the seed of every failing case
            drawn = [n for salt, n, _, _ in gd.drill01_sizes(HIDE_SEED) if salt.startswith("large")]
            assert all(f"hidden (seed {HIDE_SEED}): n={n}," in check.detail for n in drawn[:2]), check.detail
        e2i = report.check("exclusive_to_inclusive").feedback
        assert "the first wrong one is the last one, incl[n - 1] (it still holds the grader's poison" in e2i, e2i


def test_failures_of_other_graders_hidden_by_their_label_show_no_size_or_seed():
    """The mechanism is drill_common's: a grader that only labels its cases "hidden (seed S): ..."
    (drill 02 today) gets them hidden in course mode without naming them itself."""
    failures = [gd.Failure("page example: n=8", "out[3] is 4", n=8),
                gd.Failure("hidden (seed 48611): n=100003, large", "first at index 100002: out[100002] is 7, "
                           "should be 9", "only the last element is wrong", 100_003, "out[100002] is 7")]
    failures += [gd.Failure(f"hidden (seed 48611): n={n}", "wrong", n=n) for n in (4097, 65537)]
    failures.append(gd.Failure("n=3", "wrong", n=3))
    reproduce = gd.reproduce_line("drill02", REPO / "harness" / "corpus" / "drill02" / "w_hang.cpp", 48611)
    student = gd.summarise(failures, 9, reproduce, student=True)
    full = gd.summarise(failures, 9, reproduce)
    for token in ("48611", "100003", "100002", "4097", "65537", "--seed", "hidden (seed"):
        assert token in full and token not in student, (token, student)
    assert student.splitlines()[2:4] == ["a hidden case:", f"  {gd.IN_WORDS}"], student
    assert "... and 2 more failing case(s): n=3, 1 hidden" in student, student
    # the file as the student has it: its own name, not the grading machine's folders
    assert student.endswith(f"reproduce: python3 harness/grade.py drill02 w_hang.cpp {gd.NO_SEED}"), student


def test_what_a_run_leaves_is_not_shown_for_a_hidden_case():
    """A submission controls its stderr, its exit status and how much it prints: each could carry a
    hidden size, so none of them reaches a hidden case's words or the course-mode note."""
    problem = ("the program stopped with exit status 57 inside your code (an exit() or a failed check of your "
               "own?)\n    stderr: n=1234567\n    stderr: in[0]=-3")
    said = gd.problem_in_words(problem)
    assert "57" not in said and "1234567" not in said and "stderr" not in said, said
    assert said.startswith("the program stopped with an exit status of its own inside your code"), said
    runs = [gd.Ran(True, dropped=1_234_567)]
    report = Report("drill01", "x.cpp", mode="course")
    gd.note_dropped(report, runs)
    assert "1234567" not in report.text(instructor=False) and "1234567" in report.text(instructor=True)
    assert "printed more than the grader keeps" in report.text(instructor=False)


@slow
def test_each_grading_draws_its_own_seed_and_course_mode_never_prints_it(tmp_path):
    """grade.py without --seed draws a fresh seed (SystemRandom) per grading; in course mode the seed
    and the sizes it drew are only in the instructor's hidden test, never in what a student sees."""
    seeds = []
    submission = REPO / "harness" / "corpus" / "drill01" / "h_known_sizes_only.cpp"
    for k in range(2):
        results = tmp_path / f"results{k}.json"
        proc = subprocess.run([sys.executable, str(GRADE), "drill01", str(submission), "--mode", "course",
                               "--json", str(results)], capture_output=True, text=True, timeout=600)
        assert proc.returncode == EXIT_FAIL, proc.stdout + proc.stderr
        data = json.loads(results.read_text())
        hidden = [t for t in data["tests"] if t["visibility"] == "hidden"]
        assert len(hidden) == 1, data["tests"]
        found = re.search(r"hidden inputs drawn with seed (\d+);", hidden[0]["output"])
        assert found, hidden[0]["output"]
        seed = int(found.group(1))
        seeds.append(seed)
        drawn = drawn_sizes(seed)
        assert drawn & number_tokens(hidden[0]["output"]), hidden[0]["output"]  # the instructor's detail has them
        views = {"stdout": proc.stdout, "results.json output": data["output"]}
        views.update({f"test {t['name']!r}": t["output"] for t in data["tests"] if t["visibility"] != "hidden"})
        for where, text in views.items():
            tokens = number_tokens(text)
            # (a seed under 100 could be a case count: only then is the token not searched)
            assert f"seed {seed}" not in text and "--seed" not in text and (seed < 100 or str(seed) not in tokens), \
                f"{where} shows the seed {seed}:\n{text}"
            assert not drawn & tokens, f"{where} shows hidden size(s) {sorted(drawn & tokens)}:\n{text}"
    assert seeds[0] != seeds[1], f"two gradings without --seed used the same seed {seeds[0]}"


@slow
def test_drill03_course_hints_hold_no_count():
    counted = {v for v in scan_counts.reference_slots().values() if len(v) >= 2 and v != "1024"}
    assert set(gd.HINTS03_COURSE) == set(gd.HINTS03)
    for slot, hints in gd.HINTS03.items():
        assert set(gd.HINTS03_COURSE[slot]) == set(hints), slot
        for wrong, hint in gd.HINTS03_COURSE[slot].items():
            leaked = (counted - {str(wrong)}) & number_tokens(hint)
            assert not leaked and not re.search(r"\bn ?/ ?2\b|n - 1|log2 (512|1024)", hint), (slot, hint, leaked)


# ---- Day 31, through evaluate with made-up dumps (no GPU) ------------------------------------

def day31_reports(**kwargs) -> tuple[Report, Report]:
    return tuple(d31.evaluate(Report("day31", "fake.cu", mode=mode), d31.Answers(2, SENTENCE),
                              [fake_run(CASE, **kwargs)]) for mode in ("self-study", "course"))


def test_day31_course_mode_shows_no_expected_value():
    def off_by_two(values, block):
        return [x + 2 for x in d31.exclusive_tiles(values, block)]

    def doubled(values, block):
        return [2 * x for x in d31.tile_totals(values, block)]

    self_study, course = day31_reports(out={"shift-then-scan": off_by_two}, totals={"scan-then-shift": doubled})
    same_checks_and_scores(self_study, course)
    assert_no_expected_values(self_study, course)
    # the side-by-side totals table holds the reference totals: instructor-only in course mode
    table = "block totals, random: n=3001"
    assert any(table in n for n in self_study.notes)
    assert not any(table in text for text in student_views(course).values())
    assert table in course.text(instructor=True) and table not in course.text(instructor=False)
    assert "is 2, should be 0" in self_study.check(d31.out_check("shift-then-scan")).feedback
    assert "first at index 0: out[0] is 2\n" in course.check(d31.out_check("shift-then-scan")).feedback + "\n"


def test_day31_starter_like_dump_scores_0():
    """The starter: the lesson's scan given, the other kernel inclusive, no totals, no answers."""
    nan = float("nan")
    run = fake_run(CASE, out={"shift-then-scan": d31.inclusive_tiles},
                   totals={k: (lambda v, b: [nan] * -(-len(v) // b)) for k in d31.KERNELS})
    report = d31.evaluate(Report("day31", "starter.cu"), d31.Answers(0, ""), [run])
    report.checks.insert(0, Check("builds", True, max_score=points_table()["day31"]["builds"].points))
    assert report.check(d31.out_check("scan-then-shift")).passed  # given in the starter, worth 0
    side = report.check(d31.SIDE_EFFECTS_CHECK)
    assert not side.passed and side.feedback.startswith("not counted yet"), side.feedback
    assert report.score == 0 and report.max_score == max_score("day31"), report.text()


def test_day31_a_compile_error_lists_every_check_and_scores_0(monkeypatch, tmp_path):
    monkeypatch.setattr(d31, "compile_submission",
                        lambda submission: d31.Compiled(None, feedback="fake.cu(3): error: expected a \";\""))
    report = d31.grade("day31", tmp_path / "fake.cu", tmp_path, seed=1, mode="course")
    assert [c.name for c in report.checks] == d31.CHECKS
    assert report.score == 0 and report.max_score == max_score("day31") > 0
    assert 'error: expected a ";"' in report.check("builds").feedback
    assert all(c.feedback.startswith("not run") for c in report.checks[1:])


# ---- honest scores ---------------------------------------------------------------------

@slow
@pytest.mark.parametrize("drill", DRILLS)
def test_untouched_starters_score_0(graded, drill):
    report = graded[f"{drill}-starter"]
    assert report.score == 0 and report.max_score == max_score(drill) > 0, report.text()


@slow
def test_the_starters_accidental_passes_are_gated(graded):
    report = graded["drill02-starter"]
    assert report.check("builds").passed and report.check("builds").max_score == 0
    associative = report.check(gd.CHECK_ASSOCIATIVE)  # `return b` is associative, and useless
    assert not associative.passed and associative.feedback.startswith("not counted yet: seg_combine must first")


@slow
@pytest.mark.parametrize("drill", ["drill01", "drill02"])
def test_a_compile_error_scores_0_of_the_same_maximum(graded, drill):
    report = graded[f"{drill}-nocompile"]
    assert not report.check("builds").passed and "error" in report.check("builds").feedback
    assert [c.name for c in report.checks] == list(points_table()[drill])
    assert report.score == 0 and report.max_score == max_score(drill) == graded[f"{drill}-starter"].max_score


# ---- points (harness/exercises.toml; the registry's own checks are test_registry.py's) -----------

def test_points_that_drifted_from_their_grader_are_refused():
    table = {"drill01": registry.parse_checks("[drill01.checks]", {
        "builds": {"points": 0, "visibility": "visible"}, "renamed": {"points": 1, "visibility": "visible"}})}
    with pytest.raises(PointsError, match=r"no entry for \['exclusive_to_inclusive'.*checks it does not have: "
                                          r"\['renamed'\]"):
        require_points("drill01", ["builds", *gd.DRILL01_CHECKS], table)


def test_visibility_and_points_come_from_the_file_and_detail_stays_hidden(monkeypatch):
    import scanlab.grading as grading

    table = {"drill01": {**points_table()["drill01"],
                         "total_from_exclusive": grading.Points(5, "after_published")}}
    monkeypatch.setattr(grading, "_POINTS", table)
    report = Report("drill01", "x.cpp", mode="course")
    report.add("total_from_exclusive", False, "returned 3, should be 99", student="returned 3")
    report.add("builds", True)
    check = report.check("total_from_exclusive")
    assert (check.max_score, check.visibility, check.feedback, check.detail) == \
        (5, "after_published", "returned 3", "returned 3, should be 99")
    assert "99" not in report.text(instructor=False) and "instructor: returned 3, should be 99" in report.text()
    tests = report.gradescope()["tests"]
    assert tests[0]["visibility"] == "after_published" and tests[0]["output"] == "returned 3"
    assert tests[1]["max_score"] == 0 and tests[2]["visibility"] == "hidden" and "99" in tests[2]["output"]
    with pytest.raises(PointsError, match="no entry for the check 'nonsense'"):
        report.add("nonsense", True)


# ---- drill 03's numbers belong to the harness ---------------------------------------------------

COUNT_SIZES = [1, 2, 3, 7, 8, 100, 1000, 1024, 1025, 4096]  # as test_drills.py: tiny, odd, powers of two


@slow
@pytest.mark.skipif(not (SOLUTIONS / "03_scan_analysis.cpp").is_file(), reason="no solutions/ (a student release)")
@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ on PATH")
@pytest.mark.parametrize("sizes", [(), tuple(COUNT_SIZES)], ids=["default", "many"])
def test_harness_counts_equal_the_solution_program(tmp_path, sizes):
    exe = tmp_path / "03_scan_analysis"
    built = subprocess.run(["g++", "-std=c++17", "-O2", "-o", str(exe), str(SOLUTIONS / "03_scan_analysis.cpp")],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    args = ["--n", ",".join(map(str, sizes))] if sizes else []
    printed = subprocess.run([str(exe), *args, "--slots"], capture_output=True, text=True, timeout=120)
    assert printed.returncode == 0, printed.stderr
    ours = scan_counts.slots(tuple(sizes) or scan_counts.DEFAULT_SIZES)
    assert printed.stdout == "".join(f"{k} = {v}\n" for k, v in ours.items())


def test_harness_counts_are_the_pages_figures():
    slots = scan_counts.reference_slots()
    assert set(slots) >= set(gd.SLOTS03)
    assert (slots["hs_adds_1024"], slots["bl_adds_1024"], slots["extra_work_factor_1024"]) == ("9217", "2046", "4.50")
    assert slots["bl_levels_under_25pct_1024"] == "14" and slots["shfl_block_adds_1024"] == "5249"


@slow
def test_drill03_grades_without_solutions(tmp_path):
    """A student release has no solutions/: grade.py drill03 still grades, in a copy without it."""
    copy = tmp_path / "release"
    (copy / "harness").mkdir(parents=True)
    shutil.copytree(REPO / "harness" / "scanlab", copy / "harness" / "scanlab",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("grade.py", "exercises.toml"):
        shutil.copyfile(REPO / "harness" / name, copy / "harness" / name)
    shutil.copytree(EXERCISES, copy / "exercises")
    assert not (copy / "solutions").exists()
    answers = tmp_path / "answers.md"
    answers.write_text((SOLUTIONS / FILES["drill03"]).read_text())  # written before the copy lost it
    for submission, status in ((copy / "exercises" / FILES["drill03"], EXIT_FAIL), (answers, EXIT_PASS)):
        result = subprocess.run([sys.executable, str(copy / "harness" / "grade.py"), "drill03", str(submission),
                                 "--mode", "course"], capture_output=True, text=True, timeout=120, cwd=copy)
        assert result.returncode == status, result.stdout + result.stderr
        assert "Traceback" not in result.stderr and "solutions" not in result.stdout, result.stdout
        assert f"/{max_score('drill03'):g}: " in result.stdout.splitlines()[-1]
