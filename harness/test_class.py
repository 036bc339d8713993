"""`grade.py class` and `grade.py merge`: a whole class graded end to end on the CPU.

One class of eight students (complete, partial, untouched starters, a compile
error, two hostile drill 01s, an empty folder, and a folder named with a space,
a comma and a non-ASCII letter whose files sit one folder down beside junk) is
graded once per module; the tests read its grades.csv, every results.json and
report.txt, then rerun it (unchanged students are skipped, --force regrades),
shard it and merge the shards. Day 31 needs a GPU: on a machine without one,
a class that submits it exits 1 with "not graded: no GPU".
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scanlab import EXIT_FAIL, EXIT_PASS, EXIT_USAGE
from scanlab import classroom
from scanlab.paths import REPO

GRADE = REPO / "harness" / "grade.py"
SOLUTIONS, STARTERS = REPO / "solutions", REPO / "exercises"
FILES = classroom.EXERCISE_FILES
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


def make_class(root: Path) -> Path:
    klass = root / "class"
    students = {
        "complete": {e: SOLUTIONS / FILES[e] for e in ("drill01", "drill02", "drill03")},
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
    assert table[0] == ["student", "day31", "drill01", "drill02", "drill03", "total", "maximum", "note"]
    assert table[1:] == [[student, *cells] for student, cells in sorted(expected.items())]
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
    assert written == {"grades.csv", "class.json"} | {f"{s}/{name}" for s in students
                                                      for name in ("results.json", "report.txt", "state.json")}
    assert "mallory" not in (out / "grades.csv").read_text()
    if classroom_isolation() != "full":  # without bubblewrap the proc snooper can see the grader
        pytest.skip("this machine cannot isolate submissions; the /proc and file checks need bubblewrap")
    assert float(students["hostile proc"]["drill01"]) == maxima(out)["drill01"]


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
    assert row["note"] == "not submitted: drill01, drill02; not graded: no GPU (day31)"
    results = json.loads((tmp_path / "out" / "gpu student" / "results.json").read_text())
    day31 = [t for t in results["tests"] if t["name"].startswith("day31: ")]
    assert [(t["name"], t["score"], t["max_score"], t["visibility"]) for t in day31] == [
        ("day31: graded", 0.0, top["day31"], "visible")]
    assert "graded on a GPU machine" in day31[0]["output"]
    # Not vouched for: the rerun grades it again (on a GPU machine it would now be graded).
    assert not json.loads((tmp_path / "out" / "gpu student" / "state.json").read_text())["complete"]


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
