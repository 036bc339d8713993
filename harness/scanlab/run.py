"""Running a built program and reading what it printed."""

from __future__ import annotations

import errno
import re
import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


from . import EXIT_NO_GPU, env


@dataclass
class Result:
    command: list[str]
    returncode: int
    stdout: str
    stderr: str

    @property
    def last_line(self) -> str:
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        return lines[-1] if lines else ""

    def describe(self) -> str:
        return (f"$ {shlex.join(self.command)}\nexit status {self.returncode}\n"
                f"--- stdout ---\n{self.stdout}--- stderr ---\n{self.stderr}")


# exec failures seen to pass on a loaded machine: "Bad address" (EFAULT), "Text file
# busy" (a binary another thread has just written), "Resource temporarily unavailable".
TRANSIENT_EXEC_ERRORS = {errno.EFAULT, errno.ETXTBSY, errno.EAGAIN}


def run_process(command: list, attempts: int = 3, **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run, retrying a start that failed for a transient reason.

    Every process the harness and the graders start goes through here. A program
    that starts and then fails is never retried; only the exec itself is.
    """
    for attempt in range(attempts):
        try:
            return subprocess.run(command, **kwargs)
        except OSError as exc:
            if exc.errno not in TRANSIENT_EXEC_ERRORS or attempt == attempts - 1:
                raise
            time.sleep(0.2 * (attempt + 1))
    raise AssertionError("unreachable")


def run(command: list, timeout: float = 300, env_vars: dict | None = None, cwd: Path | None = None) -> Result:
    """Run a program; a hang fails the test with the command, never blocks the suite."""
    import os

    command = [str(c) for c in command]
    environment = None
    if env_vars is not None:
        environment = dict(os.environ)
        environment.update(env_vars)
    try:
        proc = run_process(command, capture_output=True, text=True, timeout=timeout, env=environment, cwd=cwd)
    except subprocess.TimeoutExpired:
        import pytest

        pytest.fail(f"timed out after {timeout} s: {shlex.join(command)}", pytrace=False)
    return Result(command, proc.returncode, proc.stdout, proc.stderr)


def run_on_gpu(command: list, timeout: float = 300, alone: bool = False, **kwargs) -> Result:
    """Run a program that needs the GPU; its own 'no usable GPU' status skips (or fails, when strict).
    alone: with the GPU to itself (sandbox.gpu_turn, the graders' machine-wide turn), as a profiler needs."""
    if alone:
        from .sandbox import gpu_turn

        with gpu_turn():
            return run_on_gpu(command, timeout, **kwargs)
    result = run(command, timeout=timeout, **kwargs)
    if result.returncode == EXIT_NO_GPU:
        env.unavailable("gpu", f"the program reports no usable GPU: {result.stderr.strip()}")
    return result


def split_row(line: str) -> list[str]:
    """Cells of a table row: columns are separated by two or more spaces."""
    return re.split(r"\s{2,}", line.strip())


def parse_table(text: str, header: list[str]) -> list[dict[str, str]]:
    """The rows of the first table in `text` whose header cells are exactly `header`.

    The table convention every program follows: a header line, a line of dashes,
    then one row per line until a blank line; cells are separated by two or more
    spaces and never contain two spaces themselves or are empty ('-' instead).
    """
    lines = text.splitlines()
    for at, line in enumerate(lines):
        if split_row(line) == header and at + 1 < len(lines) and set(lines[at + 1].strip()) <= {"-", " "}:
            rows = []
            for row in lines[at + 2:]:
                if not row.strip():
                    break
                cells = split_row(row)
                if len(cells) != len(header):
                    raise AssertionError(f"row does not fit header {header}: {row!r}")
                rows.append(dict(zip(header, cells)))
            return rows
    raise AssertionError(f"no table with header {header} in output:\n{text}")
