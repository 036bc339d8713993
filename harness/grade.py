#!/usr/bin/env python3
"""Grade one exercise submission.

    python3 harness/grade.py EXERCISE SUBMISSION [--seed S] [--json results.json] [--keep DIR]

EXERCISE is one of the names `--list` prints. The grader builds SUBMISSION into
a harness-owned driver, runs it on the public inputs and on seeded random
inputs the student has not seen, and compares the raw outputs with references
the harness computes itself; nothing the submission prints decides anything.
Every check is printed with its feedback (the first bad index, expected and
actual values, and the seed that reproduces it); --json writes Gradescope's
results.json format for an instructor's tooling.

Exit status: 0 every check passed; 1 a check failed; 2 bad command line;
3 the exercise needs a GPU and none is usable here.
"""

from __future__ import annotations

import argparse
import importlib
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scanlab import EXIT_FAIL, EXIT_NO_GPU, EXIT_PASS, EXIT_USAGE  # noqa: E402
from scanlab.grading import NoGpu, Report  # noqa: E402

# name -> (module with grade(exercise, submission, workdir, seed) -> Report, description)
GRADERS = {
    "day31": ("scanlab.grade_day31", "Day 31: shift-then-scan exclusive scan and block totals (CUDA, needs a GPU)"),
    "drill01": ("scanlab.grade_drills", "A05 drill 01: exclusive <-> inclusive and the dropped total (C++, CPU)"),
    "drill02": ("scanlab.grade_drills", "A05 drill 02: segmented scan through a tree (C++, CPU)"),
    "drill03": ("scanlab.grade_drills", "A05 drill 03: work, depth and utilisation of the two scans (Markdown)"),
}


def grade(exercise: str, submission: Path, workdir: Path, seed: int) -> Report:
    module = importlib.import_module(GRADERS[exercise][0])
    return module.grade(exercise, submission, workdir, seed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("exercise", nargs="?", help="which exercise (see --list)")
    parser.add_argument("submission", nargs="?", type=Path, help="the student's file")
    parser.add_argument("--seed", type=int, help="seed for the hidden random inputs (default: drawn, printed)")
    parser.add_argument("--json", type=Path, help="write Gradescope results.json here")
    parser.add_argument("--keep", type=Path, help="build and run in this folder and keep it")
    parser.add_argument("--list", action="store_true", help="list the exercises")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return EXIT_PASS if exc.code == 0 else EXIT_USAGE

    if args.list:
        for name, (_, description) in GRADERS.items():
            print(f"{name:10} {description}")
        return EXIT_PASS
    if args.exercise not in GRADERS:
        print(f"grade: unknown exercise {args.exercise!r}; known: {', '.join(GRADERS)}", file=sys.stderr)
        return EXIT_USAGE
    if args.submission is None or not args.submission.is_file():
        print(f"grade: no submission file at {args.submission}", file=sys.stderr)
        return EXIT_USAGE

    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 1_000_000)
    with tempfile.TemporaryDirectory(prefix="scanlab-grade-") as tmp:
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        try:
            report = grade(args.exercise, args.submission.resolve(), workdir, seed)
        except NoGpu as exc:
            print(f"grade: cannot grade {args.exercise} here: no usable GPU: {exc}", file=sys.stderr)
            return EXIT_NO_GPU
    print(report.text())
    if args.json:
        report.write_json(args.json)
        print(f"wrote {args.json}")
    return EXIT_PASS if report.passed else EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
