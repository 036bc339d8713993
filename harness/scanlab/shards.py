"""Split the test modules into N shards of about equal running time (`SCANLAB_SHARDS`).

`harness/run-tests.sh` runs one pytest process per shard, side by side, when
SCANLAB_SHARDS is above 1: a GPU runner with many cores finishes the strict suite
in a fraction of the time one process takes, because most of that time is
compilers and compute-sanitizer on the CPU. Each shard is a whole number of
modules (a module's session-scoped builds stay in one process). The weights are
rough seconds per module on the H200 machine (16 cores); a module not listed
counts as `DEFAULT`. Only the balance depends on them, never what runs.

    python3 harness/scanlab/shards.py N [MODULE ...]   # one line of modules a shard
    python3 harness/scanlab/shards.py --merge OUT.xml IN.xml ...   # one JUnit file
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

HARNESS = Path(__file__).resolve().parent.parent
DEFAULT = 10
# Seconds per module in the strict suite on the H200 machine, 2026-12-01 (JUnit times of a
# four-shard .ci/gpu run, builds not counted). test_stretch.py and test_stretch_programs.py
# were one module then, which took about 580 s; the split between them is estimated.
WEIGHTS = {
    "test_stretch_programs.py": 330, "test_corpus.py": 320, "test_stretch.py": 250, "test_release.py": 135,
    "test_day31_exercise.py": 80, "test_a05_cuda.py": 80, "test_colab.py": 70, "test_class.py": 60,
    "test_day31.py": 50, "test_tools.py": 40, "test_drills.py": 40, "test_triton.py": 35, "test_a05_hip.py": 30,
    "test_trace.py": 20, "test_gradescope.py": 15, "test_sandbox.py": 15, "test_course_mode.py": 10,
}


def plan(shards: int, modules: list[str]) -> list[list[str]]:
    """Longest first, each to the lightest shard; empty shards are dropped."""
    loads = [[0, []] for _ in range(max(1, shards))]
    for module in sorted(modules, key=lambda m: (-WEIGHTS.get(Path(m).name, DEFAULT), m)):
        lightest = min(loads, key=lambda load: load[0])
        lightest[0] += WEIGHTS.get(Path(module).name, DEFAULT)
        lightest[1].append(module)
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
