"""Running submission code: a fresh scratch folder, an unprivileged user, limits, nothing left behind.

Every process the graders start from a student's code (its compiler run, its
link, the driver that calls its functions, the GPU runner that launches its
kernels) goes through `Sandbox.run`. What the process gets:

- a fresh scratch folder as its working directory, mounted at /sandbox, holding
  only the files the grader `put` there for this run;
- a cleaned environment (PATH, HOME, TMPDIR, LANG; LD_LIBRARY_PATH for GPU runs);
- with bubblewrap (the normal case): a private mount namespace in which /usr and
  a few files of /etc are read-only, /tmp is a private tmpfs and nothing else of
  the machine exists (the repository, the grader's files and other students'
  work are not there at all); private PID, IPC, UTS and network namespaces, so it
  sees none of the grader's processes and reaches no network; the GPU device
  nodes when the run needs the GPU;
- a uid of its own (drawn from UID_RANGE, when the grader runs as root), so the
  process limit counts only its processes and every process left is found;
- limits on CPU time, wall time, address space, file size, processes and the
  output it may print (the excess is read and discarded, then reported).

When a run ends, every process it started is gone: the PID namespace dies with
its first process, and every process still owned by the run's uid is killed.
Without bubblewrap the runs still get their own uid, limits and clean-up, but
the machine's files are visible to them; `isolation()` says which case holds,
and `--require-sandbox` makes the graders refuse to run without full isolation.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import itertools
import os
import platform
import random
import re
import selectors
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .paths import REPO

def _uid_range() -> range:
    """The uids sandboxed runs get (when the grader runs as root): 200000-299999, or
    SCANLAB_UID_RANGE=LO-HI (inclusive, within 100000-999999). A test that must tell its
    own runs from those of anything else grading on the machine gives itself a range of its own."""
    text = os.environ.get("SCANLAB_UID_RANGE", "")
    if text:
        lo, sep, hi = text.partition("-")
        if not (sep and lo.isdigit() and hi.isdigit() and 100_000 <= int(lo) <= int(hi) <= 999_999):
            raise ValueError(f"SCANLAB_UID_RANGE wants LO-HI within 100000-999999, not {text!r}")
        return range(int(lo), int(hi) + 1)
    return range(200_000, 300_000)


UID_RANGE = _uid_range()
INSIDE = "/sandbox"  # where the scratch folder appears inside the sandbox
MAX_GET_BYTES = 256 << 20
OOM_EXIT = 91  # drivers' new_handler: print OOM_MARKER and _Exit(91)
OOM_MARKER = "scanlab: out of memory"
POLL_S = 0.05
# A run's wall limit counts the time it could have run: time its processes spent runnable but waiting
# for a CPU (a busy machine: a class graded in parallel, CI's test shards) is left out, so a run that
# fills its memory meets the memory limit however busy the cores are. A run is stopped at WALL_CAP
# times its wall limit all the same (64 spinning processes queue each other; the CPU limit is per process).
# Where the kernel keeps no /proc/PID/schedstat (gVisor), nothing is left out.
WALL_CAP = 3
TAIL_BYTES = 16 << 10
PIPE_BYTES = 1 << 20  # the run's stdout and stderr pipes, and one read of them
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


@dataclass(frozen=True)
class Limits:
    cpu_s: float = 10
    wall_s: float = 20
    memory_bytes: int | None = 2 << 30  # RLIMIT_AS; None for GPU runs (the driver maps a huge address space)
    file_bytes: int = 64 << 20
    processes: int = 64
    output_bytes: int = 256 << 10  # per stream
    # A compiler run: its limits are named "compile ..." and a tool of the compile (cc1plus, cicc,
    # ptxas, as) killed by one is recognised from the compiler driver's own report of it. A compile
    # also gets no device but /dev/null (an #include of a terminal or of /dev/zero must not block or
    # fill memory), and neither sockets nor System V IPC.
    compiler: bool = False


# Measured (2026-12, 2 cores): the slowest correct submission compiles in 0.5 s with g++ (drill 02,
# preprocessed and compiled) and in 10 s with nvcc (drill 05's answer, sm_75 + sm_90 + PTX); the
# limits leave a margin of 20x and 4-6x for a loaded class machine. A compile that fills its 2 GiB
# page by page (a preprocessor bomb) needs 7.5 s of CPU, so it meets the memory limit first; the wall
# limit is four times the CPU one, because a CI machine with three test shards on two cores gave it
# under 40% of a core and 20 s of wall ran out first (CI, 2026-12-04). Memory: cc1plus peaks under
# 100 MB, nvcc's cicc under 700 MB (RLIMIT_AS counts address space, so nvcc gets more).
COMPILE_LIMITS = Limits(cpu_s=10, wall_s=40, memory_bytes=2 << 30, processes=32, compiler=True)
NVCC_COMPILE_LIMITS = Limits(cpu_s=40, wall_s=60, memory_bytes=4 << 30, processes=32, compiler=True)
GPU_LIMITS = Limits(cpu_s=60, wall_s=60, memory_bytes=None, processes=64)
# The scratch folder of a sandbox, where its runs write: a tmpfs of this size (mounted by the grader
# when it runs as root), or, where it cannot mount, the growth of the folder's file system watched
# while a run lasts. The largest legitimate use is a few drill dumps (tens of MiB).
DISK_BYTES = 512 << 20
DISK_INODES = 16384
HOSTNAME = "scanlab"  # what a run's uname() says: nothing of the grading machine


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"


def _seconds(s: float) -> str:
    return f"{s:g} s"


def _limit_text(which: str, limits: Limits, by: str = "") -> str:
    """The words a report uses for a limit hit: "compile CPU time limit 10 s exceeded (cc1plus)"."""
    what = {"cpu": f"CPU time limit {_seconds(limits.cpu_s)} exceeded",
            "file": f"file size limit {_size(limits.file_bytes)} exceeded",
            "memory": f"memory limit {_size(limits.memory_bytes or 0)} exceeded"}[which]
    if limits.compiler:
        what = (f"the compiler ran out of its {_size(limits.memory_bytes or 0)} memory limit" if which == "memory"
                else f"compile {what}")
    return what + (f" ({by})" if by else "")


# How compiler drivers report a tool of theirs that a limit stopped: g++ ("cc1plus: ... CPU time
# limit exceeded signal terminated program cc1plus"), nvcc ("'cicc' died due to signal 24"), and
# the tools' own words for running out of memory or disk.
_GCC_SIGNAL = re.compile(r"(CPU time limit exceeded|File size limit exceeded|Killed|Segmentation fault) signal "
                         r"terminated program (\S{1,80})")
_NVCC_SIGNAL = re.compile(r"'(\S{1,80})' died due to signal (\d{1,3})")
_OUT_OF_MEMORY = ("virtual memory exhausted", "out of memory allocating", "std::bad_alloc", "Cannot allocate memory",
                  "Memory allocation failure", "out of memory")
_OUT_OF_DISK = "No space left on device"
_SOURCE_ECHO = re.compile(r"\s*\d* \|")


def compiler_limit(output: str, limits: Limits) -> str | None:
    """The limit a failed compile hit, read from the compiler's messages (None: an ordinary error)."""
    # The driver's report is at the end (never scan a flood whole); the lines that echo the
    # student's source ("  12 | ...") are theirs to fill with any words, so they are passed over.
    text = "\n".join(line for line in output[-(64 << 10):].splitlines() if not _SOURCE_ECHO.match(line))
    found = _GCC_SIGNAL.search(text)
    if found:
        why, tool = found.groups()
        return {"CPU time limit exceeded": _limit_text("cpu", limits, tool),
                "File size limit exceeded": _limit_text("file", limits, tool),
                "Killed": f"the compiler was killed ({tool}): most often it ran out of memory, "
                          f"{_limit_text('memory', limits)}",
                "Segmentation fault": f"the compiler crashed ({tool}, {why}): a template or macro that "
                                      "recurses without end?"}[why]
    found = _NVCC_SIGNAL.search(text)
    if found:
        tool, number = found.group(1), int(found.group(2))
        if number == signal.SIGXCPU:
            return _limit_text("cpu", limits, tool)
        if number == signal.SIGXFSZ:
            return _limit_text("file", limits, tool)
        if number in (signal.SIGKILL, signal.SIGABRT):
            return f"the compiler was stopped ({tool}, signal {number}): {_limit_text('memory', limits)}?"
        return f"the compiler crashed ({tool}, signal {number})"
    if _OUT_OF_DISK in text:
        return "the compiler ran out of disk space (the scratch folder is full)"
    if any(marker in text for marker in _OUT_OF_MEMORY):
        return _limit_text("memory", limits)
    return None


@dataclass
class Outcome:
    command: list[str]
    returncode: int  # negative: killed by that signal (as subprocess reports it)
    stdout: str
    stderr: str
    output_dropped: int = 0  # bytes of stdout + stderr read and discarded past the cap
    limit: str | None = None
    signal: str | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0  # user + system time of every process of the run that was waited for
    stderr_tail: str = ""  # the last 16 KiB of stderr, kept even past the cap (a compiler's verdict is last)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.limit is None

    def describe(self) -> str:
        if self.limit:
            return self.limit
        if self.signal:
            return f"killed by {self.signal}"
        return f"exit status {self.returncode}"


class SandboxUnavailable(RuntimeError):
    """Full isolation was required and this machine cannot give it."""


class UidsUnavailable(RuntimeError):
    """No sandbox uid can be had here: the range is used up, or the claims folder is unusable."""


# ---- what this machine allows -------------------------------------------------------------

def _bwrap() -> tuple[str, dict[str, str]] | None:
    """The bubblewrap command (and the environment it needs), or None.

    SCANLAB_BWRAP names a binary (for example one unpacked from Debian's .deb on
    a machine where it is not installed; SCANLAB_BWRAP_LIBS then names the folder
    holding the libcap it needs), or is "none" to run without it. Otherwise
    `bwrap` on PATH.
    """
    if os.environ.get("SCANLAB_BWRAP") == "none":  # tests of the fallback
        return None
    named = os.environ.get("SCANLAB_BWRAP")
    path = named if named and os.access(named, os.X_OK) else shutil.which("bwrap")
    if not path:
        return None
    extra = {}
    libs = os.environ.get("SCANLAB_BWRAP_LIBS")
    if libs:
        extra["LD_LIBRARY_PATH"] = libs
    return path, extra


_PROBED: dict[bool, tuple[str, str]] = {}


def isolation(gpu: bool = False) -> tuple[str, str]:
    """(level, one line saying what sandboxed runs get here). level: "full", "partial" or "none"."""
    if gpu not in _PROBED:
        _PROBED[gpu] = _probe(gpu)
    return _PROBED[gpu]


def _probe(gpu: bool) -> tuple[str, str]:
    root = os.geteuid() == 0
    bw = _bwrap()
    if bw is not None:
        # Ask bubblewrap for a real run, as the graders will use it.
        with tempfile.TemporaryDirectory(prefix="scanlab-probe-") as tmp:
            uid = None
            try:
                uid = _free_uid() if root else os.geteuid()
                if root:
                    os.chown(tmp, uid, uid)
                program = seccomp_program(gpu)
                fds = [_memfd("scanlab-seccomp", program)] if program else []
                argv = _bwrap_argv(bw[0], Path(tmp), uid, gpu, ["/usr/bin/true"], root,
                                   seccomp_fd=fds[0] if fds else None)
                argv, more = _bwrap_exec(argv)
                fds += more
                try:
                    proc = subprocess.run(["bwrap", *argv[1:]], executable=argv[0], capture_output=True,
                                          timeout=30, env={**_host_env_for_bwrap(), **bw[1]}, pass_fds=fds)
                finally:
                    for fd in fds:
                        os.close(fd)
                if proc.returncode == 0:
                    who = "a uid of its own" if root else "the grader's uid in a user namespace"
                    return "full", (f"bubblewrap ({bw[0]}): private mount, PID, IPC, UTS and network namespaces, "
                                    f"{who}, read-only /usr, the repository not visible, no keyrings, limits on "
                                    "time, memory, disk, files, processes and output")
                why = proc.stderr.decode(errors="replace").strip().splitlines()
                reason = why[-1] if why else f"exit status {proc.returncode}"
            except (OSError, subprocess.TimeoutExpired) as exc:
                reason = str(exc)
            finally:
                if root and uid is not None:
                    _release_uid(uid)  # /usr/bin/true leaves nothing behind
        fallback = f"bubblewrap could not start a sandbox here ({reason})"
    else:
        fallback = "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    if root:
        return "partial", (f"{fallback}: runs get a uid of their own, limits, no keyrings, sockets or System V "
                           "IPC, and clean-up, but can READ the machine's files, the repository included")
    return "none", (f"{fallback}, and the grader is not root: runs share the grader's uid and can read "
                    "and write what it can; only limits and process-group clean-up apply")


def _host_env_for_bwrap() -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin"}


# ---- a seccomp filter: what a run may not ask the kernel for -------------------------------
#
# Kernel keyrings belong to a uid, not to a process: keys a run added would outlive it, and a later
# run given the same uid could read them. Sockets and System V IPC are how two runs could meet when
# bubblewrap is missing (no network or IPC namespace). So every run is refused the keyring calls,
# and a run that is not a GPU run (the CUDA driver's own needs are not ours to guess) is refused
# socket() and the System V and POSIX message-queue and shared-memory "get" calls, with EPERM.
# bubblewrap loads the filter itself (--seccomp); without it, the child installs it before exec.

_SYSCALLS = {  # name -> number, for the two architectures the harness runs on
    "x86_64": {"add_key": 248, "request_key": 249, "keyctl": 250, "socket": 41, "shmget": 29, "semget": 64,
               "msgget": 68, "mq_open": 240},
    "aarch64": {"add_key": 217, "request_key": 218, "keyctl": 219, "socket": 198, "shmget": 194, "semget": 190,
                "msgget": 186, "mq_open": 180},
}
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
KEYRING_CALLS = ("add_key", "request_key", "keyctl")
MEETING_CALLS = ("socket", "shmget", "semget", "msgget", "mq_open")


def seccomp_program(gpu: bool) -> bytes | None:
    """The classic-BPF filter as bytes (struct sock_filter[]), or None on an architecture it does not know."""
    machine = platform.machine()
    if machine not in _SYSCALLS:
        return None
    numbers = _SYSCALLS[machine]
    refused = [numbers[name] for name in KEYRING_CALLS + (() if gpu else MEETING_CALLS)]
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    allow, deny = 0x7FFF0000, 0x00050000 | errno.EPERM
    foreign = 0x00050000 | errno.ENOSYS
    # 0: arch; 1: not ours -> ENOSYS (an i386 or x32 system call would dodge the numbers below);
    # 2: nr; 3: x32's numbers (bit 30) -> ENOSYS; then one test per refused call; allow; deny.
    body = [(jeq, len(refused) - i, 0, nr) for i, nr in enumerate(refused)]  # match -> deny
    program = [(ld, 0, 0, 4), (jeq, 1, 0, _AUDIT_ARCH[machine]), (ret, 0, 0, foreign), (ld, 0, 0, 0)]
    if machine == "x86_64":
        program += [(jge, 0, 1, 0x40000000), (ret, 0, 0, foreign)]
    program += body + [(ret, 0, 0, allow), (ret, 0, 0, deny)]
    import struct

    return b"".join(struct.pack("<HBBI", *insn) for insn in program)


def _install_seccomp(program: bytes) -> None:
    """In the child, before exec (no bubblewrap): no new privileges, then the filter."""
    libc = ctypes.CDLL(None, use_errno=True)

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

    buffer = ctypes.create_string_buffer(program, len(program))
    prog = Prog(len(program) // 8, ctypes.cast(buffer, ctypes.c_char_p))
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0 or \
            libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(prog), 0, 0) != 0:
        os._exit(126)  # no run without its filter


def _memfd(name: str, data: bytes) -> int:
    """A file descriptor holding `data`, read from its start (how bubblewrap takes --args and --seccomp)."""
    fd = os.memfd_create(name, 0)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


# ---- building the bubblewrap command line ------------------------------------------------

def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    # bubblewrap makes missing parents 0700; /etc must be searchable by the run's uid.
    args += ["--perms", "0755", "--dir", "/etc"]
    for name in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives"):
        if os.path.exists(name):
            args += ["--ro-bind", name, name]
    return args


def toolchain_dirs() -> list[str]:
    """Toolchain folders outside /usr (a CUDA under /opt, a g++ in /opt/gcc), read-only.

    Both the folder the tool is found in and the one its links lead to: the
    sandbox must see the path the grader passes as well as the real files."""
    dirs = set()
    cxx = (os.environ.get("CXX") or "g++").split()[0]
    for tool in ("nvcc", cxx, "gcc", "nm", "objcopy"):
        found = shutil.which(tool) or ("/usr/local/cuda/bin/nvcc" if tool == "nvcc" else None)
        if not found or not os.path.exists(found):
            continue
        for path in (Path(found).absolute(), Path(found).resolve()):
            root = path.parent.parent  # .../bin/tool -> the toolchain's root
            if root != Path("/") and root != Path("/usr") and Path("/usr") not in root.parents:
                dirs.add(str(root))
    return sorted(dirs)


def _hidden_under_binds() -> list[str]:
    """The repository, if it happens to live under a folder the sandbox binds: cover it."""
    covered = []
    repo = str(REPO.resolve())
    for bound in ["/usr", *toolchain_dirs()]:
        if repo == bound or repo.startswith(bound.rstrip("/") + "/"):
            covered += ["--tmpfs", repo]
    return covered


def _gpu_binds() -> list[str]:
    args = []
    for dev in sorted(Path("/dev").glob("nvidia*")):
        args += ["--dev-bind", str(dev), str(dev)]
    if os.path.isdir("/sys"):
        args += ["--ro-bind", "/sys", "/sys"]
    args += ["--perms", "1777", "--tmpfs", "/dev/shm"]
    return args


def _inside_env(gpu: bool) -> dict[str, str]:
    path = "/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin"
    for extra in toolchain_dirs():
        path = f"{extra}/bin:{path}"
    env = {"PATH": path, "HOME": INSIDE, "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
    if gpu:
        keep = [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":")
                if p and os.path.isdir(p) and not p.startswith(str(REPO))]
        if keep:
            env["LD_LIBRARY_PATH"] = ":".join(keep)
        for name in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"):
            if name in os.environ:
                env[name] = os.environ[name]
    return env


def _limit_prefix(limits: Limits, cgroup: bool) -> list[str]:
    prlimit = "/usr/bin/prlimit"
    cpu = max(1, int(round(limits.cpu_s)))
    # With a pids cgroup, the cgroup holds the limit (and says when it was hit); the
    # rlimit stays as a backstop just above it.
    nproc = limits.processes + 8 if cgroup else limits.processes
    args = [prlimit, f"--cpu={cpu}:{cpu + 1}", f"--fsize={limits.file_bytes}", "--core=0",
            f"--nproc={nproc}", "--nofile=256"]
    if limits.memory_bytes is not None:
        args.append(f"--as={limits.memory_bytes}")
    return [*args, "--"]


def _dev_binds(compiler: bool) -> list[str]:
    """A /dev of the few nodes a run needs: /dev/null for a compile; /dev/zero and /dev/urandom too for a
    program. No terminal, no pty, no /dev/full: an #include of one must fail, not block."""
    args = ["--perms", "0755", "--dir", "/dev"]
    for name in ("null",) if compiler else ("null", "zero", "urandom"):
        args += ["--dev-bind", f"/dev/{name}", f"/dev/{name}"]
    for fd, name in enumerate(("stdin", "stdout", "stderr")):
        args += ["--symlink", f"/proc/self/fd/{fd}", f"/dev/{name}"]
    return args + ["--symlink", "/proc/self/fd", "/dev/fd"]


def _bwrap_argv(bwrap: str, scratch: Path, uid: int, gpu: bool, command: list[str], root: bool,
                compiler: bool = False, seccomp_fd: int | None = None) -> list[str]:
    argv = [bwrap, *_system_binds()]
    for extra in toolchain_dirs():
        # Parents first, searchable: bubblewrap would make them 0700, closed to the run's uid.
        for parent in reversed(Path(extra).parents[:-1]):
            argv += ["--perms", "0755", "--dir", str(parent)]
        argv += ["--ro-bind", extra, extra]
    argv += _hidden_under_binds()
    argv += ["--proc", "/proc", *_dev_binds(compiler)]
    if gpu:
        argv += _gpu_binds()
    argv += ["--perms", "1777", "--size", str(1 << 30), "--tmpfs", "/tmp",
             "--bind", str(scratch), INSIDE, "--chdir", INSIDE,
             "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
             "--hostname", HOSTNAME, "--die-with-parent", "--new-session", "--clearenv"]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    for key, value in _inside_env(gpu).items():
        argv += ["--setenv", key, value]
    if root:
        # Real root outside, no user namespace: bubblewrap keeps only the two capabilities
        # setpriv needs to become the run's own uid, and setpriv drops everything else.
        argv += ["--cap-add", "CAP_SETUID,CAP_SETGID", "--", "/usr/bin/setpriv", f"--reuid={uid}",
                 f"--regid={uid}", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all",
                 "--no-new-privs", "--"]
    else:
        argv += ["--unshare-user", "--"]
    return argv + command


def _bwrap_exec(argv: list[str]) -> tuple[list[str], list[int]]:
    """The command line that starts `argv`: bubblewrap's options go through a file descriptor
    (--args), so the sandbox's PID 1, whose command line every run can read, shows none of the
    grader's paths; only the command itself stays on it. Returns (argv, descriptors to pass)."""
    split = argv.index("--")
    options = b"".join(a.encode() + b"\0" for a in argv[1:split])
    fd = _memfd("scanlab-bwrap-args", options)
    return [argv[0], "--args", str(fd), *argv[split:]], [fd]


# ---- processes of a uid ------------------------------------------------------------------------

def process_tree(root: int) -> list[int]:
    """`root` and every process below it (the kernel's /proc/PID/task/TID/children lists)."""
    tree, todo = [], [root]
    while todo and len(tree) < 4096:
        pid = todo.pop()
        tree.append(pid)
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    todo += [int(child) for child in f.read().split()]
            except (OSError, ValueError):
                pass
    return tree


def queued_s(pids: list[int]) -> float:
    """The longest time one of `pids` has spent runnable but waiting for a CPU (run_delay in
    /proc/PID/schedstat), in seconds; 0 where the kernel keeps no such count."""
    most = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/schedstat") as f:
                most = max(most, int(f.read().split()[1]))
        except (OSError, ValueError, IndexError):
            pass
    return most / 1e9


def processes_of(uid: int) -> list[int]:
    pids = []
    try:
        entries = os.scandir("/proc")
    except OSError:
        return pids
    with entries:
        for entry in entries:
            if entry.name.isdigit():
                try:
                    if entry.stat().st_uid == uid:
                        pids.append(int(entry.name))
                except OSError:
                    pass
    return pids


def _kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:  # gone already
            pass


def kill_uid(uid: int, rounds: int = 50) -> None:
    """SIGKILL every process of `uid` until none is left (new ones may appear while forking)."""
    for _ in range(rounds):
        pids = processes_of(uid)
        if not pids:
            return
        _kill_all(pids)
        time.sleep(0.02)


_UIDS_GIVEN: set[int] = set()  # every uid this process has handed out: none is given twice
_UIDS_LOCK = threading.Lock()
_UID_CLAIMS: dict[int, int] = {}  # uid -> the descriptor of its claim, held while its sandbox is open
# The machine's claims on uids: a uid in use by any grader on this machine (another grade.py, a shard
# of the same class, a test process) is skipped by every other, whatever range each draws from. Two
# graders that drew one uid would share its scratch folders and kill each other's runs when a
# sandbox sweeps its uid's processes. One file a uid, locked (flock) by the process using it, so a
# claim of a process that died goes with it.
UID_CLAIMS_DIR = Path("/run" if os.path.isdir("/run") else tempfile.gettempdir()) / "scanlab-uids"


def _claim(uid: int) -> int | None:
    """The descriptor of this process's claim on `uid`, or None when another process holds it."""
    try:
        UID_CLAIMS_DIR.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(UID_CLAIMS_DIR)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
            raise OSError(f"{UID_CLAIMS_DIR} is not a folder that only root can write")
        fd = os.open(UID_CLAIMS_DIR / str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise UidsUnavailable(f"cannot claim sandbox uids in {UID_CLAIMS_DIR}: {exc}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


class UidClaims:
    """Claims taken for a clean-up that sweeps a range of uids (class grading between students):
    free(uid) is True when no open sandbox of any grader on this machine holds `uid`, and it is then
    held here until close(), so nothing claims it while its leftovers go; a uid some grader holds is
    left alone (its processes and files are that grader's)."""

    def __init__(self):
        self._fds: dict[int, int] = {}
        self._elsewhere: set[int] = set()

    def free(self, uid: int) -> bool:
        if uid in self._fds:
            return True
        if uid in self._elsewhere:
            return False
        fd = _claim(uid)
        if fd is None:
            self._elsewhere.add(uid)
            return False
        self._fds[uid] = fd
        return True

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def __enter__(self) -> "UidClaims":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _free_uid() -> int:
    """A uid no process has, no other grader on this machine holds (a claim, _claim), and this grader
    has never handed out before. Never twice: whatever a run's uid may still own after it (a file in a
    shared folder, a kernel object) cannot reach a later run. Class grading gives each worker process
    a slice of its own (SCANLAB_UID_RANGE)."""
    rng = random.SystemRandom()
    with _UIDS_LOCK:
        drawn = (rng.choice(UID_RANGE) for _ in range(200))
        for uid in itertools.chain(drawn, (u for u in UID_RANGE if u not in _UIDS_GIVEN)):  # lazily: the rest in order
            if uid in _UIDS_GIVEN or processes_of(uid):
                continue
            fd = _claim(uid)
            if fd is None:
                continue
            _UIDS_GIVEN.add(uid)
            _UID_CLAIMS[uid] = fd
            return uid
    raise UidsUnavailable(f"no sandbox uid left in {UID_RANGE.start}-{UID_RANGE.stop - 1} (each is used once a "
                       "process; widen SCANLAB_UID_RANGE)")


def _release_uid(uid: int) -> None:
    """The claim on `uid` given back, once nothing of its sandbox is left (this process never hands
    it out again; another grader may)."""
    with _UIDS_LOCK:
        fd = _UID_CLAIMS.pop(uid, None)
    if fd is not None:
        os.close(fd)


# ---- a pids cgroup per run, where the machine has one -------------------------------------

_CGROUP_BASE: list = []


def _pids_cgroup_base() -> Path | None:
    """Where runs get a pids cgroup of their own (cgroup v1 or v2), or None.

    With one, the process limit is the cgroup's pids.max and a run that hit it is
    known exactly (pids.events); without one, RLIMIT_NPROC still holds the limit
    and the grader can only notice a hit by counting the run's processes.
    """
    if _CGROUP_BASE:
        return _CGROUP_BASE[0]
    found = None
    if os.geteuid() == 0 and os.environ.get("SCANLAB_NO_CGROUP") is None:
        for base in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")):
            try:
                if base == Path("/sys/fs/cgroup"):
                    if "pids" not in (base / "cgroup.controllers").read_text().split():
                        continue
                    control = base / "cgroup.subtree_control"
                    if "pids" not in control.read_text().split():
                        control.write_text("+pids")
                elif not (base / "cgroup.procs").exists():
                    continue
                probe = base / f"scanlab-probe-{os.getpid()}"
                probe.mkdir()
                ok = (probe / "pids.max").exists() and (probe / "pids.events").exists()
                probe.rmdir()
                if ok:
                    found = base
                    break
            except OSError:
                continue
    _CGROUP_BASE.append(found)
    return found


def _cgroup_hits(group: Path) -> int:
    try:
        for line in (group / "pids.events").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "max":
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _cgroup_remove(group: Path) -> None:
    for _ in range(50):
        try:
            pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
        except OSError:
            return
        _kill_all(pids)
        try:
            group.rmdir()
            return
        except OSError:
            time.sleep(0.02)


# ---- the scratch folder's disk --------------------------------------------------------------

_MOUNT_WORKS: list[bool] = []


def _mount_tmpfs(folder: Path, size: int, uid: int) -> bool:
    """Mount a tmpfs of `size` bytes on `folder` (root only); False where this machine refuses (a
    container without CAP_SYS_ADMIN), which is then remembered and never tried again."""
    if _MOUNT_WORKS and not _MOUNT_WORKS[0] or os.environ.get("SCANLAB_NO_TMPFS") is not None:
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    options = f"size={size},nr_inodes={DISK_INODES},mode=0700,uid={uid},gid={uid}".encode()
    flags = 0x2 | 0x4  # MS_NOSUID | MS_NODEV
    ok = libc.mount(b"scanlab-scratch", os.fsencode(folder), b"tmpfs", flags, options) == 0
    if not _MOUNT_WORKS:
        _MOUNT_WORKS.append(ok)
    return ok


def _unmount(folder: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.umount2(os.fsencode(folder), 2)  # MNT_DETACH: gone from the tree now, freed once unused


def _fs_used(folder: Path) -> int:
    """Bytes in use on the file system holding `folder` (the watch where no tmpfs could be mounted)."""
    try:
        st = os.statvfs(folder)
    except OSError:
        return 0
    return (st.f_blocks - st.f_bfree) * st.f_frsize


SHARED_PLACES = ("/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue")  # what runs share without namespaces
_IPC = (("shm", "shmid"), ("sem", "semid"), ("msg", "msqid"))


def ipc_objects() -> list[tuple[str, int, int, int]]:
    """(kind, id, owner uid, creator uid) of every System V IPC object."""
    found = []
    for kind, key in _IPC:
        try:
            lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
        except OSError:
            continue
        if not lines:
            continue
        header = lines[0].split()
        for line in lines[1:]:
            fields = dict(zip(header, line.split()))
            try:
                found.append((kind, int(fields[key]), int(fields["uid"]), int(fields["cuid"])))
            except (KeyError, ValueError):
                continue
    return found


def remove_ipc(kind: str, ident: int) -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    if kind == "shm":
        return libc.shmctl(ident, 0, None) == 0  # IPC_RMID is 0
    if kind == "sem":
        return libc.semctl(ident, 0, 0) == 0
    return libc.msgctl(ident, 0, None) == 0


def _leftovers_of(uid: int) -> None:
    """Without namespaces, what a run's uid made in the machine's shared places: removed (files and
    folders it owns at the top of SHARED_PLACES; its System V IPC objects). Class grading goes further
    between students (classroom.remove_leftovers)."""
    for place in SHARED_PLACES:
        try:
            entries = list(os.scandir(place))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
                if info.st_uid != uid:
                    continue
                if stat.S_ISDIR(info.st_mode):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
            except OSError:
                pass
    for kind, ident, owner, creator in ipc_objects():
        if uid in (owner, creator):
            remove_ipc(kind, ident)


@contextlib.contextmanager
def gpu_turn():
    """One GPU run at a time on this machine, whichever grader (or test process) asks: a GPU shared
    by time slices would stretch one run's launches past their per-launch limit and call a right
    kernel hung (and a profiler's replayed launch failed beside others). A lock file in the
    temporary folder, never followed if it is a link."""
    path = os.path.join(tempfile.gettempdir(), "scanlab-gpu.lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


# ---- the sandbox -----------------------------------------------------------------------------

class Sandbox:
    """A scratch folder and the runs made in it; `with Sandbox() as box:` cleans up on exit."""

    def __init__(self, gpu: bool = False, require: bool = False, disk_bytes: int = DISK_BYTES):
        self.gpu = gpu
        self.level, self.isolation = isolation(gpu)
        if require and self.level != "full":
            raise SandboxUnavailable(self.isolation)
        self.root = os.geteuid() == 0
        self.uid = _free_uid() if self.root else os.geteuid()
        self.disk_bytes = disk_bytes
        base = os.environ.get("SCANLAB_SCRATCH") or None
        self.scratch = Path(tempfile.mkdtemp(prefix="scanlab-box-", dir=base))
        self.mounted = self.root and _mount_tmpfs(self.scratch, disk_bytes, self.uid)
        if self.root:
            os.chown(self.scratch, self.uid, self.uid)
        os.chmod(self.scratch, 0o700)
        self._dir_fd = os.open(self.scratch, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        self.runs: list[Outcome] = []
        self._disk_start = 0  # without a tmpfs of its own: bytes in use on the scratch's file system at a run's start

    # -- files in and out
    def put(self, name: str, data: bytes | Path, executable: bool | None = None) -> str:
        """Write a file into the scratch folder (a plain name; never follows a link there)."""
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"not a plain file name: {name!r}")
        if isinstance(data, Path):
            if executable is None:
                executable = os.access(data, os.X_OK)
            data = data.read_bytes()
        try:
            os.unlink(name, dir_fd=self._dir_fd)
        except FileNotFoundError:
            pass
        except IsADirectoryError:
            shutil.rmtree(self.scratch / name)
        mode = 0o755 if executable else 0o644
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=self._dir_fd)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(name, mode, dir_fd=self._dir_fd)
        return name

    def get(self, name: str, limit: int = MAX_GET_BYTES) -> bytes | None:
        """A regular file's bytes from the scratch folder; None if missing, a link, a FIFO... or too big."""
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=self._dir_fd)
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
                return None
            chunks, total = [], 0
            while True:  # the first read asks for the whole file and one byte more: one copy, no join
                chunk = os.read(fd, max(1 << 20, min(info.st_size, limit) + 1 - total))
                if not chunk:
                    break
                total += len(chunk)
                if total > limit:
                    return None
                chunks.append(chunk)
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)
        finally:
            os.close(fd)

    # -- running
    def run(self, command: list[str], limits: Limits = Limits(), stdin: bytes | None = None) -> Outcome:
        if self.gpu and not limits.compiler:
            with gpu_turn():
                return self._run(command, limits, stdin)
        return self._run(command, limits, stdin)

    def _run(self, command: list[str], limits: Limits, stdin: bytes | None) -> Outcome:
        command = [str(c) for c in command]
        bw = _bwrap() if self.level == "full" else None
        program = seccomp_program(self.gpu and not limits.compiler)
        fds: list[int] = []
        inner = _limit_prefix(limits, _pids_cgroup_base() is not None) + command
        start = time.monotonic()
        popen_kwargs: dict = dict(stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                                  close_fds=True)
        group = None
        base = _pids_cgroup_base()
        if base is not None:
            group = base / f"scanlab-{self.uid}-{len(self.runs)}-{os.getpid()}"
            try:
                group.mkdir()
                # + 2: bubblewrap's own two processes (its monitor and PID 1 of the namespace).
                (group / "pids.max").write_text(str(limits.processes + 2))
            except OSError:
                group = None
        if bw is not None:
            if program:
                fds.append(_memfd("scanlab-seccomp", program))
            argv = _bwrap_argv(bw[0], self.scratch, self.uid, self.gpu and not limits.compiler, inner, self.root,
                               compiler=limits.compiler, seccomp_fd=fds[0] if fds else None)
            argv, more = _bwrap_exec(argv)
            fds += more
            env = {**_host_env_for_bwrap(), **bw[1]}
            signal_offset = True
        else:
            argv = inner
            env = _inside_env(self.gpu)
            env["HOME"] = env["TMPDIR"] = str(self.scratch)  # the machine's /tmp is shared: keep temporaries here
            if program:
                popen_kwargs["preexec_fn"] = lambda: _install_seccomp(program)
            if self.root:
                # Become the run's uid, then exec: setpriv does it without a Python preexec_fn.
                argv = ["/usr/bin/setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups",
                        "--no-new-privs", "--", *argv]
            signal_offset = False
        if group is not None:
            # The shell joins the cgroup, then becomes the command: nothing forks before it is in.
            argv = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(group / "cgroup.procs"), *argv]
        self._disk_start = 0 if self.mounted else _fs_used(self.scratch)
        try:
            try:
                proc = _popen(argv, cwd=str(self.scratch), env=env, pass_fds=fds, **popen_kwargs)
            finally:
                for fd in fds:
                    os.close(fd)
            outcome = self._supervise(proc, command, limits, stdin, start)
        finally:
            hits = _cgroup_hits(group) if group is not None else 0
            if group is not None:
                _cgroup_remove(group)
        if hits and outcome.limit is None:
            outcome.limit = f"process limit {limits.processes} reached"
        if outcome.limit is None and self._disk_full():
            outcome.limit = f"disk limit {_size(self.disk_bytes)} exceeded (the scratch folder is full)"
        return self._interpret(outcome, limits, signal_offset)

    def _supervise(self, proc: subprocess.Popen, command: list[str], limits: Limits, stdin: bytes | None,
                   start: float) -> Outcome:
        if stdin is not None:
            try:
                proc.stdin.write(stdin)
            except OSError:
                pass
            proc.stdin.close()
        sel = selectors.DefaultSelector()
        buffers = {proc.stdout: bytearray(), proc.stderr: bytearray()}
        for stream in buffers:
            os.set_blocking(stream.fileno(), False)
            try:  # a wide pipe: a run that prints in bursts (a GPU's printf buffer, flushed at a sync) seldom waits on us
                fcntl.fcntl(stream.fileno(), F_SETPIPE_SZ, PIPE_BYTES)
            except OSError:
                pass
            sel.register(stream, selectors.EVENT_READ)
        dropped = 0
        limit = None
        most_processes = 0
        status = None
        cpu_used = 0.0
        queued = 0.0  # the longest any of the run's processes has waited for a CPU (WALL_CAP)
        ended_at = None

        tail = bytearray()

        def take(stream, chunk: bytes) -> None:
            nonlocal dropped, tail
            if stream is proc.stderr:
                tail = (tail + chunk)[-TAIL_BYTES:]
            buf = buffers[stream]
            room = max(0, limits.output_bytes - len(buf))
            buf += chunk[:room]
            dropped += len(chunk) - min(room, len(chunk))

        counted_at = 0.0
        while True:
            for key, _ in sel.select(timeout=POLL_S):
                # What there is, in large reads (at most 16 MiB, then the limits are checked again): on a loaded
                # machine one small read a wake-up let a run that printed megabytes wait on its full pipe past a
                # GPU launch's time limit.
                for _ in range(16):
                    try:
                        chunk = os.read(key.fileobj.fileno(), PIPE_BYTES)
                    except BlockingIOError:
                        break
                    if not chunk:
                        sel.unregister(key.fileobj)
                        break
                    take(key.fileobj, chunk)
            now = time.monotonic()
            if status is None:
                pid, status_word, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    status, ended_at = status_word, now
                    cpu_used = usage.ru_utime + usage.ru_stime
            if self.root and now - counted_at >= POLL_S:  # a scan of /proc: once a poll interval at most
                most_processes = max(most_processes, len(processes_of(self.uid)))
                counted_at = now
            if status is None:
                if not self.mounted and _fs_used(self.scratch) - self._disk_start > self.disk_bytes:
                    limit = f"disk limit {_size(self.disk_bytes)} exceeded (the scratch folder is full)"
                    self._kill(proc)
                    _, status, usage = os.wait4(proc.pid, 0)
                    cpu_used = usage.ru_utime + usage.ru_stime
                    break
                if now - start > limits.wall_s:  # past the limit: how long did the run wait for a CPU?
                    queued = max(queued, queued_s(process_tree(proc.pid)))
                if now - start - queued > limits.wall_s or now - start > WALL_CAP * limits.wall_s:
                    limit = f"{'compile ' if limits.compiler else ''}time limit {_seconds(limits.wall_s)} exceeded"
                    self._kill(proc)
                    _, status, usage = os.wait4(proc.pid, 0)
                    cpu_used = usage.ru_utime + usage.ru_stime
                    break
                continue
            if not sel.get_map():
                break
            # The first process has ended but something still holds its pipes: a leftover
            # (without a PID namespace). Kill it and stop listening soon after.
            self._sweep()
            if now - ended_at > 1.0:
                break
        self._sweep()
        for stream in buffers:
            if stream in sel.get_map():
                try:
                    while chunk := os.read(stream.fileno(), 1 << 16):
                        take(stream, chunk)
                except OSError:
                    pass
            stream.close()
        sel.close()
        proc.returncode = os.waitstatus_to_exitcode(status)
        outcome = Outcome(command, proc.returncode, buffers[proc.stdout].decode("utf-8", "replace"),
                          buffers[proc.stderr].decode("utf-8", "replace"), dropped, limit,
                          wall_s=time.monotonic() - start)
        outcome.cpu_s = cpu_used
        outcome.stderr_tail = tail.decode("utf-8", "replace")
        if self.root and not limit and most_processes >= limits.processes:
            outcome.limit = f"process limit {limits.processes} reached"
        return outcome

    def _interpret(self, outcome: Outcome, limits: Limits, signal_offset: bool) -> Outcome:
        rc = outcome.returncode
        signum = None
        if rc < 0:
            signum = -rc
        elif signal_offset and rc > 128:
            try:
                signal.Signals(rc - 128)
                signum = rc - 128
            except ValueError:
                signum = None
        if signum is not None:
            name = signal.Signals(signum).name if signum in signal.Signals._value2member_map_ else f"signal {signum}"
            outcome.returncode = -signum
            if outcome.limit is None:
                if signum == signal.SIGXCPU or (signum == signal.SIGKILL and max(outcome.cpu_s, outcome.wall_s)
                                                >= limits.cpu_s - 0.05):
                    outcome.limit = _limit_text("cpu", limits)
                elif signum == signal.SIGXFSZ:
                    outcome.limit = _limit_text("file", limits)
                elif limits.memory_bytes is not None and "std::bad_alloc" in outcome.stderr:
                    outcome.limit = _limit_text("memory", limits)
                else:
                    outcome.signal = name
        elif (rc == OOM_EXIT and OOM_MARKER in outcome.stderr and limits.memory_bytes is not None
              and outcome.limit is None):
            outcome.limit = _limit_text("memory", limits)
        if limits.compiler and outcome.limit is None and outcome.returncode != 0:
            outcome.limit = compiler_limit(outcome.stdout + outcome.stderr_tail, limits)
        self.runs.append(outcome)
        return outcome

    def _kill(self, proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self._sweep()

    def _sweep(self) -> None:
        if self.root:
            kill_uid(self.uid)

    def _disk_full(self) -> bool:
        """The tmpfs scratch has (almost) no room left: a write failed for want of space."""
        if not self.mounted:
            return False  # the watch in _supervise names the limit itself
        try:
            st = os.statvfs(self.scratch)
        except OSError:
            return False
        return st.f_bavail * st.f_frsize < (1 << 20) or st.f_favail == 0

    def close(self) -> None:
        self._sweep()
        if self.root and self.level != "full":
            _leftovers_of(self.uid)
        try:
            os.close(self._dir_fd)
        except OSError:
            pass
        if self.mounted:
            _unmount(self.scratch)
        shutil.rmtree(self.scratch, ignore_errors=True)
        if self.root:
            _release_uid(self.uid)  # last: nothing of this sandbox is left for the next holder of the uid

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _popen(argv: list[str], **kwargs) -> subprocess.Popen:
    """Popen, retrying an exec that failed for a transient reason (see run.run_process)."""
    from .run import TRANSIENT_EXEC_ERRORS

    for attempt in range(3):
        try:
            return subprocess.Popen(argv, **kwargs)
        except OSError as exc:
            if exc.errno not in TRANSIENT_EXEC_ERRORS or attempt == 2:
                raise
            time.sleep(0.2 * (attempt + 1))
    raise AssertionError("unreachable")


__all__ = ["Sandbox", "Limits", "Outcome", "UidClaims", "UidsUnavailable", "COMPILE_LIMITS", "NVCC_COMPILE_LIMITS", "GPU_LIMITS", "UID_RANGE", "isolation",
           "SandboxUnavailable", "processes_of", "kill_uid"]
