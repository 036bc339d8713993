#!/usr/bin/env python3
"""Build Gradescope's autograder zip (`make autograder`): build/autograder.zip.

    python3 harness/gradescope/make_autograder.py [--out build/autograder.zip] [--exercises ID,ID,...]

At the top of the zip, as Gradescope requires: setup.sh and run_autograder (from
harness/gradescope/). Then what grading needs: harness/ without its tests,
corpus/ and caches, and exercises/ (the starters: graders learn an
exercise's maximum from its untouched starter). Never solutions/: grading must
not need them, and the zip refuses any file whose bytes are a solution's.

Entries are sorted with a fixed timestamp, so the same tree gives the same zip.
Their modes are the owner's only (0700 executable, else 0600): the harness ships
drill 03's counter (scanlab/scan_counts.py, which drill 03's grader imports) and
the graders that draw the hidden inputs, and in partial isolation a sandboxed
run may read whatever another uid may. run_autograder.py closes the unpacked
folders themselves the same way (`protect`), whatever the unzip gave them.

The exercises it grades go into the zip as harness/gradescope/course.txt, one id
a line: --exercises (`make autograder EXERCISES="..."`; ids from
harness/exercises.toml, the stretch drills among them), by default the course
without the stretch drills. run_autograder.py grades those, and the calling
script's time limit counts one budget for each (harness/README.md, "Gradescope").
Exit status: 0 written; 1 refused (a solution would have gone in, or a file
it needs is missing); 2 bad command line.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import re
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
TOP = ("setup.sh", "run_autograder")  # Gradescope looks for these at the root of the archive
FOLDERS = ("harness", "exercises")
# Left out of harness/ and exercises/: tests and their data (planted mistakes, the corpus,
# which holds correct submissions), caches, and anything a build or an editor leaves.
EXCLUDED = ("harness/test_*.py", "harness/bench-class.py", "harness/conftest.py", "harness/pytest.ini",
            "harness/requirements.txt", "harness/corpus", "*/__pycache__", "*.pyc",
            "*/.pytest_cache", "*/.mypy_cache", "*~", "*.swp", "*/.DS_Store", "*.o", "*.fatbin")
EXECUTABLE = {"setup.sh", "run_autograder", "harness/grade.py", "harness/gradescope/run_autograder.py",
              "harness/gradescope/make_autograder.py", "harness/gradescope/results_schema.py",
              "harness/gradescope/run_autograder", "harness/gradescope/setup.sh"}
FIXED_TIME = (1980, 1, 1, 0, 0, 0)
COURSE = "harness/gradescope/course.txt"  # written here, never taken from the tree


def course_text(exercises: list[str] | None = None) -> str:
    """course.txt: the exercises the zip grades, one id a line, in the registry's order."""
    sys.path.insert(0, str(REPO / "harness"))
    from scanlab import registry

    return "".join(f"{e}\n" for e in registry.course(exercises))


def excluded(relative: str) -> bool:
    return any(fnmatch.fnmatch(relative, pattern) for pattern in EXCLUDED)


def members(repo: Path = REPO) -> list[tuple[str, Path]]:
    """(name in the zip, file on disk), sorted; links are skipped (never followed out of the tree)."""
    chosen = [(name, HERE / name) for name in TOP]
    for folder in FOLDERS:
        for dirpath, dirnames, filenames in os.walk(repo / folder):
            base = Path(dirpath)
            dirnames[:] = sorted(d for d in dirnames
                                 if not excluded((base / d).relative_to(repo).as_posix())
                                 and not (base / d).is_symlink())
            for filename in sorted(filenames):
                path = base / filename
                relative = path.relative_to(repo).as_posix()
                if not excluded(relative) and not path.is_symlink() and path.is_file() and relative != COURSE:
                    chosen.append((relative, path))
    return sorted(chosen)


def solution_contents(repo: Path = REPO) -> dict[bytes, str]:
    folder = repo / "solutions"
    if not folder.is_dir():
        return {}
    return {p.read_bytes(): p.relative_to(repo).as_posix() for p in sorted(folder.rglob("*")) if p.is_file()}


def refusals(chosen: list[tuple[str, Path]], repo: Path = REPO) -> list[str]:
    """Why this list must not become the zip: a solution inside, or a file Gradescope needs missing."""
    why = []
    solutions = solution_contents(repo)
    for name, path in chosen:
        if name.split("/")[0] == "solutions":
            why.append(f"{name}: the solutions folder never goes in the autograder")
        elif path.read_bytes() in solutions:
            why.append(f"{name}: has the same bytes as {solutions[path.read_bytes()]}")
    names = {name for name, _ in chosen}
    for needed in (*TOP, "harness/grade.py", "harness/exercises.toml", "harness/gradescope/run_autograder.py"):
        if needed not in names:
            why.append(f"{needed}: missing; the autograder cannot run without it")
    return why


def build(out: Path, repo: Path = REPO, exercises: list[str] | None = None) -> list[str]:
    """Write the zip to `out` (through a temporary file and a rename); the names written. `exercises`:
    what it grades (default: the course, no stretch drill)."""
    course = course_text(exercises).encode()  # RegistryError on an unknown id, before anything is written
    chosen = members(repo)
    why = refusals(chosen, repo)
    if why:
        raise ValueError("refusing to build the autograder:\n  " + "\n  ".join(why))
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=".autograder-", suffix=".zip", dir=out.parent)
    os.close(fd)
    try:
        with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, path in chosen:
                info = zipfile.ZipInfo(name, FIXED_TIME)
                info.compress_type = zipfile.ZIP_DEFLATED
                mode = 0o700 if name in EXECUTABLE else 0o600  # nobody's but root's (see the top)
                info.external_attr = (0o100000 | mode) << 16  # a regular file with these permissions
                zf.writestr(info, path.read_bytes())
            info = zipfile.ZipInfo(COURSE, FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o100000 | 0o600) << 16
            zf.writestr(info, course)
        os.chmod(temporary, 0o644)
        os.replace(temporary, out)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    return sorted([name for name, _ in chosen] + [COURSE])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "build" / "autograder.zip", help="the zip to write")
    parser.add_argument("--exercises", help="the exercises to grade, by id, separated by commas or spaces "
                        "(default: the course, without the stretch drills)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    exercises = re.split(r"[,\s]+", args.exercises.strip()) if args.exercises and args.exercises.strip() else None
    try:
        course_text(exercises)
    except Exception as exc:  # noqa: BLE001 - scanlab.registry.RegistryError: an id it does not know
        print(f"make_autograder: --exercises: {exc}", file=sys.stderr)
        return 2
    try:
        names = build(args.out, exercises=exercises)
    except ValueError as exc:
        print(f"make_autograder: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {args.out}: {len(names)} files; upload it as the assignment's autograder "
          "(harness/README.md, \"Gradescope\")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
