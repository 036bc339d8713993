"""Split the test modules into N shards of about equal running time (`SCANLAB_SHARDS`).

`harness/run-tests.sh` runs one pytest process per shard, side by side, when
SCANLAB_SHARDS is above 1: a GPU runner with many cores finishes the strict suite
in a fraction of the time one process takes, because most of that time is
compilers and compute-sanitizer on the CPU. Each shard is a whole number of
modules (a module's session-scoped builds stay in one process), but the corpus,
whose entries share nothing, goes to several, one exercise's entries of one kind each.
The weights are rough seconds per module on this kind of machine (the H200 machine, or
a 2-core one without a GPU); a module not listed counts as `DEFAULT`. Only the
balance depends on them, never what runs.

    python3 harness/scanlab/shards.py N [MODULE ...]   # one line of modules (or node ids) a shard
    python3 harness/scanlab/shards.py --merge OUT.xml IN.xml ...   # one JUnit file
"""

from __future__ import annotations

import re
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

HARNESS = Path(__file__).resolve().parent.parent
DEFAULT = 10
# Seconds per module in the strict suite, per kind of machine (a module not listed counts as
# DEFAULT). "gpu": the H100/H200 machine (16 cores): each test's setup and call times in a twelve-shard
# .ci/gpu run on the H100, 2026-12-05 (test_stretch_programs: racecheck at --quick sizes since, about
# 110 s less: estimated). "cpu": a 2-core machine without a GPU (four-shard CI=true .ci/run,
# 2026-12-06), where the GPU tests skip.
WEIGHTS = {
    "gpu": {
        "test_class.py": 260, "test_gradescope.py": 255, "test_colab.py": 240, "test_stretch_programs.py": 230,
        "test_release.py": 190, "test_stretch.py": 170, "test_day31_exercise.py": 150, "test_a05_cuda.py": 100,
        "test_pipelined.py": 80, "test_day31.py": 64, "test_a05_hip.py": 53, "test_drills.py": 53,
        "test_speed.py": 52, "test_sandbox.py": 49, "test_triton.py": 36, "test_tools.py": 21,
        "test_course_mode.py": 20, "test_trace.py": 16, "test_gpu_plan.py": 13, "test_grade_cli.py": 11,
        "test_docs.py": 6, "test_ci.py": 2, "test_scanlab.py": 2, "test_registry.py": 1,
    },
    "cpu": {
        "test_gradescope.py": 188, "test_class.py": 173, "test_stretch_programs.py": 164, "test_release.py": 98,
        "test_drills.py": 75, "test_pipelined.py": 47, "test_stretch.py": 40, "test_a05_hip.py": 35,
        "test_grade_cli.py": 33, "test_tools.py": 32, "test_a05_cuda.py": 31, "test_course_mode.py": 29,
        "test_sandbox.py": 27, "test_speed.py": 22, "test_day31_exercise.py": 18, "test_gpu_plan.py": 10,
        "test_docs.py": 7, "test_ci.py": 6, "test_scanlab.py": 3, "test_trace.py": 2, "test_registry.py": 1,
        "test_day31.py": 1, "test_triton.py": 1, "test_colab.py": 1,
    },
}
# test_corpus.py (about 360 s on a 2-core machine) is one test path but several shards' work: each
# exercise's entries of each kind are parts of their own (lists of node ids, at most PART_S of weight
# each), weighed by what an entry costs. On the H100 machine (twelve shards, 2026-12-05) a GPU
# exercise's plain entry about 15 s (Day 31 13 s, drill 05 16 s), a CPU one's about 2 s. On a 2-core
# machine (four-shard CI=true .ci/run, 2026-12-06) a CPU exercise's plain entry 0.5-3.6 s (drill 03,
# drill 01; 2.5 balanced the shards best), and a GPU exercise's entries skip. A hostile entry costs about
# 3 times a plain one (2.5 on 2 cores, 3.3 on the H100 machine: it meets limits, and the untouched
# starter is graded after it).
CORPUS_ENTRY_S = {"gpu": {True: 15, False: 2}, "cpu": {True: 0.1, False: 2.5}}
HOSTILE_TIMES = 3  # a hostile entry against a plain one, on either machine
PART_S = 60
# Modules whose BUILDS share a program go to one shard: the session's builder compiles a program
# once a process (A05's CUDA scan and compaction, which test_a05_hip compares its ports with, cost
# about 40 s of CPU a second time in another shard). test_ci holds this list to the modules' BUILDS.
TOGETHER = [("test_a05_cuda.py", "test_a05_hip.py")]


def machine() -> str:
    """ "gpu" where an NVIDIA driver is installed, else "cpu": which weights balance the shards."""
    return "gpu" if shutil.which("nvidia-smi") else "cpu"


def corpus_parts(module: str, kind: str) -> list[tuple[float, list[str]]]:
    """test_corpus.py as (weight, node ids) parts: an exercise's entries of one kind, PART_S of weight at
    most a part, and the module's other test functions with the lightest."""
    try:
        import tomllib
    except ImportError:  # Python 3.9 and 3.10
        import tomli as tomllib
    sys.path.insert(0, str(HARNESS))
    from scanlab import registry

    with open(HARNESS / "corpus" / "manifest.toml", "rb") as f:
        entries = tomllib.load(f)["submission"]
    parts: dict[tuple[str, str], list] = {}
    for entry in entries:
        cost = CORPUS_ENTRY_S[kind][entry["exercise"] in registry.NEEDS_GPU]
        cost *= HOSTILE_TIMES if entry["kind"] == "hostile" else 1
        group = parts.setdefault((entry["exercise"], entry["kind"]), [[0, []]])
        if group[-1][1] and group[-1][0] + cost > PART_S:
            group.append([0, []])
        group[-1][0] += cost
        group[-1][1].append(f"{module}::test_corpus_entry[{entry['exercise']}-{Path(entry['file']).stem}]")
    pieces = [part for group in parts.values() for part in group]
    functions = re.findall(r"^def (test_\w+)\(", (HARNESS.parent / module).read_text(), re.M)
    lightest = min(pieces, key=lambda part: part[0])
    lightest[1] += [f"{module}::{name}" for name in functions if name != "test_corpus_entry"]
    return [(weight, ids) for weight, ids in pieces]


def plan(shards: int, modules: list[str], kind: str | None = None) -> list[list[str]]:
    """Longest first, each to the lightest shard; empty shards are dropped. A module is one
    piece (a TOGETHER group one between them), but test_corpus.py, which is one an exercise and
    kind of entry (corpus_parts). `kind`:
    the machine's weights ("gpu" or "cpu"; by default this machine's)."""
    kind = kind or machine()
    pieces, joined = [], {}
    for module in modules:
        name = Path(module).name
        if name == "test_corpus.py" and shards > 1:
            pieces += corpus_parts(module, kind)
            continue
        piece = [WEIGHTS[kind].get(name, DEFAULT), [module]]
        group = next((g for g in TOGETHER if name in g), None)
        if group in joined:  # one piece for the group: its first module's, grown
            joined[group][0] += piece[0]
            joined[group][1] += piece[1]
            continue
        if group is not None:
            joined[group] = piece
        pieces.append(piece)
    loads = [[0, []] for _ in range(max(1, shards))]
    for weight, names in sorted(pieces, key=lambda piece: (-piece[0], piece[1])):
        lightest = min(loads, key=lambda load: load[0])
        lightest[0] += weight
        lightest[1] += names
    return [sorted(names) for _, names in loads if names]


def merge(out: Path, inputs: list[Path]) -> tuple[int, int, int, int]:
    """One <testsuites> file from the shards' files; returns (tests, failures, errors, skipped)."""
    root = ET.Element("testsuites")
    totals = [0, 0, 0, 0]
    for path in inputs:
        try:
            tree = ET.parse(path)
        except (OSError, ET.ParseError):
            continue  # a shard that died before writing: its log says why, its status fails the run
        suites = [tree.getroot()] if tree.getroot().tag == "testsuite" else list(tree.getroot())
        for suite in suites:
            for i, key in enumerate(("tests", "failures", "errors", "skipped")):
                totals[i] += int(suite.get(key, 0))
            root.append(suite)
    ET.ElementTree(root).write(out, encoding="utf-8", xml_declaration=True)
    return tuple(totals)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--merge"] and len(argv) >= 2:
        tests, failures, errors, skipped = merge(Path(argv[1]), [Path(p) for p in argv[2:]])
        print(f"{tests} tests, {failures} failed, {errors} errors, {skipped} skipped")
        return 0
    if not argv or not argv[0].isdigit() or int(argv[0]) < 1:
        print("usage: shards.py N [MODULE ...] | --merge OUT.xml IN.xml ...", file=sys.stderr)
        return 2
    modules = argv[1:] or sorted(str(p.relative_to(HARNESS.parent)) for p in HARNESS.glob("test_*.py"))
    for names in plan(int(argv[0]), modules):
        print(" ".join(names))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
