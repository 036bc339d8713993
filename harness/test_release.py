"""The student release (`make student-release`) and the docs that must not give drill 03 away.

The release is built into a temporary folder with harness/student-release.py,
then searched here with checks of this module's own (not the script's): no
file of solutions/ or harness/corpus/, no drill 03 answer
(every `name = value` line of solutions/03_scan_analysis.md, beside its name in
any spelling the grader accepts, and its distinctive values as bare numbers; no
lesson prints one, so nothing is whitelisted as taught). The script's own check
is tested too: answers planted in several spellings, in files of every kind, are
each refused. Its `make run` and `make test` must pass and
say nothing about solutions. The repository's own `make run`, and the starters'
`make run` on a file full of wrong answers, must print no drill 03 answer.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scanlab.env import OUTER_RUN_VARIABLES

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
SCRIPT = REPO / "harness" / "student-release.py"

slow = pytest.mark.slow

# Tile and block sizes, in every lesson: an answer equal to one is searched beside its name only.
TILE_SIZES = {"256", "512", "1024"}


def release_script():
    """harness/student-release.py as a module (its name has a dash)."""
    spec = importlib.util.spec_from_file_location("student_release", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def drill03_answers() -> dict[str, str]:
    text = (SOLUTIONS / "03_scan_analysis.md").read_text()
    answers = dict(re.findall(r"^ {4}([a-z][a-z0-9_]*) = (\S+)\s*$", text, re.M))
    assert len(answers) == 25, answers  # every slot the starter asks for
    return answers


def spellings(value: str) -> str:
    """A regex for the ways a person writes `value` that the grader takes: grouped thousands, a
    trailing .0; for a decimal, its two places with or without trailing zeros."""
    if "." in value:
        whole, places = value.split(".")
        return rf"{whole}\.{places.rstrip('0') or '0'}0*" if places.rstrip("0") else rf"{whole}(?:\.0*)?"
    digits = value
    grouped = ""
    while len(digits) > 3:
        grouped, digits = r"[,_\s]?" + digits[-3:] + grouped, digits[:-3]
    return rf"{digits}{grouped}(?:\.0+)?"


def answers_in(text: str, where: str = "") -> list[str]:
    """Drill 03's answers in `text`: a slot with its value in any spelling, or a distinctive value bare."""
    found = []
    coincidences = {value for (path, value) in release_script().COINCIDENCES if path == where}
    for name, value in drill03_answers().items():
        if re.search(rf"\b{name}\b\W{{1,12}}(?:~|≈|about)?\s*{spellings(value)}(?![\d.])", text):
            found.append(f"{name} = {value}")
        distinctive = len(value.lstrip("0.").replace(".", "")) >= 3 and value not in TILE_SIZES
        for m in re.finditer(rf"(?<![\w.]){spellings(value)}(?![\d.])", text) if distinctive else ():
            if m.group(0) not in coincidences and f"{m.group(0)}x" not in coincidences:
                found.append(value)
    return found


def run(command, cwd: Path, timeout: float = 600, **env) -> subprocess.CompletedProcess:
    # A fresh make, as a student's: nothing of an outer `make test` (its MAKEFLAGS, its ARGS, where it
    # writes its results, its shards) leaks in. BUILD is each call's own (make_release passes it).
    outer = {"MAKEFLAGS", "MAKELEVEL", "MFLAGS", *OUTER_RUN_VARIABLES}
    base = {k: v for k, v in os.environ.items() if k not in outer}
    return subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**base, **env})


def test_a_make_the_tests_run_inherits_nothing_of_the_outer_make_test(tmp_path, monkeypatch):
    """The release's own `make test` once wrote its JUnit over the outer sharded run's shard 0."""
    monkeypatch.setenv("SCANLAB_RESULTS", str(tmp_path / "outer"))
    monkeypatch.setenv("SCANLAB_SHARDS", "3")
    monkeypatch.setenv("ARGS", "-k outer")
    seen = run([sys.executable, "-c", "import os, json; print(json.dumps(dict(os.environ)))"], tmp_path)
    assert not set(OUTER_RUN_VARIABLES) & set(json.loads(seen.stdout)), seen.stdout[:300]


def describe(proc: subprocess.CompletedProcess) -> str:
    return f"exit status {proc.returncode}\n--- stdout ---\n{proc.stdout[-6000:]}\n--- stderr ---\n{proc.stderr[-6000:]}"


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """The release, built once; whether the script accepted it is its own test (a leak leaves
    the folder in place, so the other tests still say what else is wrong)."""
    out = tmp_path_factory.mktemp("release") / "student-release"
    return out, run([sys.executable, SCRIPT, out], REPO, timeout=300)


def test_the_answer_search_finds_a_planted_answer():
    assert answers_in("    hs_adds_512 = 4097\n") == ["hs_adds_512 = 4097", "4097"]
    assert answers_in("| `bl_levels_under_25pct_1024` | 14 |") == ["bl_levels_under_25pct_1024 = 14"]
    assert answers_in("a sequential loop does 511, Hillis-Steele 2,189") == ["511", "2189"]
    assert answers_in("at n = 1000 a sequential loop does 999") == []
    assert answers_in("hs_adds_512 = ____ and 9217 adds on the page, 1.5x, 90.015") == []


# Drill 03's answers, each planted in a spelling the grader takes and the release check of
# today's code did not know (grouped digits, other places, a mark), in a file of another kind.
PLANTS = {
    "markdown, thousands comma": ("a05-scan/README.md", "\nHillis-Steele does 4,097 adds here.\n", "hs_adds_512"),
    "CUDA, thin space": ("a05-scan/cuda/scan.cu", "\n// 4\u2009097 additions\n", "hs_adds_512"),
    "C++, space-grouped": ("a05-scan/hip/scan.cpp", "\n// 5 249 adds in all\n", "shfl_block_adds_1024"),
    "python, trailing zero and x": ("harness/scanlab/grade_drills.py", "\n# 4.010x the work\n",
                                    "extra_work_factor_512"),
    "markdown, about and a percent": ("exercises/self_assessment.md", "\nabout 90 % busy\n",
                                      "hs_avg_utilisation_pct_1024"),
    "markdown, within 0.01": ("GLOSSARY.md", "\nBlelloch: 19.97 % busy\n", "bl_avg_utilisation_pct_1024"),
    "named, a decimal without its zero": ("SETUP.md", "\n| `bl_adds_per_byte_1024` | .25 |\n", "bl_adds_per_byte_1024"),
    "named, small count as 9.0": ("Makefile", "\n# hs_levels_512 = 9.0\n", "hs_levels_512"),
    "SVG text": ("a05-scan/pictures/h200-trace-blelloch.svg", "<text>2 189 adds</text>\n", "hs_adds_300"),
}


def plant_notebook(path: Path) -> None:
    """A markdown cell and an output, each with an answer: ~90 (hs_avg_utilisation_pct_1024) and 1,022."""
    notebook = json.loads(path.read_text())
    notebook["cells"].append({"cell_type": "markdown", "metadata": {}, "source": ["Hillis-Steele keeps ~90\n"]})
    notebook["cells"].append({"cell_type": "code", "metadata": {}, "execution_count": 1, "source": ["print()"],
                              "outputs": [{"output_type": "stream", "name": "stdout", "text": ["1,022\n"]}]})
    path.write_text(json.dumps(notebook, indent=1))


NOTEBOOK_PLANT = ("harness/colab/scan-lab.ipynb", {"hs_avg_utilisation_pct_1024", "bl_adds_512", "bl_adds_300"})


@pytest.fixture(scope="module")
def planted_release(release, tmp_path_factory) -> list[str]:
    """A copy of the release with every plant in its own file, and what the script's check found
    there: one copy and one search for all of them (each test below reads its file's lines)."""
    out, _ = release
    copy = tmp_path_factory.mktemp("planted") / "release"
    shutil.copytree(out, copy)
    files = [shown for shown, _, _ in PLANTS.values()] + [NOTEBOOK_PLANT[0]]
    assert len(set(files)) == len(files), "two plants in one file: each must be found in its own"
    plant_notebook(copy / NOTEBOOK_PLANT[0])
    for shown, text, _ in PLANTS.values():
        path = copy / shown
        if path.suffix == ".svg":
            data = path.read_text()
            path.write_text(data.replace("</svg>", text + "</svg>"))
        else:
            path.write_text(path.read_text() + text)
    script = release_script()
    return script.leaks(copy, {}, script.drill03_answers(SOLUTIONS))


@slow
@pytest.mark.parametrize("plant", [*PLANTS, "notebook"])
def test_the_release_check_refuses_an_answer_in_any_spelling(planted_release, plant):
    """Each planted answer is found in its file, under its own slot, and nothing else is."""
    shown, slots = NOTEBOOK_PLANT if plant == "notebook" else (PLANTS[plant][0], {PLANTS[plant][2]})
    found = [line for line in planted_release if line.startswith(shown)]
    assert found, f"{plant}: nothing found"
    named = {re.search(r"answer (\w+) = ", line)[1] for line in found}
    assert named == slots, found
    planted = {NOTEBOOK_PLANT[0], *(shown for shown, _, _ in PLANTS.values())}
    assert all(any(line.startswith(f) for f in planted) for line in planted_release), planted_release


@slow
def test_the_release_script_refuses_a_release_with_a_planted_answer(tmp_path):
    """End to end: a repository copy whose lesson README holds an answer is not released (exit 1)."""
    repo = tmp_path / "repo"
    files = subprocess.run(["git", "-C", REPO, "ls-files", "-co", "--exclude-standard"], capture_output=True,
                           text=True, check=True).stdout.splitlines()
    for name in files:
        if (REPO / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, repo / name)
    readme = repo / "a05-scan" / "README.md"
    readme.write_text(readme.read_text() + "\nAt a 512-element tile Hillis-Steele does 4 097 additions.\n")
    proc = run([sys.executable, repo / "harness" / "student-release.py", repo / "build" / "out"], repo)
    assert proc.returncode == 1, describe(proc)
    assert "a05-scan/README.md:" in proc.stderr and "hs_adds_512 = 4097" in proc.stderr, describe(proc)
    assert "NOT RELEASABLE" in proc.stderr, describe(proc)


@slow
def test_release_is_built_and_says_what_it_left_out(release):
    out, proc = release
    assert proc.returncode == 0, describe(proc)
    assert proc.stdout.startswith("student-release: ") and "left out: solutions/" in proc.stdout, describe(proc)
    for path in ("Makefile", "README.md", "SETUP.md", "GLOSSARY.md", "REFERENCES.md", "day31-scan/scan.cu",
                 "a05-scan/cuda/scan.cu", "a05-scan/triton/scan.py", "exercises/README.md", "exercises/Makefile",
                 "exercises/01_exclusive_to_inclusive.cpp", "exercises/02_segmented_scan.cpp",
                 "exercises/03_scan_analysis.md", "exercises/day31_shift_then_scan.cu", "harness/grade.py",
                 "harness/scanlab/grade_drills.py", "harness/drivers/drill01_driver.cpp", "harness/conftest.py",
                 "harness/run-tests.sh", "harness/run-lessons.sh", "RELEASE.txt"):
        assert (out / path).is_file(), path
    assert os.access(out / "harness" / "run-tests.sh", os.X_OK)


@slow
def test_release_holds_no_solution_or_corpus_file(release):
    out, _ = release
    files = [p for p in out.rglob("*") if p.is_file()]
    assert files
    for part in ("solutions", "corpus", ".ci", "gradescope"):
        assert not [p for p in files if part in p.relative_to(out).parts], part
    assert not [p for p in files if p.name in ("test_drills.py", "test_corpus.py", "test_day31_exercise.py",
                                               "test_grade_cli.py", "test_release.py", "student-release.py")]
    secret = {p.read_bytes(): p for folder in (SOLUTIONS, REPO / "harness" / "corpus")
              for p in folder.rglob("*") if p.is_file() and p.stat().st_size}
    copies = [f"{p.relative_to(out)} = {secret[p.read_bytes()].relative_to(REPO)}"
              for p in files if p.read_bytes() in secret]
    assert copies == []


@slow
def test_release_holds_no_drill03_answer(release):
    out, _ = release
    found = []
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if b"\0" not in data and path.suffix != ".svg":  # images have no text; an SVG's numbers are coordinates
            shown = path.relative_to(out).as_posix()
            found += [f"{shown}: {a}" for a in answers_in(data.decode("utf-8", "replace"), shown)]
    assert found == []


@slow
def test_release_has_its_own_readme_and_only_tools_that_work_in_it(release):
    """The repository's README describes solutions/ and make student-release; pitfalls.sh needs solutions/."""
    out, _ = release
    readme = (out / "README.md").read_text()
    assert readme == (REPO / "harness" / "RELEASE-README.md").read_text()
    assert "solutions/" not in readme and "student-release" not in readme and "make solutions" not in readme
    assert not (out / "harness" / "pitfalls.sh").exists()
    assert not (out / "harness" / "RELEASE-README.md").exists()
    # No file of the release holds a line of a drill's answer (pitfalls.sh held drill 01's).
    for drill in ("01_exclusive_to_inclusive.cpp", "02_segmented_scan.cpp"):
        starter = set((REPO / "exercises" / drill).read_text().splitlines())
        answer = {line.strip() for line in (SOLUTIONS / drill).read_text().splitlines()
                  if line not in starter and len(line.strip()) > 30 and not line.strip().startswith("//")}
        assert answer, drill
        for path in (p for p in out.rglob("*") if p.is_file() and b"\0" not in p.read_bytes()):
            held = answer & {line.strip() for line in path.read_text(errors="replace").splitlines()}
            assert not held, f"{path.relative_to(out)} holds lines of solutions/{drill}: {sorted(held)}"


@slow
def test_release_has_no_drill03_counter_and_its_grader_checks_the_form_only(release, tmp_path):
    """The counter would print every answer: it stays out, and grade.py drill03 says what it cannot check."""
    out, _ = release
    assert not (out / "harness" / "scanlab" / "scan_counts.py").exists()
    answered = tmp_path / "03_scan_analysis.md"
    answered.write_text((SOLUTIONS / "03_scan_analysis.md").read_text())
    proc = run([sys.executable, out / "harness" / "grade.py", "drill03", answered], out)
    assert proc.returncode == 0, describe(proc)  # answered: not a failure, though nothing can be checked here
    assert proc.stdout.count("), checked by your instructor") == 25 and "Traceback" not in proc.stderr, describe(proc)
    assert "FAIL" not in proc.stdout, describe(proc)
    assert proc.stdout.splitlines()[-1].startswith("25 of 25 answered, checked by your instructor"), describe(proc)
    starter = run([sys.executable, out / "harness" / "grade.py", "drill03", out / "exercises" / answered.name], out)
    assert starter.returncode == 1, describe(starter)
    assert starter.stdout.count("not answered") == 25 and "), checked by your instructor" not in starter.stdout, \
        describe(starter)


@slow
def test_release_make_run_passes_and_says_nothing_of_solutions(release, tmp_path):
    out, _ = release
    proc = run(["make", "run", f"PYTHON={sys.executable}", f"BUILD={tmp_path}"], out)
    assert proc.returncode == 0, describe(proc)
    log = (tmp_path / "run" / "exercises_drills.log").read_text()  # the drills' whole output
    text = proc.stdout + proc.stderr + log
    assert "solution" not in text.lower(), describe(proc)
    assert answers_in(text) == [], describe(proc)
    assert "==== 01_exclusive_to_inclusive: exit status 1" in log.splitlines(), log  # the starters ran
    assert "==== 03_scan_analysis.md: exit status 1" in log.splitlines(), log  # and drill 03 was graded
    lines = proc.stdout.splitlines()
    assert re.fullmatch(r"make run: [1-9]\d* ran, 0 failed, \d+ skipped \(logs in .*\)", lines[-1]), describe(proc)


# "make X" and "make X | Y" in a Makefile's help comment, and in what `make help` prints from it.
HELP_TARGETS = re.compile(r"^(?:#   )?make (\S+)(?: \| (\S+))?", re.M)


def help_targets(text: str) -> list[str]:
    return [target for m in HELP_TARGETS.finditer(text) for target in m.groups() if target]


@slow
@pytest.mark.parametrize("folder", [".", "a05-scan"])
def test_every_target_a_release_makefile_names_works_there_or_is_refused_in_one_line(release, folder, tmp_path):
    """The release ships the repository's Makefiles, whose help once offered `make solutions` and
    `make autograder` though solutions/ and harness/gradescope/ stay out. Each target the help comment
    names is either offered by the release's `make help`, and its dry run (make -n: nothing is built)
    passes and names no script the release lacks, or left out of `make help` and refused in one line
    of its own (the recipe's status 1, which make reports as its 2), under make -n too."""
    out, _ = release
    where = out / folder
    helped = run(["make", "--no-print-directory", "-C", where, "help"], out)
    assert helped.returncode == 0, describe(helped)
    offered = set(help_targets(helped.stdout))
    named = help_targets((where / "Makefile").read_text())
    assert named and offered <= set(named), (offered, named)
    assert not offered & {"solutions", "autograder", "student-release"}, helped.stdout
    problems = []
    for target in named:
        proc = run(["make", "--no-print-directory", "-n", "-C", where, target, f"BUILD={tmp_path}"], out, timeout=120)
        if target in offered:
            scripts = re.findall(rf"{re.escape(str(out))}/[\w./-]+\.(?:py|sh)\b", proc.stdout)
            lacking = sorted({s for s in scripts if not Path(s).is_file()})
            if proc.returncode != 0:
                problems.append(f"make {target} (offered): its dry run fails; {describe(proc)}")
            elif lacking:
                problems.append(f"make {target} (offered): it would run {lacking}, which the release lacks")
        else:
            said = [line for line in proc.stderr.splitlines() if not line.startswith("make: ***")]
            if proc.returncode != 2 or len(said) != 1 or not said[0].startswith(f"make {target}: "):
                problems.append(f"make {target} (not offered): not refused in one line; {describe(proc)}")
    assert problems == [], "\n\n".join(problems)


# What the release writes itself rather than copying: every other file it shares with the
# repository is the repository's, byte for byte (the next test counts on it).
REWRITTEN = {"README.md": "harness/RELEASE-README.md", "harness/pytest.ini": "its deselections added"}


def test_every_file_the_release_shares_with_the_repository_is_the_same_bytes(release):
    out, _ = release
    differ = [p.relative_to(out).as_posix() for p in sorted(out.rglob("*")) if p.is_file()
              and p.relative_to(out).as_posix() not in REWRITTEN and (REPO / p.relative_to(out)).is_file()
              and p.read_bytes() != (REPO / p.relative_to(out)).read_bytes()]
    assert differ == [], f"the release changed these files it copies: {differ}"
    assert (out / "day31-scan" / "scan.cu").is_file() and (out / "harness" / "test_a05_hip.py").is_file()


@slow
def test_release_make_test_passes_and_says_nothing_of_solutions(release):
    out, _ = release
    # The GPU suites are the main suite's to run: here they would only repeat it on the GPU
    # runner (on a machine without a GPU they skip either way). So would the lesson builds
    # (marked `builds`): the release's sources are the repository's bytes (the test above), which
    # the main suite builds; what this run adds is the release's own tree, tools and test modules.
    proc = run(["make", "test", f"PYTHON={sys.executable}"], out, timeout=1200,
               PYTEST_ADDOPTS='-p no:cacheprovider -m "not gpu and not triton and not builds"')
    assert proc.returncode == 0, describe(proc)
    assert "solution" not in (proc.stdout + proc.stderr).lower(), describe(proc)
    # pytest's closing line (under an outer make, make's own "Leaving directory" lines follow it)
    summaries = [line for line in proc.stdout.splitlines() if re.search(r"\b\d+ passed\b", line)]
    assert summaries, describe(proc)
    summary = summaries[-1]
    assert "failed" not in summary and "error" not in summary, summary


def make_release(build: Path, *variables: str) -> subprocess.CompletedProcess:
    """`make student-release` from the repository's top Makefile, into `build`."""
    return run(["make", "--no-print-directory", "-C", REPO, "student-release", f"BUILD={build}", *variables], REPO)


@slow
def test_make_student_release_repo_writes_the_repository_into_the_badge_and_the_notebook(tmp_path):
    proc = make_release(tmp_path, "REPO=my-course/scan-lab_2027.b")
    assert proc.returncode == 0, describe(proc)
    out = tmp_path / "student-release"
    readme = (out / "README.md").read_text()
    assert ("(https://colab.research.google.com/github/my-course/scan-lab_2027.b/blob/main/"
            "harness/colab/scan-lab.ipynb)") in readme, readme
    notebook = json.loads((out / "harness" / "colab" / "scan-lab.ipynb").read_text())  # still a notebook
    code = "".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code")
    assert '"https://github.com/my-course/scan-lab_2027.b.git"' in code
    links = [p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()
             and b"/COURSE-ORG/scan-lab" in p.read_bytes()]
    assert links == [], f"placeholder links left in the release: {links}"
    assert "Published as: my-course/scan-lab_2027.b" in (out / "RELEASE.txt").read_text()
    assert "no REPO given" not in proc.stderr, describe(proc)


@slow
def test_make_student_release_without_repo_keeps_the_placeholder_and_says_so(tmp_path):
    proc = make_release(tmp_path)
    assert proc.returncode == 0, describe(proc)
    assert "no REPO given" in proc.stderr and "REPO=OWNER/NAME" in proc.stderr, describe(proc)
    assert "/COURSE-ORG/scan-lab/" in (tmp_path / "student-release" / "README.md").read_text()


@pytest.mark.parametrize("repo, why", [
    pytest.param("https://github.com/my-course/scan-lab", "not a URL", id="url"),
    pytest.param("git@github.com:my-course/scan-lab", "not a URL", id="ssh"),
    pytest.param("my-course/scan-lab.git", "without .git", id="dot-git"),
    pytest.param("scan-lab", "not OWNER/NAME", id="no-slash"),
    pytest.param("my-course/scan-lab/extra", "not OWNER/NAME", id="two-slashes"),
    pytest.param("-my-course/scan-lab", "not OWNER/NAME", id="owner-starts-with-a-hyphen"),
    pytest.param("my course/scan-lab", "not OWNER/NAME", id="space"),
    pytest.param("my-course/..", "is not a repository name", id="dot-dot"),
    pytest.param("a" * 40 + "/scan-lab", "not OWNER/NAME", id="owner-of-40"),
])
def test_make_student_release_refuses_a_malformed_repo_with_status_2(tmp_path, repo, why):
    proc = make_release(tmp_path, f"REPO={repo}")
    assert proc.returncode == 2, describe(proc)  # the script's 2, which make reports as its own 2
    said = [line for line in proc.stderr.splitlines() if line.startswith("student-release: ")]
    assert len(said) == 1 and f"REPO={repo!r} is not a GitHub repository" in said[0] and why in said[0], describe(proc)
    assert "make student-release REPO=my-course/scan-lab" in said[0], describe(proc)
    assert not (tmp_path / "student-release").exists()  # refused before anything was written


def test_the_release_script_takes_a_well_formed_repo():
    script = release_script()
    for repo in ("my-course/scan-lab", "a/b", "Org-2027/scan.lab_v2", "a" * 39 + "/x"):
        assert script.repo_problem(repo) is None, repo


@slow
def test_release_refuses_to_replace_a_folder_that_is_not_a_release(tmp_path):
    keep = tmp_path / "work" / "notes.txt"
    keep.parent.mkdir()
    keep.write_text("mine")
    proc = run([sys.executable, SCRIPT, keep.parent], REPO)
    assert proc.returncode == 2 and "not an earlier release" in proc.stderr, describe(proc)
    assert keep.read_text() == "mine"


@slow
def test_repository_make_run_prints_no_drill03_answer(tmp_path):
    proc = run(["make", "run", f"PYTHON={sys.executable}", f"BUILD={tmp_path}"], REPO)
    assert proc.returncode == 0, describe(proc)
    log = (tmp_path / "run" / "solutions_drills.log").read_text()
    assert answers_in(proc.stdout + proc.stderr + log) == [], describe(proc)
    lines = log.splitlines()
    assert any(re.fullmatch(r"score [\d.]+/[\d.]+: every check passed", line) for line in lines), \
        log  # drill 03's verdict still shows, in the log
    assert "make run: every solution passed" in lines, log
    # make run itself is short: one line per program, then the count of every program.
    said = proc.stdout.splitlines()
    assert all(re.match(r"(ran|skipped|FAILED) +\S", line) for line in said[:-1]), describe(proc)
    counts = re.fullmatch(r"make run: (\d+) ran, (\d+) failed, (\d+) skipped \(logs in .*\)", said[-1])
    assert counts and sum(map(int, counts.groups())) == len(said) - 1, describe(proc)
    assert "solutions (drills)" in proc.stdout and "every solution passed" not in proc.stdout


@slow
def test_starters_make_run_names_wrong_drill03_answers_without_the_counts(tmp_path):
    # The starters next to the harness, drill 03 filled with answers that are all wrong.
    shutil.copytree(REPO / "exercises", tmp_path / "exercises")
    (tmp_path / "harness").symlink_to(REPO / "harness")
    starter = tmp_path / "exercises" / "03_scan_analysis.md"
    answers = drill03_answers()
    wrong = {name: "7" if value != "7" else "8" for name, value in answers.items()}
    starter.write_text(re.sub(r"^( {4}([a-z][a-z0-9_]*) = )____$", lambda m: m[1] + wrong[m[2]],
                              starter.read_text(), flags=re.M))
    assert starter.read_text().count(" = 7\n") + starter.read_text().count(" = 8\n") == len(answers)
    proc = run(["make", "-C", tmp_path / "exercises", "run", f"PYTHON={sys.executable}",
                f"BUILD={tmp_path / 'build'}", "NVIDIA_SMI=false"], tmp_path)
    assert proc.returncode == 0, describe(proc)
    assert "==== 03_scan_analysis.md: exit status 1" in proc.stdout.splitlines(), describe(proc)
    assert re.search(r"^score 0(\.0)?/\d+", proc.stdout, re.M), describe(proc)
    assert answers_in(proc.stdout + proc.stderr) == [], describe(proc)
    # The counted values, one by one, next to the slot's name in its check's feedback.
    for name, value in answers.items():
        block = re.search(rf"^  FAIL  {name}\n((?:        .*\n)*)", proc.stdout, re.M)
        assert block, f"no failing check {name}\n{describe(proc)}"
        assert not re.search(rf"(?<![\d.]){re.escape(value)}(?!\.?\d)", block[1].replace(name, "")), \
            f"{name}: the counted {value} is in its feedback:\n{block[1]}"
