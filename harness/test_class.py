"""`grade.py class` and `grade.py merge`: a whole class graded end to end on the CPU.

One class of eight students (complete, partial, untouched starters, a compile
error, two hostile drill 01s, an empty folder, and a folder named with a space,
a comma and a non-ASCII letter whose files sit one folder down beside junk) is
graded once per module; the tests read its grades.csv, every results.json and
report.txt, then rerun it (unchanged students are skipped, --force regrades),
shard it and merge the shards. Day 31 needs a GPU: on a machine without one,
a class that submits it exits 1 and its students wait for a GPU (a GPU rerun,
stood in for, grades just that); the stretch drills are columns only where
course.toml names them. A near-miss file name gets its hint in results.json.

Then what one student must never do to the rest: a grader step that runs away
on their file (drill 03's parser is timed on the worst inputs there are; a
runaway is stood in for and must cost only its student), a uid shared with
another student's runs, a meeting in /tmp where bubblewrap is missing (students
then go one at a time, cleaned up after), and a file or folder name or
permission that stops the run (escaped names, unreadable files, as root and as
an ordinary user).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from scanlab import EXIT_FAIL, EXIT_PASS, EXIT_USAGE
from scanlab import classroom, registry
from scanlab.paths import REPO

GRADE = REPO / "harness" / "grade.py"
SOLUTIONS, STARTERS = REPO / "solutions", REPO / "exercises"
FILES = classroom.EXERCISE_FILES  # the course's exercises (harness/exercises.toml), in column order
CPU = [e for e in FILES if e not in registry.NEEDS_GPU]  # what a machine without a GPU grades
SEED = 424242
SPECIAL = "Zoë Smith, jr"  # a space, a comma and a non-ASCII letter: a path and a CSV cell

# Correct conversions, shared by the hostile submissions so that only their misbehaviour differs.
CORRECT_DRILL01 = r"""
void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    misbehave();
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}
void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    misbehave();
    for (std::size_t i = 0; i < n; ++i) excl[i] = i ? incl[i - 1] : 0;
}
long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    misbehave();
    return n ? excl[n - 1] + in[n - 1] : 0;
}
"""

# Forks a child that outlives its call and keeps writing, forges grader outputs in its working
# folder and the one above, and sleeps: none of it may change a verdict or reach the class folder.
HOSTILE_FORK = r"""
#include <cstddef>
#include <cstdio>
#include <unistd.h>
static void misbehave() {
    static bool done = false;
    if (done) return;
    done = true;
    if (fork() == 0) {
        for (int i = 0; i < 50; ++i) {
            if (FILE* f = std::fopen("left_behind.txt", "a")) { std::fputs("still here\n", f); std::fclose(f); }
            usleep(100000);
        }
        _exit(0);
    }
    const char* forged = "student,total\nmallory,999\n";
    const char* paths[] = {"grades.csv", "../grades.csv", "../../grades.csv", "results.json", "../results.json"};
    for (const char* path : paths)
        if (FILE* f = std::fopen(path, "w")) { std::fputs(forged, f); std::fclose(f); }
    usleep(30000);
}
""" + CORRECT_DRILL01

# Looks for the grader and other students through /proc and the file system; it crashes (and so
# loses its points) if it finds any, so a full score says the sandbox hid them.
HOSTILE_PROC = r"""
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
static bool readable(const char* path) {
    FILE* f = std::fopen(path, "r");
    if (f) std::fclose(f);
    return f != nullptr;
}
static void misbehave() {
    static bool done = false;
    if (done) return;
    done = true;
    if (readable("OTHER_STUDENT") || readable("HARNESS_FILE")) std::abort();
    if (DIR* proc = opendir("/proc")) {
        while (dirent* e = readdir(proc)) {
            char path[512], text[4096] = {0};
            std::snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
            FILE* f = std::fopen(path, "r");
            if (!f) continue;
            std::size_t got = std::fread(text, 1, sizeof text - 1, f);
            std::fclose(f);
            for (std::size_t i = 0; i < got; ++i) if (!text[i]) text[i] = ' ';
            if (std::strstr(text, "grade.py") || std::strstr(text, "pytest")) std::abort();
        }
        closedir(proc);
    }
}
""" + CORRECT_DRILL01


def grade(*args, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(GRADE), *map(str, args)], capture_output=True, text=True,
                          timeout=600, cwd=cwd)


def grade_env(env: dict[str, str], *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(GRADE), *map(str, args)], capture_output=True, text=True,
                          timeout=600, env={**os.environ, **env})


def make_class(root: Path) -> Path:
    klass = root / "class"
    students = {
        "complete": {e: SOLUTIONS / FILES[e] for e in CPU},
        "partial": {"drill01": SOLUTIONS / FILES["drill01"]},
        "starter": {e: STARTERS / FILES[e] for e in ("drill01", "drill03")},
    }
    for student, files in students.items():
        (klass / student).mkdir(parents=True)
        for exercise, source in files.items():
            shutil.copy(source, klass / student / FILES[exercise])
    broken = (SOLUTIONS / FILES["drill01"]).read_text().replace("void inclusive_to_exclusive(",
                                                                 "void inclusive_to_exclusive(int oops ", 1)
    assert broken != (SOLUTIONS / FILES["drill01"]).read_text()
    (klass / "compile error").mkdir()
    (klass / "compile error" / FILES["drill01"]).write_text(broken)
    (klass / "hostile fork").mkdir()
    (klass / "hostile fork" / FILES["drill01"]).write_text(HOSTILE_FORK)
    (klass / "hostile proc").mkdir()
    (klass / "hostile proc" / FILES["drill01"]).write_text(
        HOSTILE_PROC.replace("OTHER_STUDENT", str(klass / "complete" / FILES["drill03"]))
        .replace("HARNESS_FILE", str(GRADE)))
    (klass / "empty").mkdir()
    special = klass / SPECIAL
    (special / "submission").mkdir(parents=True)
    shutil.copy(SOLUTIONS / FILES["drill01"], special / "submission" / FILES["drill01"])
    (special / "notes.txt").write_text("my notes\n")
    (special / "02_Segmented_Scan.cpp").write_text("// named almost right\n")
    # Not students: listed once on stderr, never graded.
    (klass / ".git").mkdir()
    (klass / "roster.txt").write_text("a file, not a student\n")
    return klass


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def rows(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


def maxima(out: Path) -> dict[str, float]:
    found = json.loads((out / "class.json").read_text())["maxima"]
    assert all(isinstance(found[e], (int, float)) and found[e] > 0 for e in FILES), found
    return found


def cell(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    klass = make_class(root)
    before = snapshot(klass)
    started = time.monotonic()
    result = grade("class", klass, "--out", root / "out", "--seed", SEED, "--jobs", os.cpu_count() or 2)
    return klass, root / "out", result, time.monotonic() - started, before


@pytest.mark.slow
def test_the_class_is_graded_and_the_csv_cells_are_exact(graded):
    klass, out, result, _, _ = graded
    assert result.returncode == EXIT_PASS, result.stderr
    assert ".git/" in result.stderr and "roster.txt" in result.stderr  # listed once, not graded
    top = maxima(out)
    m = {e: cell(top[e]) for e in FILES}
    everything = cell(sum(top.values()))
    three = cell(top["drill01"] + top["drill02"] + top["drill03"])
    expected = {
        "complete": [*("0", m["drill01"], m["drill02"], m["drill03"]), three, everything, "not submitted: day31"],
        "partial": ["0", m["drill01"], "0", "0", m["drill01"], everything, "not submitted: day31, drill02, drill03"],
        "starter": ["0", "0", "0", "0", "0", everything, "not submitted: day31, drill02"],
        "compile error": ["0", "0", "0", "0", "0", everything,
                          "not submitted: day31, drill02, drill03; compile error: drill01"],
        "hostile fork": ["0", m["drill01"], "0", "0", m["drill01"], everything,
                         "not submitted: day31, drill02, drill03"],
        "hostile proc": ["0", m["drill01"], "0", "0", m["drill01"], everything,
                         "not submitted: day31, drill02, drill03"],
        "empty": ["0", "0", "0", "0", "0", everything, "not submitted: day31, drill01, drill02, drill03"],
        SPECIAL: ["0", m["drill01"], "0", "0", m["drill01"], everything, "not submitted: day31, drill02, drill03"],
    }
    text = (out / "grades.csv").read_text(encoding="utf-8")
    table = list(csv.reader(io.StringIO(text)))
    assert table[0] == ["student", *FILES, "total", "maximum", "note"]
    # natural order, case folded, the same under every locale (Python's sorted() would put "Zoë" first)
    order = ["compile error", "complete", "empty", "hostile fork", "hostile proc", "partial", "starter", SPECIAL]
    assert table[1:] == [[student, *expected[student]] for student in order]
    assert f'\n"{SPECIAL}",0,' in text  # the comma is quoted, so a spreadsheet keeps one cell


@pytest.mark.slow
def test_every_results_json_is_gradescope_shaped_and_adds_up(graded):
    _, out, result, _, _ = graded
    assert result.returncode == EXIT_PASS, result.stderr
    grades, top = rows(out / "grades.csv"), maxima(out)
    assert len(grades) == 8
    for student, row in grades.items():
        results = json.loads((out / student / "results.json").read_text(encoding="utf-8"))
        assert set(results) <= {"score", "output", "tests", "execution_time", "stdout_visibility"}, student
        assert isinstance(results["output"], str) and results["execution_time"] >= 0
        for test in results["tests"]:
            assert set(test) == {"name", "score", "max_score", "status", "output", "visibility"}, (student, test)
            assert test["status"] in ("passed", "failed") and 0 <= test["score"] <= test["max_score"]
            assert test["visibility"] in ("visible", "hidden", "after_due_date", "after_published")
            assert test["name"].split(": ")[0] in FILES, test["name"]
        assert results["score"] == pytest.approx(sum(t["score"] for t in results["tests"]))
        assert results["score"] == pytest.approx(float(row["total"])), student
        assert sum(t["max_score"] for t in results["tests"]) == pytest.approx(sum(top.values())), student
        for exercise in FILES:  # each exercise's tests add up to its cell of the CSV
            mine = [t for t in results["tests"] if t["name"].startswith(f"{exercise}: ")]
            assert mine, (student, exercise)
            assert sum(t["score"] for t in mine) == pytest.approx(float(row[exercise])), (student, exercise)
        report = (out / student / "report.txt").read_text(encoding="utf-8")
        assert report.startswith(f"student: {student}\n") and f"seed {SEED}" in report
    missing = json.loads((out / "empty" / "results.json").read_text())["tests"]
    assert [t["name"] for t in missing] == [f"{e}: submitted" for e in FILES]
    assert all(t["output"].startswith("not submitted") for t in missing)


@pytest.mark.slow
def test_a_folder_one_down_is_graded_and_other_files_are_listed(graded):
    _, out, _, _, _ = graded
    report = (out / SPECIAL / "report.txt").read_text(encoding="utf-8")
    assert f"drill01: graded (submission/{FILES['drill01']})" in report
    assert "notes.txt" in report
    assert "02_Segmented_Scan.cpp (named almost like 02_segmented_scan.cpp" in report


@pytest.mark.slow
def test_hostile_submissions_change_nothing_outside_their_sandbox(graded):
    klass, out, result, _, before = graded
    assert result.returncode == EXIT_PASS, result.stderr
    assert snapshot(klass) == before  # the class folder is read, never written
    written = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    students = rows(out / "grades.csv")
    assert written == {"grades.csv", "class.json", *BOOKS} | {f"{s}/{name}" for s in students
                                                      for name in ("results.json", "report.txt", "state.json")}
    assert "mallory" not in (out / "grades.csv").read_text()
    if classroom_isolation() != "full":  # without bubblewrap the proc snooper can see the grader
        pytest.skip("this machine cannot isolate submissions; the /proc and file checks need bubblewrap")
    assert float(students["hostile proc"]["drill01"]) == maxima(out)["drill01"]


BOOKS = ("canvas.csv", "gradescope.csv", "summary.md", "summary.csv", "total-scores.png")


def classroom_isolation() -> str:
    from scanlab.sandbox import isolation

    return isolation(gpu=False)[0]


@pytest.mark.slow
def test_a_rerun_skips_unchanged_students_and_force_regrades(graded, tmp_path):
    klass, out, result, first_time, _ = graded
    assert result.returncode == EXIT_PASS, result.stderr
    small = tmp_path / "class"
    for student in ("partial", "starter", SPECIAL):
        shutil.copytree(klass / student, small / student)
    target = tmp_path / "out"
    first = grade("class", small, "--out", target, "--jobs", 2)
    assert first.returncode == EXIT_PASS, first.stderr
    assert "(drawn;" in first.stderr
    seed = json.loads((target / "class.json").read_text())["seed"]
    before = snapshot(target)

    started = time.monotonic()
    again = grade("class", small, "--out", target)
    elapsed = time.monotonic() - started
    assert again.returncode == EXIT_PASS, again.stderr
    assert f"seed {seed} (from" in again.stderr  # the same hidden inputs as the first run
    after = snapshot(target)
    del before["class.json"], after["class.json"]  # it records when the run finished
    assert after == before  # nothing regraded: same bytes, same modification times
    assert elapsed < 10, f"a rerun with nothing changed took {elapsed:.1f} s"

    shutil.copy(SOLUTIONS / FILES["drill01"], small / "starter" / FILES["drill01"])
    changed = grade("class", small, "--out", target)
    assert changed.returncode == EXIT_PASS, changed.stderr
    now = snapshot(target)
    for student in ("partial", SPECIAL):
        assert now[f"{student}/results.json"] == before[f"{student}/results.json"], student
    assert now["starter/results.json"][1] != before["starter/results.json"][1]
    assert rows(target / "grades.csv")["starter"]["drill01"] == cell(maxima(target)["drill01"])

    forced = grade("class", small, "--out", target, "--force")
    assert forced.returncode == EXIT_PASS, forced.stderr
    regraded = snapshot(target)
    for student in ("partial", "starter", SPECIAL):
        assert regraded[f"{student}/state.json"][1] != now[f"{student}/state.json"][1], student
    assert regraded["grades.csv"][0] == now["grades.csv"][0]  # regraded with the same seed: the same grades


@pytest.mark.slow
def test_shards_merged_equal_the_whole_class_and_mismatches_are_refused(graded, tmp_path):
    klass, out, result, _, _ = graded
    assert result.returncode == EXIT_PASS, result.stderr
    shards = [tmp_path / "shard1", tmp_path / "shard2"]
    for number, shard in enumerate(shards, 1):
        done = grade("class", klass, "--out", shard, "--seed", SEED, "--shard", f"{number}/2")
        assert done.returncode == EXIT_PASS, done.stderr
    names = sorted(rows(out / "grades.csv"))
    assert sorted(rows(shards[0] / "grades.csv")) == names[0::2]
    assert sorted(rows(shards[1] / "grades.csv")) == names[1::2]

    merged = grade("merge", *shards, "--out", tmp_path / "merged")
    assert merged.returncode == EXIT_PASS, merged.stderr
    assert (tmp_path / "merged" / "grades.csv").read_text() == (out / "grades.csv").read_text()
    for name in ("summary.md", "summary.csv", "canvas.csv", "gradescope.csv"):  # merge writes them too
        assert (tmp_path / "merged" / name).read_text() == (out / name).read_text(), name
    for student in names:
        assert ((tmp_path / "merged" / student / "results.json").read_bytes()
                == (shards[names.index(student) % 2] / student / "results.json").read_bytes())

    alone = grade("merge", shards[0], "--out", tmp_path / "alone")
    assert alone.returncode == EXIT_FAIL and "not in any shard: " in alone.stderr, alone.stderr
    twice = grade("merge", shards[0], shards[0], shards[1], "--out", tmp_path / "twice")
    assert twice.returncode == EXIT_FAIL and "more than one shard" in twice.stderr, twice.stderr

    other = tmp_path / "other-seed"
    shutil.copytree(shards[1], other)
    info = json.loads((other / "class.json").read_text())
    info["seed"] = SEED + 1
    (other / "class.json").write_text(json.dumps(info))
    refused = grade("merge", shards[0], other, "--out", tmp_path / "refused")
    assert refused.returncode == EXIT_USAGE and "different seeds" in refused.stderr, refused.stderr
    assert not (tmp_path / "refused" / "grades.csv").exists()


@pytest.mark.slow
def test_day31_without_a_gpu_is_not_graded_and_the_status_is_1(tmp_path):
    from scanlab.grade_day31 import probe_gpu

    klass = tmp_path / "class"
    (klass / "gpu student").mkdir(parents=True)
    shutil.copy(SOLUTIONS / FILES["day31"], klass / "gpu student" / FILES["day31"])
    shutil.copy(SOLUTIONS / FILES["drill03"], klass / "gpu student" / FILES["drill03"])
    result = grade("class", klass, "--out", tmp_path / "out", "--seed", SEED)
    row = rows(tmp_path / "out" / "grades.csv")["gpu student"]
    top = maxima(tmp_path / "out")
    assert row["drill03"] == cell(top["drill03"]) and row["maximum"] == cell(sum(top.values()))
    if probe_gpu() is None:  # a GPU machine grades it like any other exercise
        assert result.returncode == EXIT_PASS, result.stderr
        assert row["day31"] == cell(top["day31"]) and row["note"] == "not submitted: drill01, drill02"
        return
    assert result.returncode == EXIT_FAIL, result.stderr
    assert "no usable GPU here" in result.stderr
    assert row["day31"] == "" and row["total"] == row["drill03"]  # blank: a grade-book import leaves it alone
    assert row["note"] == "not submitted: drill01, drill02; waiting for a GPU: day31"
    results = json.loads((tmp_path / "out" / "gpu student" / "results.json").read_text())
    day31 = [t for t in results["tests"] if t["name"].startswith("day31: ")]
    # Not graded here: 0 of 0 and not failed (no 0 of 7), as the Gradescope autograder writes it.
    assert [(t["name"], t["score"], t["max_score"], t["status"], t["visibility"]) for t in day31] == [
        ("day31: graded on a GPU machine", 0.0, 0.0, "passed", "visible")]
    assert "graded on a GPU machine" in day31[0]["output"]
    assert results["score"] == float(row["drill03"])
    # Not vouched for: a rerun on a GPU machine grades it (test_day31_students_wait_for_a_gpu_...).
    assert not json.loads((tmp_path / "out" / "gpu student" / "state.json").read_text())["complete"]


def test_a_near_miss_file_name_gets_its_rename_hint_in_the_students_own_results(tmp_path):
    """02_Segmented_Scan.cpp is not graded (the name is exact), but the student's results.json says
    which file it was meant to be and what to do, not only the instructor's report.txt."""
    klass = small_class(tmp_path, {"ann": {"drill03": SOLUTIONS / FILES["drill03"]}})
    (klass / "ann" / "work").mkdir()
    (klass / "ann" / "work" / "02_Segmented_Scan.cpp").write_text((SOLUTIONS / FILES["drill02"]).read_text())
    (klass / "ann" / "01_exclusive_to_inclusive (1).cpp").write_text("// a browser's second download\n")
    (klass / "ann" / "notes.txt").write_text("not an exercise\n")
    out = tmp_path / "out"
    proc = grade("class", klass, "--out", out, "--seed", SEED, "--jobs", "1")
    assert proc.returncode == EXIT_PASS, proc.stderr
    results = json.loads((out / "ann" / "results.json").read_text())
    tests = {t["name"]: t for t in results["tests"]}
    assert tests["drill02: submitted"]["output"] == (
        "not submitted: no 02_segmented_scan.cpp at the top of your folder (or one folder down); it scores 0; "
        "you submitted work/02_Segmented_Scan.cpp: rename it exactly 02_segmented_scan.cpp to have it graded")
    assert "you submitted 01_exclusive_to_inclusive (1).cpp: rename it exactly 01_exclusive_to_inclusive.cpp" \
        in tests["drill01: submitted"]["output"]
    assert "notes.txt" not in json.dumps(results)  # not named like an exercise: no hint
    assert "work/02_Segmented_Scan.cpp (named almost like 02_segmented_scan.cpp" in (out / "ann" / "report.txt").read_text()


def fake_gpu(monkeypatch, log: Path) -> None:
    """This process (and the workers it forks) sees a usable GPU, and a GPU exercise's grader stands in
    for the plan runner's runs (scanlab/gpu_fakes.py) by passing every check; every submission graded
    is appended to `log` (exercise and file), the CPU ones graded for real."""
    from scanlab import dispatch, grade_day31, sandbox
    from scanlab.grading import Report

    real = dispatch.grade

    def grade(exercise, submission, workdir, seed, mode="self-study", gpu_lock=None):
        if Path(submission).resolve() != registry.EXERCISES[exercise].starter.resolve():  # not the warm-up
            with open(log, "a") as f:
                f.write(f"{exercise} {Path(submission).name}\n")
        if not dispatch.needs_gpu(exercise):
            return real(exercise, submission, workdir, seed, mode)
        report = Report(exercise, str(submission), mode=mode)
        for check in registry.EXERCISES[exercise].checks:
            report.add(check, True, "right (a stand-in for the GPU runs)")
        return report

    monkeypatch.setattr(grade_day31, "probe_gpu", lambda: None)
    monkeypatch.setattr(dispatch, "grade", grade)
    monkeypatch.setattr(sandbox, "isolation", lambda gpu=False: sandbox._probe(False))


def class_in_process(*args) -> tuple[int, str]:
    """`grade.py class ARGS` in this process (so fake_gpu's stand-ins hold), with its status and stderr."""
    import contextlib

    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        status = classroom.main(["class", *map(str, args)])
    return status, said.getvalue()


@pytest.mark.slow
def test_day31_students_wait_for_a_gpu_and_a_gpu_rerun_grades_just_that(tmp_path, monkeypatch):
    """On a GPU-less course server a Day 31 submitter whose other work is graded waits for a GPU (not
    "failed to grade"); a rerun there regrades nothing of theirs, and a rerun on a GPU machine (stood
    in for: fake_gpu) grades their Day 31 alone and keeps the rest as it was."""
    klass = small_class(tmp_path, {"gpu student": {e: SOLUTIONS / FILES[e] for e in FILES if e != "drill02"},
                                   "cpu student": {"drill03": SOLUTIONS / FILES["drill03"]}})
    out, top = tmp_path / "out", {e: registry.EXERCISES[e].total for e in FILES}
    no_gpu = {"CUDA_VISIBLE_DEVICES": ""}  # a GPU machine stands in for a GPU-less one (the probe finds none)
    first = grade_env(no_gpu, "class", klass, "--out", out, "--seed", SEED, "--jobs", "2")
    assert first.returncode == EXIT_FAIL, first.stderr  # not everything is graded yet
    row = rows(out / "grades.csv")["gpu student"]
    assert row["day31"] == "" and row["drill01"] == cell(top["drill01"]), row
    assert row["note"] == "not submitted: drill02; waiting for a GPU: day31", row
    assert "waiting for a GPU: gpu student" in first.stderr and "not every submission graded" not in first.stderr
    assert "0 failed to grade, 1 waiting for a GPU" in first.stderr, first.stderr
    state = json.loads((out / "gpu student" / "state.json").read_text())
    assert state["waiting"] == ["day31"] and not state["complete"]
    assert "(1 waiting for a GPU)" in (out / "summary.md").read_text()

    before = snapshot(out / "gpu student")
    again = grade_env(no_gpu, "class", klass, "--out", out, "--jobs", "2")
    assert again.returncode == EXIT_FAIL and "1 waiting for a GPU" in again.stderr, again.stderr
    assert snapshot(out / "gpu student") == before  # nothing of theirs regraded or rewritten
    assert rows(out / "grades.csv")["gpu student"] == row

    log = tmp_path / "graded.txt"
    fake_gpu(monkeypatch, log)
    status, said = class_in_process(klass, "--out", out, "--jobs", "2")
    assert status == EXIT_PASS, said
    assert log.read_text() == f"day31 {FILES['day31']}\n"  # the GPU part alone; the CPU student is unchanged
    row = rows(out / "grades.csv")["gpu student"]
    assert row["day31"] == cell(top["day31"]) and row["note"] == "not submitted: drill02", row
    assert row["total"] == cell(top["day31"] + top["drill01"] + top["drill03"]), row
    results = json.loads((out / "gpu student" / "results.json").read_text())
    old = json.loads(before["results.json"][0])
    kept = [t for t in results["tests"] if not t["name"].startswith("day31: ")]
    assert kept == [t for t in old["tests"] if not t["name"].startswith("day31: ")]  # as graded the first time
    assert results["score"] == float(row["total"])
    report = (out / "gpu student" / "report.txt").read_text()
    assert "kept as an earlier run graded them" in report and "drill01" in report, report
    assert json.loads((out / "gpu student" / "state.json").read_text())["complete"]


@pytest.mark.slow
def test_stretch_drills_are_graded_when_course_toml_lists_them(tmp_path, monkeypatch):
    """A stretch drill is a column only when course.toml's exercises names it (then its points are in
    the maximum like any exercise's); without a GPU it waits for one, blank, never a 0. Not listed, a
    submitted one is listed as not graded in this course, and the columns stay the course's."""
    klass = small_class(tmp_path, {"ann": {"drill03": SOLUTIONS / FILES["drill03"]}})
    stretch = sorted(registry.STRETCH, key=list(registry.EXERCISES).index)
    for exercise in stretch:
        shutil.copy(registry.EXERCISES[exercise].answer, klass / "ann" / registry.FILES[exercise])
    plain = grade("class", klass, "--out", tmp_path / "plain", "--seed", SEED)
    assert plain.returncode == EXIT_PASS, plain.stderr
    assert list(rows(tmp_path / "plain" / "grades.csv")["ann"])[1:-3] == list(FILES)
    report = (tmp_path / "plain" / "ann" / "report.txt").read_text()
    for exercise in stretch:
        assert (f"{registry.FILES[exercise]} (not graded in this course; a stretch drill: course.toml's "
                "`exercises` can list it)") in report, report

    chosen = [*FILES, *stretch]
    (klass / "course.toml").write_text(f"exercises = {json.dumps(chosen)}\n")
    out = tmp_path / "out"
    proc = grade("class", klass, "--out", out, "--seed", SEED)
    row = rows(out / "grades.csv")["ann"]
    assert list(row)[1:-3] == chosen, row
    assert row["maximum"] == cell(sum(registry.EXERCISES[e].total for e in chosen)), row
    assert json.loads((out / "class.json").read_text())["maxima"] == {e: registry.EXERCISES[e].total for e in chosen}
    from scanlab.grade_day31 import probe_gpu

    if probe_gpu() is None:  # a GPU machine grades them like any other exercise
        assert proc.returncode == EXIT_PASS, proc.stderr
        assert all(row[e] == cell(registry.EXERCISES[e].total) for e in stretch), row
        return
    assert proc.returncode == EXIT_FAIL, proc.stderr
    assert [row[e] for e in stretch] == ["", "", ""] and row["drill03"] == cell(registry.EXERCISES["drill03"].total)
    assert row["note"] == f"not submitted: day31, drill01, drill02; waiting for a GPU: {', '.join(stretch)}", row
    results = json.loads((out / "ann" / "results.json").read_text())
    for exercise in stretch:
        (only,) = [t for t in results["tests"] if t["name"].startswith(f"{exercise}: ")]
        assert "graded on a GPU machine" in only["output"], only

    log = tmp_path / "graded.txt"  # the same folder on a GPU machine: the stretch drills alone are graded
    fake_gpu(monkeypatch, log)
    status, said = class_in_process(klass, "--out", out)
    assert status == EXIT_PASS, said
    assert sorted(log.read_text().split()) == sorted(registry.FILES[e] for e in stretch) + sorted(stretch)
    row = rows(out / "grades.csv")["ann"]
    assert all(row[e] == cell(registry.EXERCISES[e].total) for e in stretch), row


@pytest.mark.gpu
@pytest.mark.slow
def test_a_day31_class_is_graded_on_the_gpu(tmp_path):
    """Six Day 31 students graded together on the GPU: the GPU runs take turns, the verdicts are
    each student's own, and a hang or a crash costs only its owner."""
    corpus = REPO / "harness" / "corpus" / "day31"
    klass = tmp_path / "class"
    students = {
        "complete": SOLUTIONS / FILES["day31"],
        "unusual but right": corpus / "c_warp_shuffle.cu",
        "starter": STARTERS / FILES["day31"],
        "partial": corpus / "w_inclusive_not_exclusive.cu",
        "hangs": corpus / "h_spin_kernel.cu",
        "traps": corpus / "h_trap.cu",
    }
    for student, source in students.items():
        (klass / student).mkdir(parents=True)
        shutil.copy(source, klass / student / FILES["day31"])
    (klass / "compile error").mkdir()
    (klass / "compile error" / FILES["day31"]).write_text(
        (SOLUTIONS / FILES["day31"]).read_text().replace("__global__", "__global_", 1))
    (klass / "empty").mkdir()
    before = snapshot(klass)
    started = time.monotonic()
    result = grade("class", klass, "--out", tmp_path / "out", "--seed", SEED, "--jobs", "4")
    seconds = time.monotonic() - started
    assert result.returncode == EXIT_PASS, result.stderr
    assert snapshot(klass) == before
    top = maxima(tmp_path / "out")["day31"]
    got = {student: row["day31"] for student, row in rows(tmp_path / "out" / "grades.csv").items()}
    assert got["complete"] == got["unusual but right"] == cell(top), got
    assert got["starter"] == got["compile error"] == got["empty"] == "0", got
    for student in ("partial", "hangs", "traps"):
        assert 0 < float(got[student]) < top, (student, got)
    notes = {student: row["note"] for student, row in rows(tmp_path / "out" / "grades.csv").items()}
    assert "compile error: day31" in notes["compile error"] and "not submitted: day31" in notes["empty"]
    report = (tmp_path / "out" / "hangs" / "report.txt").read_text()
    assert "time limit" in report, report
    print(f"day31 class of {len(students) + 2} graded in {seconds:.1f} s")


@pytest.mark.parametrize("args, said", [
    (("class",), "the following arguments are required"),
    (("class", "/no/such/class", "--out", "OUT"), "no class folder at /no/such/class"),
    (("class", "CLASS", "--out", "OUT", "--shard", "3/2"), "--shard wants I/N"),
    (("class", "CLASS", "--out", "OUT", "--jobs", "0"), "--jobs wants a whole number"),
    (("class", "CLASS", "--out", "CLASS/alice/out"), "inside a student's folder"),
    (("merge", "--out", "OUT"), "the following arguments are required"),
    (("merge", "CLASS", "--out", "OUT"), "not an output of grade.py class"),
], ids=["no-folder", "missing-folder", "bad-shard", "bad-jobs", "out-inside", "merge-nothing", "merge-not-output"])
def test_usage_errors_exit_2_with_one_line_and_the_usage(tmp_path, args, said):
    (tmp_path / "CLASS" / "alice").mkdir(parents=True)
    result = grade(*args, cwd=tmp_path)
    assert result.returncode == EXIT_USAGE, result
    assert said in result.stderr and "usage:" in result.stderr, result.stderr
    assert not (tmp_path / "OUT" / "grades.csv").exists()


def test_a_file_in_two_folders_is_not_graded_and_names_are_checked(tmp_path):
    for sub in ("try1", "try2"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / FILES["drill01"]).write_text("// one of two\n")
    (tmp_path / "link.cpp").symlink_to("/etc/passwd")
    found = classroom.discover(tmp_path)
    assert "drill01" not in found.files and "try1/" not in found.ignored
    assert "in more than one folder (try1/01_exclusive_to_inclusive.cpp, try2/" in found.problems["drill01"]
    assert "link.cpp (a link: never followed)" in found.ignored
    (tmp_path / FILES["drill01"]).write_text("// the top one wins\n")
    found = classroom.discover(tmp_path)
    assert found.files["drill01"] == tmp_path / FILES["drill01"] and not found.problems
    assert classroom.name_problem("line\nbreak") and classroom.name_problem("grades.csv")
    for hidden in ("tab\there", "esc\x1b[2J", "csi\x9b2J", "bidi\u202eevil", "isolate\u2066x"):
        assert "control characters" in (classroom.name_problem(hidden) or ""), repr(hidden)
    assert classroom.name_problem(SPECIAL) is None


def test_a_student_name_is_never_a_spreadsheet_formula(tmp_path):
    from scanlab import classroom

    assert classroom.spreadsheet_safe("=HYPERLINK(\"x\")") == "'=HYPERLINK(\"x\")"
    assert classroom.spreadsheet_safe("+1") == "'+1" and classroom.spreadsheet_safe("@SUM(A1)") == "'@SUM(A1)"
    assert classroom.spreadsheet_safe("Zoë Smith, jr") == "Zoë Smith, jr"
    row = classroom.Row("=cmd", {e: "0" for e in classroom.EXERCISE_FILES}, 0, 46, "", True)
    classroom.write_csv(tmp_path / "grades.csv", [row])
    assert (tmp_path / "grades.csv").read_text(encoding="utf-8").splitlines()[1].startswith("'=cmd,")


def _limit_memory():
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


@pytest.mark.slow
def test_a_file_far_over_the_size_limit_scores_0_with_its_reason_and_is_never_read_whole(tmp_path):
    """4 GiB sparse files (the class key hashes submissions too): the grader runs with less address
    space than one file, so reading one whole anywhere would end in a MemoryError."""
    student = tmp_path / "class" / "huge"
    student.mkdir(parents=True)
    for exercise in ("drill01", "drill03"):
        with open(student / FILES[exercise], "wb") as f:
            f.truncate(4 << 30)
    proc = subprocess.run([sys.executable, str(GRADE), "class", tmp_path / "class", "--out", tmp_path / "out",
                           "--seed", str(SEED)], capture_output=True, text=True, timeout=600, preexec_fn=_limit_memory)
    assert proc.returncode == 0 and "0 failed to grade" in proc.stderr + proc.stdout, proc.stdout + proc.stderr
    row = rows(tmp_path / "out" / "grades.csv")["huge"]
    assert row["drill01"] == row["drill03"] == "0" and "file over 1 MiB (scored 0): drill01, drill03" in row["note"], row
    assert "it was not read (scored 0)" in (tmp_path / "out" / "huge" / "report.txt").read_text()


@pytest.mark.slow
def test_report_txt_and_the_console_show_a_submissions_control_characters_escaped(tmp_path):
    student = tmp_path / "class" / "escapes"
    student.mkdir(parents=True)
    shutil.copy(REPO / "harness" / "corpus" / "drill03" / "h_terminal_escapes.md", student / FILES["drill03"])
    (student / "notes\x1b[2J.txt").write_text("uploaded beside the answer\n")
    (tmp_path / "class" / "roster\x1b]0;owned\x07.txt").write_text("not a student\n")
    proc = grade("class", tmp_path / "class", "--out", tmp_path / "out", "--seed", str(SEED))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "\x1b" not in proc.stdout + proc.stderr and "roster\\x1b]0;owned\\x07.txt" in proc.stderr, proc.stderr
    report = (tmp_path / "out" / "escapes" / "report.txt").read_text()
    assert "\x1b" not in report and "\u202e" not in report and "\\x1b[2J" in report, report[:2000]


# ---- drill 03's parser: linear on whatever a file holds ---------------------------------------

# Each input is the worst of its kind for the regexes the parser used to have (^\s*`?name\s*=\s*(.*?)`?\s*$
# and parse_number's \s*(%|x|X|×)$): a run of spaces between two non-spaces was retried from every
# one of its positions, about 40 minutes for one 1 MiB line. Each is timed in a process of its own,
# so a parser that backtracks fails here after PARSER_WAIT_S instead of hanging the suite.
PARSER_CASES = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from scanlab import grade_drill03 as gd
MiB = 1 << 20
spaces = " " * MiB
cases = {
    "a slot line with a run of spaces inside its value": ("slots", "a = x" + spaces + "y"),
    "the same after a back-tick, as an answer line": ("slots", "    serial_adds_512 = `" + spaces + "511`"),
    "a number with spaces inside": ("number", "9" + spaces + "217"),
    "about, spaces, a number, spaces, a percent sign": ("number", "about" + spaces + "5" + spaces + "%"),
    "spaces then an x that is not a suffix": ("number", "1" + " " * (MiB // 2) + "x1"),
    "back-ticks and spaces alternating": ("slots", "a = " + "` " * (MiB // 2) + "y"),
    "a name a megabyte long": ("slots", "a" * MiB + " " * MiB),
    "a megabyte of short slot lines": ("slots", "a = `\n" * (MiB // 6)),
    "a megabyte of headings and answers": ("prose", "## q\n**Answer:** x\n" * (MiB // 20)),
}
took = {}
for name, (what, text) in cases.items():
    start = time.perf_counter()
    if what == "slots":
        gd.parse_slots(text)
    elif what == "number":
        try:
            gd.parse_number(text)
        except ValueError:
            pass
    else:
        gd.prose_answers(text)
    took[name] = time.perf_counter() - start
print(json.dumps(took))
"""
PARSER_WAIT_S = 60


def test_drill03_parser_is_linear_on_the_worst_input_it_can_be_given():
    try:
        proc = subprocess.run([sys.executable, "-c", PARSER_CASES, str(REPO / "harness")], capture_output=True,
                              text=True, timeout=PARSER_WAIT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"drill 03's parser did not get through its worst inputs in {PARSER_WAIT_S} s: it backtracks")
    assert proc.returncode == 0, proc.stderr
    slow = {name: round(seconds, 3) for name, seconds in json.loads(proc.stdout).items() if seconds >= 1.0}
    assert not slow, f"drill 03's parser took 1 s or more on: {slow}"


def test_drill03_reads_a_bounded_sheet_and_says_what_it_left_out(tmp_path):
    from scanlab import grade_drill03 as gd

    text = (SOLUTIONS / FILES["drill03"]).read_text()
    long_answer = "    hs_adds_512 = 4" + " " * gd.MAX_LINE_CHARS + "097\n"
    sheet = text.replace("    hs_adds_512 = 4097\n", long_answer) + "\n" * gd.MAX_LINES + "    bl_adds_512 = 1\n"
    path = tmp_path / FILES["drill03"]
    path.write_text(sheet)
    started = time.monotonic()
    report = gd.grade_drill03(path, tmp_path, 0, 0)
    assert time.monotonic() - started < 1.0
    failed = {check.name: check.feedback for check in report.checks if not check.passed}
    assert set(failed) == {"hs_adds_512"}, failed  # the bl_adds_512 past the line limit is never read
    assert failed["hs_adds_512"].startswith("not read: the line `hs_adds_512 = ...`"), failed
    assert f"only the first {gd.MAX_LINES:,} were read" in " ".join(report.notes)
    assert f"over {gd.MAX_LINE_CHARS:,} characters long and were not read" in " ".join(report.notes)


# ---- one student cannot stall a class ------------------------------------------------------

# A class run whose drill 03 grader runs away on one student's answer: a regular expression with
# exponential backtracking, in C, holding the GIL (as the old slot regex did on a long line).
RUNAWAY_GRADER = r"""
import re, sys
sys.path.insert(0, sys.argv[1])
from scanlab import classroom, grade_drill03
real = grade_drill03.parse_number
def parse_number(raw):
    if "RUNAWAY" in raw:
        re.match(r"(a+)+b", "a" * 64)  # 2^64 steps: it never returns
    return real(raw)
grade_drill03.parse_number = parse_number
classroom.OWN_BUDGET_S = 3
sys.exit(classroom.main(sys.argv[2:]))
"""


@pytest.mark.slow
def test_a_grader_that_runs_away_costs_its_student_only(tmp_path):
    klass = tmp_path / "class"
    for student in ("alice", "bob", "runaway", "zed"):
        (klass / student).mkdir(parents=True)
        shutil.copy(SOLUTIONS / FILES["drill03"], klass / student / FILES["drill03"])
    shutil.copy(SOLUTIONS / FILES["drill01"], klass / "zed" / FILES["drill01"])
    answer = klass / "runaway" / FILES["drill03"]
    answer.write_text(answer.read_text().replace("serial_adds_512 = 511", "serial_adds_512 = RUNAWAY"))
    started = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-c", RUNAWAY_GRADER, str(REPO / "harness"), "class", str(klass),
                               "--out", str(tmp_path / "out"), "--seed", str(SEED), "--jobs", "2"],
                              capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired:
        pytest.fail("one runaway grader step stalled the whole class run (no result in 180 s)")
    elapsed = time.monotonic() - started
    assert proc.returncode == EXIT_FAIL, proc.stderr
    assert elapsed < 90, f"the class took {elapsed:.0f} s: the runaway held more than its own slot"
    graded, top = rows(tmp_path / "out" / "grades.csv"), maxima(tmp_path / "out")
    assert graded["runaway"]["drill03"] == "", graded["runaway"]  # blank: not graded, not 0
    assert graded["runaway"]["note"] == ("not submitted: day31, drill01, drill02; "
                                         "not graded: the grader ran past its 3 s limit (drill03)"), graded["runaway"]
    for student in ("alice", "bob", "zed"):
        assert graded[student]["drill03"] == cell(top["drill03"]), graded[student]
    assert graded["zed"]["drill01"] == cell(top["drill01"]), graded["zed"]
    report = (tmp_path / "out" / "runaway" / "report.txt").read_text()
    assert "drill03: not graded (03_scan_analysis.md): the grader ran past its 3 s limit" in report, report
    results = json.loads((tmp_path / "out" / "runaway" / "results.json").read_text())
    assert any(t["name"] == "drill03: graded" and "ran past its 3 s limit" in t["output"] for t in results["tests"])


def test_the_gpu_turn_is_one_process_at_a_time_and_freed_when_its_holder_dies(tmp_path):
    import fcntl

    turn = classroom.GpuTurn(tmp_path / "gpu.lock")
    holder = os.fork()
    if holder == 0:  # a worker that takes the GPU and is then killed while it holds it
        try:
            with turn:
                (tmp_path / "held").touch()
                time.sleep(60)
        finally:
            os._exit(0)
    try:
        deadline = time.monotonic() + 10
        while not (tmp_path / "held").exists():
            assert time.monotonic() < deadline, "the holder never took the GPU"
            time.sleep(0.01)
        probe = os.open(tmp_path / "gpu.lock", os.O_RDWR)
        with pytest.raises(BlockingIOError):  # another process cannot have it meanwhile
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.close(probe)
    finally:
        os.kill(holder, 9)
        os.waitpid(holder, 0)
    started = time.monotonic()
    with turn:  # freed by the kernel with its dead holder
        assert time.monotonic() - started < 5


# ---- sandbox uids: a slice of the range for each submission -------------------------------------

# Answers every function with 7000000000 + its uid: each function's cases run in a sandbox of
# their own, so the report shows the uids of three runs.
UID_TELLER = r"""
#include <cstddef>
#include <unistd.h>
static long long me() { return 7000000000LL + (long long)getuid(); }
void exclusive_to_inclusive(const long long*, const long long*, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) incl[i] = me();
}
void inclusive_to_exclusive(const long long*, long long* excl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) excl[i] = me();
}
long long total_from_exclusive(const long long*, const long long*, std::size_t) { return me(); }
"""


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="as an ordinary user every run has the grader's own uid")
def test_no_two_students_runs_share_a_uid_and_the_outer_range_is_split(tmp_path):
    klass = tmp_path / "class"
    for k in range(4):
        (klass / f"student{k}").mkdir(parents=True)
        (klass / f"student{k}" / FILES["drill01"]).write_text(f"// student {k}\n{UID_TELLER}")
    lo = 900_000 + (os.getpid() % 45) * 2000  # a range of this test's own, as test_corpus does
    outer = range(lo, lo + 2000)
    proc = subprocess.run([sys.executable, str(GRADE), "class", str(klass), "--out", str(tmp_path / "out"),
                           "--seed", str(SEED), "--mode", "self-study"], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "SCANLAB_UID_RANGE": f"{lo}-{lo + 1999}"})
    assert proc.returncode == EXIT_PASS, proc.stderr
    seen = {}
    for k in range(4):
        report = (tmp_path / "out" / f"student{k}" / "report.txt").read_text()
        seen[k] = {int(m) for m in re.findall(r"\b7000(\d{6})\b", report)}
        assert len(seen[k]) == 3, report  # one uid per function's run: never one twice
        assert all(uid in outer for uid in seen[k]), (k, sorted(seen[k]), outer)
    spans = sorted((min(uids), max(uids), k) for k, uids in seen.items())
    for (_, first_end, a), (second_start, _, b) in zip(spans, spans[1:]):
        assert first_end < second_start, f"students {a} and {b} drew from overlapping uids: {spans}"


# ---- without bubblewrap: one student at a time, and nothing left between them -------------------

# Leaves a marker in the machine's /tmp, waits, then looks for another student's: it crashes (and so
# loses its points) if it finds one, and the marker must be gone once the class is graded.
MEETING = r"""
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <unistd.h>
static void misbehave() {
    static bool done = false;
    if (done) return;
    done = true;
    if (FILE* f = std::fopen("/tmp/scanlab-meet-SALT-WHO", "w")) { std::fputs("here\n", f); std::fclose(f); }
    usleep(1500000);
    if (DIR* tmp = opendir("/tmp")) {
        while (dirent* e = readdir(tmp))
            if (std::strncmp(e->d_name, "scanlab-meet-SALT-", 18) == 0 && std::strstr(e->d_name, "-WHO") == nullptr)
                std::abort();
        closedir(tmp);
    }
}
""" + CORRECT_DRILL01


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="partial isolation (a uid of its own per run) needs root")
def test_without_namespaces_students_are_graded_one_at_a_time_and_cleaned_up_after(tmp_path):
    salt = f"{os.getpid()}x{time.monotonic_ns() % 100000}"
    klass = tmp_path / "class"
    for who in ("first", "second"):
        (klass / who).mkdir(parents=True)
        (klass / who / FILES["drill01"]).write_text(MEETING.replace("SALT", salt).replace("WHO", who))
    try:
        proc = grade_env({"SCANLAB_BWRAP": "none"}, "class", klass, "--out", tmp_path / "out", "--seed", SEED,
                         "--jobs", "2")
        assert proc.returncode == EXIT_PASS, proc.stderr
        assert "students graded one at a time" in proc.stderr, proc.stderr
        left = sorted(p.name for p in Path("/tmp").glob(f"scanlab-meet-{salt}-*"))
        assert not left, f"left in the machine's /tmp: {left}"
        top = maxima(tmp_path / "out")
        graded = rows(tmp_path / "out" / "grades.csv")
        for who in ("first", "second"):  # neither saw the other's marker
            assert graded[who]["drill01"] == cell(top["drill01"]), (who, graded[who])
            report = (tmp_path / "out" / who / "report.txt").read_text()
            assert "isolation: partial (" in report and "students graded one at a time" in report, report[:800]
            assert "after this student: " in report, report[:800]
        info = json.loads((tmp_path / "out" / "class.json").read_text())
        assert info["between_students"].startswith("partial (") and "one at a time" in info["between_students"]
    finally:
        for path in Path("/tmp").glob(f"scanlab-meet-{salt}-*"):
            path.unlink()


@pytest.mark.skipif(os.geteuid() != 0, reason="making files and IPC objects of another uid needs root")
def test_leftovers_of_a_students_uids_are_removed_and_nothing_else(tmp_path):
    uid = 990_000 + os.getpid() % 9000  # nobody else's: a uid of this test alone
    made = Path(f"/tmp/scanlab-left-{os.getpid()}")
    other = Path(f"/tmp/scanlab-kept-{os.getpid()}")
    try:
        made.mkdir()
        (made / "inside").write_text("x")
        os.chown(made, uid, uid)
        other.write_text("the grader's own")
        ipc = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "ipcmk", "-M", "4096"],
                             capture_output=True, text=True, timeout=30)
        if ipc.returncode != 0:
            pytest.skip(f"ipcmk could not make a System V segment here: {ipc.stderr.strip()}")
        ident = int(ipc.stdout.split()[-1])
        said = classroom.remove_leftovers(range(uid, uid + 1), None, tmp_path)
        assert not made.exists() and other.exists(), said
        segments = Path("/proc/sysvipc/shm").read_text().split("\n")[1:]
        assert not [line for line in segments if line.split()[1:2] == [str(ident)]], said
        assert "1 file(s) or folder(s) removed" in said and "1 System V IPC object(s) removed" in said, said
    finally:
        shutil.rmtree(made, ignore_errors=True)
        other.unlink(missing_ok=True)


# ---- names and permissions: nothing a class folder holds stops a run -----------------------------

def test_every_hidden_character_of_a_name_is_refused_and_shown_escaped():
    for name in ("mal\u200bory", "bom\ufeffx", "line\u2028sep", "para\u2029sep", "no\u00a0break",
                 "ideo\u3000space", "caf\udce9", "fill\u3164er", "pua\ue000x"):
        assert classroom.name_problem(name), repr(name)
        assert classroom.shown_name(name) != name and classroom.shown_name(name).isascii(), repr(name)
    assert classroom.name_problem("Zoë Smith, jr") is None and classroom.name_problem("山田 太郎") is None
    assert classroom.shown_name("mal\u200bory") == "mal\\u200bory"
    assert classroom.shown_name("caf\udce9.txt") == "caf\\xe9.txt"  # a byte that is not UTF-8
    assert classroom.shown_name("c1\x85") == "c1\\u0085"  # a code point: never the same as the byte \x85
    assert classroom.shown_name("esc\x1b[2J") == "esc\\x1b[2J" and classroom.shown_name("a\\xe9") == "a\\\\xe9"
    assert classroom.shown_name("Zoë Smith, jr") == "Zoë Smith, jr"


def _strict_utf8(folder: Path) -> None:
    """Every file the class run wrote is UTF-8, and every JSON string in it is one too."""
    def walk(value):
        if isinstance(value, str):
            value.encode("utf-8")  # a lone surrogate (json's \udce9) would raise here
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(k), walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for path in folder.rglob("*"):
        if path.is_file() and path.suffix == ".png":  # the summary's picture: binary by nature
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", path
        elif path.is_file():
            text = path.read_bytes().decode("utf-8")
            if path.suffix == ".json":
                walk(json.loads(text))


@pytest.mark.slow
def test_odd_names_never_stop_a_class_and_are_shown_escaped(tmp_path):
    klass = tmp_path / "class"
    (klass / "ok").mkdir(parents=True)
    os.mkdir(os.fsencode(klass / "ok") + b"/L\xf6sung")  # a Latin-1 folder, as an old zip makes it
    shutil.copy(SOLUTIONS / FILES["drill03"], os.fsencode(klass / "ok") + b"/L\xf6sung/" + FILES["drill03"].encode())
    (klass / "ok" / "zero\u200bwidth.txt").write_text("x\n")
    with open(os.fsencode(klass / "ok") + b"/notes\xe9.txt", "w") as f:
        f.write("x\n")
    os.mkfifo(klass / "ok" / FILES["drill01"])  # named like an exercise, but not a file: never opened
    for name in ("mal\u200bory", "bom\ufeffx", "line\u2028sep", "no\u00a0break"):
        (klass / name).mkdir()
        shutil.copy(SOLUTIONS / FILES["drill03"], klass / name / FILES["drill03"])
    os.mkdir(os.fsencode(klass) + b"/caf\xe9")
    with open(os.fsencode(klass) + b"/roster\xe9.txt", "w") as f:
        f.write("not a student\n")
    proc = subprocess.run([sys.executable, str(GRADE), "class", str(klass), "--out", str(tmp_path / "out"),
                           "--seed", str(SEED)], capture_output=True, timeout=600)
    stderr = proc.stderr.decode("utf-8")  # escaped: strict UTF-8
    assert proc.returncode == EXIT_FAIL, stderr  # the refused folders
    assert "Traceback" not in stderr, stderr
    for shown in ("mal\\u200bory", "bom\\ufeffx", "line\\u2028sep", "no\\u00a0break", "caf\\xe9"):
        assert f"the folder name '{shown}'" in stderr, (shown, stderr)
    assert "roster\\xe9.txt" in stderr, stderr
    _strict_utf8(tmp_path / "out")
    graded = rows(tmp_path / "out" / "grades.csv")
    assert list(graded) == ["ok"], graded  # the others are refused, never shown raw
    assert graded["ok"]["drill03"] == cell(maxima(tmp_path / "out")["drill03"]), graded["ok"]
    report = (tmp_path / "out" / "ok" / "report.txt").read_text(encoding="utf-8")
    assert "drill03: graded (L\\xf6sung/03_scan_analysis.md)" in report, report[:1500]
    assert "notes\\xe9.txt" in report and "zero\\u200bwidth.txt" in report, report[:1500]
    assert "01_exclusive_to_inclusive.cpp (not a regular file: not graded)" in report, report[:1500]
    assert "\u200b" not in report and "\ufffd" not in report
    info = json.loads((tmp_path / "out" / "class.json").read_text())
    assert "caf\\xe9" in info["refused"] and "mal\\u200bory" in info["refused"], info["refused"]


def _nobody_python() -> str | None:
    for python in (sys.executable, "/usr/bin/python3"):
        probe = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c",
                                "import tomllib"], capture_output=True, timeout=60)
        if probe.returncode == 0:
            return python
    return None


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="becoming an ordinary user (setpriv) needs root")
def test_an_ordinary_user_grades_a_class_with_unreadable_files_and_folders():
    python = _nobody_python()
    if python is None:
        pytest.skip("no Python that uid 65534 may run (the repository's or /usr/bin/python3)")
    if not os.access(GRADE, os.R_OK) or oct(REPO.stat().st_mode)[-1] not in "57":
        pytest.skip(f"{REPO} is not readable by other users")
    world = Path(tempfile.mkdtemp(prefix="scanlab-class-nobody-"))  # pytest's tmp_path is closed to others
    try:
        os.chmod(world, 0o755)
        klass = world / "class"
        for student in ("alice", "locked", "closed", "half"):
            (klass / student).mkdir(parents=True)
            shutil.copy(SOLUTIONS / FILES["drill03"], klass / student / FILES["drill03"])
        (klass / "locked" / FILES["drill03"]).chmod(0o000)
        (klass / "half" / "extra").mkdir()
        (klass / "half" / "extra").chmod(0o000)
        (klass / "closed").chmod(0o000)
        out = world / "out"
        out.mkdir()
        os.chown(out, 65534, 65534)
        env = {**os.environ, "HOME": str(out), "SCANLAB_CACHE": str(out / ".cache")}
        env.pop("SCANLAB_UID_RANGE", None)
        proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, str(GRADE),
                               "class", str(klass), "--out", str(out), "--seed", str(SEED)],
                              capture_output=True, text=True, timeout=600, env=env, cwd=world)
        assert "Traceback" not in proc.stderr, proc.stderr
        assert proc.returncode == EXIT_FAIL, proc.stderr  # not every submission could be graded
        graded = rows(out / "grades.csv")
        top = maxima(out)
        assert graded["alice"]["drill03"] == graded["half"]["drill03"] == cell(top["drill03"]), graded
        assert graded["locked"]["drill03"] == "", graded["locked"]
        assert ("not graded: 03_scan_analysis.md cannot be read by the grader (Permission denied) (drill03)"
                in graded["locked"]["note"]), graded["locked"]
        assert all(graded["closed"][e] == "" for e in FILES), graded["closed"]
        assert graded["closed"]["note"] == ("not graded: the folder cannot be read by the grader (Permission denied) "
                                            "(day31, drill01, drill02, drill03)"), graded["closed"]
        assert graded["half"]["note"] == ("not graded: not found, but the folder extra/ cannot be read by the grader: "
                                          "it may be in there (day31, drill01, drill02)"), graded["half"]
    finally:
        for path in (world / "class" / "closed", world / "class" / "half" / "extra"):
            if path.exists():
                path.chmod(0o755)
        shutil.rmtree(world, ignore_errors=True)


# ---- what a large class's instructor reaches for ----------------------------------------------

from scanlab import class_tools  # noqa: E402


@pytest.mark.slow
def test_the_summary_gives_each_exercises_scores_and_the_classs_commonest_mistakes(graded):
    _, out, result, _, _ = graded
    assert result.returncode == EXIT_PASS, result.stderr
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "8 students." in summary
    for exercise in FILES:
        assert f"## {exercise}\n" in summary, exercise
    # drill01: complete, partial, starter, compile error, two hostile ones and Zoë submitted it
    assert "7 submitted, 7 graded: mean" in summary, summary
    table = list(csv.DictReader(io.StringIO((out / "summary.csv").read_text(encoding="utf-8"))))
    by = {(r["exercise"], r["check"]): r for r in table}
    assert by[("total", "")]["graded"] == "8" and by[("total", "")]["maximum"] == cell(sum(maxima(out).values()))
    assert by[("drill01", "")]["graded"] == "7" and by[("drill01", "")]["max"] == cell(maxima(out)["drill01"])
    assert by[("drill01", "builds")]["failed"] == "1"  # the compile error alone
    assert by[("drill01", "exclusive_to_inclusive")]["failed"] == "2"  # the starter and the compile error
    # the starter's failure has a likely cause, and it is counted
    starter = json.loads((out / "starter" / "state.json").read_text())["exercises"]["drill01"]["checks"]
    causes = [c for check in starter if check["name"] == "exclusive_to_inclusive" for c in check["causes"]]
    assert causes, starter
    assert by[("drill01", "exclusive_to_inclusive")]["commonest_cause"] == causes[0]
    assert f"| exclusive_to_inclusive | 2 of 7 | {causes[0]}" in summary, summary
    assert "```\n  [    0," in summary  # a text histogram
    assert (out / "total-scores.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # similarity: three copies of the solution are flagged; the starter (nothing of its own) never is
    for a, b in (("complete", "partial"), ("complete", SPECIAL), ("partial", SPECIAL)):
        assert f"- drill01: {a} and {b}: 1.00" in summary, summary
    assert not [line for line in summary.splitlines() if line.startswith("- ") and "starter" in line], summary
    assert "scores are never changed" in summary


def test_without_matplotlib_the_summary_says_so_and_nothing_fails(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
    states = {f"s{k}": {"exercises": {"drill03": {"status": "graded", "score": float(k), "checks": [
        {"name": "hs_levels_1024", "passed": k > 1, "causes": ["off by one level"]}]}}} for k in range(4)}

    def write(path, text):
        path.write_text(text)

    assert class_tools.write_summary(tmp_path, states, {"drill03": 25.0}, write) == ["summary.md", "summary.csv"]
    summary = (tmp_path / "summary.md").read_text()
    assert "matplotlib cannot be imported here" in summary and not (tmp_path / "total-scores.png").exists()
    assert "| hs_levels_1024 | 2 of 4 | off by one level (2) |" in summary, summary
    assert "4 graded: mean 1.5, median 1.5, min 0, max 3 (of 25)" in summary, summary


def test_names_sort_naturally_and_the_same_under_every_locale():
    names = ["student10", "Student2", "student1", "Émile", "alice", "Bob"]
    assert sorted(names, key=class_tools.natural_key) == ["alice", "Bob", "student1", "Student2", "student10",
                                                          "Émile"]


def test_similarity_ignores_comments_layout_and_the_starter(tmp_path):
    starter = (STARTERS / FILES["drill02"]).read_text()
    solution = (SOLUTIONS / FILES["drill02"]).read_text()
    relaid = "/* mine, honest */\n" + solution.replace("\n", "\n\n  ").replace(") {", ")\n{") + "// the end\n"
    base = class_tools.fingerprints(starter)
    assert class_tools.fingerprints(relaid) == class_tools.fingerprints(solution)
    mine = sorted(class_tools.fingerprints(solution) - base)
    assert len(mine) >= class_tools.SIMILARITY_MIN_PRINTS
    assert not sorted(class_tools.fingerprints(starter) - base)  # an untouched starter has nothing of its own
    other = sorted(class_tools.fingerprints((SOLUTIONS / FILES["drill01"]).read_text()))
    pairs = class_tools.similar_pairs({"a": mine, "b": list(mine), "c": other, "d": []})
    assert [(a, b) for _, a, b, _ in pairs] == [("a", "b")] and pairs[0][0] == 1.0


def small_class(root: Path, students: dict[str, dict[str, Path]]) -> Path:
    klass = root / "class"
    for student, files in students.items():
        (klass / student).mkdir(parents=True)
        for exercise, source in files.items():
            shutil.copy(source, klass / student / FILES[exercise])
    return klass


@pytest.mark.slow
def test_only_regrades_the_named_students_and_an_unknown_name_is_status_2(tmp_path):
    klass = small_class(tmp_path, {"ann": {"drill03": STARTERS / FILES["drill03"]},
                                   "ben": {"drill03": STARTERS / FILES["drill03"]},
                                   "cy": {"drill03": SOLUTIONS / FILES["drill03"]}})
    out = tmp_path / "out"
    assert grade("class", klass, "--out", out, "--seed", SEED).returncode == EXIT_PASS
    before = snapshot(out)
    for who in ("ann", "ben"):  # both change; only ann is asked for
        shutil.copy(SOLUTIONS / FILES["drill03"], klass / who / FILES["drill03"])
    proc = grade("class", klass, "--out", out, "--only", "ann", "--only", "cy")
    assert proc.returncode == EXIT_PASS, proc.stderr
    after, top = snapshot(out), cell(maxima(out)["drill03"])
    graded = rows(out / "grades.csv")
    assert graded["ann"]["drill03"] == top and graded["ben"]["drill03"] == "0", graded  # ben left as he was
    assert after["ben/state.json"] == before["ben/state.json"]
    assert after["cy/state.json"][1] != before["cy/state.json"][1]  # unchanged, regraded all the same
    assert list(graded) == ["ann", "ben", "cy"]
    unknown = grade("class", klass, "--out", out, "--only", "ann", "--only", "nobody")
    assert unknown.returncode == EXIT_USAGE and "--only: no student named 'nobody'" in unknown.stderr, unknown.stderr
    assert snapshot(out)["ann/state.json"] == after["ann/state.json"]


@pytest.mark.slow
def test_course_toml_sets_the_options_flags_win_and_a_bad_file_is_status_2(tmp_path):
    klass = small_class(tmp_path, {"ann": {"drill03": SOLUTIONS / FILES["drill03"],
                                           "drill01": SOLUTIONS / FILES["drill01"]}})
    (klass / "course.toml").write_text('mode = "self-study"\nseed = 77\njobs = 1\nexercises = ["drill03"]\n'
                                       '[points.drill03]\n"serial_adds_512" = 5\n')
    out = tmp_path / "out"
    proc = grade("class", klass, "--out", out)
    assert proc.returncode == EXIT_PASS, proc.stderr
    assert "course.toml" not in proc.stderr, proc.stderr  # the course's own file: not "ignored"
    info = json.loads((out / "class.json").read_text())
    assert (info["seed"], info["mode"], info["maxima"]) == (77, "self-study", {"drill03": 29.0}), info
    table = list(csv.reader(io.StringIO((out / "grades.csv").read_text())))
    assert table == [["student", "drill03", "total", "maximum", "note"], ["ann", "29", "29", "29", ""]], table
    assert "01_exclusive_to_inclusive.cpp (not graded in this course)" in (out / "ann" / "report.txt").read_text()
    flags = grade("class", klass, "--out", tmp_path / "flags", "--seed", "78", "--mode", "course")
    info = json.loads((tmp_path / "flags" / "class.json").read_text())
    assert flags.returncode == EXIT_PASS and (info["seed"], info["mode"]) == (78, "course"), flags.stderr
    other = tmp_path / "other.toml"
    other.write_text('exercises = ["drill01", "drill03"]\n')
    chosen = grade("class", klass, "--out", tmp_path / "other", "--config", other, "--seed", SEED)
    assert chosen.returncode == EXIT_PASS, chosen.stderr
    assert list(rows(tmp_path / "other" / "grades.csv")["ann"])[1:3] == ["drill01", "drill03"]
    for text, said in (('sed = 1\n', "unknown key 'sed'"), ('seed = "7"\n', "seed must be a int"),
                       ('jobs = 0\n', "jobs must be a whole number"), ('mode = "exam"\n', "mode must be one of"),
                       ('exercises = ["drill09"]\n', "exercises must be a list"),
                       ('[points.drill03]\n"nope" = 1\n', "has no check 'nope'"),
                       ('[points.drill03]\n"serial_adds_512" = -1\n', "must be a number >= 0"),
                       ('seed = \n', "not valid TOML")):
        (klass / "course.toml").write_text(text)
        bad = grade("class", klass, "--out", tmp_path / "bad")
        assert bad.returncode == EXIT_USAGE and said in bad.stderr and "usage:" in bad.stderr, (text, bad.stderr)
    missing = grade("class", klass, "--out", tmp_path / "bad", "--config", tmp_path / "none.toml")
    assert missing.returncode == EXIT_USAGE and "cannot be read" in missing.stderr, missing.stderr
    assert not (tmp_path / "bad" / "grades.csv").exists()


def zip_of(path: Path, members: dict[str, bytes], links: dict[str, str] = (), stored: bool = False) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
        for name, target in dict(links).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o120777 << 16)
            z.writestr(info, target)
    return path


def test_hostile_archives_are_refused_and_nothing_is_unpacked_outside(tmp_path, monkeypatch):
    cases = {
        "bomb": (zip_of(tmp_path / "bomb.zip", {"a/03_scan_analysis.md": b"0" * (40 << 20)}), "zip bomb"),
        "dotdot": (zip_of(tmp_path / "dotdot.zip", {"../../escaped.txt": b"x", "ok.md": b"y"}),
                   "points outside"),
        "absolute": (zip_of(tmp_path / "abs.zip", {"/tmp/escaped-abs.txt": b"x"}), "points outside"),
        "link": (zip_of(tmp_path / "link.zip", {}, {"03_scan_analysis.md": "/etc/passwd"}), "a link"),
        "oversized": (zip_of(tmp_path / "big.zip", {"03_scan_analysis.md": os.urandom(2 << 20)}, stored=True),
                      "at most 1 MiB is unpacked"),
        "many": (zip_of(tmp_path / "many.zip", {f"f{k}.txt": b"" for k in range(30)}), "holds 30 entries; at most 20 are unpacked"),
        "not a zip": (tmp_path / "junk.zip", "cannot be unpacked"),
    }
    (tmp_path / "junk.zip").write_bytes(b"PK\x03\x04 not really")
    monkeypatch.setattr(class_tools, "ZIP_MAX_BYTES", 1 << 20)
    monkeypatch.setattr(class_tools, "ZIP_MAX_MEMBERS", 20)
    for name, (archive, said) in cases.items():
        target = tmp_path / "into" / name
        target.mkdir(parents=True)
        with pytest.raises(class_tools.Refused, match=said):
            class_tools.safe_extract(archive, target)
        assert not any(target.iterdir()), name  # emptied: nothing half-unpacked is graded
    assert not (tmp_path / "escaped.txt").exists() and not Path("/tmp/escaped-abs.txt").exists()
    # a bomb whose header lies about its size is stopped as it is written
    monkeypatch.setattr(class_tools, "ZIP_MAX_RATIO", 10 ** 9)
    monkeypatch.setattr(class_tools, "ZIP_MAX_TOTAL", 1 << 20)
    with pytest.raises(class_tools.Refused, match="zip bomb"):
        class_tools.safe_extract(cases["bomb"][0], tmp_path / "into" / "bomb")
    good = zip_of(tmp_path / "good.zip", {"sub/03_scan_analysis.md": b"answers\n"})
    class_tools.safe_extract(good, tmp_path / "into" / "dotdot")
    assert (tmp_path / "into" / "dotdot" / "sub" / "03_scan_analysis.md").read_bytes() == b"answers\n"


GRADESCOPE_YML = """\
submission_1001:
  :submitters:
  - :name: Ann Lee
    :email: ann@example.edu
    :sid: '17'
  :created_at: 2026-11-02 10:00:00.000000000 -05:00
  :score: 0.0
submission_1002:
  :submitters:
  - :name: Ben Ode
    :email: ben@example.edu
    :sid: '18'
  - :name: Cy Park
    :email: cy@example.edu
    :sid: '19'
"""


def test_gradescope_metadata_is_read_with_or_without_pyyaml():
    wanted = {"submission_1001": [{"name": "Ann Lee", "email": "ann@example.edu", "sid": "17"}],
              "submission_1002": [{"name": "Ben Ode", "email": "ben@example.edu", "sid": "18"},
                                  {"name": "Cy Park", "email": "cy@example.edu", "sid": "19"}]}
    assert class_tools._read_metadata_plainly(GRADESCOPE_YML) == wanted
    import yaml  # noqa: F401 - requirements.txt pins it; read_metadata uses safe_load when it imports

    path = Path(tempfile.mkdtemp()) / "submission_metadata.yml"
    path.write_text(GRADESCOPE_YML)
    assert class_tools.read_metadata(path) == wanted
    shutil.rmtree(path.parent)


@pytest.mark.slow
def test_lms_layouts_zip_canvas_and_gradescope_are_graded_and_exported(tmp_path):
    answers = (SOLUTIONS / FILES["drill03"]).read_bytes()
    # a folder per student, some holding one .zip (good, a bomb, a ../ member, a link)
    klass = tmp_path / "zips"
    for who in ("zipped", "bomb", "dotdot", "link", "student2", "student10"):
        (klass / who).mkdir(parents=True)
    zip_of(klass / "zipped" / "hw.zip", {"hw/03_scan_analysis.md": answers, "hw/notes.txt": b"n"})
    zip_of(klass / "bomb" / "hw.zip", {"03_scan_analysis.md": b"0" * (100 << 20)})
    zip_of(klass / "dotdot" / "hw.zip", {"../../../escaped.md": b"x", "03_scan_analysis.md": answers})
    zip_of(klass / "link" / "hw.zip", {}, {"03_scan_analysis.md": "/etc/passwd"})
    for who in ("student2", "student10"):
        (klass / who / FILES["drill03"]).write_bytes(answers)
    out = tmp_path / "zips-out"
    before = snapshot(klass)
    proc = grade("class", klass, "--out", out, "--seed", SEED)
    assert proc.returncode == EXIT_FAIL, proc.stderr  # three refused archives: not graded
    assert "Traceback" not in proc.stderr
    graded, top = rows(out / "grades.csv"), cell(maxima(out)["drill03"])
    assert list(graded) == ["bomb", "dotdot", "link", "student2", "student10", "zipped"]  # natural order
    assert graded["zipped"]["drill03"] == top, graded["zipped"]
    assert "drill03: graded (hw.zip: hw/03_scan_analysis.md)" in (out / "zipped" / "report.txt").read_text()
    for who, said in (("bomb", "zip bomb"), ("dotdot", "points outside"), ("link", "a link")):
        assert graded[who]["drill03"] == "" and "the archive was refused: hw.zip" in graded[who]["note"], graded[who]
        assert said in graded[who]["note"], graded[who]
    assert not list(tmp_path.rglob("escaped.md")) and not Path("/escaped.md").exists()
    assert snapshot(klass) == before  # nothing unpacked into the class folder: into a scratch of the run's own

    # Canvas: flat files named name_id_..._file, grouped by name and id; the latest resubmission wins
    canvas = tmp_path / "canvas"
    canvas.mkdir()
    (canvas / "leeann_4501_99001_03_scan_analysis.md").write_bytes((STARTERS / FILES["drill03"]).read_bytes())
    (canvas / "leeann_4501_99002_03_scan_analysis-1.md").write_bytes(answers)
    (canvas / "odeben_late_4502_99003_01_exclusive_to_inclusive.cpp").write_bytes(
        (STARTERS / FILES["drill01"]).read_bytes())
    (canvas / "odeben_late_4502_99004_03_scan_analysis.md").write_bytes(answers)
    out = tmp_path / "canvas-out"
    proc = grade("class", canvas, "--out", out, "--seed", SEED)
    assert proc.returncode == EXIT_PASS, proc.stderr
    assert "ignored in" not in proc.stderr, proc.stderr  # every flat file was a submission
    graded = rows(out / "grades.csv")
    assert sorted(graded) == ["leeann_4501", "odeben_4502"], graded
    assert graded["leeann_4501"]["drill03"] == top and graded["odeben_4502"]["drill01"] == "0"
    book = list(csv.DictReader(io.StringIO((out / "canvas.csv").read_text())))
    assert [(r["Student"], r["ID"], r["drill03"]) for r in book] == [("leeann", "4501", top), ("odeben", "4502", top)]
    assert list(book[0])[:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]

    # Gradescope: submission_N folders named by submission_metadata.yml
    scope = tmp_path / "gradescope"
    for folder in ("submission_1001", "submission_1002"):
        (scope / folder).mkdir(parents=True)
    (scope / "submission_1001" / FILES["drill03"]).write_bytes(answers)
    (scope / "submission_metadata.yml").write_text(GRADESCOPE_YML)
    out = tmp_path / "gradescope-out"
    proc = grade("class", scope, "--out", out, "--seed", SEED)
    assert proc.returncode == EXIT_PASS and "submission_metadata.yml" not in proc.stderr, proc.stderr
    graded = rows(out / "grades.csv")
    assert list(graded) == ["Ann Lee", "Ben Ode & Cy Park"], graded
    book = list(csv.reader(io.StringIO((out / "gradescope.csv").read_text())))
    assert book[0] == ["Name", "Email", "SID", *FILES, "Total Score"]
    assert book[1] == ["Ann Lee", "ann@example.edu", "17", "0", "0", "0", top, top], book
    assert book[2][:3] == ["Ben Ode & Cy Park", "ben@example.edu", "18"], book
    assert grade("class", scope, "--out", out, "--only", "Ann Lee").returncode == EXIT_PASS


def test_the_readmes_course_toml_is_one_the_class_run_accepts(tmp_path):
    from scanlab import grading

    text = (REPO / "harness" / "README.md").read_text()
    example = re.search(r"```toml\n(.*?)```", text, re.S).group(1)
    (tmp_path / "course.toml").write_text(example)
    table = class_tools.load_config(tmp_path / "course.toml", ("self-study", "course"), list(FILES),
                                    grading.points_table())
    assert table["exercises"] == ["drill01", "drill03"] and table["points"] == {"drill03": {"serial_adds_512": 2}}


# ---- bench-class.py: the class it draws ---------------------------------------------------------

def test_bench_class_draws_graded_files_for_a_stretch_drill_too(tmp_path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("bench_class", REPO / "harness" / "bench-class.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.SETS["drill05"] == ["drill05"] and "drill05" not in bench.SETS["all"]  # opt-in, as in a course
    pools = bench.pools("drill05")
    assert pools["wrong"] and pools["hostile"], "drill 05's corpus entries are in the pools"
    for text in pools["wrong"] + pools["hostile"] + pools["right"]:  # edits of the answer are built first
        assert b"@@ replace" not in text and b"__global__" in text
    drawn = bench.make_class(tmp_path / "class", 6, ["drill05"], seed=3)
    assert sum(drawn.values()) == 6
    files = sorted((tmp_path / "class").glob(f"*/{registry.FILES['drill05']}"))
    assert len(files) == 6 and len({f.read_bytes() for f in files}) == 6  # one file a student, none alike
