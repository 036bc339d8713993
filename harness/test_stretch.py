"""The stretch drills' GPU graders (scanlab/grade_stretch.py): drills 04, 05 and 06.

CPU: each submission's device code compiles with the grader's wrapper, in the sandbox,
and the fatbin holds the kernels under the names the plan launches; drill 05's reading
of the PTX (which descriptor loads it accepts); the judging of made-up runner dumps
(right, the starter's forward-ordered back part, a tile scanned alone, a stray store, a
changed input). GPU: the solutions pass every check, the starters and the planted
mistakes fail with the diagnosis each deserves. The programs themselves:
test_stretch_programs.py.
"""

from __future__ import annotations

from array import array
from pathlib import Path

import pytest

from scanlab import grade_stretch as gs

REPO = Path(__file__).resolve().parent.parent
FILE06 = "06_copy_if_partition.cu"


@pytest.mark.cuda
@pytest.mark.parametrize("folder", ["solutions", "exercises"])
def test_drill06_device_code_compiles_with_the_kernels_the_plan_launches(folder, nvcc):
    fatbin, why = gs.compile_device(REPO / folder / FILE06, gs.wrapper06)
    assert fatbin is not None, why
    for _, _, mangled, _ in gs.TYPES06.values():
        assert mangled.encode() in fatbin, mangled


@pytest.mark.cuda
def test_drill06_a_compile_error_is_the_students_own(tmp_path, nvcc):
    broken = tmp_path / FILE06
    broken.write_text((REPO / "solutions" / FILE06).read_text().replace("__global__ void partition_scatter(",
                                                                      "__global__ void partition_scatter(int oops ", 1))
    fatbin, why = gs.compile_device(broken, gs.wrapper06)
    assert fatbin is None and FILE06 in why and "error" in why, why


def dumps_for(case: gs.Case06, out: list[int], inp: list[int] | None = None) -> dict[str, bytes]:
    code = gs.TYPES06[case.type][3]
    poison = array(code, b"\xff" * array(code).itemsize)[0]
    guard = [poison] * gs.GUARD
    return {"in": array(code, guard + (inp if inp is not None else case.values) + guard).tobytes(),
            "out": array(code, guard + out + guard).tobytes()}


CASE = gs.Case06("int32, n=8 (the drill's example), predicate x > 0", "int32", [3, -3, 4, -5, 9, -2, 6, -8],
                 [1, 0, 1, 0, 1, 0, 1, 0])


def test_drill06_judges_the_documented_order_exactly():
    assert CASE.offsets == [0, 1, 1, 2, 2, 3, 3, 4]
    assert CASE.expected() == [3, 4, 9, 6, -8, -2, -5, -3]
    assert gs.judge06(CASE, dumps_for(CASE, CASE.expected())) == ("", "", "")
    forward = [3, 4, 9, 6, -3, -5, -2, -8]  # the starter: the back part in input order
    front, back, side = gs.judge06(CASE, dumps_for(CASE, forward))
    assert front == "" and side == "" and "first out[4], which holds -3" in back, back
    assert "FORWARD order" in gs.diagnose06(CASE, dumps_for(CASE, forward))
    unwritten = CASE.expected()[:4] + [array("i", b"\xff" * 4)[0]] * 4
    assert "was never written" in gs.judge06(CASE, dumps_for(CASE, unwritten))[1]
    assert all(-1 not in c.values for c in gs.cases06(5))  # no input value looks like the poison


def test_drill06_side_effects_are_found():
    dumps = dumps_for(CASE, CASE.expected(), inp=[0] * 8)
    assert "the input changed" in gs.judge06(CASE, dumps)[2]
    dumps = dumps_for(CASE, CASE.expected())
    out = array("i", dumps["out"])
    out[gs.GUARD + 8] = 5  # one past the end
    dumps["out"] = out.tobytes()
    assert "wrote out[8], outside out[0, n)" in gs.judge06(CASE, dumps)[2]


def test_drill06_cases_cover_the_sizes_and_predicates_and_never_reach_the_student():
    cases = gs.cases06(5)
    sizes = {len(c.values) for c in cases}
    assert {0, 1, gs.THREADS - 1, gs.THREADS, gs.THREADS + 1, (1 << 20) + 3} <= sizes
    assert {c.type for c in cases} == set(gs.TYPES06)
    assert any(sum(c.flags) == 0 for c in cases if c.values) and any(all(c.flags) for c in cases if c.values)
    plan = gs.plan06(cases[:3])
    text, files = plan.text("module.fatbin")
    for case, k in zip(cases[:3], range(3)):  # the runner gets values, flags and offsets: never the answer
        assert set(f for f in files if f.startswith(f"in-{k}-")) == {f"in-{k}-in.bin", f"in-{k}-flags.bin",
                                                                     f"in-{k}-offsets.bin"}
        if len(case.values) > 2 and case.expected() != case.values:
            assert array("i", case.expected()).tobytes() not in files.values()


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.slow
def test_scan_drill_solutions_pass_and_starters_fail_with_their_diagnosis(tmp_path):
    report = gs.grade("drill04", REPO / "solutions" / "04_warp_scan.cu", tmp_path, seed=3)
    assert report.passed, report.text()
    starter = gs.grade("drill04", REPO / "exercises" / "04_warp_scan.cu", tmp_path, seed=3)
    assert not starter.check(gs.CHECK04_32).passed and "log2(width) shuffle steps" in starter.text()
    report = gs.grade("drill05", REPO / "solutions" / "05_lookback_scan.cu", tmp_path, seed=3)
    assert report.passed, report.text()
    starter = gs.grade("drill05", REPO / "exercises" / "05_lookback_scan.cu", tmp_path, seed=3)
    assert not starter.check(gs.CHECK05_EXCL).passed and "look-back" in starter.check(gs.CHECK05_EXCL).feedback


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.slow
def test_drill06_solution_passes_and_starter_fails_the_back_part(tmp_path):
    solution = gs.grade("drill06", REPO / "solutions" / FILE06, tmp_path, seed=3)
    assert solution.passed, solution.text()
    starter = gs.grade("drill06", REPO / "exercises" / FILE06, tmp_path, seed=3)
    assert starter.check(gs.CHECK_FRONT).passed and not starter.check(gs.CHECK_BACK).passed, starter.text()
    assert "FORWARD order" in starter.check(gs.CHECK_BACK).feedback


# Planted mistakes, made from the reference answers at test time (so they follow every edit of
# the answers): what each does wrong, the check that must fail, and what its feedback must say.
PLANTED = {
    "a wrong lane count (a literal 32 where the group width belongs)": (
        "drill04", "04_warp_scan.cu", "for (int delta = 1; delta < L::width; delta *= 2)",
        "for (int delta = 1; delta < 32; delta *= 2)", gs.CHECK04_64, "something assumes 32 lanes"),
    "a weak look-back load (a plain load where the ordering needs a strong one)": (
        "drill05", "05_lookback_scan.cu",
        "    return word.load(cuda::memory_order_relaxed);\n}",
        "    return descriptors[tile];  // planted: a plain load\n}", gs.CHECK05_STRONG, "must be strong"),
    "a partition whose back part is in input order": (
        "drill06", FILE06, None, None, gs.CHECK_BACK, "FORWARD order"),
}


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.slow
@pytest.mark.parametrize("mistake", sorted(PLANTED))
def test_planted_mistakes_fail_with_their_diagnosis(mistake, tmp_path):
    drill, name, right, wrong, check, says = PLANTED[mistake]
    if right is None:  # the starter is this mistake
        planted = REPO / "exercises" / name
    else:
        text = (REPO / "solutions" / name).read_text()
        assert text.count(right) == 1, f"the planted mistake no longer applies to solutions/{name}"
        planted = tmp_path / name
        planted.write_text(text.replace(right, wrong))
    report = gs.grade(drill, planted, tmp_path, seed=5)
    assert not report.check(check).passed, report.text()
    assert says in report.check(check).feedback, report.text()
    assert report.check("builds").passed, report.text()


# ---- drills 04 and 05 -------------------------------------------------------------------------

LOAD05 = "    return word.load(cuda::memory_order_relaxed);\n}"
SCOPE05 = "cuda::atomic_ref<Descriptor, cuda::thread_scope_device> word(descriptors[tile]);\n    return"
# Ways to read a descriptor, each with whether drill 05's grader must accept it. A plain load can
# hang the launch or happen to finish right on a given run (both seen on an H200), so the grader
# reads the compiled code: these pin what it accepts and refuses.
DESCRIPTOR_LOADS = {
    "the solution's relaxed device-scope atomic_ref load": (None, None, True),
    "an acquire load": (LOAD05, "    return word.load(cuda::memory_order_acquire);\n}", True),
    "a volatile load": (LOAD05, "    return *(volatile Descriptor*)&descriptors[tile];\n}", True),
    "__ldcg (L2 only, CUB's older idiom)": (LOAD05, "    return __ldcg(&descriptors[tile]);\n}", True),
    "a plain load": (LOAD05, "    return descriptors[tile];\n}", False),
    "__ldg (the read-only path)": (LOAD05, "    return __ldg(&descriptors[tile]);\n}", False),
    "a block-scope atomic_ref load": (SCOPE05, SCOPE05.replace("thread_scope_device", "thread_scope_block"), False),
    "a plain load in inline PTX": (LOAD05, '    Descriptor v;\n    asm volatile("ld.global.u64 %0, [%1];" : "=l"(v) '
                                           ': "l"(descriptors + tile));\n    return v;\n}', False),
}


@pytest.fixture(scope="module")
def descriptor_load_builds(tmp_path_factory, nvcc):
    """Each way of DESCRIPTOR_LOADS compiled to PTX as the grader compiles it, side by side (the rule
    reads the PTX only; the solution's fatbin is built by the test after the next)."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    solution = (REPO / "solutions" / "05_lookback_scan.cu").read_text()

    def build(how):
        right, wrong, _ = DESCRIPTOR_LOADS[how]
        if right is not None and solution.count(right) != 1:
            return None, f"{how}: no longer applies to solutions/05_lookback_scan.cu", None
        submission = tmp_path_factory.mktemp("loads") / "05_lookback_scan.cu"
        submission.write_text(solution if right is None else solution.replace(right, wrong))
        return gs._compile_device(submission, gs.wrapper05, want_ptx=True, ptx_only=True)

    with ThreadPoolExecutor(max_workers=max(2, min(8, os.cpu_count() or 2))) as pool:
        return dict(zip(sorted(DESCRIPTOR_LOADS), pool.map(build, sorted(DESCRIPTOR_LOADS))))


@pytest.mark.cuda
@pytest.mark.parametrize("how", sorted(DESCRIPTOR_LOADS))
def test_drill05_descriptor_loads_are_judged_from_the_compiled_code(how, descriptor_load_builds):
    accepted = DESCRIPTOR_LOADS[how][2]
    _, why, ptx_text = descriptor_load_builds[how]
    assert ptx_text is not None, why
    problem = gs.weak_descriptor_loads(ptx_text)
    if accepted:
        assert problem == "", problem
    else:
        assert "plain load" in problem and "must be strong" in problem, problem


def test_the_ptx_reader_follows_the_pointer_through_arithmetic_moves_and_loops():
    from scanlab import ptx

    k = "_Z1kPy"
    text = f"""
.visible .entry {k}(
	.param .u64 {k}_param_0,
	.param .u64 {k}_param_1
)
{{
	ld.param.u64 	%rd1, [{k}_param_0];
	ld.param.u64 	%rd2, [{k}_param_1];
	cvta.to.global.u64 	%rd3, %rd1;
$L__BB0_1:
	mul.wide.u32 	%rd4, %r1, 8;
	add.s64 	%rd5, %rd3, %rd4;
	@%p1 ld.global.u64 	%rd6, [%rd5+8]; // weak, through arithmetic
	ld.relaxed.gpu.global.u64 	%rd7, [%rd5];
	ld.relaxed.cta.global.u64 	%rd8, [%rd5];
	ld.global.u64 	%rd9, [%rd6]; // through a loaded value: data, not the parameter's memory
	ld.global.u64 	%rd10, [%rd2]; // another parameter
	mov.b64 	%rd11, %rd12;
	ld.volatile.u64 	%rd13, [%rd11]; // %rd12 becomes a pointer below: the walk goes round the loop
	add.s64 	%rd12, %rd3, 16;
	@%p2 bra 	$L__BB0_1;
	ret;
}}
.visible .entry _Z1jPy(
	.param .u64 _Z1jPy_param_0
)
{{
	ld.param.u64 	%rd1, [_Z1jPy_param_0];
	ld.global.u64 	%rd2, [%rd1]; // the next kernel's: not k's
}}
"""
    loads = ptx.loads_through_parameter(text, k, 0)
    assert [(load.text.split()[0], load.strong) for load in loads] == [
        ("ld.global.u64", False), ("ld.relaxed.gpu.global.u64", True), ("ld.relaxed.cta.global.u64", False),
        ("ld.volatile.u64", True)]
    assert [load.text.split()[0] for load in ptx.loads_through_parameter(text, k, 1)] == ["ld.global.u64"]
    assert ptx.loads_through_parameter(text, "_Z1other", 0) is None
    assert [load.line for load in ptx.loads_through_parameter(text, "_Z1jPy", 0)] == [text.count("\n", 0, text.index(
        "the next kernel's")) + 1]


@pytest.mark.cuda
@pytest.mark.parametrize("how, runs", [("the solution's relaxed device-scope atomic_ref load", "right"),
                                       ("the solution's relaxed device-scope atomic_ref load", "hang"),
                                       ("a plain load", "right"), ("a plain load", "hang")])
def test_drill05_report_carries_the_code_check_and_scores_it_only_with_some_output_right(
        how, runs, descriptor_load_builds, monkeypatch):
    """grade05 end to end with the GPU run stood in for: every launch right, or every launch hung."""
    from scanlab import gpu_plan

    _, why, ptx_text = descriptor_load_builds[how]
    assert ptx_text is not None, why
    # the run is stood in for too, so the fatbin is only passed along
    monkeypatch.setattr(gs, "_compile_device", lambda submission, wrapper, want_ptx: (b"fatbin", "", ptx_text))
    monkeypatch.setattr(gpu_plan, "run_plan", lambda fatbin, plan, lock: (
        [gpu_plan.TaskResult(task.label, error="" if runs == "right" else "did not finish") for task in plan.tasks],
        gpu_plan.ModuleInfo()))
    monkeypatch.setattr(gs, "judge_scan", lambda case, dumps: ("", ""))
    report = gs.grade("drill05", REPO / "solutions" / "05_lookback_scan.cu", Path("."), seed=5)
    assert [c.name for c in report.checks] == gs.CHECKS05
    strong = report.check(gs.CHECK05_STRONG)
    if "plain" in how:
        assert not strong.passed and "must be strong" in strong.feedback, report.text()
    elif runs == "hang":
        assert not strong.passed and "not counted yet" in strong.feedback, report.text()
        assert report.score == 0
    else:
        # Every correctness check passes; the timed run (the stand-in read back no TunedShape) is not timed.
        assert strong.passed and all(report.check(name).passed for name in gs.CORRECTNESS05), report.text()
        assert report.score == 5 and report.max_score == 7, report.text()
        assert all("not timed" in report.check(name).feedback for name in gs.CHECK05_SPEED.values())


@pytest.mark.cuda
def test_drill05_ptx_over_the_grader_limit_is_not_read(monkeypatch, nvcc):
    monkeypatch.setattr(gs, "PTX_LIMIT_BYTES", 4096)
    fatbin, why, ptx_text = gs._compile_device(REPO / "solutions" / "05_lookback_scan.cu", gs.wrapper05, want_ptx=True)
    assert fatbin is not None and ptx_text is None
    assert "more than the grader reads" in why, why


def test_the_ptx_reader_is_linear_in_a_hostile_kernel():
    """The PTX is the submission's and is read in the grader's own process: a chain of moves
    written backwards (each defined after its use) must not make the walk quadratic."""
    import time

    from scanlab import ptx

    n = 20_000
    chain = "\n".join(f"\tmov.b64 \t%rd{i + 1}, %rd{i};" for i in range(n, 0, -1))
    text = (f".visible .entry _Z1kPy(\n\t.param .u64 _Z1kPy_param_0\n)\n{{\n{chain}\n"
            f"\tld.param.u64 \t%rd1, [_Z1kPy_param_0];\n\tld.global.u64 \t%rd0, [%rd{n + 1}];\n}}\n")
    started = time.perf_counter()
    loads = ptx.loads_through_parameter(text, "_Z1kPy", 0)
    assert [(load.text, load.strong) for load in loads] == [(f"ld.global.u64 %rd0, [%rd{n + 1}]", False)]
    assert time.perf_counter() - started < 10, "the walk is not linear"  # quadratic: minutes

@pytest.mark.cuda
@pytest.mark.parametrize("drill, name", [("drill04", "04_warp_scan.cu"), ("drill05", "05_lookback_scan.cu")])
@pytest.mark.parametrize("folder", ["solutions", "exercises"])
def test_scan_drills_compile_with_every_kernel_the_grader_launches(drill, name, folder, nvcc):
    wrapper, cases = {"drill04": (gs.wrapper04, gs.cases04), "drill05": (gs.wrapper05, gs.cases05)}[drill]
    fatbin, why = gs.compile_device(REPO / folder / name, wrapper)
    assert fatbin is not None, why
    kernels = {case.kernel for case in cases(5)}
    assert len(kernels) == (8 if drill == "drill04" else 5)
    for kernel in kernels:
        assert kernel.encode() in fatbin, kernel


def scan_dumps(case: gs.ScanCase, out: list, inp: list | None = None) -> dict[str, bytes]:
    code = {"f32": "f", "i32": "i"}[case.type]
    guard = array(code, b"\xff" * 4 * gs.GUARD).tolist()
    return {"in": array(code, guard + (inp if inp is not None else case.values) + guard).tobytes(),
            "out": array(code, guard + out + guard).tobytes()}


def test_scan_judging_per_tile_and_whole_array():
    tiled = gs.ScanCase("c", "4 per tile", "k", "i32", False, 4, 4, 4, 2, [1, 2, 3, 4, 5, 6, 7])
    assert tiled.expected() == [0, 1, 3, 6, 0, 5, 11]
    assert gs.judge_scan(tiled, scan_dumps(tiled, tiled.expected())) == ("", "")
    whole = gs.ScanCase("c", "whole", "k", "f32", True, 0, 4, 4, 2, [1, 2, 3, 4, 5, 6, 7])
    assert whole.expected() == [1, 3, 6, 10, 15, 21, 28]
    # Each tile scanned alone: right in tile 0, wrong from the first element of tile 1, with the look-back hint.
    problem, side = gs.judge_scan(whole, scan_dumps(whole, [1.0, 3, 6, 10, 5, 11, 18]))
    assert "3 wrong element(s); first out[4] (element 0 of tile 1), which holds 5" in problem and side == ""
    assert "look-back" in problem
    unwritten = array("f", b"\xff" * 4)[0]
    problem, _ = gs.judge_scan(whole, scan_dumps(whole, [1.0, 3, 6, 10, 15, 21, unwritten]))
    assert "first out[6] (element 2 of tile 1), which was never written" in problem and "look-back" not in problem
    out = array("f", scan_dumps(whole, whole.expected())["out"])
    out[gs.GUARD - 1] = 0.0  # one before the start
    dumps = scan_dumps(whole, whole.expected())
    dumps["out"] = out.tobytes()
    assert "wrote out[-1], outside out[0, n)" in gs.judge_scan(whole, dumps)[1]
    assert "the input changed" in gs.judge_scan(whole, scan_dumps(whole, whole.expected(), inp=[0.0] * 7))[1]


def test_scan_cases_cover_edges_widths_and_a_huge_grid():
    c04, c05 = gs.cases04(5), gs.cases05(5)
    assert {c.check for c in c04} == {gs.CHECK04_32, gs.CHECK04_64}
    assert {(c.block, len(c.values)) for c in c04} >= {(64, 63), (256, 257), (1024, 1023), (1024, 1)}
    tile = 256 * 16
    assert {len(c.values) for c in c05} >= {1, 3, tile - 1, tile, tile + 1, (1 << 20) + 3}
    many = [c for c in c05 if c.check == gs.CHECK05_MANY]
    assert len(many) == 1 and many[0].grid > 100_000
    for case in c04 + c05:  # float sums stay exact: every prefix below 2^24
        assert sum(case.values) < 1 << 24 and -1 not in case.values


def test_course_mode_text_names_no_drawn_size_and_no_seed():
    """The sizes drawn from the seed are the instructor's in course mode: their cases carry a label
    without the size, course_text swaps it in, and no label names the seed."""
    for cases in (gs.cases04(48611), gs.cases05(48611), gs.cases06(48611)):
        drawn = [case for case in cases if case.student_label]
        assert drawn and all("drawn" in case.label for case in drawn)
        assert not any("48611" in case.label for case in cases)
        for case in drawn:
            n = f"n={len(case.values)}"
            assert n in case.label and n not in case.student_label
            text = f"{case.label}: 3 wrong element(s); first out[7]"
            assert gs.course_text(text, cases) == f"{case.student_label}: 3 wrong element(s); first out[7]"
