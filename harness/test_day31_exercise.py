"""The Day 31 exercise: its grader, its starter, its solution, planted mistakes.

The grading logic (`evaluate`, the diagnoses, the JSON) is tested on the CPU
with made-up checker dumps; the whole pipeline (build the submission into the
harness's checker, run it, grade) needs a GPU.
"""

from __future__ import annotations

import json
import math

import pytest

from scanlab import EXIT_FAIL, EXIT_NO_GPU, EXIT_PASS
from scanlab.grade_day31 import (BLOCKS, KERNELS, Case, Dump, KernelRun, checker_program, evaluate,
                                 exclusive_tiles, grade, inclusive_tiles, random_small, tile_totals)
from scanlab.grading import Report
from scanlab.paths import REPO
from scanlab.run import run

STARTER = REPO / "exercises" / "day31_shift_then_scan.cu"
SOLUTION = REPO / "solutions" / "day31_shift_then_scan.cu"
PASSES_BY_PRINTING = REPO / "harness" / "planted" / "day31_prints_pass.cu"
GRADE = REPO / "harness" / "grade.py"

NAN = float("nan")
OUT = {k: f"{k}: exclusive scan at 32, 64, 256, 1024 threads" for k in KERNELS}
TOTALS = {k: f"{k}: block totals at 32, 64, 256, 1024 threads" for k in KERNELS}


# ---- the grading logic, on made-up dumps (no GPU) --------------------------------

def fake_results(case: Case, answer=1, sentence="Scan-then-shift keeps the whole tile, so its last word is the total.",
                 out=None, totals=None):
    """A dump as the checker would write it; `out`/`totals` override one kernel's arrays."""
    runs = {}
    for block in BLOCKS:
        runs[block] = {}
        for kernel in KERNELS:
            o = exclusive_tiles(case.values, block)
            t = tile_totals(case.values, block)
            if out and kernel in out:
                o = out[kernel](case.values, block)
            if totals and kernel in totals:
                t = totals[kernel](case.values, block)
            runs[block][kernel] = KernelRun(o, t)
    return [(case, Dump(answer, sentence, len(case.values), runs))]


CASE = Case("random: n=3001", random_small(3001, 5))


def graded(**kwargs) -> Report:
    return evaluate(Report("day31", "fake.cu"), fake_results(CASE, **kwargs))


def test_correct_outputs_pass_every_check():
    report = graded()
    assert report.passed, report.text()
    assert report.score == report.max_score == 6


def test_inclusive_instead_of_exclusive_is_diagnosed():
    report = graded(out={"shift-then-scan": inclusive_tiles})
    check = report.check(OUT["shift-then-scan"])
    assert not check.passed
    assert "INCLUSIVE" in check.feedback and "load element i - 1" in check.feedback
    assert "first at index 0" in check.feedback
    assert report.check(OUT["scan-then-shift"]).passed


def test_totals_missing_the_last_element_are_diagnosed():
    def short(values, block):
        return [sum(values[s:s + block]) - values[s:s + block][-1] for s in range(0, len(values), block)]

    report = graded(totals={"shift-then-scan": short})
    check = report.check(TOTALS["shift-then-scan"])
    assert not check.passed and "short by its tile's last input element" in check.feedback, check.feedback
    assert report.check(TOTALS["scan-then-shift"]).passed


def test_never_written_outputs_are_named_as_such():
    report = graded(out={"scan-then-shift": lambda v, b: [NAN] * len(v)},
                    totals={"scan-then-shift": lambda v, b: [NAN] * math.ceil(len(v) / b)})
    assert "never written" in report.check(OUT["scan-then-shift"]).feedback
    assert "never written" in report.check(TOTALS["scan-then-shift"]).feedback


def test_wrong_tile_start_is_diagnosed():
    def first_not_zero(values, block):
        out = exclusive_tiles(values, block)
        return [1.0 if i % block == 0 else x for i, x in enumerate(out)]

    check = graded(out={"scan-then-shift": first_not_zero}).check(OUT["scan-then-shift"])
    assert "first element of tiles" in check.feedback and "out[0] is 1, should be 0" in check.feedback


def test_unanswered_and_wrong_answers_fail():
    assert not graded(answer=0).check("answer: which version hands you the total").passed
    wrong = graded(answer=2).check("answer: which version hands you the total")
    assert not wrong.passed and "Look at what each tile holds" in wrong.feedback
    assert not graded(sentence="").check("answer: the sentence").passed
    assert not graded(sentence="TODO: one sentence saying why").check("answer: the sentence").passed


def test_side_by_side_totals_are_printed_pass_or_fail():
    text = graded(totals={"shift-then-scan": lambda v, b: [0.0] * math.ceil(len(v) / b)}).text()
    assert "block totals, random: n=3001" in text
    assert "scan-then-shift matches, shift-then-scan MISMATCHES" in text
    assert "scan-then-shift matches, shift-then-scan matches" not in text


def test_gradescope_json_shape(tmp_path):
    report = graded(out={"shift-then-scan": inclusive_tiles})
    path = tmp_path / "results.json"
    report.write_json(path)
    data = json.loads(path.read_text())
    assert data["score"] == 5
    assert {t["status"] for t in data["tests"]} == {"passed", "failed"}
    for test in data["tests"]:
        assert set(test) >= {"name", "score", "max_score", "status", "output"}


def test_grade_cli_usage_errors():
    assert run(["python3", GRADE, "nonsense", SOLUTION]).returncode == 2
    assert run(["python3", GRADE, "day31", "/no/such/file.cu"]).returncode == 2
    listed = run(["python3", GRADE, "--list"])
    assert listed.returncode == 0 and "day31" in listed.stdout


# ---- builds (nvcc, no GPU) ---------------------------------------------------------

STARTER_BUILD = checker_program(STARTER, "day31-starter-checker")
SOLUTION_BUILD = checker_program(SOLUTION, "day31-solution-checker")
BUILDS = [STARTER_BUILD, SOLUTION_BUILD]


@pytest.mark.cuda
@pytest.mark.parametrize("program", [STARTER_BUILD, SOLUTION_BUILD], ids=["starter", "solution"])
def test_starter_and_solution_compile_into_the_checker_without_warnings(builder, program):
    built = builder.get(program)
    assert built.warnings() == [], f"{built.reproduce}\n{built.output}"


@pytest.mark.cuda
def test_no_gpu_makes_the_grader_exit_3(tmp_path):
    result = run(["python3", GRADE, "day31", SOLUTION, "--seed", "1"], env_vars={"CUDA_VISIBLE_DEVICES": ""})
    assert result.returncode == EXIT_NO_GPU, result.describe()
    assert "no usable GPU" in result.stderr


# ---- the whole pipeline, on a GPU -------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.cuda
def test_solution_passes(tmp_path):
    report = grade("day31", SOLUTION, tmp_path, seed=12345)
    assert report.passed, report.text()
    assert any("scan-then-shift matches, shift-then-scan matches" in note for note in report.notes)


@pytest.mark.gpu
@pytest.mark.cuda
def test_untouched_starter_fails_instructively(tmp_path):
    report = grade("day31", STARTER, tmp_path, seed=7)
    assert report.check("builds").passed and report.check("runs").passed
    assert report.check(OUT["scan-then-shift"]).passed  # the lesson's kernel is given
    shifted = report.check(OUT["shift-then-scan"])
    assert not shifted.passed and "INCLUSIVE" in shifted.feedback
    for kernel in KERNELS:
        totals = report.check(TOTALS[kernel])
        assert not totals.passed and "never written" in totals.feedback
    assert not report.check("answer: which version hands you the total").passed
    assert not report.check("answer: the sentence").passed


def mutate_solution(tmp_path, old: str, new: str, name: str):
    text = SOLUTION.read_text()
    assert text.count(old) == 1, f"mutation {name!r} no longer applies to the solution; update this test"
    path = tmp_path / f"{name}.cu"
    path.write_text(text.replace(old, new))
    return path


@pytest.mark.gpu
@pytest.mark.cuda
def test_planted_totals_from_the_exclusive_result_fail_with_the_diagnosis(tmp_path):
    planted = mutate_solution(tmp_path, "block_totals[blockIdx.x] = tile[src * width + tid] + last;",
                              "block_totals[blockIdx.x] = tile[src * width + tid]; (void)last;",
                              "totals_without_last_element")
    report = grade("day31", planted, tmp_path, seed=99)
    check = report.check(TOTALS["shift-then-scan"])
    assert not check.passed and "short by its tile's last input element" in check.feedback, report.text()
    assert [c.name for c in report.failed()] == [TOTALS["shift-then-scan"]]


@pytest.mark.gpu
@pytest.mark.cuda
def test_planted_wrong_padding_is_caught_on_partial_tiles(tmp_path):
    # Padding the missing last element with 1 instead of the identity 0: right
    # on full tiles, wrong on the partial last tile the odd sizes create.
    planted = mutate_solution(tmp_path, "const float last = i < n ? in[i] : 0.0f;",
                              "const float last = i < n ? in[i] : 1.0f;", "padding_not_identity")
    report = grade("day31", planted, tmp_path, seed=5)
    check = report.check(TOTALS["shift-then-scan"])
    assert not check.passed and "should be" in check.feedback, report.text()


@pytest.mark.gpu
@pytest.mark.cuda
def test_a_submission_that_prints_pass_without_the_work_fails(tmp_path):
    report = grade("day31", PASSES_BY_PRINTING, tmp_path, seed=3)
    assert not report.passed
    for kernel in KERNELS:
        assert "never written" in report.check(OUT[kernel]).feedback


@pytest.mark.gpu
@pytest.mark.cuda
def test_grade_cli_exit_status_and_json(tmp_path):
    out = tmp_path / "results.json"
    passed = run(["python3", GRADE, "day31", SOLUTION, "--seed", "4", "--json", out])
    assert passed.returncode == EXIT_PASS, passed.describe()
    # builds, runs, the answer, the sentence, and out + totals for each kernel
    assert json.loads(out.read_text())["score"] == 8
    failed = run(["python3", GRADE, "day31", STARTER, "--seed", "4"])
    assert failed.returncode == EXIT_FAIL, failed.describe()
    assert "FAIL  shift-then-scan: exclusive scan" in failed.stdout
