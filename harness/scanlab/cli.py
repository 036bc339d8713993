"""grade.py's command line: one exercise, one submission (harness/grade.py's docstring is its manual).

`grade.py class` and `grade.py merge` go on to scanlab/classroom.py. The exit statuses are
grade.py's: 0 every check passed; 1 a check failed; 2 bad command line; 3 no usable GPU for a
GPU exercise; 4 the grader could not grade.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
import traceback
from pathlib import Path

from . import EXIT_FAIL, EXIT_NO_GPU, EXIT_PASS, EXIT_USAGE
from .dispatch import EXIT_CANNOT_GRADE, MODES, NO_GPU, grade, needs_gpu, not_graded
from .grading import NoGpu, Report, write_json_atomically
from .registry import EXERCISES

DESCRIPTION = "Grade one exercise submission."

USAGE = ("python3 harness/grade.py EXERCISE SUBMISSION [--seed S] [--json results.json] "
         "[--mode self-study|course] [--require-sandbox] [--keep DIR]\n"
         "       python3 harness/grade.py class CLASS_DIR --out OUT_DIR [--jobs N] [--seed S] "
         "[--mode course|self-study] [--shard I/N] [--force] [--require-sandbox] [--only NAME]... "
         "[--config FILE]\n"
         "       python3 harness/grade.py merge OUT_DIR... --out DIR\n"
         "       python3 harness/grade.py --list")


def _json_target_problem(path: Path) -> str | None:
    """Why --json cannot be written there, or None. Checked before grading starts."""
    if path.is_dir():
        return f"--json {path}: is a folder"
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        return f"--json {path}: the folder {parent} does not exist"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"--json {path}: the folder {parent} is not writable"
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("class", "merge"):  # a whole class: scanlab/classroom.py
        from .classroom import main as classroom_main

        return classroom_main(argv)
    started = time.monotonic()
    parser = argparse.ArgumentParser(description=DESCRIPTION, usage=USAGE,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("exercise", nargs="?", help="which exercise (see --list)")
    parser.add_argument("submission", nargs="?", type=Path, help="the student's file")
    parser.add_argument("--seed", type=int, help="seed for the hidden random inputs (default: drawn, printed)")
    parser.add_argument("--json", type=Path, help="write Gradescope results.json here (always, on every outcome)")
    parser.add_argument("--mode", choices=MODES, default="self-study",
                        help="course: feedback never shows an expected answer (default self-study)")
    parser.add_argument("--require-sandbox", action="store_true",
                        help="refuse to grade (exit 4) unless this machine gives submissions full isolation")
    parser.add_argument("--keep", type=Path, help="keep the grader's own work folder here (never the sandbox's)")
    parser.add_argument("--list", action="store_true", help="list the exercises")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return EXIT_PASS if exc.code == 0 else EXIT_USAGE

    if args.list:
        for exercise in EXERCISES.values():
            print(f"{exercise.id:10} {exercise.description}")
        return EXIT_PASS
    if args.exercise is None:
        print(f"usage: {USAGE}", file=sys.stderr)
        return EXIT_USAGE
    if args.exercise not in EXERCISES:
        print(f"grade: unknown exercise {args.exercise!r}; known: {', '.join(EXERCISES)}\nusage: {USAGE}", file=sys.stderr)
        return EXIT_USAGE
    if args.submission is None or not args.submission.is_file():
        what = "no submission given" if args.submission is None else f"no submission file at {args.submission}"
        print(f"grade: {what}\nusage: {USAGE}", file=sys.stderr)
        return EXIT_USAGE
    if args.json is not None:
        problem = _json_target_problem(args.json)
        if problem:
            print(f"grade: {problem}\n{USAGE}", file=sys.stderr)
            return EXIT_USAGE

    exercise, submission = args.exercise, args.submission.resolve()
    shown = args.submission.name

    def finish(report: Report, status: int) -> int:
        """Every exit path after the checks above ends here: text out, then results.json."""
        # Course mode prints what a student may see; the instructor's detail is in results.json
        # (a hidden test) and in `grade.py class`'s report.txt.
        print(report.text(instructor=args.mode != "course"))
        if args.json is not None:
            try:
                write_json_atomically(report, args.json, time.monotonic() - started)
            except OSError as exc:
                print(f"grade: could not write {args.json}: {exc}", file=sys.stderr)
                return EXIT_CANNOT_GRADE
            print(f"wrote {args.json}")
        return status

    gpu = needs_gpu(exercise)
    if gpu:
        # The grader's own GPU check, before the submission is touched: after this,
        # nothing a submission does can turn its failure into "no GPU".
        from .grade_day31 import probe_gpu

        why = probe_gpu()
        if why is not None:
            print(f"grade: cannot grade {exercise} here: no usable GPU: {why}", file=sys.stderr)
            report = Report(exercise, shown, mode=args.mode, not_graded=NO_GPU.format(why=why))
            return finish(report, EXIT_NO_GPU)

    isolation_line = None  # drill03 is read as text: nothing of it runs, so there is nothing to isolate
    if EXERCISES[exercise].runs_code:
        from .sandbox import UidsUnavailable, isolation

        try:
            level, isolation_line = isolation(gpu=gpu)
        except UidsUnavailable as exc:  # the machine's set-up, not the submission: one line, status 4
            print(f"grade: cannot start a sandbox here: {exc}", file=sys.stderr)
            return finish(not_graded(exercise, shown, f"not graded: the grading machine cannot start a sandbox "
                                                        f"({exc}); tell your instructor"), EXIT_CANNOT_GRADE)
        if args.require_sandbox and level != "full":
            print(f"grade: --require-sandbox: this machine cannot isolate submissions: {isolation_line}",
                  file=sys.stderr)
            return finish(not_graded(exercise, shown, "not graded: the grading machine cannot isolate "
                                                        f"submissions ({isolation_line})"), EXIT_CANNOT_GRADE)

    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 1_000_000)
    try:
        with tempfile.TemporaryDirectory(prefix="scanlab-grade-") as tmp:
            workdir = args.keep or Path(tmp)
            workdir.mkdir(parents=True, exist_ok=True)
            report = grade(exercise, submission, workdir, seed, args.mode)
    except NoGpu as exc:  # only the GPU probe may say this; a grader raising it is the grader's bug
        return finish(not_graded(exercise, shown, f"not graded: the grader lost the GPU ({exc}); "
                                                    "tell your instructor"), EXIT_CANNOT_GRADE)
    except KeyboardInterrupt:
        return finish(not_graded(exercise, shown, "not graded: grading was interrupted"), EXIT_CANNOT_GRADE)
    except Exception:  # noqa: BLE001 - any grader bug must still leave a results.json and one clear line
        detail = traceback.format_exc(limit=6)
        print(f"grade: internal error while grading {exercise}:\n{detail}", file=sys.stderr)
        return finish(not_graded(exercise, shown, "not graded: the grader itself failed (not your code's fault; "
                                                    "tell your instructor)"), EXIT_CANNOT_GRADE)
    if isolation_line:
        report.notes.insert(0, f"isolation: {isolation_line}")
    return finish(report, EXIT_PASS if report.passed else EXIT_FAIL)
