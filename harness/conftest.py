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


@pytest.fixture
def busy_core():
    """`with busy_core(n) as pin:` makes one core busy with n spinning processes; `[*pin, *command]` runs
    a command on that core only (taskset), while the test itself, the sandbox's supervisor, runs free.
    `busy_core.waited(outcome, s, n)` skips a test whose pinned run did not pass s seconds of wall."""
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
            yield pin
        finally:
            for process in spin:
                process.kill()
                process.wait()

    def waited(outcome, past_s: float, spinners: int) -> None:
        """Skip unless the pinned run's wall time went past `past_s`, which the test needs. On the H100
        machine (2026-12-05) a plain pinned process got its fair share of the core, but a sandboxed run
        about half of it whatever the number of spinners (0.4 s of wall for 0.25 s of CPU beside seven),
        as if the kernel shared the core between the run's own cgroup and the rest. A run stopped at a
        time limit never skips: that is the failure these tests are there to catch."""
        if outcome.wall_s <= past_s and not (outcome.limit or "").startswith("time limit"):
            pytest.skip(f"the pinned run did not wait for the busy core ({outcome.wall_s:.2f} s of wall for "
                        f"{outcome.cpu_s:.2f} s of CPU beside {spinners} spinners, {past_s:g} s needed): "
                        f"a sandboxed run does not share one core with other processes here")

    busy.waited = waited
    return busy


def pytest_runtest_setup(item):
    """Markers carry their requirement: `cuda` needs nvcc, `gpu` an NVIDIA GPU, `full` make test-full."""
    if item.get_closest_marker("full") and not env.full():
        pytest.skip("exhaustive: make test-full runs it (SCANLAB_FULL=1)")
    if item.get_closest_marker("cuda"):
        env.require_nvcc()
    if item.get_closest_marker("gpu"):
        env.require_nvidia_gpu()
