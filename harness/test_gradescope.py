"""Gradescope's autograder end to end: `make autograder`, unpacked into a root laid out like
/autograder, run on a complete, a partial and a hostile submission (harness/gradescope/).

Every results.json is checked against results.schema.json (written from Gradescope's
documented format) and for scores that add up, with every exercise at its exercises.toml
maximum whatever happened to it. CPU only: on a machine without a GPU, Day 31 must be the
one "graded on a GPU machine" test; on a GPU machine it is graded like the others.

"Gradescope mode" is Gradescope's container as this machine can stand in for it (as root):
run_autograder started by GRADESCOPE_LAUNCHER, without CAP_SYS_ADMIN and under a seccomp
filter that refuses namespaces and mounts as Docker's default profile does, so bubblewrap
cannot start and the graders fall back to partial isolation. There a drill 03 answer key
hunt (corpus/drill01/h_read_answer_key.cpp) must find nothing of the autograder's.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from pathlib import Path

import pytest

from scanlab import env, sandbox
from scanlab import registry
from scanlab.grading import max_score
from scanlab.paths import REPO

sys.path.insert(0, str(REPO / "harness" / "gradescope"))

import make_autograder  # noqa: E402
import results_schema  # noqa: E402
import run_autograder as autograder  # noqa: E402

pytestmark = pytest.mark.slow

SOLUTIONS = REPO / "solutions"
CORPUS = REPO / "harness" / "corpus"
EXERCISES = tuple(registry.COURSE)  # what the autograder grades: harness/exercises.toml, no stretch drill
FILES = registry.COURSE
CPU = [e for e in EXERCISES if e not in registry.NEEDS_GPU]  # graded on Gradescope's GPU-less machines
# The runs of this module draw their sandbox uids from a range of their own (outside the default
# 200000-299999 and test_corpus.py's 400000-899999), so "no process left" looks at exactly theirs.
SANDBOX_UIDS = range(900_000 + (os.getpid() % 99) * 1000, 900_000 + (os.getpid() % 99) * 1000 + 1000)


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory) -> Path:
    """`make autograder`, into a build folder of this test's own (build/ is left alone)."""
    build = tmp_path_factory.mktemp("build")
    if shutil.which("make") is None:
        assert make_autograder.main(["--out", str(build / "autograder.zip")]) == 0
    else:
        made = subprocess.run(["make", "-C", str(REPO), "autograder", f"BUILD={build}"], capture_output=True,
                              text=True, timeout=120)
        assert made.returncode == 0, f"make autograder failed:\n{made.stdout}\n{made.stderr}"
    return build / "autograder.zip"


def unpack(autograder_zip: Path, top: Path) -> Path:
    """`top` laid out as Gradescope lays out /autograder: source/ (the zip, unpacked as unzip would:
    folders 0755, files with the zip's modes), submission/ and results/ (0755)."""
    with zipfile.ZipFile(autograder_zip) as zf:
        for info in zf.infolist():
            target = top / "source" / info.filename
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
            target.write_bytes(zf.read(info))
            os.chmod(target, (info.external_attr >> 16) & 0o777)
    for folder in ("submission", "results"):
        (top / folder).mkdir(mode=0o755)
    return top


@pytest.fixture
def root(tmp_path, autograder_zip) -> Path:
    """A folder laid out as Gradescope lays out /autograder: source/ (the zip), submission/, results/."""
    return unpack(autograder_zip, tmp_path / "autograder")


def run(root: Path, every_exercise: bool | tuple = True, prefix: tuple[str, ...] = (), timeout: float = 600,
        **env: str) -> tuple[subprocess.CompletedProcess, dict]:
    """Gradescope's step: run_autograder (as copied from the zip; `prefix`: what starts it), then read
    and check results.json."""
    environment = {**os.environ, "SCANLAB_AUTOGRADER_ROOT": str(root), "PYTHON": sys.executable,
                   "SCANLAB_UID_RANGE": f"{SANDBOX_UIDS.start}-{SANDBOX_UIDS.stop - 1}", **env}
    done = subprocess.run([*prefix, str(root / "source" / "run_autograder")], capture_output=True, text=True,
                          timeout=timeout, env=environment, cwd=root)
    shown = f"run_autograder said:\n{done.stdout[-6000:]}\n{done.stderr[-3000:]}"
    assert done.returncode == 0, shown
    results_file = root / "results" / "results.json"
    assert results_file.is_file() and not results_file.is_symlink(), shown
    results = json.loads(results_file.read_text(encoding="utf-8"))
    check_results(results, shown, every_exercise)
    return done, results


def check_results(results: dict, shown: str = "", every_exercise: bool | tuple = True) -> None:
    """Gradescope's format, scores that add up, every exercise present at its one maximum
    (`every_exercise`: True for the course's, or the exercises the zip was built with)."""
    assert results_schema.problems(results) == [], f"{results_schema.problems(results)}\n{shown}"
    tests = results["tests"]
    assert results["stdout_visibility"] == "hidden"
    for test in tests:
        if test["name"].split(": ", 1)[-1].startswith("speed at "):
            # drill 05's speed: points in proportion to CUB's time (scanlab/speed.py), passed when above 0
            assert 0 <= test["score"] <= test["max_score"], test
            assert (test["status"] == "passed") == (test["score"] > 0), test
        else:
            # every other check is all or nothing; a failed check worth 0 ("builds") is 0 of 0 and failed
            assert test["score"] == (test["max_score"] if test["status"] == "passed" else 0), test
    assert results["score"] == pytest.approx(sum(t["score"] for t in tests))
    for exercise in every_exercise if isinstance(every_exercise, tuple) else EXERCISES if every_exercise else ():
        mine = [t for t in tests if t["name"].startswith(f"{exercise}: ")]
        assert mine, f"{exercise} is missing from results.json\n{shown}"
        # a GPU exercise on a machine without one weighs 0 (graded on a GPU machine, in its own assignment)
        expected = 0 if exercise in registry.NEEDS_GPU and not gpu_here() else max_score(exercise)
        assert sum(t["max_score"] for t in mine) == pytest.approx(expected), (exercise, mine)
    assert len({t["name"] for t in tests}) == len(tests), "two tests share a name"


def by_exercise(results: dict, exercise: str) -> list[dict]:
    return [t for t in results["tests"] if t["name"].startswith(f"{exercise}: ")]


def student_visible(results: dict) -> str:
    return "\n".join([results["output"]] + [t["output"] for t in results["tests"] if t["visibility"] != "hidden"])


def gpu_here() -> bool:
    from scanlab.grade_day31 import probe_gpu

    return probe_gpu() is None


def snapshot(folder: Path) -> dict[str, str]:
    """Every path under `folder` with a hash of its contents (links by target, folders as such)."""
    seen = {}
    for path in sorted(folder.rglob("*")):
        key = path.relative_to(folder).as_posix()
        if path.is_symlink():
            seen[key] = "link:" + os.readlink(path)
        elif path.is_dir():
            seen[key] = "dir"
        else:
            seen[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return seen


# ---- the zip -----------------------------------------------------------------------------

def test_zip_has_gradescopes_layout_and_no_solution(autograder_zip):
    with zipfile.ZipFile(autograder_zip) as zf:
        infos = {info.filename: info for info in zf.infolist()}
        contents = {name: zf.read(name) for name in infos}
    for top in ("setup.sh", "run_autograder"):
        assert top in infos, f"{top} must be at the root of the zip"
        assert (infos[top].external_attr >> 16) & 0o111, f"{top} must be executable"
    for needed in ("harness/grade.py", "harness/exercises.toml", "harness/gradescope/run_autograder.py",
                   *(f"exercises/{name}" for name in FILES.values())):
        assert needed in infos, f"{needed} is missing from the zip"
    solutions = {p.read_bytes(): p.name for p in SOLUTIONS.rglob("*") if p.is_file()}
    for name, data in contents.items():
        assert not name.startswith("solutions/"), name
        assert data not in solutions, f"{name} is a copy of solutions/{solutions.get(data)}"
        parts = name.split("/")
        assert not (parts[0] == "harness" and parts[-1].startswith("test_")), f"a test in the zip: {name}"
        assert not {"corpus", "__pycache__", ".pytest_cache"} & set(parts), f"{name} should be left out"


def test_zip_is_the_same_for_the_same_tree(autograder_zip, tmp_path):
    again = tmp_path / "again.zip"
    assert make_autograder.main(["--out", str(again)]) == 0
    assert again.read_bytes() == autograder_zip.read_bytes()


def test_builder_refuses_a_solution_inside(tmp_path):
    planted = [("harness/notes.cpp", SOLUTIONS / "01_exclusive_to_inclusive.cpp")]
    why = make_autograder.refusals(make_autograder.members() + planted)
    assert any("harness/notes.cpp: has the same bytes as solutions/01_exclusive_to_inclusive.cpp" in w for w in why)


def test_every_grader_has_an_exercise_file():
    assert set(autograder.EXERCISE_FILES) == set(registry.EXERCISES) - registry.STRETCH == set(EXERCISES)
    for exercise, name in autograder.EXERCISE_FILES.items():
        assert (REPO / "exercises" / name).is_file(), f"{exercise}: no starter exercises/{name}"


# ---- the schema checker: it must be able to fail -----------------------------------------------

GOOD = {"score": 1, "execution_time": 0.5, "output": "", "stdout_visibility": "hidden",
        "tests": [{"name": "drill01: x", "score": 1, "max_score": 1, "status": "passed", "output": "",
                   "visibility": "visible"}]}


@pytest.mark.parametrize("change, said", [
    (lambda r: r.pop("tests"), "missing the required field 'tests'"),
    (lambda r: r.update(tests=[]), "0 item(s), at least 1 expected"),
    (lambda r: r["tests"][0].update(status="ok"), "'ok' is not one of"),
    (lambda r: r["tests"][0].update(score=True), "bool True, expected number"),
    (lambda r: r["tests"][0].update(max_score=-1), "below the minimum 0"),
    (lambda r: r["tests"][0].update(visibilty="hidden"), "field 'visibilty' is not in Gradescope's format"),
    (lambda r: r.update(stdout_visibility="students"), "is not one of"),
    (lambda r: r.update(score="44"), "str '44', expected number"),
], ids=["no-tests", "empty-tests", "bad-status", "bool-score", "negative-max", "misspelt-field",
        "bad-stdout-visibility", "score-as-text"])
def test_schema_checker_rejects(change, said):
    assert results_schema.problems(GOOD) == []
    broken = json.loads(json.dumps(GOOD))
    change(broken)
    found = results_schema.problems(broken)
    assert any(said in line for line in found), found


# ---- submissions ----------------------------------------------------------------------------

def test_complete_submission_at_the_top(root):
    for name in FILES.values():
        shutil.copy(SOLUTIONS / name, root / "submission" / name)
    (root / "submission" / "notes.txt").write_text("not an exercise\n")
    done, results = run(root)
    for exercise in CPU:
        mine = by_exercise(results, exercise)
        assert sum(t["score"] for t in mine) == max_score(exercise), (exercise, mine, done.stdout[-4000:])
    day31 = by_exercise(results, "day31")
    if gpu_here():
        assert sum(t["score"] for t in day31) == max_score("day31"), day31
    else:
        assert len(day31) == 1, day31
        (only,) = day31
        assert only["name"] == "day31: graded on a GPU machine"
        assert only["score"] == only["max_score"] == 0 and only["visibility"] == "visible"
        assert "not scored in this assignment" in only["output"] and "`grade.py class`" in only["output"]
    assert "ignored (not an exercise file): notes.txt" in results["output"]
    assert results["score"] == pytest.approx(sum(max_score(e) for e in EXERCISES) - (0 if gpu_here() else
                                                                                     max_score("day31")))
    assert results["score"] == sum(t["max_score"] for t in results["tests"])  # the maximum is what can be earned


def test_the_maximum_is_what_students_can_earn_here_whatever_they_submit(root):
    """Without a GPU, Day 31 weighs 0 whether or not it was submitted, so the assignment's total (the
    sum of every test's max_score) is the same for every student: the CPU exercises' points."""
    _, empty = run(root)
    shutil.copy(SOLUTIONS / FILES["day31"], root / "submission" / FILES["day31"])
    _, with_day31 = run(root)
    cpu_points = sum(max_score(e) for e in EXERCISES if e != "day31")
    for results in (empty, with_day31):
        total = sum(t["max_score"] for t in results["tests"])
        assert total == pytest.approx(cpu_points + (max_score("day31") if gpu_here() else 0)), results["tests"]


def test_a_near_miss_file_name_gets_its_rename_hint_in_the_students_own_feedback(root):
    """02_Segmented_Scan.cpp is not graded (names are exact), but the student's own test output says
    which file it was meant to be and what to do; a file named like nothing gets no hint."""
    (root / "submission" / "work").mkdir()
    (root / "submission" / "work" / "02_Segmented_Scan.cpp").write_text((SOLUTIONS / FILES["drill02"]).read_text())
    (root / "submission" / "03_scan_analysis.md.txt").write_text((SOLUTIONS / FILES["drill03"]).read_text())
    (root / "submission" / "notes.txt").write_text("not an exercise\n")
    _, results = run(root)
    (drill02,) = by_exercise(results, "drill02")
    assert drill02["output"] == ("not submitted: no file named 02_segmented_scan.cpp at the top of your submission "
                                 "or one folder down; you submitted work/02_Segmented_Scan.cpp: rename it exactly "
                                 "02_segmented_scan.cpp to have it graded"), drill02
    assert drill02["visibility"] == "visible"
    (drill03,) = by_exercise(results, "drill03")
    assert "you submitted 03_scan_analysis.md.txt: rename it exactly 03_scan_analysis.md" in drill03["output"]
    assert "work/02_Segmented_Scan.cpp (named almost like 02_segmented_scan.cpp: rename it" in results["output"]
    (drill01,) = by_exercise(results, "drill01")
    assert "you submitted" not in drill01["output"] and "notes.txt (" not in results["output"]


def test_stretch_drills_in_the_zip_weigh_what_students_can_earn_there(tmp_path):
    """`make autograder EXERCISES=...` adds the stretch drills: each is graded like Day 31 (without a
    GPU: received, 0 of 0, graded on a GPU machine), so the maximum is still what can be earned here,
    the same whatever is submitted; the script's limit counts a budget for each. An unknown id is 2."""
    stretch = tuple(sorted(registry.STRETCH, key=list(registry.EXERCISES).index))
    chosen = (*EXERCISES, *stretch)
    build = tmp_path / "build"
    made = subprocess.run(["make", "-C", str(REPO), "autograder", f"BUILD={build}", f"EXERCISES={' '.join(chosen)}"],
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stdout + made.stderr
    top = unpack(build / "autograder.zip", tmp_path / "autograder")
    assert (top / "source" / "harness" / "gradescope" / "course.txt").read_text().split() == list(chosen)
    _, empty = run(top, every_exercise=chosen)
    for exercise in stretch:
        shutil.copy(registry.EXERCISES[exercise].answer, top / "submission" / registry.FILES[exercise])
    _, handed_in = run(top, every_exercise=chosen)
    earnable = sum(max_score(e) for e in chosen if gpu_here() or e not in registry.NEEDS_GPU)
    for results in (empty, handed_in):
        assert sum(t["max_score"] for t in results["tests"]) == pytest.approx(earnable), results["tests"]
    if not gpu_here():
        for exercise in stretch:
            (only,) = by_exercise(handed_in, exercise)
            assert only["name"] == f"{exercise}: graded on a GPU machine" and only["max_score"] == 0, only
            assert f"Your file was received ({registry.FILES[exercise]})" in only["output"], only
    bad = subprocess.run([sys.executable, str(REPO / "harness" / "gradescope" / "make_autograder.py"), "--out",
                          str(tmp_path / "bad.zip"), "--exercises", "drill01,drill09"], capture_output=True, text=True)
    assert bad.returncode == 2 and "'drill09'" in bad.stderr and not (tmp_path / "bad.zip").exists(), bad.stderr


def test_partial_submission_one_folder_down(root):
    folder = root / "submission" / "my-work"
    folder.mkdir()
    shutil.copy(SOLUTIONS / FILES["drill01"], folder / FILES["drill01"])
    _, results = run(root)
    drill01 = by_exercise(results, "drill01")
    assert sum(t["score"] for t in drill01) == max_score("drill01"), drill01
    for exercise in [e for e in EXERCISES if e != "drill01"]:
        (only,) = by_exercise(results, exercise)
        if exercise == "day31" and not gpu_here():
            assert only["max_score"] == 0 and "no file named " + FILES[exercise] in only["output"], only
            continue
        assert only["score"] == 0 and only["status"] == "failed"
        assert only["output"].startswith("not submitted: no file named " + FILES[exercise]), only
    assert "drill01: my-work/01_exclusive_to_inclusive.cpp: " in results["output"]


HOSTILE_DRILL01 = r"""// Hostile drill 01: wrong answers; before main it writes wherever it can reach and
// claims full marks on standard output. Its total is 777000 + the files it could open:
// the report shows that number, the proof that it ran.
#include <cstddef>
#include <cstdio>

static int opened = 0;
static int tamper() {
    const char* targets[] = {MARK, "../" MARK, "../../" MARK, "../../../" MARK, "../../../../" MARK,
                             ROOT "/" MARK, ROOT "/results/results.json", ROOT "/results/" MARK,
                             ROOT "/submission/" MARK, ROOT "/source/harness/grade.py", ROOT "/../" MARK};
    for (const char* target : targets) {
        if (std::FILE* f = std::fopen(target, "a")) {
            std::fputs("{\"score\": 100, \"tests\": []}\n", f);
            std::fclose(f);
            ++opened;
        }
    }
    std::printf("{\"score\": 100, \"tests\": []}\nscore 3/3: every check passed\n");
    return 0;
}
static int tampered = tamper();

void exclusive_to_inclusive(const long long*, const long long*, long long*, std::size_t) {}
void inclusive_to_exclusive(const long long*, long long*, std::size_t) {}
long long total_from_exclusive(const long long*, const long long*, std::size_t) { return 777000 + opened; }
"""


@pytest.mark.parametrize("bwrap", ["bubblewrap", "none"], ids=["sandbox", "partial-isolation"])
def test_hostile_submission(root, bwrap):
    """Partial isolation is what Gradescope's container may give (no namespaces for bubblewrap).
    There the run's own uid can still write where anyone may (/tmp), and nowhere else; the total
    it returns (777000 + the files it opened) proves the hostile code ran."""
    if bwrap == "bubblewrap":  # found as the grader finds it (PATH or SCANLAB_BWRAP), strict under SCANLAB_REQUIRE
        level, why = sandbox.isolation()
        if level != "full":
            env.unavailable("sandbox", f"no full isolation here: {why}")
    submission = root / "submission"
    mark = f"pwned-{uuid.uuid4().hex[:12]}.txt"  # a name only this run writes, to find every copy
    (submission / FILES["drill01"]).write_text(f"#define ROOT {json.dumps(str(root))}\n"
                                               f"#define MARK {json.dumps(mark)}\n" + HOSTILE_DRILL01)
    (submission / FILES["drill02"]).mkdir()  # a folder named like an exercise
    (submission / FILES["drill02"] / "inside.cpp").write_text("int x;\n")
    (submission / FILES["drill03"]).symlink_to("/etc/passwd")  # a link named like an exercise
    before = snapshot(root.parent)
    fallback = {} if bwrap == "bubblewrap" else {"SCANLAB_BWRAP": "none"}
    _, results = run(root, **fallback)
    elsewhere = [Path(d) / mark for d in sorted({tempfile.gettempdir(), "/tmp", "/"}) if (Path(d) / mark).exists()]
    for path in elsewhere:
        path.unlink()
    if bwrap == "bubblewrap":
        assert elsewhere == [], f"written outside the sandbox: {elsewhere}"
    else:
        assert all(os.stat(p.parent).st_mode & 0o002 for p in elsewhere), f"written where only root may: {elsewhere}"
    total = next(t for t in by_exercise(results, "drill01") if t["name"] == "drill01: total_from_exclusive")
    assert re.search(r"returned 7770\d\d\b", total["output"]), f"the hostile code never ran: {total['output']}"

    after = snapshot(root.parent)
    made = set(after) - set(before)
    cache = {k for k in made if k == "autograder/source/cache" or k.startswith("autograder/source/cache/")}
    assert made - cache == {"autograder/results/results.json"}, sorted(made)
    # the grader's own driver cache (cache_folder), and nothing else there
    # (and the GPU probe's runner and module, built where nvcc is, since a GPU exercise is always probed)
    odd = [k for k in cache if not re.fullmatch(r"autograder/source/cache(/drivers(/drill0[12]-[0-9a-f]{32}"
                                                 r"\.(o|symbols\.json))?|/(gpu_runner|day31_probe\.fatbin)-[0-9a-f]+)?",
                                                 k)]
    assert not odd, f"in the driver cache: {odd}"
    assert {k: v for k, v in after.items() if k in before} == before, "the submission changed a file"
    assert results["score"] == 0, results
    assert all(t["score"] == 0 for t in by_exercise(results, "drill01"))
    (drill02,) = by_exercise(results, "drill02")
    assert drill02["output"] == f"not graded: {FILES['drill02']} is a folder, not a file"
    (drill03,) = by_exercise(results, "drill03")
    assert drill03["output"] == f"not graded: {FILES['drill03']} is a symbolic link; submit the file itself"
    visible = student_visible(results)
    assert "root:x:0:0" not in visible and '"score": 100' not in visible
    if bwrap == "none":
        assert "isolation (not full" in results["output"]


def test_finding_files_prefers_the_top_and_follows_no_link(tmp_path):
    submission = tmp_path / "submission"
    (submission / "a").mkdir(parents=True)
    (submission / FILES["drill01"]).write_text("top\n")
    (submission / "a" / FILES["drill01"]).write_text("one down\n")
    (submission / "a" / FILES["drill02"]).symlink_to(SOLUTIONS / FILES["drill02"])
    (submission / "b" / "c").mkdir(parents=True)
    (submission / "b" / "c" / FILES["drill03"]).write_text("two down: not looked at\n")
    (submission / "linked").symlink_to(SOLUTIONS, target_is_directory=True)  # a folder by link: not entered
    os.mkfifo(submission / FILES["day31"])
    found, ignored = autograder.find_submissions(submission)
    assert found["drill01"].shown == FILES["drill01"] and not found["drill01"].problem
    assert found["drill01"].also == (f"a/{FILES['drill01']}",)
    assert found["drill02"].problem == f"not graded: a/{FILES['drill02']} is a symbolic link; submit the file itself"
    assert found["drill03"].path is None
    assert found["day31"].problem == f"not graded: {FILES['day31']} is not a regular file"
    assert ignored == ["linked", "b/c/"]


# ---- the grader failing ---------------------------------------------------------------------

def test_a_grader_crash_costs_only_its_exercise(root, monkeypatch, capsys):
    for exercise in ("drill01", "drill02"):
        shutil.copy(SOLUTIONS / FILES[exercise], root / "submission" / FILES[exercise])
    real = autograder.dispatch.grade

    def crashing(exercise, *args, **kwargs):
        if exercise == "drill02":
            raise RuntimeError("planted grader bug")
        return real(exercise, *args, **kwargs)

    monkeypatch.setattr(autograder.dispatch, "grade", crashing)
    assert autograder.main(["--root", str(root)]) == autograder.EXIT_NOT_ALL_GRADED
    results = json.loads((root / "results" / "results.json").read_text())
    check_results(results)
    assert sum(t["score"] for t in by_exercise(results, "drill01")) == max_score("drill01")
    (drill02,) = by_exercise(results, "drill02")
    assert drill02["name"] == "drill02: graded" and drill02["score"] == 0
    assert drill02["output"].startswith("not graded: the grader itself failed")
    assert "planted grader bug" in capsys.readouterr().out  # the instructor's stdout has the traceback
    assert "planted grader bug" not in student_visible(results)


def test_python_failing_still_leaves_a_results_json(root):
    broken = root / "broken-python"
    broken.write_text("#!/bin/sh\necho 'Traceback: planted' >&2\nexit 1\n")
    broken.chmod(0o755)
    (root / "results" / "results.json").symlink_to("/etc/passwd")  # replaced, never followed
    done, results = run(root, every_exercise=False, PYTHON=str(broken))
    assert "writing a fallback results.json" in done.stdout
    assert results["score"] == 0 and results["tests"][0]["output"].startswith("not graded")
    assert stat.S_ISREG(os.lstat(root / "results" / "results.json").st_mode)


def test_no_control_character_of_a_submission_reaches_results_json_raw(root):
    """Drill 03's prose and the names of files a student uploads are the student's text: escape
    sequences in them must arrive escaped (\\x1b), not as the bytes a terminal or a page obeys."""
    folder = root / "submission"
    shutil.copy(REPO / "harness" / "corpus" / "drill03" / "h_terminal_escapes.md", folder / FILES["drill03"])
    (folder / "notes \x1b[2J\u202e.txt").write_text("not an exercise file\n")
    _, results = run(root)
    text = json.dumps(results, ensure_ascii=False)
    raw = re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", text)
    assert not raw, f"results.json carries {raw.group(0)!r} raw"
    assert "\\x1b[2J" in results["output"] and "\\u202e" in results["output"], results["output"]
    assert sum(t["score"] for t in by_exercise(results, "drill03")) == max_score("drill03")


def test_a_grader_that_hangs_or_crashes_costs_only_its_exercise(root, tmp_path):
    """Each exercise is graded in a child process with a wall-clock budget: a grader whose own Python
    runs for hours (with a run of a sandbox uid going, in a session of its own) is stopped at the
    budget with every process it started, and a grader whose Python dies (abort) costs only its
    exercise; the others are graded and results.json is written in time. The stand-in graders are
    monkeypatched into a process of the test's own, never into the autograder."""
    for exercise in CPU:
        shutil.copy(SOLUTIONS / FILES[exercise], root / "submission" / FILES[exercise])
    pids = tmp_path / "pids"
    script = tmp_path / "stand_in.py"
    script.write_text(f"""
import os, subprocess, sys, time
sys.path.insert(0, {str(root / "source" / "harness" / "gradescope")!r})
import run_autograder as autograder
from scanlab import sandbox

real = autograder.dispatch.grade


def stand_in(exercise, *args, **kwargs):
    if exercise == "drill02":
        uid = sandbox.UID_RANGE.start  # this grader's own uids
        run = subprocess.Popen(["/usr/bin/setpriv", f"--reuid={{uid}}", f"--regid={{uid}}", "--clear-groups",
                                "/usr/bin/sleep", "1000"], start_new_session=True)
        with open({str(pids)!r}, "w") as f:
            f.write(f"{{os.getpid()}} {{run.pid}} {{uid}}")
        while True:  # the budget is wall-clock: a sleeping grader meets it as a spinning one would
            time.sleep(1)
    if exercise == "drill03":
        os.abort()
    return real(exercise, *args, **kwargs)


autograder.dispatch.grade = stand_in
sys.exit(autograder.main(["--root", {str(root)!r}]))
""")
    budget = 12  # drill01, graded for real, needs one or two seconds of it (four at most, on a loaded 2-core CI)
    environment = {**os.environ, "SCANLAB_EXERCISE_BUDGET_S": str(budget),
                   "SCANLAB_UID_RANGE": f"{SANDBOX_UIDS.start}-{SANDBOX_UIDS.stop - 1}"}
    start = time.monotonic()
    try:
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=200,
                              env=environment)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the autograder did not finish within 200 s with a {budget} s budget per exercise:\n"
                    f"{(exc.stdout or b'')[-3000:]!r}", pytrace=False)
    took = time.monotonic() - start
    shown = f"{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
    assert done.returncode == autograder.EXIT_NOT_ALL_GRADED, shown
    assert took < budget * autograder.TOTAL_BUDGETS, f"{took:.0f} s\n{shown}"
    results = json.loads((root / "results" / "results.json").read_text())
    check_results(results, shown)
    assert sum(t["score"] for t in by_exercise(results, "drill01")) == max_score("drill01"), shown
    (drill02,) = by_exercise(results, "drill02")
    assert drill02["output"].startswith(f"not graded: the grader ran past its {budget} s limit"), drill02
    (drill03,) = by_exercise(results, "drill03")
    assert drill03["output"].startswith("not graded: the grader itself failed"), drill03
    assert "killed by SIGABRT" in done.stdout, shown  # the instructor's side says how it ended

    child, sleeper, uid = (int(x) for x in pids.read_text().split())
    time.sleep(0.5)
    for pid in (child, sleeper):
        try:
            state = re.search(r"^State:\s+(\S)", Path(f"/proc/{pid}/status").read_text(), re.M).group(1)
        except OSError:
            continue  # gone
        assert state == "Z", f"pid {pid} still running (state {state}) after its grader was stopped"
    assert not [p for p in sandbox.processes_of(uid) if "Z" not in Path(f"/proc/{p}/stat").read_text().split()[2]]


def test_run_autograder_stops_a_hanging_python_in_time(root):
    """The script's own limit: a Python that never ends is stopped after TOTAL_BUDGETS budgets
    (5 s with a budget of 1 s) and the fallback results.json says so."""
    script = (root / "source" / "run_autograder").read_text()
    default = re.search(r"budget=\$\{SCANLAB_EXERCISE_BUDGET_S:-(\d+)\}", script)
    fallback = re.search(r"\|\| graded=(\d+)", script)  # the lines of course.txt, as many without one
    assert default and int(default.group(1)) == autograder.EXERCISE_BUDGET_S, "run_autograder's default budget"
    assert "limit=$((budget * (graded + 1)))" in script, "run_autograder's limit: a budget an exercise, and one"
    assert fallback and int(fallback.group(1)) + 1 == autograder.TOTAL_BUDGETS, "run_autograder's limit in budgets"
    course = (root / "source" / "harness" / "gradescope" / "course.txt").read_text().split()
    assert course == list(EXERCISES) and len(course) + 1 == autograder.TOTAL_BUDGETS
    hanging = root / "hanging-python"
    hanging.write_text("#!/bin/sh\nexec sleep 1000\n")
    hanging.chmod(0o755)
    start = time.monotonic()
    done, results = run(root, every_exercise=False, timeout=60, PYTHON=str(hanging), SCANLAB_EXERCISE_BUDGET_S="1")
    assert time.monotonic() - start < 5 + 10 + 5, "stopped long after its limit"
    assert "the autograder ran past its 5 s limit; writing a fallback results.json" in done.stdout
    assert results["tests"][0]["output"].startswith("not graded: the autograder ran past its 5 s limit")


# ---- results.json's strings, the grader's scratch ----------------------------------------------

def walk_strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from walk_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from walk_strings(v)


def test_results_json_is_strict_utf8_with_latin1_file_names(root):
    """A Latin-1 name (not UTF-8) in the upload: results.json is UTF-8 with no lone surrogate
    (which strict JSON readers refuse), and shows each undecodable byte as \\xNN, unambiguously:
    a name that holds a real backslash shows it doubled."""
    submission = os.fsencode(root / "submission")
    os.mkdir(submission + b"/Arbeit_\xe4")
    shutil.copy(SOLUTIONS / FILES["drill01"], submission + b"/Arbeit_\xe4/" + FILES["drill01"].encode())
    Path(os.fsdecode(submission + b"/caf\xe9.txt")).write_text("not an exercise\n")
    (root / "submission" / "caf\\xe9.txt").write_text("a real backslash\n")
    _, results = run(root)
    raw = (root / "results" / "results.json").read_bytes()
    text = raw.decode("utf-8")  # strict
    data = json.loads(text)
    for string in walk_strings(data):
        string.encode("utf-8")  # strict: a lone surrogate raises
    assert "caf\\xe9.txt" in data["output"] and "caf\\\\xe9.txt" in data["output"], data["output"]
    assert "drill01: Arbeit_\\xe4/01_exclusive_to_inclusive.cpp: 3/3" in data["output"], data["output"]
    assert sum(t["score"] for t in by_exercise(data, "drill01")) == max_score("drill01")


def test_each_grader_gets_private_folders_its_runs_can_reach(root, monkeypatch, tmp_path):
    """The grader's scratch: its copy of the file and its work in 0700 folders; the sandboxes' folders
    under 0711 ones (a run's uid passes through to its own scratch, lists nothing); all removed after."""
    shutil.copy(SOLUTIONS / FILES["drill01"], root / "submission" / FILES["drill01"])
    real = autograder.dispatch.grade
    record = tmp_path / "seen.json"

    def recording(exercise, submission, workdir, *args, **kwargs):
        boxes = Path(os.environ["SCANLAB_SCRATCH"])
        chain = [boxes, *[p for p in boxes.parents if p.name.startswith("scanlab-autograder-") or
                          p.name == "boxes"], Path(submission).parent, Path(workdir), Path(tempfile.gettempdir())]
        seen = {str(p): [stat.S_IMODE(os.stat(p).st_mode), os.stat(p).st_uid] for p in chain}
        seen["file"] = [stat.S_IMODE(os.stat(submission).st_mode), os.stat(submission).st_uid]
        record.write_text(json.dumps({"boxes": str(boxes), "seen": seen}))
        return real(exercise, submission, workdir, *args, **kwargs)

    monkeypatch.setattr(autograder.dispatch, "grade", recording)
    assert autograder.main(["--root", str(root)]) == autograder.EXIT_WRITTEN
    results = json.loads((root / "results" / "results.json").read_text())
    assert sum(t["score"] for t in by_exercise(results, "drill01")) == max_score("drill01"), results["output"]
    got = json.loads(record.read_text())
    boxes = Path(got["boxes"])
    base = boxes.parent.parent
    assert base.name.startswith("scanlab-autograder-") and boxes == base / "boxes" / "drill01", got
    owner = os.geteuid()
    want = {str(base): 0o711, str(base / "boxes"): 0o711, str(boxes): 0o711,
            str(base / "private" / "drill01"): 0o700, str(base / "private" / "drill01" / "work"): 0o700,
            str(base / "private" / "drill01" / "tmp"): 0o700, "file": 0o600}
    assert got["seen"] == {k: [mode, owner] for k, mode in want.items()}, got["seen"]
    assert not base.exists(), f"{base} left behind"


# ---- Gradescope mode: root without CAP_SYS_ADMIN, namespaces and mounts refused ----------------

GRADESCOPE_LAUNCHER = r'''"""Run a command as Gradescope's Docker container runs the autograder: root, but without
CAP_SYS_ADMIN (dropped from the bounding set, so from every set after exec) and under a
seccomp filter that refuses what Docker's default profile refuses such a container: new
namespaces (unshare, setns, clone with a CLONE_NEW* flag; clone3 answers ENOSYS, so the C
library falls back to clone) and mounts (mount, umount2, pivot_root, the new mount API).

    python3 launcher.py COMMAND [ARG...]
"""
import ctypes
import errno
import os
import struct
import sys

libc = ctypes.CDLL(None, use_errno=True)
PR_CAPBSET_DROP, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, CAP_SYS_ADMIN = 24, 22, 2, 21
AUDIT_ARCH_X86_64 = 0xC000003E
REFUSED = {"unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155, "open_tree": 428,
           "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433}  # x86_64
CLONE, CLONE3 = 56, 435
CLONE_NEW = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
LD, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
ALLOW, EPERM, ENOSYS = 0x7FFF0000, 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS
code, jumps = [], []


def emit(op, jt=0, jf=0, k=0, to=None):
    code.append([op, jt, jf, k])
    if to:
        jumps.append((len(code) - 1, to))
    return len(code) - 1


emit(LD, k=4)  # seccomp_data.arch
emit(JEQ, 1, 0, AUDIT_ARCH_X86_64)
emit(RET, k=ENOSYS)  # another ABI (i386) would dodge the numbers below
emit(LD, k=0)  # seccomp_data.nr
emit(JGE, k=0x40000000, to="enosys")  # x32's numbers
for number in REFUSED.values():
    emit(JEQ, k=number, to="eperm")
emit(JEQ, k=CLONE3, to="enosys")
emit(JEQ, k=CLONE, to="clone")
labels = {"allow": emit(RET, k=ALLOW), "eperm": emit(RET, k=EPERM), "enosys": emit(RET, k=ENOSYS)}
labels["clone"] = emit(LD, k=16)  # clone's flags: args[0], low word
emit(JSET, 0, 1, CLONE_NEW)
emit(RET, k=EPERM)
emit(RET, k=ALLOW)
for at, label in jumps:
    code[at][1] = labels[label] - at - 1
program = b"".join(struct.pack("<HBBI", *insn) for insn in code)


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


buffer = ctypes.create_string_buffer(program, len(program))
prog = SockFprog(len(code), ctypes.addressof(buffer))
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_READ = 38, 23
# The filter while CAP_SYS_ADMIN is still held, without no_new_privs, as Docker installs it; where
# it is not held already (a container), no_new_privs first, as the kernel then requires.
if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
    if ctypes.get_errno() != errno.EACCES or libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
            libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        sys.exit(f"launcher: seccomp: {os.strerror(ctypes.get_errno())}")
if libc.prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0) != 0 and libc.prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0):
    sys.exit(f"launcher: dropping CAP_SYS_ADMIN: {os.strerror(ctypes.get_errno())}")
os.execvp(sys.argv[1], sys.argv[1:])
'''


def harness_sentinels(source: Path) -> set[str]:
    """Lines only the harness's own source holds (definitions and imports of every .py in the zip)."""
    lines = set()
    for path in (source / "harness").rglob("*.py"):
        for line in path.read_text().splitlines():
            line = line.strip()
            if len(line) >= 16 and line.startswith(("def ", "class ", "from ", "import ")):
                lines.add(line)
    return lines


@pytest.fixture(scope="module")
def gradescope_mode(autograder_zip, tmp_path_factory):
    """One run in Gradescope mode of the answer key hunt, in a root laid out as /autograder is (in
    /tmp, 0755: every uid may pass, as through /autograder). (root, run_autograder's output, results,
    results.json's text, the secret in the autograder's environment)."""
    if os.geteuid() != 0:
        env.unavailable("sandbox", "Gradescope mode needs root (Gradescope runs the autograder as root)")
    if platform.machine() != "x86_64":
        env.unavailable("sandbox", f"the Gradescope-mode seccomp filter knows x86_64 only, not {platform.machine()}")
    launcher = tmp_path_factory.mktemp("launcher") / "launcher.py"
    launcher.write_text(GRADESCOPE_LAUNCHER)
    top = Path(tempfile.mkdtemp(prefix="scanlab-gradescope-", dir="/tmp"))
    try:
        os.chmod(top, 0o755)
        assert autograder.passable(top), "/tmp must let every uid pass, as / and /autograder do"
        unpack(autograder_zip, top)
        hunt = (CORPUS / "drill01" / "h_read_answer_key.cpp").read_bytes()
        (top / "submission" / FILES["drill01"]).write_bytes(hunt.replace(b"@REPO@", str(top / "source").encode()))
        secret = f"secret-{uuid.uuid4().hex}"  # in the autograder's environment: no run may read it
        with pytest.MonkeyPatch.context() as mp:
            for key in ("SCANLAB_CACHE", "SCANLAB_BWRAP"):  # the cache where Gradescope's is; bubblewrap if any
                mp.delenv(key, raising=False)
            mp.setenv("SCANLAB_TEST_SECRET", secret)
            done, results = run(top, prefix=(sys.executable, str(launcher)))
        yield top, done, results, (top / "results" / "results.json").read_text(), secret
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_gradescope_mode_gives_partial_isolation_and_says_what_is_closed(gradescope_mode):
    _, done, results, _, _ = gradescope_mode
    line = next(x for x in results["output"].splitlines() if x.startswith("isolation"))
    assert line.startswith("isolation (not full; partial): bubblewrap"), line
    assert "of this autograder's own files they can read none" in line, line
    assert line in done.stdout


def test_gradescope_mode_an_answer_key_hunt_finds_nothing(gradescope_mode):
    """corpus/drill01/h_read_answer_key.cpp in partial isolation: it builds (its uid reaches its own
    scratch) and runs (its stderr is in the report), and nothing of the autograder reaches results.json:
    no drill 03 answer, no harness source, no environment; no expected value for the student."""
    top, _, results, text, secret = gradescope_mode
    drill01 = {t["name"]: t for t in by_exercise(results, "drill01")}
    assert drill01["drill01: builds"]["status"] == "passed", drill01["drill01: builds"]
    e2i = drill01["drill01: exclusive_to_inclusive"]["output"]
    assert "exit status 3" in e2i and "leaked:" in e2i, f"the hunt did not run: {e2i}"
    found = re.findall(r"\[\[leaked ([^\]]*)\]\]", text)
    assert all(what.startswith("/root/.cache/") for what in found), f"the hunt read {found}"
    from scanlab.grade_drill03 import SLOTS03

    named = [slot for slot in SLOTS03 if slot in text]
    assert not named, f"results.json names drill 03's slots {named[:5]}"
    source = [line for line in harness_sentinels(top / "source") if line in text]
    assert not source, f"harness source in results.json: {source[:5]}"
    assert secret not in text
    page = [3, 1, 7, 0, 4, 1, 6, 3]
    inclusive = [sum(page[:i + 1]) for i in range(len(page))]
    exclusive = [0] + inclusive[:-1]
    shown = student_visible(results)
    for expected in (inclusive, exclusive):
        for sep in (" ", ", "):
            assert sep.join(map(str, expected[1:6])) not in shown, f"an expected value is shown: {expected}"


PROBE_AS_RUN = """import json, os, sys
opened = []
for path in json.load(sys.stdin):
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            open(path, "rb").close()
        opened.append(path)
    except OSError:
        pass
print(json.dumps(opened))
"""


def test_gradescope_mode_no_file_of_the_zip_is_open_to_a_run(gradescope_mode, autograder_zip):
    """The mode rule: every file of the zip (scan_counts.py, which must ship, among them: drill 03's
    grader imports it), the driver cache and results/ are root's with no access for anyone else, and
    a process of a sandbox uid can open none of them."""
    top, _, _, _, _ = gradescope_mode
    with zipfile.ZipFile(autograder_zip) as zf:
        names = [info.filename for info in zf.infolist()]
        modes = {info.filename: (info.external_attr >> 16) & 0o777 for info in zf.infolist()}
    assert "harness/scanlab/scan_counts.py" in names and "harness/scanlab/grade_drill03.py" in names
    assert {n: m for n, m in modes.items() if m & 0o077} == {}, "zip members open to group or others"
    source = top / "source"
    paths = [source / name for name in names]
    paths += [p for p in (source / "cache").rglob("*")] + [source / "cache", top / "results",
                                                              top / "results" / "results.json"]
    folders = {source, *(p.parent for p in paths)} - {top}
    assert len(paths) > len(names) + 2, "no driver cache in source/cache"
    wrong = {}
    for path in [*paths, *folders]:
        info = os.lstat(path)
        if info.st_uid != 0 or stat.S_IMODE(info.st_mode) & 0o077 or (path.is_dir() and
                                                                        stat.S_IMODE(info.st_mode) != 0o700):
            wrong[str(path.relative_to(top))] = oct(stat.S_IMODE(info.st_mode))
    assert wrong == {}, f"open to other uids: {dict(list(wrong.items())[:10])}"
    uid = SANDBOX_UIDS.stop - 1
    probe = subprocess.run(["/usr/bin/setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                            "/usr/bin/python3", "-c", PROBE_AS_RUN], input=json.dumps([str(p) for p in
                                                                                      [*paths, *folders]]),
                           capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, probe.stderr
    assert json.loads(probe.stdout) == [], f"uid {uid} could open: {json.loads(probe.stdout)[:10]}"
