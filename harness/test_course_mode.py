"""Course mode, points from harness/points.toml, honest scores, drill 03 without solutions/.

Course mode (issue 10) never shows a student an expected value. Each test here
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

from scanlab import EXIT_FAIL, EXIT_PASS
from scanlab import grade_day31 as d31
from scanlab import grade_drills as gd
from scanlab import scan_counts
from scanlab.day31_fakes import CASE, SENTENCE, fake_run
from scanlab.grading import (INSTRUCTOR_TEST, Check, PointsError, Report, load_points, max_score, points_table,
                             require_points)
from scanlab.paths import REPO

EXERCISES = REPO / "exercises"
SOLUTIONS = REPO / "solutions"
GRADE = REPO / "harness" / "grade.py"
FILES = {"day31": "day31_shift_then_scan.cu", "drill01": "01_exclusive_to_inclusive.cpp",
         "drill02": "02_segmented_scan.cpp", "drill03": "03_scan_analysis.md"}
SEED = 5
slow = pytest.mark.slow

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
        for drill in ("drill01", "drill02", "drill03"):
            self._submit(f"{drill}-starter", drill, EXERCISES / FILES[drill], "course", root)
        self._submit("drill01-nocompile", "drill01", REPO / "harness" / "planted" / "drill01_nocompile.cpp",
                     "course", root)
        self._submit("drill02-nocompile", "drill02", mutated(root, "drill02-nocompile"), "course", root)

    def _submit(self, key: str, drill: str, path: Path, mode: str, root: Path) -> None:
        self.futures[key] = self.pool.submit(gd.grade, drill, path, root / key, SEED, mode=mode)

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
@pytest.mark.parametrize("drill", ["drill01", "drill02", "drill03"])
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
    # the tree note keeps the submission's own count and never compares it with drill 03's answers
    assert any(n.startswith("tree_scan_inclusive did 8977 combines at n = 1000") for n in drill02.notes)
    assert not any("2046" in n for n in drill02.notes + drill02.instructor_notes)
    drill03 = graded["drill03-wrong-course"]
    check = drill03.check("bl_levels_under_25pct_1024")
    assert check.feedback.startswith("you wrote 16: not the count") and "one thread per pair" in check.feedback
    assert "512" not in check.feedback and "14" in check.detail


@slow
def test_drill03_course_hints_hold_no_count():
    counted = {v for v in scan_counts.reference_slots().values() if len(v) >= 2 and v != "1024"}
    assert set(gd.HINTS03_COURSE) == set(gd.HINTS03)
    for slot, hints in gd.HINTS03.items():
        assert set(gd.HINTS03_COURSE[slot]) == set(hints), slot
        for wrong, hint in gd.HINTS03_COURSE[slot].items():
            leaked = (counted - {str(wrong)}) & number_tokens(hint)
            assert not leaked and not re.search(r"\bn ?/ ?2\b|n - 1|log2 1024", hint), (slot, hint, leaked)


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
    monkeypatch.setattr(d31, "build_runner", lambda: tmp_path / "runner")
    monkeypatch.setattr(d31, "compile_submission",
                        lambda submission: d31.Compiled(None, feedback="fake.cu(3): error: expected a \";\""))
    report = d31.grade("day31", tmp_path / "fake.cu", tmp_path, seed=1, mode="course")
    assert [c.name for c in report.checks] == d31.CHECKS
    assert report.score == 0 and report.max_score == max_score("day31") > 0
    assert 'error: expected a ";"' in report.check("builds").feedback
    assert all(c.feedback.startswith("not run") for c in report.checks[1:])


# ---- honest scores ---------------------------------------------------------------------

@slow
@pytest.mark.parametrize("drill", ["drill01", "drill02", "drill03"])
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


# ---- points.toml -----------------------------------------------------------------------------

def test_points_cover_every_check_of_every_grader():
    sys.path.insert(0, str(REPO / "harness"))
    import grade

    assert set(points_table()) == set(grade.GRADERS)
    from scanlab import grade_stretch

    every = {"day31": d31.CHECKS, "drill01": ["builds", *gd.DRILL01_CHECKS],
             "drill02": ["builds", *gd.DRILL02_CHECKS], "drill03": list(gd.SLOTS03),
             "drill04": grade_stretch.CHECKS04, "drill05": grade_stretch.CHECKS05, "drill06": grade_stretch.CHECKS06}
    for exercise, names in every.items():
        assert list(points_table()[exercise]) == names, exercise  # the report's order, too
        require_points(exercise, names)
        if "builds" in names:
            assert points_table()[exercise]["builds"].points == 0  # shown, not scored
    assert {e: max_score(e) for e in every} == {"day31": 7, "drill01": 3, "drill02": 11, "drill03": 25,
                                                "drill04": 5, "drill05": 5, "drill06": 5}


def write_points(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "points.toml"
    path.write_text(body)
    return path


@pytest.mark.parametrize("body, phrase", [
    ('[drill01]\n"builds" = { points = 0 }\n', "must be { points = P"),
    ('[drill01]\n"builds" = { points = -1, visibility = "visible" }\n', "points must be a number >= 0"),
    ('[drill01]\n"builds" = { points = 1, visibility = "secret" }\n', "visibility must be one of"),
    ('[drill01\n', "cannot be read"),
])
def test_a_malformed_points_file_is_refused(tmp_path, body, phrase):
    with pytest.raises(PointsError, match=re.escape(phrase)):
        load_points(write_points(tmp_path, body))


def test_a_points_file_that_drifted_from_its_grader_is_refused(tmp_path):
    table = load_points(write_points(tmp_path, '[drill01]\n"builds" = { points = 0, visibility = "visible" }\n'
                                                '"renamed" = { points = 1, visibility = "visible" }\n'))
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
    for name in ("grade.py", "points.toml"):
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
