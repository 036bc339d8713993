"""Graders of the A05 stretch drills that run on the GPU, through the trusted plan runner.

Drills 04 and 05 (the warp-shuffle block scan, the decoupled look-back scan): the
submission's device code is compiled with a wrapper that instantiates its scan
kernel for every variant graded (lane-group width, inclusive or exclusive, float32
or int32), and the runner launches those kernels on the grader's inputs; Python
compares every output word with its own reference scan (per tile for 04, over the
whole array for 05), and checks the input and the guard words. Drill 05 also reads
the PTX of the same code (scanlab/ptx.py): a plain load of a descriptor is a race
that a run catches only sometimes, so the grader looks for it in the compiled code.

Drill 06 (exercises/06_copy_if_partition.cu): the student writes partition's
scatter. The grader compiles the submission's DEVICE code only (nvcc -fatbin, in
the sandbox), with a harness wrapper that instantiates `partition_scatter` for the
element types it tests, and runs that kernel through scanlab/gpu_plan.py on inputs
it made itself: the values, a hidden predicate's 0/1 flags and their exclusive scan
(the offsets), all computed here. No host code of the submission runs, and nothing
the submission could read holds an expected output. Python then judges every word
the runner copied back: the kept elements at the front in input order, the
rejected ones at the back in reversed input order (the drill's documented order),
the input untouched, and no word written outside out[0, n).

    grade(exercise, submission, workdir, seed, mode, gpu_lock=None) -> Report
"""

from __future__ import annotations

import os
import random
import struct
from array import array
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from . import env, ptx
from .build import cuda_gencode
from .gpu_plan import TIMING
from .grading import MODES, TOO_LARGE, Report, hidden_note, read_submission, require_points, reproduce_line
from .sandbox import NVCC_COMPILE_LIMITS, Sandbox

WRAPPER = "scanlab_stretch_wrapper.cu"
MODULE = "module.fatbin"
PTX = "module.ptx"
PTX_LIMIT_BYTES = 64 << 20  # the drill 05 solution's PTX is under 1 MiB
DEPENDENCIES = "deps.d"
DEVICE_FLAGS = ("-std=c++17", "-O3", "-fatbin")
GUARD = 256  # poisoned words either side of every buffer
THREADS = 256  # the block size the grader launches the scatter with
POISON32 = b"\xff" * 4

# ---- drill 06 -----------------------------------------------------------------------

SCATTER = "partition_scatter"
# The element types graded, the C++ spelling, the runner's buffer type and the mangled kernel name
# (Itanium ABI, as nvcc names device functions; harness/test_stretch.py checks them in a real fatbin).
TYPES06 = {
    "int32": ("int", "i32", "_Z17partition_scatterIiEvPKT_PKjS4_PS0_m", "i"),
    "int64": ("long long", "i64", "_Z17partition_scatterIxEvPKT_PKjS4_PS0_m", "q"),
}
CHECK_FRONT = "partition: the kept elements at the front, in input order"
CHECK_BACK = "partition: the rejected elements at the back, in reversed input order"
CHECK_CLEAN = "partition: the input untouched and nothing written outside out[0, n)"
CHECKS06 = ["builds", CHECK_FRONT, CHECK_BACK, CHECK_CLEAN]


def wrapper06(name: str) -> str:
    lines = ["// The drill 06 grader's wrapper: the submission, then the scatter instantiated for the",
             "// grader's element types (device code only: nothing here runs on the host).",
             "#define SCANLAB_GRADER 1", f'#include "{name}"', '#line 1 "scanlab_stretch_wrapper.cu"']
    for spelled, _, _, _ in TYPES06.values():
        lines.append(f"template __global__ void {SCATTER}<{spelled}>(const {spelled}*, const unsigned int*, "
                     f"const unsigned int*, {spelled}*, size_t);")
    return "\n".join(lines) + "\n"


@dataclass(eq=False)
class Case06:
    label: str
    type: str  # a key of TYPES06
    values: list[int]
    flags: list[int]
    student_label: str = ""  # course mode: a size drawn from the seed, named without it ("" = label)
    offsets: list[int] = field(init=False)

    def __post_init__(self):
        running, self.offsets = 0, []
        for f in self.flags:
            self.offsets.append(running)
            running += f

    @property
    def kept(self) -> list[int]:
        return [v for v, f in zip(self.values, self.flags) if f]

    @property
    def rejected(self) -> list[int]:
        return [v for v, f in zip(self.values, self.flags) if not f]

    def expected(self) -> list[int]:
        return self.kept + self.rejected[::-1]


PREDICATES = {  # hidden from the student: the scatter must work for any flags
    "x > 0": lambda x: x > 0,
    "x is even": lambda x: x % 2 == 0,
    "x % 7 == 3": lambda x: x % 7 == 3,
    "keep everything": lambda x: True,
    "keep nothing": lambda x: False,
}


@lru_cache(maxsize=4)
def cases06(seed: int) -> list[Case06]:
    rng = random.Random(f"{seed}/drill06")
    found = []
    sizes = [(0, "empty"), (1, "one element"), (THREADS - 1, "a block minus one"), (THREADS, "one full block"),
             (THREADS + 1, "a block plus one"), ((1 << 20) + 3, "2^20 + 3: many blocks, a partial last one"),
             (rng.randrange(1000, 100_000), "a size drawn from the seed")]
    for type_name in TYPES06:
        for n, why in sizes:
            for pred_name, pred in PREDICATES.items():
                big = {"int32": ("x > 0", "keep everything"), "int64": ("x % 7 == 3",)}[type_name]
                if n > 100_000 and pred_name not in big:
                    continue  # a million elements three times is enough
                # Never -1: all ones bits are the runner's poison, the mark of a slot never written.
                small = [v if v != -1 else -51 for v in (rng.randint(-50, 50) for _ in range(n))]
                flags = [1 if pred(v) else 0 for v in small]
                # int64 values carry their index above bit 32 (the predicate reads the low part), so an
                # element out of place never looks right, and a 32-bit copy of one loses it.
                values = [(i << 32) + v for i, v in enumerate(small)] if type_name == "int64" else small
                label = f"{type_name}, n={n} ({why}), predicate {pred_name}"
                found.append(Case06(label, type_name, values, flags,
                                    student_label=label.replace(f"n={n} ", "") if "drawn" in why else ""))
    return found


def course_text(text: str, cases) -> str:
    """`text` as a course-mode student sees it: a size drawn from the seed is not named (the seed and
    the size stay in the instructor's detail), so no file can be fitted to the inputs that grade it."""
    for case in sorted(cases, key=lambda c: -len(c.label)):
        if case.student_label and case.label in text:
            text = text.replace(case.label, case.student_label)
    return text


def _pack(values: list[int], code: str) -> bytes:
    return array(code, values).tobytes()


def plan06(cases: list[Case06]):
    from .gpu_plan import Plan

    plan = Plan()
    for case in cases:
        spelled, kind, mangled, code = TYPES06[case.type]
        n = len(case.values)
        task = plan.task(case.label)
        task.buffer("in", kind, n, GUARD, data=_pack(case.values, code))
        task.buffer("flags", "u32", n, 0, data=_pack(case.flags, "I"))
        task.buffer("offsets", "u32", n, 0, data=_pack(case.offsets, "I"))
        task.buffer("out", kind, n, GUARD)
        task.launch(mangled, max(1, -(-n // THREADS)), THREADS, ["@in", "@flags", "@offsets", "@out", f"u64:{n}"])
        task.dump("in", "out")
    return plan


def _unpack(data: bytes, code: str) -> list[int]:
    values = array(code)
    values.frombytes(data)
    return values.tolist()


def judge06(case: Case06, dumps: dict[str, bytes]) -> tuple[str, str, str]:
    """(front problem, back problem, side-effect problem), each "" when right; student-safe text."""
    _, _, _, code = TYPES06[case.type]
    width = array(code).itemsize
    n, kept = len(case.values), sum(case.flags)
    out_all, in_all = _unpack(dumps["out"], code), _unpack(dumps["in"], code)
    poison = _unpack(b"\xff" * width, code)[0]
    out = out_all[GUARD:GUARD + n]
    expected = case.expected()

    def first_wrong(lo: int, hi: int) -> str:
        bad = [i for i in range(lo, hi) if out[i] != expected[i]]
        if not bad:
            return ""
        i = bad[0]
        got = "was never written" if out[i] == poison else f"holds {out[i]}"
        where = ("the front, out[0, kept)" if i < kept else "the back, out[kept, n)")
        return (f"{case.label}: {len(bad)} wrong slot(s) in {where} (kept = {kept}); first out[{i}], which "
                f"{got}")

    front = first_wrong(0, kept)
    back = first_wrong(kept, n)
    side = []
    if in_all[GUARD:GUARD + n] != case.values or any(v != poison for v in in_all[:GUARD] + in_all[GUARD + n:]):
        side.append(f"{case.label}: the input changed (in is read-only)")
    stray = [k for k in (*range(GUARD), *range(GUARD + n, n + 2 * GUARD)) if out_all[k] != poison]
    if stray:
        side.append(f"{case.label}: wrote out[{stray[0] - GUARD}], outside out[0, n)")
    return front, back, "; ".join(side)


def diagnose06(case: Case06, dumps: dict[str, bytes]) -> str:
    """The classic slips, recognised from the whole output."""
    _, _, _, code = TYPES06[case.type]
    out = _unpack(dumps["out"], code)[GUARD:GUARD + len(case.values)]
    kept = sum(case.flags)
    if out[kept:] == case.rejected and case.rejected != case.rejected[::-1]:
        return ("the back holds the rejected elements in FORWARD order; the documented order is reversed: the "
                "first rejected element goes to out[n - 1]. Of the i elements before in[i], offsets[i] were kept.")
    if out[:kept] == case.kept and sorted(out[kept:]) == sorted(case.rejected):
        return "every rejected element is in the back part, but not in the documented (reversed) order."
    return ""


def grade06(submission: Path, workdir: Path, seed: int, mode: str, gpu_lock=None) -> Report:
    from .gpu_plan import run_plan

    report = Report("drill06", submission.name, mode=mode)
    hidden_note(report, seed, reproduce_line("drill06", submission, seed))
    fatbin, why = compile_device(submission, wrapper06)
    if fatbin is None:
        report.add("builds", False, f"your file's device code did not compile:\n{why}")
        for name in CHECKS06[1:]:
            report.add(name, False, "not run: the submission did not build (see 'builds')")
        return report
    report.add("builds", True)
    cases = cases06(seed)
    results, module = run_plan(fatbin, plan06(cases), gpu_lock)
    fronts, backs, sides, errors, diagnosis = [], [], [], [], ""
    for case, result in zip(cases, results):
        if result.error:
            errors.append(f"{case.label}: {result.error}")
            continue
        front, back, side = judge06(case, result.dumps)
        fronts += [front] if front else []
        backs += [back] if back else []
        sides += [side] if side else []
        if (front or back) and not diagnosis:
            diagnosis = diagnose06(case, result.dumps)
    if module is not None and module.load_error:
        errors = [f"your module did not load: {module.load_error}"]
    shown = errors[:3] + ([f"... and {len(errors) - 3} more"] if len(errors) > 3 else [])
    for name, lines in ((CHECK_FRONT, fronts), (CHECK_BACK, backs)):
        text = "\n".join(shown + lines[:3] + ([f"... {len(lines)} failing cases in all"] if len(lines) > 3 else []))
        if lines and diagnosis:
            text += f"\n  likely cause: {diagnosis}"
        report.add(name, not errors and not lines, text, student=course_text(text, cases))
    right = report.check(CHECK_FRONT).passed or report.check(CHECK_BACK).passed
    if not right and not sides:  # a scatter that writes nothing has no stray write: not a point for free
        report.add(CHECK_CLEAN, False, "not counted yet: this check counts once a part of the output is right.")
    else:
        report.add(CHECK_CLEAN, not sides and not errors, "\n".join(shown + sides[:3]))
    return report


# ---- drills 04 and 05: scans judged word by word ------------------------------------------------

@dataclass(eq=False)
class ScanCase:
    check: str  # the check this case counts for
    label: str
    kernel: str  # mangled name
    type: str  # "f32" or "i32"
    inclusive: bool
    tile: int  # 0: one scan over the whole array (05); else each tile of this many elements alone (04)
    span: int  # elements a block handles (named in messages)
    block: int  # threads a block
    grid: int
    values: list[int]
    extra: list = field(default_factory=list)  # (name, type, count, init) buffers after in and out, for 05
    student_label: str = ""  # course mode: a size drawn from the seed, named without it ("" = label)
    args: list[str] = field(default_factory=list)  # launch arguments after @in @out u64:n

    def expected(self) -> list[int]:
        out, running = [], 0
        for i, v in enumerate(self.values):
            if self.tile and i % self.tile == 0:
                running = 0
            out.append(running + v if self.inclusive else running)
            running += v
        return out


def _code(kind: str) -> str:
    return {"f32": "f", "i32": "i"}[kind]


def scan_plan(cases: list[ScanCase]):
    from .gpu_plan import Plan

    plan = Plan()
    for case in cases:
        n = len(case.values)
        task = plan.task(case.label)
        task.buffer("in", case.type, n, GUARD, data=array(_code(case.type), case.values).tobytes())
        task.buffer("out", case.type, n, GUARD)
        for name, kind, count, init in case.extra:
            task.buffer(name, kind, count, 0, init=init)
        task.launch(case.kernel, case.grid, case.block, ["@in", "@out", f"u64:{n}", *case.args])
        task.dump("in", "out")
    return plan


def judge_scan(case: ScanCase, dumps: dict[str, bytes]) -> tuple[str, str]:
    """(output problem, side-effect problem), "" when right; what the submission did, never the answer."""
    code, n = _code(case.type), len(case.values)
    out_all, in_all = array(code, dumps["out"]), array(code, dumps["in"])
    poison = array(code, b"\xff" * 4)[0]
    same = (lambda a, b: a == b or (a != a and b != b)) if code == "f" else (lambda a, b: a == b)
    out = out_all[GUARD:GUARD + n].tolist()
    expected = case.expected()
    problem = ""
    bad = [i for i in range(n) if out[i] != expected[i]]
    if bad:
        i = bad[0]
        got = "was never written" if same(out[i], poison) else f"holds {out[i]:g}"
        where = f"element {i % case.span} of tile {i // case.span}"
        problem = f"{case.label}: {len(bad)} wrong element(s); first out[{i}] ({where}), which {got}"
        if not case.tile and i >= case.span and i % case.span == 0:
            problem += ("\n  likely cause: the first tile is right and the next one starts wrong: a tile does not "
                        "add what its predecessors hold (the look-back, and the prefix it publishes).")
    side = []
    if in_all[GUARD:GUARD + n].tolist() != case.values or any(
            not same(v, poison) for v in in_all[:GUARD].tolist() + in_all[GUARD + n:].tolist()):
        side.append(f"{case.label}: the input changed (in is read-only)")
    stray = [k for k in (*range(GUARD), *range(GUARD + n, n + 2 * GUARD)) if not same(out_all[k], poison)]
    if stray:
        side.append(f"{case.label}: wrote out[{stray[0] - GUARD}], outside out[0, n)")
    return problem, "; ".join(side)


def grade_scans(exercise: str, checks: list[str], clean: str, wrapper, cases: list[ScanCase],
                submission: Path, seed: int, mode: str, gpu_lock, code_check=None,
                kept: dict | None = None) -> Report:
    """code_check: None, or (check name, function of the compiled PTX returning "" or what is wrong),
    a check of the compiled code itself, added after the others. kept: a dict to receive the
    "fatbin" and the "module" (its `globals` as the plan's `kept["globals"]` named them), for a later run."""
    from .gpu_plan import run_plan

    report = Report(exercise, submission.name, mode=mode)
    hidden_note(report, seed, reproduce_line(exercise, submission, seed))
    fatbin, why, ptx = _compile_device(submission, wrapper, want_ptx=code_check is not None)
    if fatbin is None:
        report.add("builds", False, f"your file's device code did not compile:\n{why}")
        for name in [*checks, clean, *([code_check[0]] if code_check else [])]:
            report.add(name, False, "not run: the submission did not build (see 'builds')")
        return report
    report.add("builds", True)
    plan = scan_plan(cases)
    for name, size in (kept or {}).get("globals", {}).items():
        plan.read_global(name, size)
    results, module = run_plan(fatbin, plan, gpu_lock)
    if kept is not None:
        kept.update(fatbin=fatbin, module=module)
    lines: dict[str, list[str]] = {name: [] for name in checks}
    errors: dict[str, list[str]] = {name: [] for name in checks}
    sides: list[str] = []
    for case, result in zip(cases, results):
        if result.error:
            errors[case.check].append(f"{case.label}: {result.error}")
            continue
        problem, side = judge_scan(case, result.dumps)
        if problem:
            lines[case.check].append(problem)
        if side:
            sides.append(side)
    if module is not None and module.load_error:
        for name in checks:
            errors[name] = [f"your module did not load: {module.load_error}"]
    for name in checks:
        found = errors[name][:3] + lines[name][:3]
        more = len(errors[name]) + len(lines[name]) - len(found)
        text = "\n".join(found + ([f"... and {more} more failing case(s)"] if more > 0 else []))
        report.add(name, not found, text, student=course_text(text, cases))
    if not any(report.check(name).passed for name in checks) and not sides:
        report.add(clean, False, "not counted yet: this check counts once a part of the output is right.")
    else:
        report.add(clean, not sides, "\n".join(sides[:3]))
    if code_check is not None:  # what it finds is always said; like the clean run, it passes only once
        name, judge = code_check  # a part of the output is right
        problem = judge(ptx) if ptx is not None else f"your file's device code did not compile to PTX:\n{why}"
        if not problem and not any(report.check(check).passed for check in checks):
            problem = "not counted yet: this check counts once a part of the output is right."
        report.add(name, not problem, problem)
    return report


def _scan_values(n: int, seed: int, salt: str, high: int) -> list[int]:
    """Seeded integers 0..high (float sums stay exact below 2^24), never -1 (the poison's int32 bits)."""
    rng = random.Random(f"{seed}/{salt}")
    return [b % (high + 1) for b in rng.randbytes(n)]


# Drill 04: warp_scan_tile<width, inclusive, T>(in, out, n), one tile a block.
CHECK04_32 = "block scan on 32-lane groups: inclusive and exclusive, float and int32, 64, 256 and 1024 threads"
CHECK04_64 = "block scan on 64-lane groups: inclusive and exclusive, float and int32, 64, 256 and 1024 threads"
CHECK04_CLEAN = "block scan: the input untouched and nothing written outside out[0, n)"
CHECKS04 = ["builds", CHECK04_32, CHECK04_64, CHECK04_CLEAN]
SPELLED = {"f32": ("float", "f"), "i32": ("int", "i")}


def kernel04(width: int, inclusive: bool, kind: str) -> str:
    return f"_Z14warp_scan_tileILi{width}ELb{int(inclusive)}E{SPELLED[kind][1]}EvPKT1_PS0_m"


def wrapper04(name: str) -> str:
    lines = ["// The drill 04 grader's wrapper: the submission, then its tile kernel instantiated for every",
             "// variant graded (device code only).", "#define SCANLAB_GRADER 1", f'#include "{name}"',
             '#line 1 "scanlab_stretch_wrapper.cu"']
    for width in (32, 64):
        for inclusive in ("true", "false"):
            for spelled, _ in SPELLED.values():
                lines.append(f"template __global__ void warp_scan_tile<{width}, {inclusive}, {spelled}>("
                             f"const {spelled}*, {spelled}*, size_t);")
    return "\n".join(lines) + "\n"


@lru_cache(maxsize=4)
def cases04(seed: int) -> list[ScanCase]:
    found = []
    drawn = random.Random(f"{seed}/drill04-size").randrange(3000, 60_000)
    for width, check in ((32, CHECK04_32), (64, CHECK04_64)):
        for block in (64, 256, 1024):
            sizes = [(1, "one element"), (block - 1, "a tile minus one"), (block + 1, "a tile plus one"),
                     (drawn, "many tiles, a size drawn from the seed")]
            for kind in ("f32", "i32"):
                for inclusive in (True, False):
                    for n, why in sizes:
                        values = _scan_values(n, seed, f"drill04/{n}", 15)
                        label = (f"{width} lanes, {block} threads, {'inclusive' if inclusive else 'exclusive'} "
                                 f"{SPELLED[kind][0]}, n={n} ({why})")
                        found.append(ScanCase(check, label, kernel04(width, inclusive, kind), kind, inclusive,
                                              block, block, block, -(-n // block), values,
                                              student_label=label.replace(f"n={n} ", "") if n == drawn else ""))
    return found


HINTS04 = {
    CHECK04_32: "check warp_inclusive_scan first: log2(width) shuffle steps, and lanes below delta keep their value.",
    CHECK04_64: ("right at 32 lanes and wrong at 64: something assumes 32 lanes (a literal 32 or 5 steps, or a "
                 "mask); use L::width and the lane group's own calls."),
}


def grade04(submission: Path, workdir: Path, seed: int, mode: str, gpu_lock=None) -> Report:
    del workdir
    report = grade_scans("drill04", [CHECK04_32, CHECK04_64], CHECK04_CLEAN, wrapper04, cases04(seed), submission,
                         seed, mode, gpu_lock)
    if not report.check("builds").passed:
        return report
    w32, w64 = report.check(CHECK04_32), report.check(CHECK04_64)
    if not w32.passed:
        w32.feedback += f"\n  likely cause: {HINTS04[CHECK04_32]}"
    elif not w64.passed:  # right at 32 lanes, wrong at 64: the 64-lane hint
        w64.feedback += f"\n  likely cause: {HINTS04[CHECK04_64]}"
    return report


# Drill 05: lookback_scan<TileShape<threads, items>, T, inclusive>(in, out, n, descriptors, counter, epoch).
CHECK05_EXCL = "look-back scan, exclusive: float32 and int32, every size"
CHECK05_INCL = "look-back scan, inclusive: float32 and int32, every size"
CHECK05_MANY = "look-back scan with far more tiles than can be resident (forward progress)"
CHECK05_CLEAN = "look-back scan: the input untouched and nothing written outside out[0, n)"
CHECK05_STRONG = "look-back: every load of a descriptor is strong (read from your compiled code)"
# The timed check (scanlab/speed.py): exclusive int32 at TunedShape, sizes far past the L2 (an
# H200's is 50 MiB): 2^26 is 256 MiB each way, 2^28 a GiB. Values 0..3: sums stay below 2^31.
TIMED05 = [(1 << 26, "2^26"), (1 << 28, "2^28")]
TIMED05_HIGH = 3
CHECK05_SPEED = {n: f"speed at n={size}: exclusive int32 at TunedShape, timed against CUB in the same run"
                 for n, size in TIMED05}
CHECKS05 = ["builds", CHECK05_EXCL, CHECK05_INCL, CHECK05_MANY, CHECK05_CLEAN, CHECK05_STRONG,
            *CHECK05_SPEED.values()]
CORRECTNESS05 = CHECKS05[:6]
TUNED05 = "scanlab_tuned_shape"  # the wrapper's __device__ copy of TunedShape's kThreads and kItems
DESCRIPTORS05 = 3  # the kernel's parameter index of the descriptor array
SHAPES05 = {"tuned": (256, 16), "tiny": (32, 1)}  # the drill's TileShape<kThreads, kItems> pairs


def kernel05(shape, kind: str, inclusive: bool) -> str:
    """The mangled name of lookback_scan<TileShape<threads, items>, T, inclusive>; `shape` is a key
    of SHAPES05 or a (threads, items) pair (the submission's TunedShape)."""
    threads, items = SHAPES05[shape] if isinstance(shape, str) else shape
    return (f"_Z13lookback_scanI9TileShapeILi{threads}ELi{items}EE{SPELLED[kind][1]}Lb{int(inclusive)}EE"
            "vPKT0_PS2_mPyPjj")


def wrapper05(name: str) -> str:
    lines = ["// The drill 05 grader's wrapper: the submission, then its look-back kernel instantiated for",
             "// every variant graded (device code only).", "#define SCANLAB_GRADER 1", f'#include "{name}"',
             '#line 1 "scanlab_stretch_wrapper.cu"']
    for threads, items in SHAPES05.values():
        for spelled, _ in SPELLED.values():
            for inclusive in ("true", "false"):
                lines.append(f"template __global__ void lookback_scan<TileShape<{threads}, {items}>, {spelled}, "
                             f"{inclusive}>(const {spelled}*, {spelled}*, size_t, Descriptor*, unsigned int*, "
                             "unsigned int);")
    lines += ["// The timed kernel: the submission's own TunedShape, exclusive int32, instantiated by the host-side",
              "// reference below (never called), and the shape, for the grader to read back.",
              f'extern "C" __device__ unsigned int {TUNED05}[2] = {{TunedShape::kThreads, TunedShape::kItems}};',
              "static void* const scanlab_timed_kernel = reinterpret_cast<void*>(",
              "    &lookback_scan<TileShape<TunedShape::kThreads, TunedShape::kItems>, int, false>);"]
    return "\n".join(lines) + "\n"


def case05(check: str, label: str, shape: str, kind: str, inclusive: bool, values: list[int]) -> ScanCase:
    threads, items = SHAPES05[shape]
    tiles = max(1, -(-len(values) // (threads * items)))
    return ScanCase(check, label, kernel05(shape, kind, inclusive), kind, inclusive, 0, threads * items, threads,
                    tiles, values,
                    extra=[("descriptors", "u64", tiles, "zero"), ("counter", "u32", 1, "zero")],
                    args=["@descriptors", "@counter", "u32:1"])


@lru_cache(maxsize=4)
def cases05(seed: int) -> list[ScanCase]:
    tile = SHAPES05["tuned"][0] * SHAPES05["tuned"][1]
    drawn = random.Random(f"{seed}/drill05-size").randrange(tile * 3, tile * 40)
    sizes = [(1, "one element"), (3, "fewer than a 16-byte load"), (tile - 1, "a tile minus one"),
             (tile, "one tile"), (tile + 1, "a tile plus one"), ((1 << 20) + 3, "2^20 + 3, a scalar tail"),
             (drawn, "a size drawn from the seed")]
    found = []
    for inclusive, check in ((False, CHECK05_EXCL), (True, CHECK05_INCL)):
        for kind in ("f32", "i32"):
            for n, why in sizes:
                label = f"{'inclusive' if inclusive else 'exclusive'} {SPELLED[kind][0]}, n={n} ({why})"
                found.append(case05(check, label, "tuned", kind, inclusive, _scan_values(n, seed, f"drill05/{n}", 3)))
                if n == drawn:
                    found[-1].student_label = label.replace(f"n={n} ", "")
    n = (1 << 22) + 5  # 131,073 tiles of 32: hundreds of times what the GPU holds at once
    found.append(case05(CHECK05_MANY, f"exclusive int32, n={n} in 32-element tiles: {-(-n // 32)} tiles",
                        "tiny", "i32", False, _scan_values(n, seed, "drill05/many", 3)))
    return found


HINT05_HANG = ("a tile waited for ever on a predecessor. The look-back's loads of a descriptor must be strong "
               "(an atomic load at device scope, or volatile): a plain load may be hoisted out of the wait loop, or "
               "served from this SM's L1, which never sees another SM's store; and every needed predecessor must "
               "eventually be read as ready (look at the loop's exit conditions).")


def weak_descriptor_loads(ptx_text: str) -> str:
    """"" when every load of the descriptor array in every graded look-back kernel is strong; else why not.

    A plain load of a word other blocks are writing is a data race; on a GPU it sometimes hangs the
    launch and sometimes happens to scan right (both seen on an H200 with the same code), so the
    runs above can not be relied on to catch it. The compiled code shows it every time."""
    weak, missing = [], []
    for shape in SHAPES05:
        for kind in SPELLED:
            for inclusive in (False, True):
                kernel = kernel05(shape, kind, inclusive)
                loads = ptx.loads_through_parameter(ptx_text, kernel, DESCRIPTORS05)
                if loads is None:
                    missing.append(kernel)
                weak += [load.text for load in loads or [] if not load.strong]
    if missing:
        return f"the look-back kernel was not found in your compiled code ({missing[0]})"
    if not weak:
        return ""
    shown = sorted(set(weak))
    return (f"your look-back reads a descriptor with a plain load ({'; '.join(shown[:2])} in the PTX): "
            "a descriptor load must be strong, an atomic load at device scope (cuda::atomic_ref with "
            "thread_scope_device, relaxed or acquire) or a volatile load. A plain load, __ldg, or a block-scope "
            "atomic may be served from this SM's L1, which never sees another SM's store, or hoisted out of the "
            "wait: the launch may hang, or may happen to finish right on one run and hang on the next.")


def timed_plan05(shape: tuple[int, int], timed_seed: int):
    """Drill 05's timed tasks: the submission's TunedShape kernel, exclusive int32, at every TIMED05 size."""
    from . import speed
    from .gpu_plan import Plan

    threads, items = shape
    plan = Plan()
    for n, size in TIMED05:
        tiles = -(-n // (threads * items))
        task = plan.task(f"timed: exclusive int32, n={size}, TileShape<{threads}, {items}>")
        task.buffer("in", "i32", n, GUARD, init="zero")  # refilled every repetition
        task.buffer("out", "i32", n, GUARD)
        task.buffer("descriptors", "u64", tiles, 0, init="zero")
        task.buffer("counter", "u32", 1, 0, init="zero")
        task.launch(kernel05(shape, "i32", False), tiles, threads,
                    ["@in", "@out", f"u64:{n}", "@descriptors", "@counter", "u32:1"])
        task.time("in", "out", timed_seed, TIMED05_HIGH, False, speed.WARMUP, speed.LEAST, speed.MOST, speed.SPREAD)
    return plan


def timed_seed05(seed: int) -> int:
    """The timed inputs' seed: the grading seed's and fresh bytes, so no grading's timed inputs repeat and no
    student can know them (the outputs are checked against CUB in the same run, so none need reproducing)."""
    return random.Random(f"{seed}/drill05-timed/{os.urandom(16).hex()}").getrandbits(64)


def tuned_shape05(module) -> tuple[tuple[int, int] | None, str]:
    raw = module.globals.get(TUNED05) if module is not None else None
    if raw is None or len(raw) != 8:
        return None, "the grader could not read your TunedShape back from the compiled code"
    threads, items = struct.unpack("<II", raw)
    if threads == 0 or threads % 32 or threads > 1024 or items == 0:
        return None, f"TunedShape<{threads}, {items}> is not a shape the drill allows"
    return (threads, items), ""


def speed05(report: Report, kept: dict, seed: int, gpu_lock) -> None:
    """The timed checks: run only once every correctness check passed; points by scanlab/speed.py."""
    from . import speed
    from .gpu_plan import HARNESS_FAILED, run_plan
    from .grading import points_table

    names = list(CHECK05_SPEED.values())
    failing = [name for name in CORRECTNESS05 if not report.check(name).passed]
    if failing:
        for name in names:
            report.add(name, False, f"not timed: speed counts once every correctness check passes ({failing[0]!r} "
                       "did not)")
        return
    shape, why = tuned_shape05(kept.get("module"))
    if shape is None:
        for name in names:
            report.add(name, False, f"not timed: {why}")
        return
    results, _ = run_plan(kept["fatbin"], timed_plan05(shape, timed_seed05(seed)), gpu_lock)
    table = points_table()["drill05"]
    for (n, size), result in zip(TIMED05, results):
        name = CHECK05_SPEED[n]
        full = table[name].points
        if result.state == HARNESS_FAILED:
            raise RuntimeError(f"drill 05's timed run: {result.error}")
        if result.error:
            verdict = speed.Verdict(n, False, f"the timed run failed: {result.error}", full=full)
        else:
            verdict = speed.judge(speed.parse_timing(result.dumps[TIMING]), n, full)
        passed = verdict.valid and verdict.points > 0
        line = verdict.line(f"n={size}, TileShape<{shape[0]}, {shape[1]}>")
        if verdict.valid and not passed:
            line += f" (slower than {speed.ZERO_AT:g}x CUB's time scores 0)"
        report.add(name, passed, line, earned=verdict.points if passed else None)
        if verdict.valid:
            report.speed[size] = {"n": n, "ms": round(verdict.student_ms, 4), "gbps": round(verdict.student_gbps, 1),
                                  "cub_gbps": round(verdict.gbps(verdict.cub_ms), 1),
                                  "copy_gbps": round(verdict.gbps(verdict.copy_ms), 1),
                                  "against_cub": round(verdict.against_cub, 3), "of_copy": round(verdict.of_copy, 3)}
    largest = TIMED05[-1][1]
    if all(report.check(name).passed for name in CHECKS05) and largest in report.speed:
        top = report.speed[largest]
        report.leaderboard = [{"name": f"GB/s at n={largest}", "value": top["gbps"], "order": "desc"},
                              {"name": f"ms at n={largest}", "value": top["ms"], "order": "asc"},
                              {"name": f"x CUB at n={largest}", "value": top["against_cub"], "order": "desc"}]


def grade05(submission: Path, workdir: Path, seed: int, mode: str, gpu_lock=None) -> Report:
    del workdir
    kept: dict = {"globals": {TUNED05: 8}}
    report = grade_scans("drill05", [CHECK05_EXCL, CHECK05_INCL, CHECK05_MANY], CHECK05_CLEAN, wrapper05,
                         cases05(seed), submission, seed, mode, gpu_lock,
                         code_check=(CHECK05_STRONG, weak_descriptor_loads), kept=kept)
    for name in (CHECK05_EXCL, CHECK05_INCL, CHECK05_MANY):
        check = report.check(name)
        if not check.passed and "did not finish" in check.feedback:
            check.feedback += f"\n  likely cause: {HINT05_HANG}"
    if not report.check("builds").passed:
        for name in CHECK05_SPEED.values():
            report.add(name, False, "not timed: the submission did not build (see 'builds')")
        return report
    speed05(report, kept, seed, gpu_lock)
    return report


# ---- compiling device code (shared by the stretch drills) ---------------------------------------

def compile_device(submission: Path, wrapper) -> tuple[bytes | None, str]:
    """(the fatbin, "") or (None, why): the submission's device code with the grader's wrapper, in a sandbox."""
    fatbin, why, _ = _compile_device(submission, wrapper, want_ptx=False)
    return fatbin, why


def _compile_device(submission: Path, wrapper, want_ptx: bool,
                    ptx_only: bool = False) -> tuple[bytes | None, str, str | None]:
    """compile_device's (fatbin, why), and with want_ptx the PTX of the same code for the newest
    architecture the fatbin carries (None when that compile failed; why then says so). ptx_only:
    the PTX compile alone (no fatbin: None), for the tests of the rules that read the PTX."""
    from .grade_day31 import _compiler_messages, outside_includes, scratch_name
    from .gpu_plan import HarnessBuildError

    data = read_submission(submission)
    if data is None:
        return None, TOO_LARGE, None
    name = scratch_name(submission)
    if name in (WRAPPER, MODULE):
        name = "submission.cu"
    nvcc = env.nvcc()
    if nvcc is None:
        raise HarnessBuildError("nvcc not found on PATH or in /usr/local/cuda/bin")
    with Sandbox(gpu=False) as box:
        box.put(name, data)
        box.put(WRAPPER, wrapper(name).encode())
        fatbin = None
        if not ptx_only:
            outcome = box.run([nvcc, *DEVICE_FLAGS, *cuda_gencode(), "-MD", "-MF", DEPENDENCIES, "-o", MODULE,
                               WRAPPER], NVCC_COMPILE_LIMITS)
            fatbin = box.get(MODULE) if outcome.ok else None
            if not fatbin:
                return None, _compiler_messages(outcome), None
            deps = box.get(DEPENDENCIES)
            outside = outside_includes(deps.decode("utf-8", "replace"), box.scratch) if deps else ["(unknown)"]
            if outside:
                return None, (f"your file includes {outside[0]}: a submission is one file, and may include the "
                              "system's and CUDA's headers only."), None
            if not want_ptx:
                return fatbin, "", None
        newest = [flag for flag in cuda_gencode() if flag.startswith("arch=")][-1].split("code=")[-1]
        outcome = box.run([nvcc, *DEVICE_FLAGS[:-1], "-ptx", f"-arch={newest}", "-o", PTX, WRAPPER], NVCC_COMPILE_LIMITS)
        ptx = box.get(PTX, limit=PTX_LIMIT_BYTES) if outcome.ok else None
        if not ptx:
            return fatbin, (_compiler_messages(outcome) if not outcome.ok else
                            f"its PTX is missing or over {PTX_LIMIT_BYTES >> 20} MiB, more than the grader reads"), None
        return fatbin, "", ptx.decode("utf-8", "replace")


GRADERS = {"drill04": grade04, "drill05": grade05, "drill06": grade06}
require_points("drill04", CHECKS04)
require_points("drill05", CHECKS05)
require_points("drill06", CHECKS06)


def grade(exercise: str, submission: Path, workdir: Path, seed: int, mode: str = "self-study",
          gpu_lock=None) -> Report:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    return GRADERS[exercise](submission, workdir, seed, mode, gpu_lock)


__all__ = ["grade", "cases04", "cases05", "cases06", "scan_plan", "judge_scan", "plan06", "judge06", "diagnose06",
           "compile_device", "TYPES06"]
