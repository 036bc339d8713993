"""harness/exercises.toml, the registry of exercises: read, checked, and the only list there is.

Each exercise is named once, in exercises.toml; scanlab/registry.py reads it and refuses a file that
is wrong (a missing field, points that do not add up, a file that does not exist). Every other
module takes its lists from the registry: the scan below fails when a Python file of harness/ holds
a literal list of exercises. And no module of the package imports a script: the scripts are front
doors (grade.py, gradescope/run_autograder.py, bench-class.py, student-release.py) onto scanlab/.
"""

from __future__ import annotations

import ast
import importlib
import re
import shutil
from pathlib import Path

import pytest

from scanlab import registry
from scanlab.grading import declared_checks, max_score, points_table
from scanlab.paths import HARNESS, REPO

SCRIPTS = {"grade", "run_autograder", "bench-class", "bench_class", "student-release", "student_release",
           "make_autograder"}


# ---- the registry itself ---------------------------------------------------------------------

def test_every_exercise_has_its_files_grader_and_points():
    assert list(registry.EXERCISES)[:1] == ["day31"]  # --list's order, class grading's columns
    for exercise in registry.EXERCISES.values():
        assert exercise.starter.is_file() and exercise.starter.parent == REPO / "exercises", exercise.id
        if (REPO / "solutions").is_dir():
            assert exercise.answer.is_file() and exercise.answer.parent == REPO / "solutions", exercise.id
        module = importlib.import_module(exercise.grader)
        assert callable(module.grade), exercise.grader
        # the grader declared exactly the registry's checks, in the report's order
        assert declared_checks(exercise.id) == list(points_table()[exercise.id]), exercise.id
        assert max_score(exercise.id) == exercise.total
        if "builds" in exercise.checks:
            assert exercise.checks["builds"].points == 0  # shown, not scored
        assert exercise.runs_code or not exercise.needs_gpu, exercise.id  # a GPU exercise runs code
    assert registry.COURSE == {e.id: e.file for e in registry.EXERCISES.values() if not e.stretch}
    assert registry.STRETCH and not registry.STRETCH & set(registry.COURSE)


def test_what_the_release_leaves_out_is_decided_in_one_place():
    spec = importlib.util.spec_from_file_location("student_release", HARNESS / "student-release.py")
    release = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(release)
    for path, why in registry.release_leaves_out().items():
        assert (REPO / path).exists() and release.LEFT_OUT[path] == why, path


ENTRY = """[drill01]
description = "one"
file = "01_exclusive_to_inclusive.cpp"
starter = "exercises/01_exclusive_to_inclusive.cpp"
answer = "solutions/01_exclusive_to_inclusive.cpp"
grader = "scanlab.grade_drills"
needs_gpu = false
runs_code = true
stretch = false
total = 1

[drill01.checks]
"builds" = { points = 0, visibility = "visible" }
"exclusive_to_inclusive" = { points = 1, visibility = "visible" }
"""


def write_registry(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "exercises.toml"
    path.write_text(body)
    return path


def test_a_well_formed_entry_is_read():
    (exercise,) = registry.parse(registry.tomllib.loads(ENTRY)).values()
    assert (exercise.id, exercise.total, list(exercise.checks)) == ("drill01", 1, ["builds", "exclusive_to_inclusive"])


@pytest.mark.parametrize("old, new, phrase", [
    ('"builds" = { points = 0, visibility = "visible" }', '"builds" = { points = 0 }', "must be { points = P"),
    ('points = 0,', 'points = -1,', "points must be a number >= 0"),
    ('points = 0, visibility = "visible"', 'points = 0, visibility = "secret"', "visibility must be one of"),
    ("total = 1", "total = 2", "total = 2, but its checks add up to 1"),
    ("total = 1\n", "", "has no total"),
    ("stretch = false", 'stretch = "no"', "stretch = 'no' is not a bool"),
    ("stretch = false", "stretch = false\nweight = 2", "fields it does not know: ['weight']"),
    ('"exercises/01_exclusive', '"exercises/old/01_exclusive', "names files that do not exist: exercises/old/"),
    ('scanlab.grade_drills"', 'scanlab.grade_nothing"', "harness/scanlab/grade_nothing.py"),
    ('file = "01_exclusive_to_inclusive.cpp"', 'file = "01.cpp"', "must be named '01.cpp'"),
    ("[drill01]", "[drill01", "cannot be read"),
], ids=["form", "negative", "visibility", "total", "no-total", "type", "unknown-field", "starter", "grader",
        "file-name", "toml"])
def test_a_malformed_registry_is_refused(tmp_path, old, new, phrase):
    assert old in ENTRY
    with pytest.raises(registry.RegistryError, match=re.escape(phrase)):
        registry.load(write_registry(tmp_path, ENTRY.replace(old, new, 1)))


def test_two_exercises_may_not_share_a_file(tmp_path):
    twice = ENTRY + ENTRY.replace("[drill01", "[drill09")
    with pytest.raises(registry.RegistryError, match=r"\[drill09\] file '01_exclusive_to_inclusive.cpp' is also "
                                                     r"\[drill01\]'s"):
        registry.load(write_registry(tmp_path, twice))


def test_without_solutions_the_answers_are_not_required(tmp_path):
    """The student release and the Gradescope zip have no solutions/: their registry still loads."""
    (tmp_path / "exercises").mkdir()
    (tmp_path / "harness" / "scanlab").mkdir(parents=True)
    shutil.copy(REPO / "exercises" / "01_exclusive_to_inclusive.cpp", tmp_path / "exercises")
    (tmp_path / "harness" / "scanlab" / "grade_drills.py").write_text("")
    table = registry.tomllib.loads(ENTRY)
    assert list(registry.parse(table, repo=tmp_path)) == ["drill01"]
    (tmp_path / "solutions").mkdir()
    with pytest.raises(registry.RegistryError, match="solutions/01_exclusive_to_inclusive.cpp"):
        registry.parse(table, repo=tmp_path)


# ---- nothing else lists exercises ------------------------------------------------------------

# Three or more exercises in one literal is a list that must grow when an exercise is added: it
# belongs in the registry. (Two side by side are a test's example: drill01 and drill03 in a
# course.toml.) A table of per-exercise data that is no registry matter (a test's quick flags for
# each stretch program) says so on its first line, `# per exercise`, and checks its keys against
# the registry. A grader's own table of the functions behind the exercises it grades is its code.
MANY = 3
EXEMPT = {"scanlab/registry.py": "the registry", "test_registry.py": "this test"}


def exercise_names() -> dict[str, str]:
    """Every way a Python file names an exercise (its id, its file name, the file's stem) -> its id."""
    names = {}
    for exercise in registry.EXERCISES.values():
        names.update({exercise.id: exercise.id, exercise.file: exercise.id, Path(exercise.file).stem: exercise.id})
    return names


def exercise_lists(path: Path, names: dict[str, str], root: Path = HARNESS) -> list[str]:
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Dict):
            items = node.keys
        elif isinstance(node, (ast.Set, ast.List, ast.Tuple)):
            items = node.elts
        else:
            continue
        named = {names[i.value] for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)
                 and i.value in names}
        if len(named) >= MANY and "# per exercise" not in lines[node.lineno - 1]:
            found.append(f"{path.relative_to(root)}:{node.lineno}: names {', '.join(sorted(named))}")
    return found


def python_files() -> list[Path]:
    return [p for p in sorted(HARNESS.rglob("*.py"))
            if not any(part.startswith(".") or part == "__pycache__" for part in p.relative_to(HARNESS).parts)]


def test_no_other_module_names_a_list_of_exercises():
    names = exercise_names()
    graders = {HARNESS / (e.grader.replace(".", "/") + ".py") for e in registry.EXERCISES.values()}
    found = [line for path in python_files()
             if path.relative_to(HARNESS).as_posix() not in EXEMPT and path not in graders
             for line in exercise_lists(path, names)]
    assert not found, ("these name a list of exercises; take it from scanlab/registry.py "
                       "(harness/exercises.toml):\n  " + "\n  ".join(found))


def test_the_scan_finds_a_list(tmp_path):
    planted = tmp_path / "x.py"
    planted.write_text('FILES = {"drill01": "a", "drill02": "b", "drill03": "c"}\n'
                       'PAIR = ("drill01", "01_exclusive_to_inclusive.cpp", "drill03")\n'  # two exercises
                       'STEMS = ["04_warp_scan", "05_lookback_scan", "06_copy_if_partition"]\n'
                       'QUICK = {"drill04": 1, "drill05": 2, "drill06": 3}  # per exercise: checked below\n')
    found = exercise_lists(planted, exercise_names(), tmp_path)
    assert [line.split(": names ")[0] for line in found] == ["x.py:1", "x.py:3"], found


# ---- no module imports a script --------------------------------------------------------------

def imported(path: Path) -> set[str]:
    """The top-level names a module imports, statically or through importlib with a literal name."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in
              ("import_module", "__import__", "spec_from_file_location")):
            names |= {Path(a.value).stem for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
    return names


def test_no_module_of_the_package_imports_a_script():
    """The cycle classroom.py -> grade.py -> classroom.py is gone, and stays gone."""
    found = {path.name: sorted(imported(path) & SCRIPTS) for path in sorted((HARNESS / "scanlab").glob("*.py"))}
    assert not {k: v for k, v in found.items() if v}, found


def test_the_import_scan_finds_a_script(tmp_path):
    planted = tmp_path / "x.py"
    planted.write_text("import grade\nimport importlib\nimportlib.import_module('run_autograder')\n"
                       "from scanlab import registry\n")
    assert imported(planted) & SCRIPTS == {"grade", "run_autograder"}
