"""The sandbox every submission process runs in (scanlab/sandbox.py).

These run on any Linux machine. The isolation tests need bubblewrap and root
(CI installs bubblewrap and runs as root); without them they skip with the
reason, or fail when SCANLAB_REQUIRE names `sandbox`. The limit and clean-up
tests also run in the fallback (no bubblewrap) mode, which instructors without
bubblewrap get.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from scanlab import env
from scanlab.paths import REPO
from scanlab.sandbox import INSIDE, OOM_MARKER, UID_RANGE, WALL_CAP, Limits, Sandbox, isolation, processes_of

SH = "/bin/sh"
QUICK = Limits(cpu_s=5, wall_s=10)


@pytest.fixture(params=["bubblewrap", "fallback"])
def mode(request, monkeypatch):
    """Every limit test runs with bubblewrap and without it."""
    if request.param == "fallback":
        monkeypatch.setenv("SCANLAB_BWRAP", "none")
    else:
        require_full_isolation()
    import scanlab.sandbox as sandbox

    monkeypatch.setattr(sandbox, "_PROBED", {})
    return request.param


def require_full_isolation():
    level, why = isolation()
    if level != "full":
        env.unavailable("sandbox", f"no full isolation here: {why}")


def require_root():
    if os.geteuid() != 0:
        pytest.skip("the grader's own uid per run needs root")


def test_nothing_of_the_repository_or_the_grader_is_visible():
    require_full_isolation()
    with Sandbox() as box:
        hidden = box.run(["/usr/bin/test", "-e", str(REPO)], QUICK)
        out = box.run([SH, "-c", "ls /; pwd; cat /proc/1/cmdline | tr '\\0' ' '; echo; "
                                 "ls /proc | grep -c '^[0-9]'; env"], QUICK)
    assert hidden.returncode == 1, "the repository is visible inside the sandbox"
    assert out.ok, out.describe() + out.stderr
    top = out.stdout.split(f"\n{INSIDE}\n", 1)[0].split()
    assert "work" not in top and "home" not in top and "root" not in top and INSIDE[1:] in top, top
    assert str(REPO) not in out.stdout  # PID 1's command line names no path of the grader's
    counts = [line for line in out.stdout.splitlines() if line.isdigit()]
    assert counts and int(counts[0]) <= 5, out.stdout  # bubblewrap's two, the shell and its pipeline
    environment = {line.split("=", 1)[0] for line in out.stdout.splitlines() if "=" in line and " " not in line}
    assert environment <= {"PATH", "HOME", "TMPDIR", "LANG", "PWD", "SHLVL", "_"}, environment


def test_runs_are_an_unprivileged_uid_with_read_only_system_and_no_network():
    require_full_isolation()
    require_root()
    with Sandbox() as box:
        out = box.run([SH, "-c", "id -u; touch /usr/x 2>&1; touch /tmp/x && echo tmp-ok; "
                                 "cat /proc/net/dev | grep -c ':'; grep Cap /proc/self/status"], QUICK)
    lines = out.stdout.splitlines()
    assert int(lines[0]) in UID_RANGE
    assert "Read-only file system" in out.stdout
    assert "tmp-ok" in out.stdout
    assert lines[3] == "1", "only the loopback interface exists"  # /proc/net/dev lists lo alone
    assert all(line.split()[1] == "0000000000000000" for line in lines if line.startswith("Cap")), lines


def test_put_and_get_never_follow_links_or_read_fifos():
    with Sandbox() as box:
        box.put("in.bin", b"hello")
        out = box.run([SH, "-c", "cat in.bin; echo written > out.bin; ln -s /etc/hostname link; mkfifo fifo; "
                                 "ln -sf /etc/hostname in.bin"], QUICK)
        assert out.stdout == "hello" and out.ok
        assert box.get("out.bin") == b"written\n"
        assert box.get("link") is None and box.get("fifo") is None and box.get("missing") is None
        box.put("in.bin", b"again")  # replaces the link the run left, never writes through it
        assert (box.scratch / "in.bin").read_bytes() == b"again" and not (box.scratch / "in.bin").is_symlink()
        scratch = box.scratch
    assert not scratch.exists()


def test_time_limits(mode):
    with Sandbox() as box:
        spin = box.run([SH, "-c", "while :; do :; done"], Limits(cpu_s=1, wall_s=10))
        sleep = box.run([SH, "-c", "sleep 30"], Limits(cpu_s=5, wall_s=1))
    assert spin.limit == "CPU time limit 1 s exceeded", spin.describe()
    assert sleep.limit == "time limit 1 s exceeded" and sleep.wall_s < 5, sleep.describe()


BUSY = r"""
#include <cstdlib>
#include <ctime>
int main(int, char** argv) {  // spin until this process has used argv[1] seconds of CPU
    const double want = std::atof(argv[1]);
    volatile unsigned long n = 0;
    while (double(std::clock()) / CLOCKS_PER_SEC < want) ++n;
}
"""


@pytest.fixture(scope="module")
def busy_program(tmp_path_factory) -> Path:
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ not found")
    folder = tmp_path_factory.mktemp("busy")
    (folder / "busy.cpp").write_text(BUSY)
    subprocess.run([gxx, "-O1", "-o", folder / "busy", folder / "busy.cpp"], check=True)
    return folder / "busy"


def test_the_wall_limit_leaves_out_time_spent_waiting_for_a_cpu(mode, busy_program, busy_core):
    """On one core shared with seven spinners, a run that needs 0.25 s of CPU takes about 2 s of wall: under
    a 1 s wall limit it finishes, because the time it waited for the core is not counted. One that needs 5 s
    of CPU beside seven spinners would count 0.5 s only after about 4 s: it is stopped at WALL_CAP times the
    wall limit all the same. (A sleep, which waits for no CPU, meets the plain wall limit: test_time_limits.)"""
    with Sandbox() as box:
        box.put("busy", busy_program, executable=True)
        with busy_core(7) as pin:
            shared = box.run([*pin, "./busy", "0.25"], Limits(cpu_s=10, wall_s=1))
        busy_core.waited(shared, 1, 7)
        with busy_core(7) as pin:
            queued = own_run_delay_s()
            capped = box.run([*pin, "./busy", "5"], Limits(cpu_s=10, wall_s=0.5))
            queued = own_run_delay_s() - queued  # the supervisor (this process) can stop a run only when it runs
    assert shared.ok and shared.limit is None, shared.describe()
    assert capped.limit == "time limit 0.5 s exceeded" and \
        WALL_CAP * 0.5 - 0.1 < capped.wall_s < WALL_CAP * 0.5 + 1.5 + queued, (capped.describe(), capped.wall_s, queued)


def own_run_delay_s() -> float:
    """Seconds this process's threads have waited for a CPU (schedstat's run_delay; busy_core needs it)."""
    total = 0
    for task in os.listdir("/proc/self/task"):
        try:
            total += int(Path(f"/proc/self/task/{task}/schedstat").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            pass  # a thread that ended
    return total / 1e9


def test_file_size_and_output_limits(mode):
    with Sandbox() as box:
        big = box.run(["/usr/bin/head", "-c", "10000000", "/dev/zero"], Limits(file_bytes=1 << 20), )
        flood = box.run(["/usr/bin/head", "-c", "50000000", "/dev/zero"], Limits(output_bytes=1000))
        write = box.run(["/usr/bin/dd", "if=/dev/zero", "of=big", "bs=1M", "count=10"], Limits(file_bytes=1 << 20))
    assert big.ok  # stdout is a pipe, not a file: the output cap applies instead
    assert len(flood.stdout) == 1000 and flood.output_dropped == 50_000_000 - 1000 and flood.ok
    assert write.limit == "file size limit 1 MiB exceeded", write.describe()


def test_process_limit_and_nothing_left_afterwards(mode):
    require_root()
    with Sandbox() as box:
        bomb = box.run([SH, "-c", "for i in $(seq 60); do sleep 20 & done; wait"], Limits(processes=16, wall_s=10))
        daemon = box.run([SH, "-c", "(setsid sleep 60 &); (nohup sleep 60 >/dev/null 2>&1 &); echo started"],
                         QUICK)
        uid = box.uid
        assert processes_of(uid) == []
    assert bomb.limit == "process limit 16 reached", bomb.describe() + bomb.stderr
    assert daemon.ok and daemon.stdout == "started\n" and daemon.wall_s < 5


def test_memory_limit_is_named_from_the_drivers_marker(mode, tmp_path):
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ not found")
    source = tmp_path / "eat.cpp"
    source.write_text(
        "#include <cstdio>\n#include <cstdlib>\n#include <new>\n#include <vector>\n"
        f"static void oom() {{ std::fputs(\"{OOM_MARKER}\\n\", stderr); std::_Exit(91); }}\n"
        "int main() { std::set_new_handler(oom); std::vector<char*> kept;\n"
        "  for (int i = 0; i < 64; ++i) kept.push_back(new char[256u << 20]);\n"
        "  std::printf(\"%zu\\n\", kept.size()); }\n")
    subprocess.run([gxx, "-O1", "-o", tmp_path / "eat", source], check=True)
    with Sandbox() as box:
        box.put("eat", tmp_path / "eat")
        out = box.run(["./eat"], Limits(memory_bytes=1 << 30))
    assert out.limit == "memory limit 1 GiB exceeded", out.describe() + out.stderr


def test_a_crash_names_its_signal(mode):
    with Sandbox() as box:
        out = box.run([SH, "-c", "kill -SEGV $$"], QUICK)
        plain = box.run([SH, "-c", "exit 7"], QUICK)
    assert out.signal == "SIGSEGV" and out.describe() == "killed by SIGSEGV"
    assert plain.returncode == 7 and plain.signal is None and plain.limit is None


def test_the_fallback_says_what_it_cannot_hide(monkeypatch):
    import scanlab.sandbox as sandbox

    monkeypatch.setenv("SCANLAB_BWRAP", "none")
    monkeypatch.setattr(sandbox, "_PROBED", {})
    level, why = isolation()
    assert level in ("partial", "none") and "bubblewrap" in why and "READ" in why.upper()
    with pytest.raises(sandbox.SandboxUnavailable):
        Sandbox(require=True)


def test_a_gpu_sandbox_reaches_the_gpu():
    require_full_isolation()
    gpu = env.require_nvidia_gpu()
    smi = os.path.realpath(shutil.which("nvidia-smi"))
    with Sandbox(gpu=True) as box:
        out = box.run([smi, "-L"], Limits(memory_bytes=None, wall_s=60, cpu_s=30))
    assert out.ok and gpu.name in out.stdout, out.describe() + out.stdout + out.stderr


def test_scratch_folders_are_removed_even_after_a_hostile_run():
    with Sandbox() as box:
        box.run([SH, "-c", "mkdir -p a/b/c && chmod 000 a/b && ln -s / root && touch x"], QUICK)
        scratch = box.scratch
    assert not scratch.exists()
    time.sleep(0.1)


def test_a_toolchain_outside_usr_is_reachable(monkeypatch):
    """A g++ found in /opt/gcc (as on the GPU machine) must run inside, with its parents searchable."""
    require_full_isolation()
    import tempfile

    import scanlab.sandbox as sandbox

    base = Path(tempfile.mkdtemp(prefix="scanlab-toolchain-", dir="/var/tmp"))
    try:
        wrapper = base / "bin" / "g++"
        wrapper.parent.mkdir()
        wrapper.write_text("#!/bin/sh\nexec /usr/bin/g++ \"$@\"\n")
        wrapper.chmod(0o755)
        base.chmod(0o755)
        monkeypatch.setenv("CXX", str(wrapper))
        monkeypatch.setattr(sandbox, "_PROBED", {})
        assert str(base) in sandbox.toolchain_dirs()
        with Sandbox() as box:
            out = box.run([str(wrapper), "--version"], QUICK)
        assert out.ok, out.describe() + out.stderr
    finally:
        shutil.rmtree(base)


@pytest.mark.parametrize("value, said", [("450000-450999", "range(450000, 451000)"),
                                         ("", "range(200000, 300000)"),
                                         ("5-10", "SCANLAB_UID_RANGE wants LO-HI"),
                                         ("450999-450000", "SCANLAB_UID_RANGE wants LO-HI")])
def test_the_uid_range_can_be_set_for_a_grader_of_its_own(value, said):
    """test_corpus.py gives its grades a range no other grading draws from; a bad range is refused."""
    proc = subprocess.run([sys.executable, "-c", "from scanlab import sandbox; print(sandbox.UID_RANGE)"],
                          cwd=Path(__file__).resolve().parent, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "SCANLAB_UID_RANGE": value})
    assert said in proc.stdout + proc.stderr, proc.stdout + proc.stderr


# ---- what a run leaves, learns or blocks on (hostile-review round two) ---------------------

PY = "/usr/bin/python3"
KEYCTL = ("import ctypes, os, sys; libc = ctypes.CDLL(None, use_errno=True); "
          "nr = {'x86_64': 248, 'aarch64': 217}[os.uname().machine]; "
          "r = libc.syscall(nr, b'user', b'scanlab-left-behind', b'secret', 6, -4); "  # add_key to @u
          "print(r, ctypes.get_errno()); sys.exit(0 if r == -1 and ctypes.get_errno() == 1 else 1)")


def test_keyrings_sockets_and_system_v_ipc_are_refused(mode):
    """A key added to the uid's keyring would outlive the run; sockets and System V IPC are how two
    runs meet without namespaces. All refused with EPERM (GPU runs keep sockets and IPC)."""
    if not os.path.exists(PY):
        pytest.skip("no /usr/bin/python3 to make the system calls with")
    meet = ("import ctypes, socket, sys; libc = ctypes.CDLL(None, use_errno=True)\n"
            "try:\n socket.socket(socket.AF_UNIX); sys.exit('socket allowed')\nexcept PermissionError: pass\n"
            "r = libc.shmget(0, 4096, 0o1600)\nsys.exit(0 if r == -1 and ctypes.get_errno() == 1 else 'shmget allowed')")
    with Sandbox() as box:
        key = box.run([PY, "-c", KEYCTL], QUICK)
        met = box.run([PY, "-c", meet], QUICK)
    assert key.ok, key.stdout + key.stderr
    assert met.ok, met.stdout + met.stderr


def test_the_scratch_folder_has_a_disk_limit_that_is_named(mode):
    """Many files each under the file size limit: the scratch's size stops them, and says so."""
    with Sandbox(disk_bytes=64 << 20) as box:
        out = box.run([SH, "-c", "i=0; while [ $i -lt 40 ]; do head -c 8388608 /dev/zero > f$i || exit 7; "
                                 "i=$((i+1)); done"], QUICK)
        used = sum(p.stat().st_size for p in box.scratch.iterdir())
    assert out.limit == "disk limit 64 MiB exceeded (the scratch folder is full)", out.describe()
    assert used < (64 << 20) + (64 << 20), used  # the watch without a tmpfs may overshoot by one poll


def test_the_sandbox_shows_nothing_of_the_host():
    """Its own host name, and PID 1's command line (readable by every run) holds no host path."""
    require_full_isolation()
    with Sandbox() as box:
        out = box.run([SH, "-c", "uname -n; tr '\\0' ' ' < /proc/1/cmdline; echo; cat /proc/self/mountinfo"], QUICK)
        scratch, mounted = str(box.scratch), box.mounted
    assert out.ok, out.describe() + out.stderr
    name, pid1, *mounts = out.stdout.splitlines()
    assert name == "scanlab" and name != os.uname().nodename
    assert scratch not in pid1 and "--bind" not in pid1 and str(REPO) not in pid1, pid1
    if mounted:  # a scratch of its own (root): not even the mount table names the host's folder
        assert not any(scratch in line for line in mounts), mounts


def test_a_compile_gets_no_terminal_and_its_limits_are_named(tmp_path):
    """#include of a pty or of /dev/zero fails at once; a template bomb hits the compile's CPU
    limit and the verdict names it (not "internal compiler error")."""
    require_full_isolation()
    from scanlab.sandbox import COMPILE_LIMITS

    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("no g++")
    bomb = ("template <int N, int M> struct B { static const long v = B<N - 1, M>::v + B<N, M - 1>::v; };\n"
            "template <int M> struct B<0, M> { static const long v = 1; };\n"
            "template <int N> struct B<N, 0> { static const long v = 1; };\n"
            "long f() { return B<3000, 3000>::v; }\n")
    with Sandbox() as box:
        for device in ("/dev/ptmx", "/dev/tty", "/dev/zero", "/dev/pts/0", "/dev/console"):
            box.put("inc.cpp", f'#include "{device}"\n'.encode())
            start = time.monotonic()
            out = box.run([gxx, "-c", "inc.cpp"], COMPILE_LIMITS)
            assert not out.ok and time.monotonic() - start < 5, (device, out.describe())
            assert out.limit is None and "No such file" in out.stderr, (device, out.stderr)
        # The compile limits with 2 s of CPU: the rule is the same at any limit, and the corpus's
        # h_template_bomb meets the real 10 s (this test once spent those 10 s as well).
        limits = dataclasses.replace(COMPILE_LIMITS, cpu_s=2)
        box.put("bomb.cpp", bomb.encode())
        start = time.monotonic()
        out = box.run([gxx, "-ftemplate-depth=100000", "-c", "bomb.cpp"], limits)
    assert time.monotonic() - start < limits.wall_s + 5
    assert out.limit is not None and "compile" in out.limit or "compiler" in (out.limit or ""), \
        (out.describe(), out.stderr[-400:])


def test_a_compiler_out_of_memory_or_killed_is_named_not_internal():
    """What g++ and nvcc print when a limit stopped one of their tools, read as that limit."""
    from scanlab.sandbox import COMPILE_LIMITS, NVCC_COMPILE_LIMITS, compiler_limit

    gcc_cpu = ("g++: internal compiler error: CPU time limit exceeded signal terminated program cc1plus\n"
               "Please submit a full bug report, with preprocessed source.")
    assert compiler_limit(gcc_cpu, COMPILE_LIMITS) == "compile CPU time limit 10 s exceeded (cc1plus)"
    assert compiler_limit("cc1plus: out of memory allocating 65536 bytes after a total of 2147000000 bytes",
                          COMPILE_LIMITS) == "the compiler ran out of its 2 GiB memory limit"
    assert compiler_limit("g++: fatal error: File size limit exceeded signal terminated program as",
                          COMPILE_LIMITS) == "compile file size limit 64 MiB exceeded (as)"
    assert compiler_limit("nvcc error   : 'cicc' died due to signal 24", NVCC_COMPILE_LIMITS) == \
        "compile CPU time limit 40 s exceeded (cicc)"
    # A student's source echoed in an ordinary error is theirs: it names no limit.
    assert compiler_limit("x.cpp:3:1: error: 'oops' was not declared\n    3 | out of memory allocating\n",
                          COMPILE_LIMITS) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="a uid of its own per run needs root")
def test_no_uid_is_handed_out_twice_and_partial_runs_leave_nothing_in_tmp(monkeypatch):
    monkeypatch.setenv("SCANLAB_BWRAP", "none")
    import scanlab.sandbox as sandbox

    monkeypatch.setattr(sandbox, "_PROBED", {})
    seen = []
    for _ in range(5):
        with Sandbox() as box:
            seen.append(box.uid)
            marker = f"/tmp/scanlab-left-{box.uid}"
            out = box.run([SH, "-c", f"echo x > {marker}; mkdir {marker}.d; echo $TMPDIR"], QUICK)
            assert out.ok, out.describe() + out.stderr
            assert out.stdout.strip() == str(box.scratch)  # temporaries go to the scratch, not /tmp
        assert not os.path.exists(marker) and not os.path.exists(marker + ".d")
    assert len(set(seen)) == len(seen)


@pytest.mark.skipif(os.geteuid() != 0, reason="a uid of its own per run needs root")
def test_two_graders_on_one_machine_never_hold_the_same_uid(tmp_path):
    """Another process (a second grade.py, a shard of the same class, a test) that holds a uid in an
    open sandbox keeps it from this one, though no process of that uid is running: two holders would
    share its scratch folders and sweep each other's runs. The claim goes when its holder does.
    (A process's first sandbox also probes bubblewrap, with a uid of its own: each needs two.)"""
    lo = 700_000 + (os.getpid() % 100) * 10  # uids of this test's own
    ready = tmp_path / "ready"

    def grader(uids: list[int], *hold: str) -> list[str]:
        """A process whose sandbox draws from `uids` (the probe first); with `hold`, it keeps the
        sandbox open and writes its uid there."""
        script = ("import sys, time; sys.path.insert(0, sys.argv[1])\n"
                  "from pathlib import Path\n"
                  "from scanlab import sandbox\n"
                  f"sandbox.UID_RANGE = {uids}\n"
                  "with sandbox.Sandbox() as box:\n"
                  "    print(box.uid, flush=True)\n"
                  "    if len(sys.argv) > 2:\n"
                  "        Path(sys.argv[2]).write_text(str(box.uid))\n"
                  "        time.sleep(60)\n")
        return [sys.executable, "-c", script, str(REPO / "harness"), *hold]

    def run(uids: list[int]) -> subprocess.CompletedProcess:
        return subprocess.run(grader(uids), capture_output=True, text=True, timeout=60)

    holder = subprocess.Popen(grader([lo, lo + 1], str(ready)), stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline and holder.poll() is None:
            time.sleep(0.05)
        held = int(ready.read_text())
        assert held in (lo, lo + 1) and not processes_of(held)  # nothing runs as it: only the claim keeps it
        short = run([held, lo + 2])  # the probe takes lo + 2; nothing is left for the sandbox
        assert short.returncode != 0 and "no sandbox uid left" in short.stderr, short.stdout + short.stderr
        three = run([held, lo + 2, lo + 3])
        assert three.returncode == 0 and int(three.stdout.split()[0]) in (lo + 2, lo + 3), three.stdout + three.stderr
    finally:
        holder.kill()
        holder.wait()
    after = run([held, lo + 2])  # its holder is gone: both are free again
    assert after.returncode == 0 and int(after.stdout.split()[0]) in (held, lo + 2), after.stdout + after.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="a uid of its own per run needs root")
def test_a_class_cleanup_leaves_the_uids_another_grader_holds(tmp_path):
    """Class grading sweeps each student's slice of uids (processes, files in /tmp): a uid of that
    slice which another grader on the machine holds in an open sandbox is that grader's, and its
    run and files are left alone; once nobody holds it, the sweep takes what its uid left."""
    from scanlab.classroom import remove_leftovers

    uid = 710_000 + (os.getpid() % 100) * 10
    ready = tmp_path / "ready"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; sys.path.insert(0, sys.argv[1])\n"
        "from pathlib import Path\n"
        "from scanlab import sandbox\n"
        f"sandbox.UID_RANGE = [{uid}, {uid + 1}]\n"
        "with sandbox.Sandbox() as box:\n"
        "    Path(sys.argv[2]).write_text(str(box.uid))\n"
        "    time.sleep(60)\n"), str(REPO / "harness"), str(ready)])
    run = None
    try:
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline and holder.poll() is None:
            time.sleep(0.05)
        held = int(ready.read_text())
        # its run (a process of the held uid) and a file that run made in /tmp
        run = subprocess.Popen(["/usr/bin/setpriv", f"--reuid={held}", f"--regid={held}", "--clear-groups",
                                "/usr/bin/sleep", "60"])
        made = Path(tempfile.mkdtemp(prefix="scanlab-held-", dir="/tmp"))
        os.chown(made, held, held)
        time.sleep(0.2)
        said = remove_leftovers(range(uid, uid + 2), None, tmp_path)
        assert run.poll() is None and made.exists(), said
    finally:
        holder.kill()
        holder.wait()
    said = remove_leftovers(range(uid, uid + 2), None, tmp_path)
    assert run.wait(timeout=10) == -9 and not made.exists(), said


@pytest.mark.skipif(os.geteuid() != 0, reason="a uid of its own per run needs root")
def test_no_uid_to_be_had_is_one_line_and_status_4(tmp_path):
    """A claims folder others may write in (or a used-up range) is the machine's problem: grade.py says
    so in one line and exits 4 (the grader could not grade), never a traceback and status 1."""
    open_folder = tmp_path / "claims"
    open_folder.mkdir(mode=0o777)
    open_folder.chmod(0o777)
    script = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1])\n"
              "from scanlab import cli, sandbox\n"
              "sandbox.UID_CLAIMS_DIR = Path(sys.argv[2])\n"
              "sys.exit(cli.main(['drill01', sys.argv[3], '--seed', '5']))\n")
    proc = subprocess.run([sys.executable, "-c", script, str(REPO / "harness"), str(open_folder),
                           str(REPO / "exercises" / "01_exclusive_to_inclusive.cpp")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.strip().splitlines() == [
        f"grade: cannot start a sandbox here: cannot claim sandbox uids in {open_folder}: {open_folder} is not a "
        "folder that only root can write"], proc.stderr
    assert "not graded: the grading machine cannot start a sandbox" in proc.stdout, proc.stdout
