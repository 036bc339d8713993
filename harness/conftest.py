"""Session set-up for the scan-lab harness.

- `builder`: compiles every program the collected test modules list in their
  module-level `BUILDS`, in parallel, once per session (see scanlab/build.py).
- `nvidia_gpu`, `nvcc`, `hipcc`, `sanitizer`: the machine's tools; a test that
  asks for a missing one is skipped with the reason, or failed when the
  environment variable SCANLAB_REQUIRE names it (see scanlab/env.py).
- `busy_core`: one core shared with N spinning processes, and the taskset prefix that
  runs a command there: a loaded machine on demand.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scanlab import env  # noqa: E402
from scanlab.build import Builder  # noqa: E402

_builder: Builder | None = None


def pytest_configure(config):
    env.required()  # a misspelt SCANLAB_REQUIRE is a usage error, not a silent skip


def pytest_report_header(config):
    gpu, why = env.nvidia_gpu()
    lines = [
        f"scan-lab: nvcc={env.nvcc() or 'missing'} hipcc={env.hipcc() or 'missing'} "
        f"compute-sanitizer={env.compute_sanitizer() or 'missing'}",
        f"scan-lab: GPU={f'{gpu.name} ({gpu.sm})' if gpu else why}",
        f"scan-lab: SCANLAB_REQUIRE={','.join(sorted(env.required())) or '(none: missing tools skip)'}",
    ]
    return lines


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """A test that asks for the builder is marked `builds` (before -m selects), like the ones that
    compile a lesson program themselves: `-m "not builds"` leaves out every compile of a lesson."""
    for item in items:
        if "builder" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.builds)


def pytest_collection_finish(session):
    """Start every declared build now, so they compile while early tests run: the BUILDS of each
    module that has a selected test asking for the builder."""
    global _builder
    root = Path(session.config._tmp_path_factory.mktemp("builds"))
    _builder = Builder(root)
    seen = set()
    modules = dict.fromkeys(getattr(item, "module", None) for item in session.items  # in the order of the tests
                            if "builder" in getattr(item, "fixturenames", ()))
    for module in modules:
        for program in getattr(module, "BUILDS", ()):
            if program not in seen and _builder.available(program):
                seen.add(program)
                _builder.submit(program)


def pytest_sessionfinish(session, exitstatus):
    if _builder is not None:
        _builder.shutdown()


@pytest.fixture(scope="session")
def builder() -> Builder:
    assert _builder is not None
    return _builder


@pytest.fixture(scope="session")
def nvidia_gpu():
    return env.require_nvidia_gpu()


@pytest.fixture(scope="session")
def nvcc():
    return env.require_nvcc()


@pytest.fixture(scope="session")
def hipcc():
    return env.require_hipcc()


@pytest.fixture(scope="session")
def sanitizer():
    return env.require_sanitizer()


FAIR = 0.7  # busy_core: the least share of a fair core's wait that the tests count on
PROBE = ("import time\nw, c = time.monotonic(), time.process_time()\n"  # busy_core's check: 0.2 s of CPU, its wall time
         "while time.process_time() - c < 0.2: pass\nprint(f'{time.monotonic() - w:.2f}')")


@pytest.fixture
def busy_core():
    """`with busy_core(n) as pin:` makes one core busy with n spinning processes; `[*pin, *command]` runs
    a command on that core only (taskset), while the test itself, the sandbox's supervisor, runs free."""
    if not Path(f"/proc/{os.getpid()}/schedstat").exists():  # gVisor, or a kernel without CONFIG_SCHED_INFO
        pytest.skip("this kernel keeps no per-process CPU wait (/proc/PID/schedstat): wall limits stay plain here")

    @contextlib.contextmanager
    def busy(spinners: int):
        core = min(os.sched_getaffinity(0))
        # Each in a session of its own: with the kernel's autogroups, a session shares a core as one.
        spin = [subprocess.Popen([sys.executable, "-c", f"import os\nos.sched_setaffinity(0, {{{core}}})\nwhile True: pass"],
                                 start_new_session=True) for _ in range(spinners)]
        try:
            pin = ["/usr/bin/taskset", "-c", str(core)]
            # Is the core shared fairly? A fair share gives the run 1/(spinners + 1) of it, so 0.2 s of CPU
            # takes 0.2 (spinners + 1) s of wall; the tests count on at least FAIR of that. The H100
            # machine's container (2026-12-05) honours affinity but gave a pinned run half the core
            # whatever the number of spinners (0.44 s of wall for 0.25 s of CPU beside four).
            probe = subprocess.run([*pin, sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60)
            fair = 0.2 * (spinners + 1)
            if probe.returncode != 0 or float(probe.stdout) < FAIR * fair:
                pytest.skip(f"one core is not shared fairly here (0.2 s of CPU took "
                            f"{probe.stdout.strip() or probe.stderr.strip()[-200:]} s of wall beside {spinners} "
                            f"spinners on that core; a fair share takes {fair:.1f} s): wall limits cannot be "
                            f"tested against a busy core")
            yield pin
        finally:
            for process in spin:
                process.kill()
                process.wait()
    return busy


def pytest_runtest_setup(item):
    """Markers carry their requirement: `cuda` needs nvcc, `gpu` an NVIDIA GPU, `full` make test-full."""
    if item.get_closest_marker("full") and not env.full():
        pytest.skip("exhaustive: make test-full runs it (SCANLAB_FULL=1)")
    if item.get_closest_marker("cuda"):
        env.require_nvcc()
    if item.get_closest_marker("gpu"):
        env.require_nvidia_gpu()
