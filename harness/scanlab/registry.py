"""The exercises, from harness/exercises.toml: the one place each is described.

    from scanlab import registry
    registry.EXERCISES["drill01"].file        # "01_exclusive_to_inclusive.cpp"
    registry.COURSE                           # the course's exercises: id -> submission file name
    registry.STRETCH, registry.RUNS_CODE      # sets of ids

The file is read and checked when this module is imported, so nothing grades from a
registry that is wrong: every field present and of its type, a grader module that exists,
a starter that exists and is named as the submission (the answer too, where solutions/ is
present: the student release and the Gradescope zip have none), points >= 0 with a known
visibility, and each exercise's checks adding up to its `total`. RegistryError names the
first problem. exercises.toml's header says what each field means; harness/README.md,
"Adding an exercise", walks through a new one.

Nothing else in the harness lists exercises (test_registry.py fails if a module does);
graders still check their own check names against the registry (grading.require_points).
"""

from __future__ import annotations

import difflib
import math
import os
import re
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.9 and 3.10: the same parser, from PyPI (requirements.txt pins it)
    import tomli as tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .paths import HARNESS, REPO

REGISTRY_FILE = HARNESS / "exercises.toml"
VISIBILITIES = ("visible", "after_due_date", "after_published", "hidden")  # Gradescope's test visibilities
# Each field of an exercise's table, and its type (checks and release_leaves_out are tables of their own).
FIELDS = {"description": str, "file": str, "starter": str, "answer": str, "grader": str, "needs_gpu": bool,
          "runs_code": bool, "stretch": bool, "total": (int, float)}


class RegistryError(RuntimeError):
    """harness/exercises.toml is malformed, or does not match the files or a grader's checks."""


@dataclass(frozen=True)
class Points:
    points: float
    visibility: str = "visible"


@dataclass(frozen=True)
class Exercise:
    id: str
    description: str
    file: str  # the submission's file name: the starter's
    starter: Path  # absolute
    answer: Path  # absolute; absent from the student release and the Gradescope zip
    grader: str  # module name, e.g. "scanlab.grade_drills"
    needs_gpu: bool
    runs_code: bool
    stretch: bool
    total: float
    checks: dict = field(default_factory=dict)  # check name -> Points, in the report's order
    release_leaves_out: dict = field(default_factory=dict)  # repository path -> why the release leaves it out


def _number(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and 0 <= value < math.inf


def parse_checks(where: str, checks) -> dict[str, Points]:
    """One exercise's [ID.checks] table, every entry validated."""
    if not isinstance(checks, dict) or not checks:
        raise RegistryError(f"{where} must be a table of checks")
    found = {}
    for name, entry in checks.items():
        what = f"{where} {name!r}"
        if not isinstance(entry, dict) or set(entry) != {"points", "visibility"}:
            raise RegistryError(f"{what} must be {{ points = P, visibility = \"V\" }}, not {entry!r}")
        points, visibility = entry["points"], entry["visibility"]
        if not _number(points):
            raise RegistryError(f"{what}: points must be a number >= 0, not {points!r}")
        if visibility not in VISIBILITIES:
            raise RegistryError(f"{what}: visibility must be one of {', '.join(VISIBILITIES)}, not {visibility!r}")
        found[name] = Points(float(points), visibility)
    return found


def parse(table: dict, where: Path = REGISTRY_FILE, repo: Path = REPO) -> dict[str, Exercise]:
    """id -> Exercise, in the file's order; RegistryError names the first problem. Paths are read
    from `repo`; grader modules from this package's harness/ (or repo/harness for another repo)."""
    harness = HARNESS if repo == REPO else repo / "harness"
    exercises: dict[str, Exercise] = {}
    files: dict[str, str] = {}
    for ident, entry in table.items():
        at = f"{where}: [{ident}]"
        if not isinstance(entry, dict):
            raise RegistryError(f"{at} must be a table")
        unknown = set(entry) - set(FIELDS) - {"checks", "release_leaves_out"}
        if unknown:
            raise RegistryError(f"{at} has fields it does not know: {sorted(unknown)}")
        for name, kind in FIELDS.items():
            if name not in entry:
                raise RegistryError(f"{at} has no {name}")
            if not isinstance(entry[name], kind) or (kind is not bool and isinstance(entry[name], bool)):
                raise RegistryError(f"{at} {name} = {entry[name]!r} is not a {getattr(kind, '__name__', 'number')}")
        checks = parse_checks(f"{where}: [{ident}.checks]", entry.get("checks"))
        total = sum(p.points for p in checks.values())
        if not _number(entry["total"]) or total != entry["total"]:
            raise RegistryError(f"{at} total = {entry['total']!r}, but its checks add up to {total:g}")
        leaves = entry.get("release_leaves_out", {})
        if not isinstance(leaves, dict) or not all(isinstance(v, str) and v for v in leaves.values()):
            raise RegistryError(f"{at}.release_leaves_out must be a table of \"path\" = \"why\"")
        starter, answer = repo / entry["starter"], repo / entry["answer"]
        if starter.name != entry["file"] or answer.name != entry["file"]:
            raise RegistryError(f"{at} starter and answer must be named {entry['file']!r} (the submission's name)")
        if entry["file"] in files:
            raise RegistryError(f"{at} file {entry['file']!r} is also [{files[entry['file']]}]'s")
        files[entry["file"]] = ident
        # solutions/ and the files the release leaves out are only in the full repository
        full = (repo / "solutions").is_dir()
        needed = [starter, harness / (entry["grader"].replace(".", "/") + ".py"),
                  *([answer, *(repo / p for p in leaves)] if full else [])]
        missing = [p for p in needed if not p.exists()]
        if missing:
            raise RegistryError(f"{at} names files that do not exist: "
                                + ", ".join(os.path.relpath(p, repo) for p in missing))
        exercises[ident] = Exercise(ident, entry["description"], entry["file"], starter, answer, entry["grader"],
                                    entry["needs_gpu"], entry["runs_code"], entry["stretch"], float(entry["total"]),
                                    checks, dict(leaves))
    if not exercises:
        raise RegistryError(f"{where}: no exercises")
    return exercises


def load(path: Path = REGISTRY_FILE, repo: Path = REPO) -> dict[str, Exercise]:
    try:
        with open(path, "rb") as f:
            table = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RegistryError(f"{path}: cannot be read: {exc}") from exc
    return parse(table, path, repo)


EXERCISES: dict[str, Exercise] = load()
# The course: what `grade.py class` grades (its columns, in this order) and the Gradescope autograder
# grades, unless a course names its own (course()). The stretch drills are optional work: graded one
# file at a time, and by those two only where a course names them.
COURSE: dict[str, str] = {e.id: e.file for e in EXERCISES.values() if not e.stretch}
STRETCH: set[str] = {e.id for e in EXERCISES.values() if e.stretch}
RUNS_CODE: set[str] = {e.id for e in EXERCISES.values() if e.runs_code}  # the others are read as text
NEEDS_GPU: set[str] = {e.id for e in EXERCISES.values() if e.needs_gpu}
FILES: dict[str, str] = {e.id: e.file for e in EXERCISES.values()}  # every exercise, stretch drills too


def course(chosen=None) -> dict[str, str]:
    """id -> file of the exercises a course grades, in the registry's order: `chosen` (ids, which may
    name stretch drills: course.toml's `exercises`, make_autograder.py's --exercises), else COURSE."""
    if chosen is None:
        return dict(COURSE)
    unknown = [e for e in chosen if e not in EXERCISES]
    if unknown:
        raise RegistryError(f"no exercise named {', '.join(map(repr, unknown))} (known: {', '.join(EXERCISES)})")
    return {e: f for e, f in FILES.items() if e in chosen}


# Another C++ suffix, a copy's " (1)" or "-1", an editor's added ".txt": what a near miss may differ by.
_SUFFIXES = {".cc": ".cpp", ".cxx": ".cpp", ".c++": ".cpp", ".markdown": ".md"}
_COPY = re.compile(r"(?: ?\(\d+\)|-\d+| copy)$")


def _plain(name: str) -> str:
    name = name.casefold()
    if name.endswith(".txt") and "." in name[:-4]:
        name = name[:-4]
    stem, dot, suffix = name.rpartition(".")
    if not dot:
        stem, suffix = name, ""
    stem = re.sub(r"[\s\-]+", "_", _COPY.sub("", stem)).strip("_")
    suffix = "." + suffix if suffix else ""
    return stem + _SUFFIXES.get(suffix, suffix)


def near_miss(name: str, files) -> str | None:
    """The one of `files` (exercise file names) that a file called `name` was almost surely meant to be,
    or None (also when it is exactly one of them): the same name in another case
    (02_Segmented_Scan.cpp), with spaces or dashes for underscores, a copy's " (1)" or "-1", another
    C++ suffix (.cc), an added .txt, or a one-letter slip."""
    files = list(files)
    if name in files:
        return None
    plain = {_plain(f): f for f in files}
    if _plain(name) in plain:
        return plain[_plain(name)]
    suffix = os.path.splitext(_plain(name))[1]  # a slip is in the name, never the language
    same = [p for p in plain if os.path.splitext(p)[1] == suffix]
    close = difflib.get_close_matches(_plain(name), same, n=2, cutoff=0.9)
    return plain[close[0]] if len(close) == 1 else None


def release_leaves_out() -> dict[str, str]:
    """Every exercise's files the student release leaves out: repository path -> why."""
    return {path: why for e in EXERCISES.values() for path, why in e.release_leaves_out.items()}
