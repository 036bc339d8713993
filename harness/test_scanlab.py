"""The harness's own plumbing: process starts, table parsing, the strict switch."""

from __future__ import annotations

import errno
import re
from pathlib import Path
import subprocess

import pytest

from scanlab import env, registry
from scanlab.run import parse_table, run_on_gpu, run_process


def flaky_run(failures: list[int]):
    """A stand-in for subprocess.run that fails with the given errnos first."""
    calls = []

    def fake(command, **kwargs):
        calls.append(command)
        if failures:
            raise OSError(failures.pop(0), "injected")
        return subprocess.CompletedProcess(command, 0, "ok", "")
    return fake, calls


def test_run_process_retries_a_transient_exec_failure(monkeypatch):
    fake, calls = flaky_run([errno.EFAULT, errno.ETXTBSY])
    monkeypatch.setattr(subprocess, "run", fake)
    assert run_process(["prog"]).stdout == "ok"
    assert len(calls) == 3


def test_run_process_gives_up_after_its_attempts(monkeypatch):
    fake, calls = flaky_run([errno.EFAULT] * 5)
    monkeypatch.setattr(subprocess, "run", fake)
    with pytest.raises(OSError):
        run_process(["prog"], attempts=3)
    assert len(calls) == 3


def test_run_process_does_not_retry_a_missing_program(monkeypatch):
    fake, calls = flaky_run([errno.ENOENT])
    monkeypatch.setattr(subprocess, "run", fake)
    with pytest.raises(OSError):
        run_process(["no-such-program"])
    assert len(calls) == 1


TABLE = """header line
threads  kernel                       mismatches   first bad  gated
-------  ---------------------------  ----------   ---------  -----
     32  inclusive, in place                   0           -     no
    256  exclusive, double buffered           12          40    yes

last line
"""


def test_a_run_alone_on_the_gpu_waits_for_the_graders_turn():
    """run_on_gpu(alone=True) (the profiler's) takes the machine's GPU turn that every grader's GPU run holds."""
    import threading
    import time

    from scanlab.sandbox import gpu_turn

    held, release = threading.Event(), threading.Event()

    def holder():
        with gpu_turn():
            held.set()
            release.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait(10)
    threading.Timer(0.5, release.set).start()
    start = time.monotonic()
    result = run_on_gpu(["true"], timeout=30, alone=True)
    waited = time.monotonic() - start
    thread.join()
    assert result.returncode == 0 and waited >= 0.4, f"ran after {waited:.2f} s while the turn was held for 0.5 s"


def test_parse_table_reads_rows_by_header():
    rows = parse_table(TABLE, ["threads", "kernel", "mismatches", "first bad", "gated"])
    assert rows == [
        {"threads": "32", "kernel": "inclusive, in place", "mismatches": "0", "first bad": "-", "gated": "no"},
        {"threads": "256", "kernel": "exclusive, double buffered", "mismatches": "12", "first bad": "40",
         "gated": "yes"},
    ]


def test_parse_table_fails_on_a_missing_table_or_a_ragged_row():
    with pytest.raises(AssertionError):
        parse_table(TABLE, ["threads", "time"])
    with pytest.raises(AssertionError):
        parse_table(TABLE.replace("          40    yes", "          40"), ["threads", "kernel", "mismatches",
                                                                            "first bad", "gated"])


def test_strict_switch_turns_a_skip_into_a_failure(monkeypatch):
    monkeypatch.setenv("SCANLAB_REQUIRE", "")
    with pytest.raises(pytest.skip.Exception):
        env.unavailable("gpu", "no GPU here")
    monkeypatch.setenv("SCANLAB_REQUIRE", "nvcc,gpu")
    with pytest.raises(pytest.fail.Exception):
        env.unavailable("gpu", "no GPU here")
    monkeypatch.setenv("SCANLAB_REQUIRE", "gpu,bogus")
    with pytest.raises(pytest.UsageError):
        env.required()


def test_test_modules_import_no_other_test_module_and_no_private_pytest_api():
    """Shared test helpers live in scanlab/ (build.py's lesson programs, day31_fakes.py), so a test
    module can be read, run and released on its own."""
    import ast

    here = Path(__file__).resolve().parent
    problems = []
    for module in sorted(here.glob("test_*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                if name.startswith(("test_", "_pytest")) or name == "conftest":
                    problems.append(f"{module.name}:{node.lineno} imports {name}")
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    node.value.id == "pytest" and node.attr.startswith("_"):
                problems.append(f"{module.name}:{node.lineno} uses pytest.{node.attr}, a private API")
    assert not problems, problems


def test_one_warning_finder_reads_gcc_nvcc_and_the_nvcc_driver():
    from scanlab.build import compiler_warnings

    output = "\n".join([
        "sub.cpp:21:49: warning: unused parameter 'in' [-Wunused-parameter]",
        "sub.cu(12): warning #177-D: variable \"x\" was declared but never referenced",
        "nvcc warning : The 'compute_75' architecture is deprecated",
        "sub.cpp:3:1: error: expected ';'",
        "   12 |     int warningless = 0;",
        "other.cu(4): warning #550-D: set but never used",
    ])
    assert len(compiler_warnings(output)) == 4
    assert compiler_warnings(output, about="sub.cu") == [output.splitlines()[1]]
    assert compiler_warnings(output, about="sub.cpp") == [output.splitlines()[0]]


# The host plumbing block at the end of every lesson file, of every traced twin, of every
# stretch drill's bench program (exercises/bench/) and of the pipelined scan's two experiments
# (solutions/experiments/): one text per language.
STRETCH_BENCHES = [Path(e.file).stem for e in registry.EXERCISES.values() if e.stretch]  # exercises.toml
FENCED = {"CUDA": ["day31-scan/scan.cu", "a05-scan/cuda/scan.cu", "a05-scan/cuda/compaction.cu",
                   "day31-scan/trace.cu", "a05-scan/cuda/trace.cu",
                   *(f"exercises/bench/{name}_bench.cu" for name in STRETCH_BENCHES),
                   "solutions/experiments/ceiling.cu", "solutions/experiments/pipelined_bench.cu"],
          "HIP": ["a05-scan/hip/scan.cpp", "a05-scan/hip/compaction.cpp", "a05-scan/hip/trace.cpp",
                  *(f"exercises/bench/{name}_bench_hip.cpp" for name in STRETCH_BENCHES)]}


def fenced_files(kind: str) -> list[str]:
    """FENCED[kind] as this tree holds it: the student release (RELEASE.txt at its top) has no
    solutions/, so its copies of this module check the other files; the repository checks all."""
    repo = Path(__file__).resolve().parent.parent
    in_release = (repo / "RELEASE.txt").is_file()
    return [name for name in FENCED[kind] if not (in_release and name.startswith("solutions/"))]


def fenced_block(path: Path) -> str:
    text = path.read_text()
    begin = text.index("// ==== plumbing, identical in every")
    end = text.index("// ==== end of plumbing")
    assert text.count("// ==== plumbing, identical in every") == 1 and text.count("// ==== end of plumbing") == 1
    assert not text[end:].split("\n", 1)[1].strip(), f"{path}: something follows the plumbing block"
    return text[begin:end]


@pytest.mark.parametrize("kind", sorted(FENCED))
def test_the_plumbing_blocks_are_identical_in_every_lesson_file(kind):
    """A change to one copy of the fenced helpers must go into all of them."""
    repo = Path(__file__).resolve().parent.parent
    blocks = {name: fenced_block(repo / name) for name in fenced_files(kind)}
    first = FENCED[kind][0]
    for name, block in blocks.items():
        assert block == blocks[first], f"{name}'s plumbing block differs from {first}'s: edit every copy together"
        # nothing fenced is defined a second time above the fence
        above = (repo / name).read_text().split("// ==== plumbing, identical in every")[0]
        for helper in ("splitmix64", "parseUnsigned", "usageError", "noGpu", "printTable", "median",
                       "compareExact", "medianMs"):
            assert f" {helper}(" in block and not re.search(rf"^[A-Za-z\[][^;\n]*\b{helper}\([^;]*\{{\s*$", above, re.M), \
                (name, helper)


@pytest.mark.parametrize("kind", sorted(FENCED))
def test_the_error_check_macro_is_the_same_text_in_every_lesson_file(kind):
    """Macros cannot wait for the block at the end; the one every runtime call goes through is
    held to one text here instead (kProgram names the program in its line)."""
    repo = Path(__file__).resolve().parent.parent
    name = "CUDA_CHECK" if kind == "CUDA" else "HIP_CHECK"
    texts = {}
    for path in fenced_files(kind):
        found = re.search(rf"#define {name}\(call\).*?while \(0\)", (repo / path).read_text(), re.S)
        assert found, (path, name)
        texts[path] = found.group(0)
    assert len(set(texts.values())) == 1, f"{name} differs between {sorted(texts)}"
    assert "kProgram" in next(iter(texts.values()))

