"""Gradescope's autograder end to end: `make autograder`, unpacked into a root laid out like
/autograder, run on a complete, a partial and a hostile submission (harness/gradescope/).

Every results.json is checked against results.schema.json (written from Gradescope's
documented format) and for scores that add up, with every exercise at its points.toml
maximum whatever happened to it. CPU only: on a machine without a GPU, Day 31 must be the
one "graded on a GPU machine" test; on a GPU machine it is graded like the others.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import uuid
import zipfile
from pathlib import Path

import pytest

from scanlab import env, sandbox
from scanlab.grading import max_score
from scanlab.paths import REPO

sys.path.insert(0, str(REPO / "harness" / "gradescope"))

import make_autograder  # noqa: E402
import results_schema  # noqa: E402
import run_autograder as autograder  # noqa: E402

pytestmark = pytest.mark.slow

SOLUTIONS = REPO / "solutions"
EXERCISES = ("day31", "drill01", "drill02", "drill03")
FILES = {"day31": "day31_shift_then_scan.cu", "drill01": "01_exclusive_to_inclusive.cpp",
         "drill02": "02_segmented_scan.cpp", "drill03": "03_scan_analysis.md"}


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


@pytest.fixture
def root(tmp_path, autograder_zip) -> Path:
    """A folder laid out as Gradescope lays out /autograder: source/ (the zip), submission/, results/."""
    top = tmp_path / "autograder"
    with zipfile.ZipFile(autograder_zip) as zf:
        for info in zf.infolist():
            target = top / "source" / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(info))
            os.chmod(target, (info.external_attr >> 16) & 0o777)
    (top / "submission").mkdir()
    (top / "results").mkdir()
    return top


def run(root: Path, every_exercise: bool = True, **env: str) -> tuple[subprocess.CompletedProcess, dict]:
    """Gradescope's step: run_autograder (as copied from the zip), then read and check results.json."""
    environment = {**os.environ, "SCANLAB_AUTOGRADER_ROOT": str(root), "PYTHON": sys.executable, **env}
    done = subprocess.run([str(root / "source" / "run_autograder")], capture_output=True, text=True,
                          timeout=600, env=environment, cwd=root)
    shown = f"run_autograder said:\n{done.stdout[-6000:]}\n{done.stderr[-3000:]}"
    assert done.returncode == 0, shown
    results_file = root / "results" / "results.json"
    assert results_file.is_file() and not results_file.is_symlink(), shown
    results = json.loads(results_file.read_text(encoding="utf-8"))
    check_results(results, shown, every_exercise)
    return done, results


def check_results(results: dict, shown: str = "", every_exercise: bool = True) -> None:
    """Gradescope's format, scores that add up, every exercise present at its one maximum."""
    assert results_schema.problems(results) == [], f"{results_schema.problems(results)}\n{shown}"
    tests = results["tests"]
    assert results["stdout_visibility"] == "hidden"
    for test in tests:
        # every check is all or nothing; a failed check worth 0 ("builds") is 0 of 0 and failed
        assert test["score"] == (test["max_score"] if test["status"] == "passed" else 0), test
    assert results["score"] == pytest.approx(sum(t["score"] for t in tests))
    for exercise in EXERCISES if every_exercise else ():
        mine = [t for t in tests if t["name"].startswith(f"{exercise}: ")]
        assert mine, f"{exercise} is missing from results.json\n{shown}"
        assert sum(t["max_score"] for t in mine) == pytest.approx(max_score(exercise)), (exercise, mine)
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
    for needed in ("harness/grade.py", "harness/points.toml", "harness/gradescope/run_autograder.py",
                   *(f"exercises/{name}" for name in FILES.values())):
        assert needed in infos, f"{needed} is missing from the zip"
    solutions = {p.read_bytes(): p.name for p in SOLUTIONS.rglob("*") if p.is_file()}
    for name, data in contents.items():
        assert not name.startswith("solutions/"), name
        assert data not in solutions, f"{name} is a copy of solutions/{solutions.get(data)}"
        parts = name.split("/")
        assert not (parts[0] == "harness" and parts[-1].startswith("test_")), f"a test in the zip: {name}"
        assert not {"planted", "corpus", "__pycache__", ".pytest_cache"} & set(parts), f"{name} should be left out"


def test_zip_is_the_same_for_the_same_tree(autograder_zip, tmp_path):
    again = tmp_path / "again.zip"
    assert make_autograder.main(["--out", str(again)]) == 0
    assert again.read_bytes() == autograder_zip.read_bytes()


def test_builder_refuses_a_solution_inside(tmp_path):
    planted = [("harness/notes.cpp", SOLUTIONS / "01_exclusive_to_inclusive.cpp")]
    why = make_autograder.refusals(make_autograder.members() + planted)
    assert any("harness/notes.cpp: has the same bytes as solutions/01_exclusive_to_inclusive.cpp" in w for w in why)


def test_every_grader_has_an_exercise_file():
    import grade

    assert set(autograder.EXERCISE_FILES) == set(grade.GRADERS) - grade.STRETCH == set(EXERCISES)
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
    for exercise in ("drill01", "drill02", "drill03"):
        mine = by_exercise(results, exercise)
        assert sum(t["score"] for t in mine) == max_score(exercise), (exercise, mine, done.stdout[-4000:])
    day31 = by_exercise(results, "day31")
    if gpu_here():
        assert sum(t["score"] for t in day31) == max_score("day31"), day31
    else:
        assert len(day31) == 1, day31
        (only,) = day31
        assert only["name"] == "day31: graded on a GPU machine"
        assert only["score"] == 0 and only["visibility"] == "visible"
        assert "graded on a GPU machine with `grade.py class`" in only["output"]
    assert "ignored (not an exercise file): notes.txt" in results["output"]
    assert results["score"] == pytest.approx(sum(max_score(e) for e in EXERCISES) - (0 if gpu_here() else
                                                                                     max_score("day31")))


def test_partial_submission_one_folder_down(root):
    folder = root / "submission" / "my-work"
    folder.mkdir()
    shutil.copy(SOLUTIONS / FILES["drill01"], folder / FILES["drill01"])
    _, results = run(root)
    drill01 = by_exercise(results, "drill01")
    assert sum(t["score"] for t in drill01) == max_score("drill01"), drill01
    for exercise in ("day31", "drill02", "drill03"):
        (only,) = by_exercise(results, exercise)
        assert only["score"] == 0 and only["status"] == "failed"
        assert only["output"].startswith("not submitted: no file named " + FILES[exercise]), only
    assert "drill01: my-work/01_exclusive_to_inclusive.cpp: " in results["output"]


HOSTILE_DRILL01 = r"""// Hostile drill 01: wrong answers; before main it writes wherever it can reach and
// claims full marks on standard output.
#include <cstddef>
#include <cstdio>

static int tamper() {
    const char* targets[] = {MARK, "../" MARK, "../../" MARK, "../../../" MARK, "../../../../" MARK,
                             ROOT "/" MARK, ROOT "/results/results.json", ROOT "/results/" MARK,
                             ROOT "/submission/" MARK, ROOT "/source/harness/grade.py", ROOT "/../" MARK};
    for (const char* target : targets) {
        if (std::FILE* f = std::fopen(target, "a")) {
            std::fputs("{\"score\": 100, \"tests\": []}\n", f);
            std::fclose(f);
        }
    }
    std::printf("{\"score\": 100, \"tests\": []}\nscore 3/3: every check passed\n");
    return 0;
}
static int tampered = tamper();

void exclusive_to_inclusive(const long long*, const long long*, long long*, std::size_t) {}
void inclusive_to_exclusive(const long long*, long long*, std::size_t) {}
long long total_from_exclusive(const long long*, const long long*, std::size_t) { return 100; }
"""


@pytest.mark.parametrize("bwrap", ["bubblewrap", "none"], ids=["sandbox", "partial-isolation"])
def test_hostile_submission(root, bwrap):
    """Partial isolation is what Gradescope's container may give (no namespaces for bubblewrap).
    There the run's own uid can still write where anyone may (/tmp): the file it leaves there
    proves the hostile code ran, and is removed."""
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
        assert elsewhere, "the hostile code never ran: the test proves nothing"
        assert all(os.stat(p.parent).st_mode & 0o002 for p in elsewhere), f"written where only root may: {elsewhere}"

    after = snapshot(root.parent)
    assert set(after) - set(before) == {"autograder/results/results.json"}, sorted(set(after) - set(before))
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
    real = autograder.grade_cli.grade

    def crashing(exercise, *args, **kwargs):
        if exercise == "drill02":
            raise RuntimeError("planted grader bug")
        return real(exercise, *args, **kwargs)

    monkeypatch.setattr(autograder.grade_cli, "grade", crashing)
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
