"""grade.py's command line: usage errors, exit statuses, and results.json on every path.

CPU only (drill 01 is graded with g++); the Day 31 paths that need a GPU are in
test_day31_exercise.py and test_corpus.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scanlab import EXIT_FAIL, EXIT_PASS, EXIT_USAGE
from scanlab.paths import REPO

GRADE = REPO / "harness" / "grade.py"
SOLUTION = REPO / "solutions" / "01_exclusive_to_inclusive.cpp"
STARTER = REPO / "exercises" / "01_exclusive_to_inclusive.cpp"
EXIT_CANNOT_GRADE = 4


def grade(*args, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    environment = dict(os.environ)
    environment.update(env or {})
    return subprocess.run([sys.executable, str(GRADE), *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=environment, cwd=cwd)


@pytest.mark.parametrize("args, said", [
    ((), "usage: python3 harness/grade.py EXERCISE SUBMISSION"),
    (("drill01",), "no submission given"),
    (("drill01", "/no/such/file.cpp"), "no submission file at /no/such/file.cpp"),
    (("drill99", SOLUTION), "unknown exercise 'drill99'"),
    (("drill01", SOLUTION, "--seed", "x"), "invalid int value"),
], ids=["no-arguments", "no-file", "missing-file", "unknown-exercise", "bad-seed"])
def test_usage_errors_print_the_usage_and_exit_2(args, said):
    result = grade(*args)
    assert result.returncode == EXIT_USAGE, result
    assert said in result.stderr and "usage:" in result.stderr, result.stderr
    assert result.stdout == ""


def test_an_unwritable_json_path_is_a_usage_error_before_grading(tmp_path):
    result = grade("drill01", SOLUTION, "--json", tmp_path / "missing" / "results.json")
    assert result.returncode == EXIT_USAGE and "does not exist" in result.stderr, result
    assert result.stdout == ""  # nothing was graded
    folder = tmp_path / "a folder"
    folder.mkdir()
    assert grade("drill01", SOLUTION, "--json", folder).returncode == EXIT_USAGE


@pytest.mark.slow
def test_results_json_replaces_a_forgery_or_a_link_without_following_it(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("do not touch")
    results = tmp_path / "results.json"
    results.symlink_to(target)
    result = grade("drill01", STARTER, "--seed", "3", "--json", results)
    assert result.returncode == EXIT_FAIL, result
    assert not results.is_symlink() and target.read_text() == "do not touch"
    data = json.loads(results.read_text())
    assert data["score"] == sum(t["score"] for t in data["tests"]) < sum(t["max_score"] for t in data["tests"])
    assert {t["status"] for t in data["tests"]} == {"passed", "failed"}
    assert "execution_time" in data
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".results-")]  # no temporary file left


@pytest.mark.slow
def test_the_report_states_the_isolation_and_a_quoted_reproduce_line(tmp_path):
    odd = tmp_path / "it's mine (v2).cpp"
    odd.write_bytes(SOLUTION.read_bytes())
    result = grade("drill01", odd, "--seed", "5")
    assert result.returncode == EXIT_PASS, result
    assert "note: isolation: " in result.stdout
    line = next(x for x in result.stdout.splitlines() if "reproduce: " in x).split("reproduce: ", 1)[1]
    assert line == f"python3 harness/grade.py drill01 '{tmp_path}/it'\"'\"'s mine (v2).cpp' --seed 5"
    again = subprocess.run(line.replace("python3", sys.executable, 1), shell=True, cwd=REPO, capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == EXIT_PASS, again


def test_require_sandbox_without_isolation_exits_4_with_results(tmp_path):
    results = tmp_path / "results.json"
    results.write_text('{"score": 1000}')
    result = grade("drill01", SOLUTION, "--require-sandbox", "--json", results, env={"SCANLAB_BWRAP": "none"})
    assert result.returncode == EXIT_CANNOT_GRADE, result
    assert "cannot isolate submissions" in result.stderr
    data = json.loads(results.read_text())
    assert data["score"] == 0 and data["tests"][0]["status"] == "failed"
    assert "not graded" in data["tests"][0]["output"]


def test_an_internal_error_exits_4_with_results_and_no_blame(tmp_path):
    # A grader bug, simulated: the drill graders' module cannot be imported.
    shadow = tmp_path / "shadow" / "scanlab"
    shadow.mkdir(parents=True)
    for source in (REPO / "harness" / "scanlab").glob("*.py"):
        (shadow / source.name).write_text(source.read_text())
    (shadow / "grade_drills.py").write_text("raise RuntimeError('simulated grader bug')\n")
    harness = tmp_path / "shadow"
    (harness / "grade.py").write_text(GRADE.read_text())
    (harness / "exercises.toml").write_text((REPO / "harness" / "exercises.toml").read_text())
    shutil.copytree(REPO / "exercises", tmp_path / "exercises")  # the registry's starters, beside the shadow
    results = tmp_path / "results.json"
    result = subprocess.run([sys.executable, str(harness / "grade.py"), "drill01", str(SOLUTION), "--json",
                             str(results)], capture_output=True, text=True, timeout=120)
    assert result.returncode == EXIT_CANNOT_GRADE, result
    assert "internal error" in result.stderr and "simulated grader bug" in result.stderr
    data = json.loads(results.read_text())
    assert data["score"] == 0 and "not your code's fault" in data["tests"][0]["output"]


def test_a_broken_registry_stops_grade_py_with_one_line_and_status_4(tmp_path):
    harness = tmp_path / "harness"
    shutil.copytree(REPO / "harness" / "scanlab", harness / "scanlab", ignore=shutil.ignore_patterns("__pycache__"))
    (harness / "grade.py").write_text(GRADE.read_text())
    (harness / "exercises.toml").write_text((REPO / "harness" / "exercises.toml").read_text()
                                            .replace("total = 3\n", "total = 4\n", 1))
    shutil.copytree(REPO / "exercises", tmp_path / "exercises")
    result = subprocess.run([sys.executable, str(harness / "grade.py"), "--list"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == EXIT_CANNOT_GRADE and result.stdout == "", result
    assert result.stderr.splitlines() == [f"grade: cannot grade anything: {harness / 'exercises.toml'}: [drill01] "
                                          "total = 4, but its checks add up to 3"], result.stderr


# ---- a submission far larger than any answer ------------------------------------------------

HUGE = 4 << 30  # 4 GiB, sparse: nothing is written, but reading it in whole would need 4 GiB


def _limit_memory():
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))  # less than the file: reading it whole fails


def test_the_bounded_reader_never_reads_more_than_the_limit_and_a_byte(tmp_path):
    from scanlab.grading import SUBMISSION_LIMIT_BYTES, TOO_LARGE, read_submission

    at_limit = tmp_path / "at.cpp"
    at_limit.write_bytes(b"x" * SUBMISSION_LIMIT_BYTES)
    assert read_submission(at_limit) == b"x" * SUBMISSION_LIMIT_BYTES
    over = tmp_path / "over.cpp"
    with open(over, "wb") as f:
        f.truncate(HUGE)
    assert read_submission(over) is None
    # the GPU graders refuse it before anything is compiled (so this runs on any machine)
    from scanlab import grade_day31, grade_stretch

    assert grade_day31.compile_submission(over).feedback == TOO_LARGE
    assert grade_stretch.compile_device(over, lambda name: "") == (None, TOO_LARGE)


@pytest.mark.parametrize("exercise, name", [("drill01", "01_exclusive_to_inclusive.cpp"),
                                            ("drill02", "02_segmented_scan.cpp"),
                                            ("drill03", "03_scan_analysis.md")])
def test_a_file_over_the_size_limit_fails_with_the_reason_without_being_read(exercise, name, tmp_path):
    """A 4 GiB "answer" (Gradescope's limits are not the grader's): graded as failed, in a process
    whose address space is smaller than the file, so a grader that reads it whole dies instead."""
    huge = tmp_path / name
    with open(huge, "wb") as f:
        f.truncate(HUGE)
    results = tmp_path / "results.json"
    proc = subprocess.run([sys.executable, str(GRADE), exercise, str(huge), "--seed", "3", "--json", str(results)],
                          capture_output=True, text=True, timeout=300, preexec_fn=_limit_memory)
    assert proc.returncode == EXIT_FAIL, proc.stdout + proc.stderr
    assert "larger than 1 MiB" in proc.stdout and "it was not read (scored 0)" in proc.stdout, proc.stdout
    assert json.loads(results.read_text())["score"] == 0


@pytest.fixture(scope="module")
def oldest_python(tmp_path_factory) -> str:
    """A Python 3.9 virtualenv holding only what requirements.txt pins for it (tomli): the graders'
    promise is Python 3.9+, and Ubuntu 22.04's python3 is 3.10."""
    from scanlab import env

    python = env.oldest_python()
    if python is None:
        env.unavailable("python39", f"no python{env.OLDEST_PYTHON} (PATH, SCANLAB_OLDEST_PYTHON or pyenv)")
    venv = tmp_path_factory.mktemp("py39") / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=120)
    pinned = [line.split(";")[0].strip() for line in (REPO / "harness" / "requirements.txt").read_text().splitlines()
              if line.startswith("tomli==")]
    installed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                                "--disable-pip-version-check", *pinned], capture_output=True, text=True, timeout=300)
    if installed.returncode != 0:
        env.unavailable("python39", f"pip could not install {pinned} for python{env.OLDEST_PYTHON}: "
                                    f"{installed.stderr.strip()[-300:]}")
    return str(venv / "bin" / "python")


@pytest.mark.parametrize("exercise, submission, status", [
    ("drill01", SOLUTION, EXIT_PASS), ("drill01", STARTER, EXIT_FAIL),
    ("drill02", REPO / "solutions" / "02_segmented_scan.cpp", EXIT_PASS),
    ("drill03", REPO / "solutions" / "03_scan_analysis.md", EXIT_PASS),
], ids=["drill01-solution", "drill01-starter", "drill02-solution", "drill03-solution"])
def test_the_graders_run_on_the_oldest_python_the_docs_name(oldest_python, exercise, submission, status, tmp_path):
    listed = subprocess.run([oldest_python, str(GRADE), "--list"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and "drill01" in listed.stdout, listed.stderr
    out = tmp_path / "results.json"
    graded = subprocess.run([oldest_python, str(GRADE), exercise, str(submission), "--seed", "3", "--json", str(out),
                             "--mode", "course"], capture_output=True, text=True, timeout=300)
    assert graded.returncode == status, graded.stdout + graded.stderr
    assert json.loads(out.read_text())["tests"]


def test_help_prints_the_usage_once_and_exits_0():
    proc = grade("--help")
    assert proc.returncode == EXIT_PASS, proc.stderr
    assert proc.stdout.startswith("usage: python3 harness/grade.py EXERCISE") and "usage: usage:" not in proc.stdout


def test_what_a_function_prints_is_shown_in_self_study_and_kept_from_students_in_course_mode():
    prints = REPO / "harness" / "corpus" / "drill01" / "c_prints.cpp"
    self_study = grade("drill01", prints, "--seed", "3")
    course = grade("drill01", prints, "--seed", "3", "--mode", "course")
    assert self_study.returncode == course.returncode == EXIT_PASS, self_study.stdout + course.stdout
    assert "your functions printed" in self_study.stdout and "e2i n=8" in self_study.stdout
    assert "your functions printed something" in course.stdout and "e2i n=" not in course.stdout


@pytest.mark.parametrize("command", ["class", "merge"])
def test_class_and_merge_help_print_the_usage_and_exit_0(command):
    proc = grade(command, "--help")
    assert proc.returncode == EXIT_PASS, proc.stderr
    assert proc.stdout.startswith("usage: python3 harness/grade.py class") and "usage: usage:" not in proc.stdout
