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

This file is the front door: the command line is scanlab/cli.py, the dispatch to
each exercise's grader scanlab/dispatch.py, and the exercises harness/exercises.toml.

Exit status: 0 every check passed; 1 a check failed; 2 bad command line (no
arguments, an unknown exercise, a missing submission, a --json path that cannot
be written); 3 the exercise needs a GPU and none is usable here (checked before
the submission is touched); 4 the grader could not grade (--require-sandbox on a
machine without full isolation, or an error of the grader's own). --json writes
Gradescope's results.json on every one of those paths except 2, replacing (never
reading) whatever was there.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

try:
    from scanlab.cli import main  # noqa: E402  (after the path: the harness's own package)
except RuntimeError as exc:  # scanlab.registry.RegistryError: harness/exercises.toml is wrong, and says how
    if __name__ != "__main__":
        raise
    print(f"grade: cannot grade anything: {exc}", file=sys.stderr)
    sys.exit(4)  # the grader could not grade

if __name__ == "__main__":
    sys.exit(main())
