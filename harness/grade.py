#!/usr/bin/env python3
"""Grade one exercise submission.

    python3 harness/grade.py EXERCISE SUBMISSION [--seed S] [--json results.json]
                             [--require-sandbox] [--keep DIR]

EXERCISE is one of the names `--list` prints. The submission is treated as
hostile: it is compiled on its own, inside a sandbox, and linked with (or, on
the GPU exercise, loaded by) a harness-owned driver that runs it on inputs it
has not seen; the verdict comes from the raw results, judged here, outside the
sandbox, against references computed here. Nothing the submission prints
decides anything. See harness/README.md, "What a submission can and cannot do".

Exit status: 0 every check passed; 1 a check failed; 2 bad command line (no
arguments, an unknown exercise, a missing submission, a --json path that cannot
be written); 3 the exercise needs a GPU and none is usable here (checked before
the submission is touched); 4 the grader could not grade (--require-sandbox on a
machine without full isolation, or an error of the grader's own). --json writes
Gradescope's results.json on every one of those paths except 2, replacing (never
reading) whatever was there.
"""

from __future__ import annotations

import argparse
import importlib
import os
import random
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scanlab import EXIT_FAIL, EXIT_NO_GPU, EXIT_PASS, EXIT_USAGE  # noqa: E402
from scanlab.grading import NoGpu, Report, max_score, write_json_atomically  # noqa: E402

EXIT_CANNOT_GRADE = 4

# name -> (module with grade(exercise, submission, workdir, seed) -> Report, description, needs a GPU)
GRADERS = {
    "day31": ("scanlab.grade_day31", "Day 31: shift-then-scan exclusive scan and block totals (CUDA, needs a GPU)",
              True),
    "drill01": ("scanlab.grade_drills", "A05 drill 01: exclusive <-> inclusive and the dropped total (C++, CPU)",
                False),
    "drill02": ("scanlab.grade_drills", "A05 drill 02: segmented scan through a tree (C++, CPU)", False),
    "drill03": ("scanlab.grade_drills", "A05 drill 03: work, depth and utilisation of the two scans (Markdown)",
                False),
    "drill04": ("scanlab.grade_stretch", "A05 stretch drill 04: a warp-shuffle block scan at 32 and 64 lanes (CUDA, "
                "needs a GPU)", True),
    "drill05": ("scanlab.grade_stretch", "A05 stretch drill 05: a single-pass decoupled look-back scan (CUDA, needs a "
                "GPU)", True),
    "drill06": ("scanlab.grade_stretch", "A05 stretch drill 06: partition on the scan of copy_if (CUDA, needs a "
                "GPU)", True),
}
# drill03 is Markdown: nothing of it is executed
RUNS_CODE = {"day31", "drill01", "drill02", "drill04", "drill05", "drill06"}
# The stretch drills are graded one file at a time (`grade.py drill06 FILE`): optional work, they are
# not columns of `grade.py class` or parts of the Gradescope autograder.
STRETCH = {"drill04", "drill05", "drill06"}

USAGE = ("python3 harness/grade.py EXERCISE SUBMISSION [--seed S] [--json results.json] "
         "[--mode self-study|course] [--require-sandbox] [--keep DIR]\n"
         "       python3 harness/grade.py class CLASS_DIR --out OUT_DIR [--jobs N] [--seed S] "
         "[--mode course|self-study] [--shard I/N] [--force] [--require-sandbox] [--only NAME]... "
         "[--config FILE]\n"
         "       python3 harness/grade.py merge OUT_DIR... --out DIR\n"
         "       python3 harness/grade.py --list")


# What a GPU exercise says where it cannot run: not a FAIL, not a 0; where it can be graded.
NO_GPU = ("needs an NVIDIA GPU, and this machine has none it can use: {why}. Grade it on a machine with one "
          "(python3 harness/grade.py on a GPU machine, or the Colab notebook harness/colab/scan-lab.ipynb with a "
          "GPU runtime); in a course, your instructor grades it on a GPU machine.")

MODES = ("self-study", "course")  # course: feedback never reveals an expected answer


def grade(exercise: str, submission: Path, workdir: Path, seed: int, mode: str = "self-study",
          gpu_lock=None) -> Report:
    """One submission's report. gpu_lock (class grading): a lock the GPU graders hold around their
    GPU runs only, so other submissions compile meanwhile."""
    module = importlib.import_module(GRADERS[exercise][0])
    if GRADERS[exercise][2]:
        return module.grade(exercise, submission, workdir, seed, mode=mode, gpu_lock=gpu_lock)
    return module.grade(exercise, submission, workdir, seed, mode=mode)


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


def _not_graded(exercise: str, submission: str, why: str) -> Report:
    """A report with one failed check worth the exercise's whole maximum: the same maximum as a graded one."""
    try:
        points = max_score(exercise)
    except Exception:  # noqa: BLE001 - a broken points.toml must still leave a results.json
        points = 1.0
    report = Report(exercise, submission)
    report.add("graded", False, why, max_score=points)
    return report


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("class", "merge"):  # a whole class: scanlab/classroom.py
        from scanlab.classroom import main as classroom_main

        return classroom_main(argv)
    started = time.monotonic()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], usage=USAGE,
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
        for name, (_, description, _) in GRADERS.items():
            print(f"{name:10} {description}")
        return EXIT_PASS
    if args.exercise is None:
        print(f"usage: {USAGE}", file=sys.stderr)
        return EXIT_USAGE
    if args.exercise not in GRADERS:
        print(f"grade: unknown exercise {args.exercise!r}; known: {', '.join(GRADERS)}\nusage: {USAGE}", file=sys.stderr)
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

    needs_gpu = GRADERS[exercise][2]
    if needs_gpu:
        # The grader's own GPU check, before the submission is touched: after this,
        # nothing a submission does can turn its failure into "no GPU".
        from scanlab.grade_day31 import probe_gpu

        why = probe_gpu()
        if why is not None:
            print(f"grade: cannot grade {exercise} here: no usable GPU: {why}", file=sys.stderr)
            report = Report(exercise, shown, mode=args.mode, not_graded=NO_GPU.format(why=why))
            return finish(report, EXIT_NO_GPU)

    isolation_line = None  # drill03 is read as text: nothing of it runs, so there is nothing to isolate
    if exercise in RUNS_CODE:
        from scanlab.sandbox import isolation

        level, isolation_line = isolation(gpu=needs_gpu)
        if args.require_sandbox and level != "full":
            print(f"grade: --require-sandbox: this machine cannot isolate submissions: {isolation_line}",
                  file=sys.stderr)
            return finish(_not_graded(exercise, shown, "not graded: the grading machine cannot isolate "
                                                        f"submissions ({isolation_line})"), EXIT_CANNOT_GRADE)

    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 1_000_000)
    try:
        with tempfile.TemporaryDirectory(prefix="scanlab-grade-") as tmp:
            workdir = args.keep or Path(tmp)
            workdir.mkdir(parents=True, exist_ok=True)
            report = grade(exercise, submission, workdir, seed, args.mode)
    except NoGpu as exc:  # only the GPU probe may say this; a grader raising it is the grader's bug
        return finish(_not_graded(exercise, shown, f"not graded: the grader lost the GPU ({exc}); "
                                                    "tell your instructor"), EXIT_CANNOT_GRADE)
    except KeyboardInterrupt:
        return finish(_not_graded(exercise, shown, "not graded: grading was interrupted"), EXIT_CANNOT_GRADE)
    except Exception:  # noqa: BLE001 - any grader bug must still leave a results.json and one clear line
        detail = traceback.format_exc(limit=6)
        print(f"grade: internal error while grading {exercise}:\n{detail}", file=sys.stderr)
        return finish(_not_graded(exercise, shown, "not graded: the grader itself failed (not your code's fault; "
                                                    "tell your instructor)"), EXIT_CANNOT_GRADE)
    if isolation_line:
        report.notes.insert(0, f"isolation: {isolation_line}")
    return finish(report, EXIT_PASS if report.passed else EXIT_FAIL)


if __name__ == "__main__":
    sys.exit(main())
