#!/usr/bin/env python3
"""Write the student release of scan-lab: what a student needs, nothing that gives answers away.

    python3 harness/student-release.py [--repo OWNER/NAME] [OUT_DIR]
        (`make student-release REPO=OWNER/NAME`; OUT_DIR defaults to build/student-release)

--repo names the GitHub repository the release will be published as (the
students' copy, never the repository that holds solutions/): it is written
into the release's links in place of the placeholder COURSE-ORG/scan-lab (the
"Open in Colab" badge of its README and the clone in the Colab notebook,
harness/colab/scan-lab.ipynb), so a student without a GPU lands on the course.
Without it the placeholder stays and one line says so.

What goes in: the lessons (day31-scan/, a05-scan/), the starters and their
README and Makefile (exercises/), a README of its own (harness/RELEASE-README.md,
in place of the repository's), SETUP, GLOSSARY,
REFERENCES and Makefile, and the parts of harness/ a student uses to check
their own work: grade.py with scanlab/, drivers/ and exercises.toml (self-grading,
self-study mode by default), the build and run scripts behind `make run` and
`make test`, and the test modules that need nothing the release leaves out.

What stays out, and why, is the table LEFT_OUT below, with what each exercise's
entry in harness/exercises.toml leaves out (`release_leaves_out`). Every top-level
entry and every entry of harness/ must be in RELEASED or LEFT_OUT (test modules excepted:
a new one stays out until someone has checked it runs without solutions/): an
entry nobody has decided on stops the release, so a file added later cannot
slip into students' hands unseen.

After copying, the release is searched for what must never be in it: a byte
copy of any file of solutions/ or harness/corpus/, and drill 03's answers (each
`name = value` line of solutions/03_scan_analysis.md: beside its slot's name in
any spelling the grader accepts, and bare wherever the number is distinctive; see
answers_in). A find is a failure: the folder is left for inspection, one
line per find is printed and the exit status is 1.

Exit status: 0 released; 1 not releasable (a leak, an undecided entry, a
missing file); 2 bad command line (a --repo that is not OWNER/NAME among them)
or an OUT_DIR this script will not replace.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HARNESS = Path(__file__).resolve().parent
REPO = HARNESS.parent
sys.path.insert(0, str(HARNESS))
from scanlab import registry  # noqa: E402  (after the path: the harness's own package)

RELEASE_README = HARNESS / "RELEASE-README.md"  # the release's README.md
MARKER = "RELEASE.txt"  # written into every release; OUT_DIR is replaced only when it holds one
# The course repository's placeholder in the Colab badge and the notebook's clone; --repo replaces it.
PLACEHOLDER = "COURSE-ORG/scan-lab"
# GitHub's rules: an owner is 1-39 letters, digits and single hyphens, not at either end; a
# repository name is letters, digits, '.', '-' and '_', and not "." or "..".
OWNER_NAME = re.compile(r"(?P<owner>[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38})/(?P<name>[A-Za-z0-9._-]{1,100})")
USAGE = "usage: python3 harness/student-release.py [--repo OWNER/NAME] [OUT_DIR]"

# Top level: the lessons, the starters, the docs and the Makefile.
RELEASED_TOP = ["README.md", "SETUP.md", "GLOSSARY.md", "REFERENCES.md", "Makefile", ".gitignore",
                "day31-scan", "a05-scan", "exercises", "harness"]
# harness/: what self-checking needs (make run, make test, grade.py in self-study mode).
RELEASED_HARNESS = ["README.md", "grade.py", "scanlab", "drivers", "exercises.toml", "hip_on_cuda",
                    "conftest.py", "pytest.ini", "requirements.txt", "run-lessons.sh", "run-tests.sh",
                    "find-cuda-tool.sh", "colab", "fixtures"]
# Test modules that import, read and grade nothing of solutions/ or harness/corpus/.
RELEASED_TESTS = ["test_scanlab.py", "test_sandbox.py", "test_day31.py", "test_a05_cuda.py",
                  "test_a05_hip.py", "test_triton.py", "test_trace.py"]

LEFT_OUT = {
    "solutions": "the reference answers",
    ".ci": "the course repository's CI: it runs the whole suite, solutions included",
    "build": "build outputs",
    "harness/corpus": "graded submissions, correct ones and near-solutions with one mistake among them",
    "harness/gradescope": "the instructor's Gradescope autograder",
    "harness/student-release.py": "this script: it reads solutions/",
    **registry.release_leaves_out(),  # harness/exercises.toml: what each exercise keeps from students
    "harness/RELEASE-README.md": "the release's README.md, written in place of the repository's (which describes "
                                 "solutions/ and make student-release)",
    "harness/bench-class.py": "the instructor's grading benchmark: it builds a class from solutions/ and the corpus",
    "harness/test_drills.py": "grades and runs solutions/, and quotes them",
    "harness/test_day31_exercise.py": "grades solutions/day31_shift_then_scan.cu and quotes it",
    "harness/test_grade_cli.py": "grades solutions/01_exclusive_to_inclusive.cpp",
    "harness/test_corpus.py": "grades harness/corpus/",
    "harness/test_release.py": "builds a release from solutions/",
}
# Never copied, wherever they are: local state and caches (also in .gitignore).
SKIPPED_NAMES = {".git", ".venv", "__pycache__", ".pytest_cache", "profiling_output", ".tools"}
SKIPPED_SUFFIXES = (".pyc",)

# In the release, test_a05_cuda.py's dry run of `make -C a05-scan solutions` is refused (the target
# builds ../solutions, which the release lacks). Deselected there, by node id.
DESELECT = ["test_a05_cuda.py::test_module_makefile_has_the_target[solutions]"]

# Drill 03's answers are searched in every text file of the release (a notebook's cells and outputs,
# an SVG's words), in every spelling the grader accepts (scanlab/grade_drill03.parse_number): "4097",
# "4,097", "4 097", "4097.0"; a decimal within 0.01 of the answer, so "4.01" also as "4.010" or "4.0x",
# "90.01" also as "90.01 %", "90.0" or "~90". Beside its slot's name any spelling is a find. A bare
# number is one when it cannot be an everyday number: a whole number of three significant digits or
# more, a decimal of three or more that is the answer to two places, or two digits within 0.01 with
# a percent, times or "about" mark ("90 %", "~90", "4.0x"). So the
# small counts (levels, barriers, steps, 0) and bl_adds_per_byte_1024's quarter are found beside
# their names only. No lesson prints an answer: the slots were chosen so (the drill asks at n = 512
# and 300; the lessons print the 1024-element tile's counts, the page's figures).
NUMBER = re.compile(r"""(?<![\w.])
    (?P<pre>(?:~|≈|about)\s*)?
    (?P<num>\d{1,3}(?:[,_\u00a0\u202f\u2009\ ]\d{3})+(?:\.\d+)?(?!\d)|\d+(?:\.\d+)?|\.\d+)
    (?P<post>\s?(?:%|×|[xX](?![A-Za-z0-9])))?""", re.X)
GROUPING = re.compile(r"[,_\u00a0\u202f\u2009 ]")
# Tile and block sizes every lesson prints: an answer equal to one (hs_threads_512 and
# bl_padded_n_300 are 512, bl_threads_512 is 256) is searched beside its slot's name only.
TILE_SIZES = {"256", "512", "1024"}
# A number that equals an answer by coincidence, where it stands for something else: (file, value): why.
COINCIDENCES = {
    ("harness/scanlab/grade_drill02.py", "4097"): "drill 02's test size 2^12 + 1, not an add count",
    ("harness/test_a05_hip.py", "1.12x"): "a measured time ratio (register-staged / Blelloch), not adds per byte",
}


def fail(line: str, status: int = 1) -> int:
    print(f"student-release: {line}", file=sys.stderr)
    return status


def repo_problem(repo: str) -> str | None:
    """Why `repo` is not a GitHub OWNER/NAME the badge and the clone can use, or None."""
    if re.match(r"[a-z][a-z0-9+.-]*://|git@", repo):
        return "give OWNER/NAME, not a URL (the badge and the clone build the URLs themselves)"
    if repo.endswith(".git"):
        return "give OWNER/NAME without .git"
    found = OWNER_NAME.fullmatch(repo)
    if not found:
        return ("it is not OWNER/NAME: one slash; the owner letters, digits and single hyphens (at most 39); "
                "the name letters, digits, '.', '-' and '_'")
    if found["name"] in (".", ".."):
        return f"'{found['name']}' is not a repository name"
    return None


def fill_in_repo(release: Path, repo: str) -> list[str]:
    """Write `repo` over the placeholder in every link of the release (`/COURSE-ORG/scan-lab`, as in
    github.com/COURSE-ORG/scan-lab and colab.research.google.com/github/COURSE-ORG/scan-lab; prose
    that names the placeholder itself stays); the files changed."""
    link, changed = f"/{PLACEHOLDER}".encode(), []
    for path in sorted(p for p in release.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if b"\0" in data or link not in data:
            continue
        path.write_bytes(data.replace(link, f"/{repo}".encode()))
        changed.append(path.relative_to(release).as_posix())
    return changed


def drill03_answers(solutions: Path) -> dict[str, str]:
    text = (solutions / "03_scan_analysis.md").read_text(encoding="utf-8")
    return dict(re.findall(r"^ {4}([a-z][a-z0-9_]*) = (\S+)\s*$", text, re.M))


def accepted(token: re.Match, answer: str) -> bool:
    """Whether the grader would take this number for `answer` (exact, or a decimal within 0.01)."""
    value = float(GROUPING.sub("", token["num"]))
    return abs(value - float(answer)) <= 0.01 + 1e-9 if "." in answer else value == float(answer)


def stands_for(token: re.Match, answer: str) -> bool:
    """Whether a bare number (no slot name beside it) is distinctive enough to be this answer."""
    num = GROUPING.sub("", token["num"])
    if re.match(r"0\d", num) or not accepted(token, answer):  # "002", "%04x": nobody writes a count so
        return False
    digits = sum(c.isdigit() for c in num.lstrip("0."))  # significant digits
    marked = bool(token["pre"] or token["post"])
    if "." in answer:  # unmarked, it must be the answer to two places ("4.010"; "0.2571" is another number)
        return digits >= 2 if marked else digits >= 3 and "." in num and f"{float(num):.2f}" == answer
    return digits >= 3 and answer not in TILE_SIZES


def answers_in(text: str, answers: dict[str, str], where: str = "") -> list[tuple[int, str]]:
    """(offset, what) for every drill 03 answer in `text`, named or bare, in any spelling."""
    found = []
    for name, value in answers.items():
        for named in re.finditer(rf"\b{re.escape(name)}\b[^\w\n.]{{0,12}}", text):  # not the "." of ".25"
            token = NUMBER.match(text, named.end())
            if token and accepted(token, value):
                found.append((named.start(), f"{name} = {value} (as {token.group(0).strip()!r})"))
    for token in NUMBER.finditer(text):
        for name, value in answers.items():
            if stands_for(token, value) and (where, token.group(0).strip()) not in COINCIDENCES:
                found.append((token.start(), f"{name} = {value} (as {token.group(0).strip()!r})"))
    return sorted(found)


def searchable_text(path: Path, data: bytes) -> str | None:
    """The text a reader of the file sees: a notebook's strings, an SVG's words; None for binaries."""
    if b"\0" in data:  # an image or another binary: no text to search
        return None
    text = data.decode("utf-8", errors="replace")
    if path.suffix == ".ipynb":
        try:
            strings: list[str] = []

            def collect(node) -> None:
                if isinstance(node, str):
                    strings.append(node)
                elif isinstance(node, list):
                    for item in node:
                        collect(item)
                elif isinstance(node, dict):
                    for item in node.values():
                        collect(item)
            collect(json.loads(text))
            return text + "\n" + "".join(strings)  # the raw JSON too: a notebook that does not parse is text
        except ValueError:
            return text
    if path.suffix == ".svg":  # its numbers are coordinates; its words are in text, titles and comments
        words = re.findall(r"<!--(.*?)-->", text, re.S)
        words += [m[2] for m in re.finditer(r"<(text|tspan|title|desc)\b[^>]*>(.*?)</\1>", text, re.S)]
        return "\n".join(words)
    return text


def leaks(release: Path, forbidden: dict[bytes, str], answers: dict[str, str]) -> list[str]:
    found = []
    for path in sorted(p for p in release.rglob("*") if p.is_file()):
        shown = path.relative_to(release)
        data = path.read_bytes()
        if data in forbidden:
            found.append(f"{shown} is a copy of {forbidden[data]}")
        text = searchable_text(path, data)
        if text is None:
            continue
        for offset, what in answers_in(text, answers, shown.as_posix()):
            line = text.count("\n", 0, offset) + 1
            where = f"{shown}:{line}" if path.suffix not in (".ipynb", ".svg") else f"{shown} (its text)"
            found.append(f"{where} holds drill 03's answer {what}")
    return found


def copy_entry(source: Path, target: Path) -> None:
    if source.is_symlink():
        raise ValueError(f"{source.relative_to(REPO)} is a link; the release holds plain files only")
    if source.is_dir():
        target.mkdir(parents=True, exist_ok=True)
        for child in sorted(source.iterdir()):
            if child.name not in SKIPPED_NAMES and not child.name.endswith(SKIPPED_SUFFIXES):
                copy_entry(child, target / child.name)
    else:
        shutil.copy2(source, target)  # keeps run-lessons.sh and run-tests.sh executable


def undecided(folder: Path, prefix: str, decided: set[str]) -> list[str]:
    return [f"{prefix}{p.name}" for p in sorted(folder.iterdir())
            if not p.name.startswith(".") and p.name not in SKIPPED_NAMES
            and f"{prefix}{p.name}" not in decided
            and not (prefix == "harness/" and re.fullmatch(r"test_\w+\.py", p.name))]


def commit() -> str:
    try:
        proc = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                              capture_output=True, text=True, timeout=30)
        return proc.stdout.strip() if proc.returncode == 0 else "unknown (git describe failed)"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown (no git)"


def main(argv: list[str]) -> int:
    argv = list(argv)
    repo = None
    if argv[:1] == ["--repo"] or (argv and argv[0].startswith("--repo=")):
        if argv[0] == "--repo":
            if len(argv) < 2:
                return fail(f"--repo needs OWNER/NAME; {USAGE}", 2)
            repo, argv = argv[1], argv[2:]
        else:
            repo, argv = argv[0].split("=", 1)[1], argv[1:]
        why = repo_problem(repo)
        if why:
            return fail(f"REPO={repo!r} is not a GitHub repository for the release: {why} "
                        "(e.g. make student-release REPO=my-course/scan-lab)", 2)
    if len(argv) > 1 or (argv and argv[0].startswith("-")):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return fail(USAGE, 2)
    out = Path(argv[0]).resolve() if argv else REPO / "build" / "student-release"
    if out == REPO or REPO.is_relative_to(out) or (out.is_relative_to(REPO)
                                                     and not out.is_relative_to(REPO / "build")):
        return fail(f"{out}: inside the repository the release may only go under build/", 2)
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / MARKER).is_file())):
        return fail(f"{out} exists and is not an earlier release (no {MARKER}); not replacing it", 2)

    solutions = REPO / "solutions"
    if not (solutions / "03_scan_analysis.md").is_file():
        return fail("solutions/03_scan_analysis.md is missing: without drill 03's answers the release "
                    "cannot be searched for them; build it from the full repository")

    decided = set(RELEASED_TOP) | set(LEFT_OUT) | {f"harness/{n}" for n in RELEASED_HARNESS + RELEASED_TESTS}
    open_questions = undecided(REPO, "", decided) + undecided(HARNESS, "harness/", decided)
    if open_questions:
        for entry in open_questions:
            fail(f"{entry}: neither released nor left out on purpose; add it to RELEASED_* or LEFT_OUT "
                 "in harness/student-release.py")
        return 1
    missing = [n for n in RELEASED_TOP if not (REPO / n).exists()] + \
              [f"harness/{n}" for n in RELEASED_HARNESS + RELEASED_TESTS if not (HARNESS / n).exists()]
    if missing:
        return fail(f"missing from the repository: {', '.join(missing)}")

    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name in RELEASED_TOP:
        if name != "harness":
            copy_entry(REPO / name, out / name)
    shutil.copy2(RELEASE_README, out / "README.md")  # the repository's describes what the release leaves out
    (out / "harness").mkdir()
    for name in RELEASED_HARNESS + RELEASED_TESTS:
        copy_entry(HARNESS / name, out / "harness" / name)
    for name in LEFT_OUT:  # files left out of a folder that is released
        if (out / name).is_file():
            (out / name).unlink()

    ini = out / "harness" / "pytest.ini"
    text = ini.read_text()
    if not re.search(r"^addopts = ", text, re.M):
        return fail("harness/pytest.ini has no `addopts = ` line to add the release's deselections to")
    ini.write_text(re.sub(r"^(addopts = .*)$",
                          lambda m: m.group(1) + "".join(f" --deselect {d}" for d in DESELECT),
                          text, count=1, flags=re.M))

    if repo:
        filled = fill_in_repo(out, repo)
        for needed in ("README.md", "harness/colab/scan-lab.ipynb"):
            if needed not in filled:
                return fail(f"{needed} holds no {PLACEHOLDER} to replace with {repo}; the release's "
                            "Colab route would not reach the course")
    else:
        fail(f"note: no REPO given: the Colab badge and notebook still say {PLACEHOLDER}; "
             "make student-release REPO=OWNER/NAME writes the repository you publish the release as")

    (out / MARKER).write_text(
        f"scan-lab, student release: built {time.strftime('%Y-%m-%d %H:%M %Z')} from {commit()}\n"
        "by `make student-release` (harness/student-release.py, in the course repository).\n"
        f"Published as: {repo or 'not given (the Colab links say ' + PLACEHOLDER + ')'}\n\n"
        "Left out of this copy:\n" + "".join(f"  {k}: {v}\n" for k, v in LEFT_OUT.items()))

    forbidden = {}
    for folder in (solutions, HARNESS / "corpus"):
        if folder.is_dir():
            for path in folder.rglob("*"):
                if path.is_file() and path.stat().st_size > 0:
                    forbidden[path.read_bytes()] = str(path.relative_to(REPO))
    found = leaks(out, forbidden, drill03_answers(solutions))
    if found:
        for line in found:
            fail(line)
        return fail(f"NOT RELEASABLE: {len(found)} find(s) above; {out} is left for inspection")

    files = sum(1 for p in out.rglob("*") if p.is_file())
    print(f"student-release: {files} files in {os.path.relpath(out)}; left out: "
          + ", ".join(f"{k}/" if (REPO / k).is_dir() else k for k in LEFT_OUT if (REPO / k).exists()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
