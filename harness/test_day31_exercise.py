"""The Day 31 exercise: its grader, its starter, its solution, planted mistakes.

The grading logic (`evaluate`, the diagnoses, the plan the runner follows, the
answers read from the module, the words for a launch without results) is tested
on the CPU with made-up runner dumps and the plan runner's stand-in
(scanlab/gpu_fakes.py). The device-only compile of a submission (sandboxed nvcc)
needs nvcc only; launching kernels needs a GPU. The runner itself is tested in
test_gpu_plan.py.
"""

from __future__ import annotations

import json
import math
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from scanlab import EXIT_FAIL, EXIT_NO_GPU, EXIT_PASS, gpu_plan
from scanlab.grade_day31 import (BLOCKS, GUARD, KERNEL_SYMBOLS, KERNELS, POISON, SENTENCE_CHECK, SENTENCE_GLOBAL,
                                 SIDE_EFFECTS_CHECK, VERSION_CHECK, VERSION_GLOBAL, Answers, Case, Launch, Printed,
                                 compile_submission, day31_plan, evaluate, exclusive_tiles, f32_bytes, grade,
                                 inclusive_tiles, missing_kernel_message, module_answers, outside_includes, run_cases,
                                 scratch_name, tile_totals, wrapper_source)
from scanlab.day31_fakes import CASE, SENTENCE, answer_globals, day31_box, fake_run, guarded
from scanlab.grading import Report, max_score
from scanlab.paths import REPO
from scanlab.run import run
from scanlab.source import device_functions, strip_comments_and_strings

STARTER = REPO / "exercises" / "day31_shift_then_scan.cu"
SOLUTION = REPO / "solutions" / "day31_shift_then_scan.cu"
GRADE = REPO / "harness" / "grade.py"

NAN = float("nan")
OUT = {k: f"{k}: exclusive scan at 32, 64, 256, 1024 threads" for k in KERNELS}
TOTALS = {k: f"{k}: block totals at 32, 64, 256, 1024 threads" for k in KERNELS}


# ---- the grading logic, on made-up runner dumps (no GPU) --------------------------------



def graded(answer=1, sentence=SENTENCE, answers: Answers | None = None, **kwargs) -> Report:
    return evaluate(Report("day31", "fake.cu"), answers or Answers(answer, sentence), [fake_run(CASE, **kwargs)])


def test_correct_outputs_pass_every_check():
    report = graded()
    assert report.passed, report.text()
    # the two answers, out and totals for each kernel, and the side effects ("builds" is added by grade,
    # and is worth 0): every point of harness/points.toml
    assert report.score == report.max_score == max_score("day31") == 7
    assert report.check(SIDE_EFFECTS_CHECK).passed


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


def test_a_nan_read_from_outside_the_input_is_diagnosed():
    def reads_in_minus_one(values, block):
        out = exclusive_tiles(values, block)
        out[1] = NAN  # lane 1 of tile 0 added in[-1], a poisoned guard word
        return out

    check = graded(out={"shift-then-scan": reads_in_minus_one}).check(OUT["shift-then-scan"])
    assert not check.passed and "read outside the input" in check.feedback, check.feedback


def test_wrong_tile_start_is_diagnosed():
    def first_not_zero(values, block):
        out = exclusive_tiles(values, block)
        return [1.0 if i % block == 0 else x for i, x in enumerate(out)]

    check = graded(out={"scan-then-shift": first_not_zero}).check(OUT["scan-then-shift"])
    assert "first element of tiles" in check.feedback and "out[0] is 1, should be 0" in check.feedback


def test_unanswered_and_wrong_answers_fail():
    assert not graded(answer=0).check(VERSION_CHECK).passed
    wrong = graded(answer=2).check(VERSION_CHECK)
    assert not wrong.passed and "Look at what each tile holds" in wrong.feedback
    assert not graded(sentence="").check(SENTENCE_CHECK).passed
    assert not graded(sentence="TODO: one sentence saying why").check(SENTENCE_CHECK).passed


def test_answers_that_could_not_be_read_fail_both_answer_checks_but_not_the_kernels():
    report = graded(answers=Answers(why="could not be read at compile time: keep them constexpr as in the starter"))
    for name in (VERSION_CHECK, SENTENCE_CHECK):
        assert not report.check(name).passed and "keep them constexpr" in report.check(name).feedback
    assert all(report.check(OUT[k]).passed and report.check(TOTALS[k]).passed for k in KERNELS)


def test_side_by_side_totals_are_printed_pass_or_fail():
    text = graded(totals={"shift-then-scan": lambda v, b: [0.0] * math.ceil(len(v) / b)}).text()
    assert "block totals, random: n=3001" in text
    assert "scan-then-shift matches, shift-then-scan MISMATCHES" in text
    assert "scan-then-shift matches, shift-then-scan matches" not in text


def word(value: float) -> bytes:
    return struct.pack("<f", value)


def test_a_write_past_the_end_of_out_fails_the_side_effects_check_only():
    def past_end(values, block, launch):
        launch.out_words = guarded(f32_bytes(exclusive_tiles(values, block)), after=word(7.0) + POISON * (GUARD - 1))
        return launch

    report = graded(launch={"shift-then-scan": past_end})
    check = report.check(SIDE_EFFECTS_CHECK)
    assert not check.passed
    assert "shift-then-scan" in check.feedback and "wrote past the end of out" in check.feedback
    assert "out[3001] = 7" in check.feedback and "if (i < n)" in check.feedback, check.feedback
    assert "scan-then-shift" not in check.feedback
    assert report.check(OUT["shift-then-scan"]).passed  # out itself is right


def test_writes_before_out_and_past_block_totals_are_named():
    def outside(values, block, launch):
        launch.out_words = guarded(f32_bytes(exclusive_tiles(values, block)), before=POISON * (GUARD - 1) + word(0.0))
        launch.totals_words = guarded(f32_bytes(tile_totals(values, block)), after=word(3.0) + POISON * (GUARD - 1))
        return launch

    feedback = graded(launch={"scan-then-shift": outside}).check(SIDE_EFFECTS_CHECK).feedback
    assert "wrote before the start of out" in feedback and "out[-1] = 0" in feedback, feedback
    assert "wrote past the end of block_totals" in feedback and "one slot per block" in feedback, feedback
    assert f"block_totals[{math.ceil(3001 / 32)}] = 3" in feedback, feedback


def test_a_changed_input_is_caught_even_when_the_outputs_are_right():
    def zeroes_input(values, block, launch):
        launch.input_words = guarded(f32_bytes([0.0] * len(values)))
        return launch

    report = graded(launch={"scan-then-shift": zeroes_input})
    check = report.check(SIDE_EFFECTS_CHECK)
    first_nonzero = next(i for i, v in enumerate(CASE.values) if v != 0)
    assert not check.passed and "changed the input" in check.feedback, check.feedback
    assert f"in[{first_nonzero}] is now 0, was {int(CASE.values[first_nonzero])}" in check.feedback
    assert report.check(OUT["scan-then-shift"]).passed


def test_a_crash_fails_that_kernel_once_per_distinct_error():
    def crashes(values, block, launch):
        return Launch(error="crashed while running the kernel: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory "
                            "access was encountered)")

    report = graded(launch={"shift-then-scan": crashes})
    for name in (OUT["shift-then-scan"], TOTALS["shift-then-scan"]):
        check = report.check(name)
        assert not check.passed and "CUDA_ERROR_ILLEGAL_ADDRESS" in check.feedback
        assert "32 threads" in check.feedback and "the same at 3 more launch(es)" in check.feedback, check.feedback
    assert report.check(OUT["scan-then-shift"]).passed and report.check(SIDE_EFFECTS_CHECK).passed


def test_nothing_finished_means_the_side_effects_check_fails():
    report = graded(launch={k: (lambda v, b, launch: Launch(error="did not finish: time limit 30 s exceeded"))
                            for k in KERNELS})
    assert not report.passed
    check = report.check(SIDE_EFFECTS_CHECK)
    assert not check.passed and "no launch of either kernel finished" in check.feedback


def test_gradescope_json_shape(tmp_path):
    report = graded(out={"shift-then-scan": inclusive_tiles})
    path = tmp_path / "results.json"
    report.write_json(path)
    data = json.loads(path.read_text())
    assert data["score"] == 7 - 2  # shift-then-scan's scan is worth 2 (harness/points.toml)
    assert {t["status"] for t in data["tests"]} == {"passed", "failed"}
    for test in data["tests"]:
        assert set(test) >= {"name", "score", "max_score", "status", "output"}


# ---- the exercise is built on the lesson ---------------------------------------------------

LESSON = REPO / "day31-scan" / "scan.cu"


def functions_of(path) -> dict[str, list[str]]:
    return device_functions(strip_comments_and_strings(path.read_text()))


@pytest.mark.parametrize("program", [STARTER, SOLUTION], ids=["starter", "solution"])
def test_the_helper_is_the_lessons_own_token_for_token(program):
    """The starter and the solution call the lesson's hillisSteeleDoubleBuffer, not a look-alike."""
    lesson = functions_of(LESSON)["hillisSteeleDoubleBuffer"]
    assert functions_of(program)["hillisSteeleDoubleBuffer"] == lesson, \
        f"{program.name}'s hillisSteeleDoubleBuffer is not day31-scan/scan.cu's: copy the lesson's, unchanged"


# ---- the plan the runner follows, and what comes back (on the runner's stand-in) ------------

def test_the_answers_are_read_from_the_modules_globals():
    assert module_answers(gpu_plan.ModuleInfo(globals=answer_globals(2, "Scan first, then shift."))) == \
        (2, "Scan first, then shift.")
    assert module_answers(gpu_plan.ModuleInfo(globals={VERSION_GLOBAL: None, SENTENCE_GLOBAL: None})) == (None, None)
    assert module_answers(gpu_plan.ModuleInfo(load_error="CUDA_ERROR_OUT_OF_MEMORY (out of memory)")) == (None, None)
    version, sentence = module_answers(gpu_plan.ModuleInfo(globals=answer_globals(1, "x" * 4096, truncated=True)))
    assert version == 1 and sentence == "x" * 4096 + " [cut at 4096 bytes]"


ONE = Case("one element", [3.0])
INPUTS = [CASE, ONE]


def test_the_plan_launches_each_kernel_at_every_block_size_never_twice_on_one_input_in_a_row():
    plan = day31_plan(INPUTS)
    assert plan.globals == {VERSION_GLOBAL: 4, SENTENCE_GLOBAL: 4096 + 8}
    keys = [task.key for task in plan.tasks]
    assert keys == [(c, block, kernel) for kernel in KERNELS for block in BLOCKS for c in range(len(INPUTS))]
    assert all(a[0] != b[0] for a, b in zip(keys, keys[1:]))  # the input changes at every launch
    task = plan.tasks[keys.index((0, 256, "shift-then-scan"))]
    tiles = math.ceil(3001 / 256)
    assert [(b.name, b.type, b.count, b.guard, b.init) for b in task.buffers] == [
        ("in", "f32", 3001, GUARD, "file"), ("out", "f32", 3001, GUARD, "poison"),
        ("totals", "f32", tiles, GUARD, "poison")]
    assert task.launches == [f"launch {KERNEL_SYMBOLS['shift-then-scan']} {tiles} 256 0 @in @out @totals u64:3001"]
    assert task.dumps == ["out", "totals", "in"]


def day31_runs(monkeypatch, box, inputs=INPUTS):
    monkeypatch.setattr(gpu_plan, "Sandbox", box)
    monkeypatch.setattr(gpu_plan, "build_runner", lambda: Path("gpu_runner"))
    printed = Printed()
    runs, module = run_cases(b"fatbin", inputs, printed)
    return runs, module, printed


def fate_at(inputs, fates: dict):
    """A fate for FakeGpuBox from {(input, block, kernel) or (block, kernel): fate}."""
    keys = [task.key for task in day31_plan(inputs).tasks]
    return lambda k, kernel: fates.get(keys[k], fates.get(keys[k][1:], "ok"))


def test_right_kernels_come_back_as_launches_with_every_word(monkeypatch):
    runs, module, printed = day31_runs(monkeypatch, day31_box(printed="x"))
    assert module_answers(module) == (1, SENTENCE)
    for run in runs:
        for block in BLOCKS:
            for kernel in KERNELS:
                launch = run.launches[block][kernel]
                assert not launch.error and launch.guard == GUARD
                assert launch.out == f32_bytes(exclusive_tiles(run.case.values, block))
                assert launch.totals == f32_bytes(tile_totals(run.case.values, block))
                assert launch.input == f32_bytes(run.case.values)
                assert launch.out_words[:4 * GUARD] == launch.totals_words[-4 * GUARD:] == POISON * GUARD
    assert printed.kept == 2 * len(BLOCKS) * len(INPUTS)  # one "x" a launch, in one process
    assert evaluate(Report("day31", "fake.cu"), Answers(1, SENTENCE), runs).passed


HANG = " (a hang: a barrier some lanes never reach, or a loop that never ends?)"


def test_a_crash_a_hang_and_a_missing_kernel_keep_their_words(monkeypatch):
    fates = {(64, "shift-then-scan"): "crash", (0, 1024, "shift-then-scan"): "hang",
             (1, 32, "scan-then-shift"): "signal"}
    box = day31_box(fate_at(INPUTS, fates))
    runs, _, _ = day31_runs(monkeypatch, box)
    first, one = (run.launches for run in runs)
    crashed = ("crashed while running the kernel: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was "
               "encountered)")
    assert first[64]["shift-then-scan"].error == one[64]["shift-then-scan"].error == crashed
    assert first[1024]["shift-then-scan"].error == f"did not finish: time limit 2 s per launch exceeded{HANG}"
    assert one[1024]["shift-then-scan"].error == ("not launched: this kernel did not finish earlier (time limit 2 s "
                                                 "per launch exceeded at 1024 threads)")
    assert one[32]["scan-then-shift"].error == "did not finish: killed by SIGSEGV"  # not a hang: the kernel runs on
    assert not first[64]["scan-then-shift"].error and not one[256]["shift-then-scan"].error
    assert len(box.runs) == 4  # a fresh process after the signal and after each crash; none is left after the hang

    runs, _, _ = day31_runs(monkeypatch, day31_box(fate_at(INPUTS, {(256, "scan-then-shift"): "limit"}),
                                                   missing=("shift-then-scan",)))
    first, one = (run.launches for run in runs)
    assert first[256]["scan-then-shift"].error == f"did not finish: wall-clock limit 20 s exceeded{HANG}"
    assert one[256]["scan-then-shift"].error == ("not launched: this kernel did not finish earlier (wall-clock limit "
                                                "20 s exceeded at 256 threads)")
    have = [(KERNEL_SYMBOLS["scan-then-shift"],) * 2]
    assert {one[b]["shift-then-scan"].error for b in BLOCKS} == {missing_kernel_message("shift-then-scan", have)}


def test_a_module_that_does_not_load_fails_every_launch(monkeypatch):
    runs, module, _ = day31_runs(monkeypatch, day31_box(load_error="device kernel image is invalid"))
    assert module.load_error == "CUDA_ERROR_INVALID_IMAGE (device kernel image is invalid)"
    assert {launch.error for run in runs for by in run.launches.values() for launch in by.values()} == \
        {"your module did not load: CUDA_ERROR_INVALID_IMAGE (device kernel image is invalid)"}


def test_a_missing_kernel_lists_what_the_module_has():
    message = missing_kernel_message("shift-then-scan", [("_Z6myScanPfi", "myScan(float*, int)")])
    assert "kernel not found" in message
    assert "scanExclusiveShiftThenScan(const float*, float*, float*, size_t)" in message
    assert "your module has: myScan(float*, int)" in message


def test_scratch_names_keep_plain_names_only():
    assert scratch_name(SOLUTION) == "day31_shift_then_scan.cu"
    for odd in ("my file.cu", "-rf.cu", "x;rm.cu", ".hidden.cu", "scanlab_day31_wrapper.cu", "module.fatbin"):
        assert scratch_name(REPO / odd) == "submission.cu", odd
    source = wrapper_source("day31_shift_then_scan.cu")
    assert '#include "day31_shift_then_scan.cu"' in source and "#define SCANLAB_GRADER 1" in source
    assert source.index("#include") < source.index("scanlab_free_total_version")


def test_includes_from_outside_the_scratch_folder_and_the_system_are_found(tmp_path):
    deps = (f"module.fatbin : scanlab_day31_wrapper.cu \\\n    sub.cu /usr/include/stdio.h \\\n"
            f"    /usr/local/cuda/bin/../targets/x86_64-linux/include/cuda_runtime.h \\\n"
            f"    {tmp_path}/sub.cu /sandbox/sub.cu \\\n    {REPO}/solutions/day31_shift_then_scan.cu ../up.cu\n")
    assert outside_includes(deps, tmp_path) == [f"{REPO}/solutions/day31_shift_then_scan.cu",
                                                str(tmp_path.parent / "up.cu")]
    assert outside_includes("module.fatbin : sub.cu /usr/include/my\\ header.h\n", tmp_path) == []


def test_grade_cli_usage_errors():
    assert run(["python3", GRADE, "nonsense", SOLUTION]).returncode == 2
    assert run(["python3", GRADE, "day31", "/no/such/file.cu"]).returncode == 2
    listed = run(["python3", GRADE, "--list"])
    assert listed.returncode == 0 and "day31" in listed.stdout


# ---- device-only compiles (nvcc, no GPU) ---------------------------------------------------

def variant(tmp_path, name: str, text_or_bytes):
    path = tmp_path / name
    if isinstance(text_or_bytes, bytes):
        path.write_bytes(text_or_bytes)
    else:
        path.write_text(text_or_bytes)
    return path


def solution_text() -> str:
    return SOLUTION.read_text()


# Correct but unusual: each must compile with its answers exported, and (on a GPU) pass.
UNUSUAL = {
    "guarded-main": lambda s: (s + "\n#ifndef SCANLAB_GRADER\n#include <cstdio>\n"
                               "int main() { std::puts(\"mine\"); }\n#endif\n"),
    "unguarded-main": lambda s: s + "\n#include <cstdio>\nint main() { std::puts(\"PASS\"); return 0; }\n",
    "using-namespace-std": lambda s: "#include <vector>\n#include <algorithm>\nusing namespace std;\n" + s,
    "lesson-constants": lambda s: ("#include <cstddef>\nconstexpr int kExitPass = 0;\nconstexpr int kExitNoGpu = 3;\n"
                                   "constexpr unsigned int kDefaultBlocks[] = {32, 64, 256, 1024};\n"
                                   "constexpr size_t kDefaultN = 1049187;\n"
                                   "#define CUDA_CHECK(call) (call)\nstatic int openDevice() { return 0; }\n" + s),
    "crlf": lambda s: s.replace("\n", "\r\n").encode(),
    "bom": lambda s: b"\xef\xbb\xbf" + s.encode(),
    "bom-and-crlf": lambda s: b"\xef\xbb\xbf" + s.replace("\n", "\r\n").encode(),
}


@pytest.mark.cuda
@pytest.mark.parametrize("program", [STARTER, SOLUTION], ids=["starter", "solution"])
def test_starter_and_solution_compile_to_device_code_with_their_answers(program):
    compiled = compile_submission(program)
    assert compiled.fatbin and compiled.exports, compiled.feedback or compiled.export_error


@pytest.mark.cuda
@pytest.mark.parametrize("name", list(UNUSUAL))
def test_unusual_but_correct_submissions_compile_with_their_answers(tmp_path, name):
    path = variant(tmp_path, f"{name}.cu", UNUSUAL[name](solution_text()))
    compiled = compile_submission(path)
    assert compiled.fatbin and compiled.exports, compiled.feedback or compiled.export_error


@pytest.mark.cuda
def test_an_odd_file_name_compiles_as_submission_cu(tmp_path):
    path = variant(tmp_path, "my day31 (final).cu", solution_text())
    compiled = compile_submission(path)
    assert compiled.fatbin and compiled.exports, compiled.feedback


@pytest.mark.cuda
def test_answers_that_are_not_constants_lose_the_answers_not_the_kernels(tmp_path):
    path = variant(tmp_path, "runtime_answers.cu", solution_text().replace(
        "constexpr int kFreeTotalVersion = 1;", "int kFreeTotalVersion = 1;"))
    compiled = compile_submission(path)
    assert compiled.fatbin and not compiled.exports
    assert "keep them constexpr as in the starter" in compiled.export_error


@pytest.mark.cuda
def test_a_compile_error_shows_the_students_own_error(tmp_path):
    path = variant(tmp_path, "broken.cu", solution_text().replace("const float last = i < n ? in[i] : 0.0f;",
                                                                 "const float last = i < n ? in[i] : 0.0f"))
    compiled = compile_submission(path)
    assert compiled.fatbin is None
    assert "broken.cu(" in compiled.feedback and "error" in compiled.feedback, compiled.feedback
    assert "day31_exports" not in compiled.feedback  # never blame the harness's part on the student


@pytest.mark.cuda
def test_a_file_of_the_repository_cannot_be_included(tmp_path):
    path = variant(tmp_path, "include_solution.cu", f'#include "{SOLUTION}"\n')
    compiled = compile_submission(path)
    assert compiled.fatbin is None, "the solution was included from the repository"
    assert "day31_shift_then_scan.cu" in compiled.feedback, compiled.feedback


@pytest.mark.cuda
def test_the_module_has_the_names_the_runner_asks_for(tmp_path):
    """The mangled kernel names and the two answer globals, read from a cubin of the solution's wrapper."""
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf (binutils) is not installed")
    from scanlab import env

    shutil.copyfile(SOLUTION, tmp_path / SOLUTION.name)
    (tmp_path / "wrapper.cu").write_text(wrapper_source(SOLUTION.name))
    cubin = tmp_path / "module.cubin"
    built = subprocess.run([env.nvcc(), "-std=c++17", "-O3", "-cubin", "-arch=sm_90", "-o", str(cubin),
                            str(tmp_path / "wrapper.cu")], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    symbols = subprocess.run([readelf, "-Ws", str(cubin)], capture_output=True, text=True).stdout.split()
    for name in [*KERNEL_SYMBOLS.values(), "scanlab_free_total_version", "scanlab_free_total_sentence"]:
        assert name in symbols, name


@pytest.mark.cuda
@pytest.mark.parametrize("exercise, program", [("day31", SOLUTION), ("drill04", REPO / "solutions" / "04_warp_scan.cu")])
def test_no_gpu_is_not_graded_with_no_score_and_says_where_to_grade(tmp_path, exercise, program):
    """No GPU: exit 3, and the report and results.json say "not graded" and where it can be graded,
    with no FAIL, no score (a grade book must not read it as 0), no loader noise and no runner name."""
    out = tmp_path / "results.json"
    result = run(["python3", GRADE, exercise, program, "--seed", "1", "--json", out, "--mode", "course"],
                 env_vars={"CUDA_VISIBLE_DEVICES": ""})
    assert result.returncode == EXIT_NO_GPU, result.describe()
    assert "no usable GPU" in result.stderr
    assert "NOT GRADED" in result.stdout and "Colab" in result.stdout, result.stdout
    for noise in ("FAIL", "score 0", "error while loading shared libraries", "gpu_runner"):
        assert noise not in result.stdout, (noise, result.stdout)
    data = json.loads(out.read_text())
    assert "score" not in data and all("score" not in t and "status" not in t for t in data["tests"]), data
    assert "not graded" in data["output"] and "Colab" in data["tests"][0]["output"]


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
    assert report.check("builds").passed
    # Stores nothing stray because it stores nothing of its own: not counted (harness/points.toml).
    assert report.check(SIDE_EFFECTS_CHECK).feedback.startswith("not counted yet")
    assert report.check(OUT["scan-then-shift"]).passed  # the lesson's kernel is given, and worth 0
    shifted = report.check(OUT["shift-then-scan"])
    assert not shifted.passed and "INCLUSIVE" in shifted.feedback
    for kernel in KERNELS:
        totals = report.check(TOTALS[kernel])
        assert not totals.passed and "never written" in totals.feedback
    assert not report.check(VERSION_CHECK).passed
    assert not report.check(SENTENCE_CHECK).passed
    assert len(report.failed()) == 6, report.text()
    assert report.score == 0 and report.max_score == max_score("day31"), report.text()


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("name", list(UNUSUAL))
def test_unusual_but_correct_submissions_pass(tmp_path, name):
    path = variant(tmp_path, f"{name}.cu", UNUSUAL[name](solution_text()))
    report = grade("day31", path, tmp_path, seed=11)
    assert report.passed, report.text()


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
def test_planted_store_without_its_guard_is_caught_past_the_end_of_out(tmp_path):
    planted = mutate_solution(tmp_path, "if (i < n) out[i] = tile[src * width + tid];",
                              "out[i] = tile[src * width + tid];", "unguarded_store")
    report = grade("day31", planted, tmp_path, seed=6)
    check = report.check(SIDE_EFFECTS_CHECK)
    assert not check.passed and "shift-then-scan" in check.feedback, report.text()
    assert "wrote past the end of out" in check.feedback
    assert [c.name for c in report.failed()] == [SIDE_EFFECTS_CHECK]


@pytest.mark.gpu
@pytest.mark.cuda
def test_planted_write_into_the_input_is_caught(tmp_path):
    planted = mutate_solution(tmp_path, "if (tid == width - 1) block_totals[blockIdx.x] = tile[src * width + tid];",
                              "if (tid == width - 1) block_totals[blockIdx.x] = tile[src * width + tid];\n"
                              "    if (i < n) const_cast<float*>(in)[i] = -1.0f;", "writes_input")
    report = grade("day31", planted, tmp_path, seed=8)
    check = report.check(SIDE_EFFECTS_CHECK)
    assert not check.passed and "scan-then-shift" in check.feedback and "changed the input" in check.feedback, \
        report.text()


@pytest.mark.gpu
@pytest.mark.cuda
def test_planted_illegal_address_is_a_crash_of_that_kernel_only(tmp_path):
    planted = mutate_solution(tmp_path, "if (i < n) out[i] = tile[src * width + tid];",
                              "if (i < n) out[i + (size_t(1) << 40)] = tile[src * width + tid];", "illegal_address")
    report = grade("day31", planted, tmp_path, seed=9)
    check = report.check(OUT["shift-then-scan"])
    assert not check.passed and "crashed" in check.feedback and "CUDA_ERROR_ILLEGAL_ADDRESS" in check.feedback, \
        report.text()
    # a fresh process after each crash: the other kernel is still graded, and passes
    assert report.check(OUT["scan-then-shift"]).passed and report.check(TOTALS["scan-then-shift"]).passed


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.slow
def test_planted_hang_is_the_time_limit_and_costs_that_kernel_only(tmp_path):
    planted = mutate_solution(tmp_path, "tile[tid] = (tid > 0 && i - 1 < n) ? in[i - 1] : 0.0f;",
                              "if (width == 1024) { while (clock64() >= 0) {} }\n"
                              "    tile[tid] = (tid > 0 && i - 1 < n) ? in[i - 1] : 0.0f;", "hangs_at_1024")
    report = grade("day31", planted, tmp_path, seed=10)
    check = report.check(OUT["shift-then-scan"])
    assert not check.passed and "time limit" in check.feedback and "1024 threads" in check.feedback, report.text()
    assert report.check(OUT["scan-then-shift"]).passed and report.check(TOTALS["scan-then-shift"]).passed


@pytest.mark.gpu
@pytest.mark.cuda
def test_a_renamed_kernel_is_not_found_and_the_module_is_listed(tmp_path):
    planted = mutate_solution(tmp_path, "__global__ void scanExclusiveShiftThenScan(",
                              "__global__ void scanExclusiveShiftThenScanMine(", "renamed_kernel")
    report = grade("day31", planted, tmp_path, seed=12)
    check = report.check(OUT["shift-then-scan"])
    assert not check.passed and "kernel not found" in check.feedback, report.text()
    assert "scanExclusiveShiftThenScanMine(float const*, float*, float*, unsigned long)" in check.feedback
    assert report.check(OUT["scan-then-shift"]).passed


@pytest.mark.gpu
@pytest.mark.cuda
def test_runtime_answers_fail_the_answer_checks_only(tmp_path):
    planted = mutate_solution(tmp_path, "constexpr int kFreeTotalVersion = 1;", "int kFreeTotalVersion = 1;",
                              "runtime_answers")
    report = grade("day31", planted, tmp_path, seed=13)
    assert sorted(c.name for c in report.failed()) == sorted([VERSION_CHECK, SENTENCE_CHECK]), report.text()
    assert "keep them constexpr" in report.check(VERSION_CHECK).feedback


@pytest.mark.gpu
@pytest.mark.cuda
def test_grade_cli_exit_status_and_json(tmp_path):
    out = tmp_path / "results.json"
    passed = run(["python3", GRADE, "day31", SOLUTION, "--seed", "4", "--json", out])
    assert passed.returncode == EXIT_PASS, passed.describe()
    # every point of harness/points.toml ("builds" and the given scan-then-shift scan are worth 0)
    assert json.loads(out.read_text())["score"] == max_score("day31") == 7
    assert "reproduce: python3 harness/grade.py day31 solutions/day31_shift_then_scan.cu --seed 4" in passed.stdout
    failed = run(["python3", GRADE, "day31", STARTER, "--seed", "4"])
    assert failed.returncode == EXIT_FAIL, failed.describe()
    assert "FAIL  shift-then-scan: exclusive scan" in failed.stdout


def test_course_mode_names_no_seed_and_no_hidden_size():
    """A hidden input's size and the seed are the instructor's: in course mode a wrong kernel is told
    where it went wrong on "hidden input k of 3" without n, the count of wrong elements, or the seed."""
    from scanlab.grade_day31 import cases

    seed = 48611
    hidden = [case for case in cases(seed) if case.student_label]
    assert len(hidden) == 3 and all("hidden" in case.label for case in hidden)
    sizes = {str(len(case.values)) for case in hidden if len(case.values) > 1}
    assert str(len(cases(seed)[-1].values)) != str(len(cases(seed + 1)[-1].values)), "the large size is drawn"

    def zeros(values, block):
        return [0.0] * len(values)

    runs = [fake_run(case, out={KERNELS[1]: zeros}, totals={KERNELS[1]: zeros}) for case in hidden]
    self_study = evaluate(Report("day31", "x.cu"), Answers(1, SENTENCE), runs)
    course = evaluate(Report("day31", "x.cu", mode="course"), Answers(1, SENTENCE), runs)
    full = self_study.check(OUT[KERNELS[1]]).feedback + self_study.check(TOTALS[KERNELS[1]]).feedback
    assert str(seed) in full and any(size in full for size in sizes)  # the search below can fail
    for check in course.checks:
        for size in (*sizes, str(seed), "seed"):
            assert size not in check.feedback, (check.name, size, check.feedback)
    assert "hidden input 3 of 3" in course.check(OUT[KERNELS[1]]).feedback
    assert any(size in course.check(OUT[KERNELS[1]]).detail for size in sizes)  # the instructor still has it
