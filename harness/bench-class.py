#!/usr/bin/env python3
"""Time `grade.py class` on a synthetic class: how long a course's grading takes here.

    python3 harness/bench-class.py [--students N] [--exercises cpu|day31|all|drill04|drill05|drill06]
                                   [--jobs J] [--keep DIR] [--seed S]

Makes N student folders from files already in the repository, so each one is a
different file (a comment naming the student is added: nothing can be reused
between students), in proportions a real class might show:

    about 60 %  the reference answer (solutions/), or a correct-but-unusual corpus entry
    about 25 %  a real mistake from harness/corpus/ (a wrong verdict, judged in full)
    about 10 %  the untouched starter (exercises/)
    about  5 %  a hostile corpus entry (an endless loop, a fork bomb, a crash...)

then runs `grade.py class` on it, prints the time, the students per minute and
the projection to 300 students, and checks that every student was graded.
A stretch drill (drill04-06) is graded alone, as a course that lists it in
course.toml's `exercises` would grade it (drill 05 with its speed check).
Exit status: 0 every student graded; 1 not (the table says who); 2 bad usage.

This is a benchmark, not a test: the course-scale target (300 students x 3 CPU
exercises in 5 minutes on 2 cores; 300 Day 31 submissions in 5 minutes on one
GPU machine) is reported from its output, never asserted in the suite.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HARNESS = Path(__file__).resolve().parent
REPO = HARNESS.parent
sys.path.insert(0, str(HARNESS))
from scanlab import grading, registry  # noqa: E402  (after the path: the harness's own package)
from scanlab.source import built_from_base  # noqa: E402
CORPUS = HARNESS / "corpus"
FILES = registry.FILES  # every exercise's file name (harness/exercises.toml)
SETS = {"cpu": [e for e in registry.COURSE if e not in registry.NEEDS_GPU],  # what `grade.py class` grades
        "day31": [e for e in registry.COURSE if e in registry.NEEDS_GPU], "all": list(registry.COURSE),
        **{e: [e] for e in registry.STRETCH}}
# drill03 has no corpus: a wrong answer sheet is the starter with two slots filled wrongly.
WRONG_DRILL03 = {"serial_adds_512": "512", "bl_threads_512": "512"}  # n, not n - 1; n, not n/2


def pools(exercise: str) -> dict[str, list[bytes]]:
    """The files a synthetic student draws from, by kind."""
    manifest = grading.tomllib.loads((CORPUS / "manifest.toml").read_text())["submission"]
    entries = [e for e in manifest if e["exercise"] == exercise and "@REPO@" not in (CORPUS / e["file"]).read_text(
        errors="replace")]
    by_kind = {kind: [e for e in entries if e["kind"] == kind] for kind in ("correct", "wrong", "hostile")}
    answer = registry.EXERCISES[exercise].answer.read_bytes()
    texts = {kind: [entry_bytes(e) for e in es] for kind, es in by_kind.items()}
    return {"right": [answer] * 3 + texts["correct"], "wrong": texts["wrong"],
            "starter": [registry.EXERCISES[exercise].starter.read_bytes()], "hostile": texts["hostile"]}


def entry_bytes(entry: dict) -> bytes:
    """A corpus entry's file as graded: an entry kept as edits of an answer (drill 05's) built first."""
    data = (CORPUS / entry["file"]).read_bytes()
    if entry.get("base"):
        data = built_from_base(data.decode(), (REPO / entry["base"]).read_text()).encode()
    return data


def drill03_text(kind: str) -> str:
    if kind == "right":
        return registry.EXERCISES["drill03"].answer.read_text()
    text = registry.EXERCISES["drill03"].starter.read_text()
    if kind == "wrong":
        for slot, value in WRONG_DRILL03.items():
            text = text.replace(f"{slot} = ____", f"{slot} = {value}")
    return text


def make_class(folder: Path, students: int, exercises: list[str], seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    drawn = {"right": 0, "wrong": 0, "starter": 0, "hostile": 0}
    sources = {e: pools(e) for e in exercises if e != "drill03"}
    for k in range(students):
        student = folder / f"student{k + 1:03d}"
        student.mkdir(parents=True)
        for exercise in exercises:
            kind = rng.choices(["right", "wrong", "starter", "hostile"], [60, 25, 10, 5])[0]
            if exercise == "drill03":
                kind = "wrong" if kind == "hostile" else kind
                text = drill03_text(kind)
                (student / FILES[exercise]).write_text(f"<!-- {student.name} -->\n{text}")
            else:
                pool = sources[exercise][kind] or sources[exercise]["right"]
                data = rng.choice(pool)
                (student / FILES[exercise]).write_bytes(f"// {student.name}\n".encode() + data)
            drawn[kind] += 1
    return drawn


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--exercises", choices=SETS, default="cpu")
    parser.add_argument("--jobs", type=int, default=None, help="grade.py class --jobs (default: its own)")
    parser.add_argument("--seed", type=int, default=1, help="draws the class, and is grade.py's --seed")
    parser.add_argument("--keep", type=Path, help="make the class and its grades here, and keep them")
    args = parser.parse_args(argv)
    if args.students < 1:
        parser.error("--students wants 1 or more")
    work = args.keep or Path(tempfile.mkdtemp(prefix="scanlab-bench-class-"))
    class_dir, out_dir = work / "class", work / "grades"
    if class_dir.exists() or out_dir.exists():
        parser.error(f"{work} already holds class/ or grades/: give an empty --keep folder")
    exercises = SETS[args.exercises]
    drawn = make_class(class_dir, args.students, exercises, args.seed)
    command = [sys.executable, str(HARNESS / "grade.py"), "class", str(class_dir), "--out", str(out_dir),
               "--seed", str(args.seed), "--mode", "course"]
    if any(e in registry.STRETCH for e in exercises):  # opt-in: the course's course.toml lists them
        config = work / "course.toml"
        config.write_text("exercises = [" + ", ".join(f'"{e}"' for e in exercises) + "]\n")
        command += ["--config", str(config)]
    if args.jobs:
        command += ["--jobs", str(args.jobs)]
    print(f"bench-class: {args.students} students x {', '.join(exercises)} on {os.cpu_count()} cores; drawn "
          + ", ".join(f"{v} {k}" for k, v in drawn.items()), flush=True)
    start = time.monotonic()
    status = subprocess.run(command, stdout=subprocess.DEVNULL).returncode
    seconds = time.monotonic() - start
    rows = list(csv.DictReader((out_dir / "grades.csv").open())) if (out_dir / "grades.csv").exists() else []
    ungraded = [r["student"] for r in rows
                if "not graded" in r.get("note", "") or "waiting for a GPU" in r.get("note", "")]
    per_student = seconds / args.students
    print(f"bench-class: grade.py class exit {status}; {len(rows)} rows; {len(ungraded)} not graded"
          + (f" ({', '.join(ungraded[:5])}{' ...' if len(ungraded) > 5 else ''})" if ungraded else ""))
    print(f"bench-class: {seconds:.1f} s for {args.students} students: {per_student:.2f} s each, "
          f"{60 / per_student:.0f} a minute; 300 students would take about {300 * per_student / 60:.1f} min")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if status == 0 and len(rows) == args.students and not ungraded else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
