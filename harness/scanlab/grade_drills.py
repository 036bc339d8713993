"""Graders for the A05 drills (exercises/01-03): exact, harness-owned, CPU only.

drill01 and drill02 treat the submission as untrusted code:

- It is compiled ALONE (drill02: together with harness/drivers/drill02_shim.cpp,
  which only marshals between the student's Seg and plain integers), inside a
  `Sandbox`, under its own file name so compiler messages name the student's
  file. Its macros, pragmas and includes never reach the grader's code.
- The driver (harness/drivers/drill0N_driver.cpp) is trusted: compiled here,
  outside any sandbox, once per version of its sources, and cached outside the
  repository ($SCANLAB_CACHE or ~/.cache/scanlab). The link of driver.o with
  submission.o happens in the sandbox. A student's unguarded main() is renamed
  in submission.o (objcopy), and a submission may not define a function the
  driver itself calls (fwrite, operator new...): it could not be graded.
- Every driver run is one function on one input, in a FRESH sandbox that holds
  the linked program and only the inputs that function reads; never an
  expected output. The driver calls the function and dumps the raw storage of
  every array it handed over (guard words included); Python compares all of it
  with what it wrote and with references it computes itself. Nothing the
  submission prints is read. A crash, a limit or an early exit costs that case
  only and is a failing check; a function that times out skips its remaining
  cases.

drill03: the numbers in the student's Markdown are compared with the numbers
harness/scanlab/scan_counts.py counts (it simulates both scans and counts every
add, barrier and active thread; a port of solutions/03_scan_analysis.cpp, tested
to print the same), never with constants typed in here, and never needing
solutions/. Prose answers become notes.

Scores: every check's points come from harness/points.toml (checked against the
check names below when this module is imported). An untouched starter scores 0:
"builds" is worth nothing, and checks a stub passes by accident are gated (see
`gated`). Modes: in "course" mode no feedback holds an expected value (the
"should be" halves, the reference counts); those go into instructor-only detail.

Every grader: `grade(exercise, submission, workdir, seed, timeout=None, mode="self-study") -> Report`.

This module is the entry point and the registry; each drill has a module of its own
(grade_drill01.py, grade_drill02.py, grade_drill03.py) and drill_common.py holds what
the C++ drills share. Their names are re-exported here, so `grade_drills.X` reaches any.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from .drill_common import *  # noqa: F401,F403 - re-exported: the shared machinery
from .drill_common import TIMEOUT_S
from .grading import MODES, Report, require_points
from .grade_drill01 import *  # noqa: F401,F403 - re-exported: the graders' names, one import away
from .grade_drill01 import DRILL01_CHECKS, grade_drill01
from .grade_drill02 import *  # noqa: F401,F403
from .grade_drill02 import DRILL02_CHECKS, grade_drill02
from .grade_drill03 import *  # noqa: F401,F403
from .grade_drill03 import SLOTS03, grade_drill03

# ---- entry point ---------------------------------------------------------------------------

GRADERS: dict[str, Callable[..., Report]] = {
    "drill01": grade_drill01,
    "drill02": grade_drill02,
    "drill03": grade_drill03,
}

# harness/points.toml must name exactly these checks: checked here, at import, so the file cannot drift.
require_points("drill01", ["builds", *DRILL01_CHECKS])
require_points("drill02", ["builds", *DRILL02_CHECKS])
require_points("drill03", list(SLOTS03))


def grade(exercise: str, submission: Path, workdir: Path, seed: int, timeout: float | None = None,
          mode: str = "self-study") -> Report:
    """Grade one drill submission; `timeout` bounds each driver run (default TIMEOUT_S); mode is
    "self-study" (full feedback) or "course" (no expected value shown to the student)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    return GRADERS[exercise](Path(submission), Path(workdir), seed, TIMEOUT_S if timeout is None else timeout,
                             mode)
