"""One submission of one exercise, graded: `grade()`, what every front door calls.

harness/grade.py (one file), `grade.py class` (scanlab/classroom.py) and Gradescope's
autograder (harness/gradescope/run_autograder.py) all grade through `grade()`: it imports
the grader module harness/exercises.toml names for the exercise and calls its
`grade(exercise, submission, workdir, seed, mode=...)`. Nothing here reads the submission.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from .grading import MODES, Report, max_score
from .registry import EXERCISES

MODES = MODES  # self-study | course: course feedback never reveals an expected answer
EXIT_CANNOT_GRADE = 4  # --require-sandbox without full isolation, or an error of the grader's own

# What a GPU exercise says where it cannot run: not a FAIL, not a 0; where it can be graded.
NO_GPU = ("needs an NVIDIA GPU, and this machine has none it can use: {why}. Grade it on a machine with one "
          "(python3 harness/grade.py on a GPU machine, or the Colab notebook harness/colab/scan-lab.ipynb with a "
          "GPU runtime); in a course, your instructor grades it on a GPU machine.")


def needs_gpu(exercise: str) -> bool:
    return EXERCISES[exercise].needs_gpu


def grade(exercise: str, submission: Path, workdir: Path, seed: int, mode: str = "self-study",
          gpu_lock=None) -> Report:
    """One submission's report. gpu_lock (class grading): a lock the GPU graders hold around their
    GPU runs only, so other submissions compile meanwhile."""
    module = importlib.import_module(EXERCISES[exercise].grader)
    if needs_gpu(exercise):
        return module.grade(exercise, submission, workdir, seed, mode=mode, gpu_lock=gpu_lock)
    return module.grade(exercise, submission, workdir, seed, mode=mode)


def not_graded(exercise: str, submission: str, why: str) -> Report:
    """A report with one failed check worth the exercise's whole maximum: the same maximum as a graded one."""
    try:
        points = max_score(exercise)
    except Exception:  # noqa: BLE001 - a broken registry entry must still leave a results.json
        points = 1.0
    report = Report(exercise, submission)
    report.add("graded", False, why, max_score=points)
    return report
