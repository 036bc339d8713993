"""compute-sanitizer, run and read.

Each run uses `--error-exitcode 99`, so the tool's verdict is machine-readable
without trusting the program's own exit status, and the summary line is parsed
for the count: racecheck prints "RACECHECK SUMMARY: N hazards displayed
(E errors, W warnings)", the other tools "ERROR SUMMARY: N errors".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import env
from .run import Result, run

SANITIZER_ERROR_EXIT = 99


@dataclass
class Report:
    tool: str
    result: Result
    hazards: int | None  # racecheck only
    errors: int | None

    @property
    def clean(self) -> bool:
        counted = self.hazards if self.tool == "racecheck" else self.errors
        return counted == 0 and self.result.returncode not in (SANITIZER_ERROR_EXIT,)


def sanitize(tool: str, command: list, timeout: float = 600) -> Report:
    exe = env.require_sanitizer()
    extra = ["--racecheck-report", "all"] if tool == "racecheck" else []
    result = run([exe, "--tool", tool, *extra, "--error-exitcode", str(SANITIZER_ERROR_EXIT), *command],
                 timeout=timeout)
    text = result.stdout + result.stderr
    hazards = errors = None
    m = re.search(r"RACECHECK SUMMARY:\s+(\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)", text)
    if m:
        hazards, errors = int(m.group(1)), int(m.group(2))
    m = re.search(r"ERROR SUMMARY:\s+(\d+) errors?", text)
    if m and errors is None:
        errors = int(m.group(1))
    if hazards is None and errors is None:
        raise AssertionError(f"compute-sanitizer printed no summary\n{result.describe()}")
    return Report(tool, result, hazards, errors)
