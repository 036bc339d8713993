"""Drill 05's speed check (scanlab/speed.py, the runner's timed tasks, grade05's timed part).

CPU: the timed plan's text; the runner's reading of a timed plan (on the toolkit's libcuda
stub: a good one reaches cuInit, a bad one is refused with status 2); the judging of
runner records made here (the points rule, the memory floor, the host clock against the
events, a wrong or input-changing repetition, warm-up repetitions checked too); grade05
end to end on gpu_fakes' stand-in (speed only after every correctness check, a timed run
that faults or hangs scores nothing and says so, Gradescope's leaderboard field checked
by results_schema). GPU (H200): the solution timed for real against CUB, its record
sane (clocks, L2, every hash agreeing, times above the floor), and the timed cheats of
harness/corpus/drill05 scoring no speed points (test_corpus.py grades them whole).
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

from scanlab import gpu_plan, grading, speed
from scanlab import grade_stretch as gs
from scanlab.gpu_fakes import FakeGpuBox, run_on_the_stub
from scanlab.gpu_plan import Plan
from scanlab.speed import Repetition, TimingRecord

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "harness" / "gradescope"))
from results_schema import problems as schema_problems  # noqa: E402

N = 1 << 26
COPY_MS = 0.140  # an H200-like copy of 2^26 words: about 3.8 TB/s


def record(student_ms, cub_ms=0.160, copy_ms=COPY_MS, reps=12, warmup=3, wall_extra=0.02, **changes) -> TimingRecord:
    """A runner record: every repetition the same times unless a list gives one per repetition."""
    def at(value, k):
        return value[k] if isinstance(value, list) else value

    rows = []
    for k in range(warmup + reps):
        s = at(student_ms, k)
        rows.append(Repetition(k % 3, s, at(cub_ms, k), at(copy_ms, k), s + at(wall_extra, k), 11, 11, 77, 77, 1980,
                               2619))
    for k, fields in changes.items():  # rep_5={"out": 1}: repetition 5's fields changed
        for name, value in fields.items():
            setattr(rows[int(k.removeprefix("rep_"))], name, value)
    return TimingRecord("NVIDIA H200", 9, 0, 50 << 20, 256 << 20, "nvml", 1980, 2619, warmup, True, rows)


# ---- the plan ----------------------------------------------------------------------------

def test_the_timed_plan_names_the_tuned_kernel_every_size_and_the_time_line():
    plan = gs.timed_plan05((128, 24), 12345)
    text, files = plan.text("module.fatbin")
    lines = text.splitlines()
    assert files == {} and lines[:2] == ["module module.fatbin", f"library {gpu_plan.LIBRARY_NAME}"]
    assert [line for line in lines if line.startswith("timed")] == [
        "timed  # 0: timed: exclusive int32, n=2^26, TileShape<128, 24>",
        "timed  # 1: timed: exclusive int32, n=2^28, TileShape<128, 24>"]
    tiles = -(-(1 << 28) // (128 * 24))
    assert (f"launch {gs.kernel05((128, 24), 'i32', False)} {tiles} 128 0 @in @out u64:{1 << 28} @descriptors "
            "@counter u32:1") in lines
    assert f"time in out 12345 3 exclusive {speed.WARMUP} {speed.LEAST} {speed.MOST} {speed.SPREAD:g}" in lines
    assert not [line for line in lines if line.startswith("dump")]
    assert gs.kernel05((128, 24), "i32", False) == "_Z13lookback_scanI9TileShapeILi128ELi24EEiLb0EEvPKT0_PS2_mPyPjj"
    # Values 0..3 at the largest size: every prefix fits in int32, so CUB's and the kernel's sums are exact.
    assert gs.TIMED05_HIGH * gs.TIMED05[-1][0] < 2 ** 31


def test_a_timed_task_takes_no_file_input_no_dumps_and_one_launch():
    task = Plan().task("t").buffer("in", "i32", 4, data=bytes(16)).buffer("out", "i32", 4)
    task.launch("k", 1, 4, ["@in", "@out"])
    with pytest.raises(ValueError, match="zero or poison"):
        task.time("in", "out", 1, 3, False, 1, 1, 2, 0.01)
    task = Plan().task("t").buffer("in", "i32", 4, init="zero").buffer("out", "u64", 4)
    task.launch("k", 1, 4, ["@in", "@out"])
    with pytest.raises(ValueError, match="4-byte words"):
        task.time("in", "out", 1, 3, False, 1, 1, 2, 0.01)


def test_two_timed_seeds_differ_even_for_one_grading_seed():
    assert gs.timed_seed05(5) != gs.timed_seed05(5)


def stub_runner(tmp_path, plan_text: str):
    (tmp_path / "plan.txt").write_text(plan_text)
    return run_on_the_stub(tmp_path, ["--plan", "plan.txt"])


def test_the_runner_reads_a_good_timed_plan_and_stops_only_at_cuinit(tmp_path):
    text, _ = gs.timed_plan05((128, 24), 7).text("module.fatbin")
    (tmp_path / "module.fatbin").write_bytes(b"not reached")
    proc = stub_runner(tmp_path, text)
    assert proc.returncode == 1 and proc.stderr.startswith("gpu_runner: cuInit failed"), proc.stderr


GOOD_TIMED = ("module m\nlibrary l\ntimed\nbuffer in i32 8 0 zero\nbuffer out i32 8 4 poison\n"
              "launch k 1 8 0 @in @out\n")


@pytest.mark.parametrize("plan, said", [
    ("module m\ntimed\nbuffer in i32 8 0 zero\nlaunch k 1 8 0 @in\n", "a timed task needs the plan's library"),
    (GOOD_TIMED + "end\n", "exactly one launch and a time line"),
    (GOOD_TIMED + "time in out 1 3 sideways 1 1 2 0.01\nend\n", "exclusive or inclusive"),
    (GOOD_TIMED + "time in nope 1 3 exclusive 1 1 2 0.01\nend\n", "no 4-byte-word buffer nope"),
    (GOOD_TIMED + "time in out 1 3 exclusive 1 5 2 0.01\nend\n", "1 <= LEAST <= MOST"),
    (GOOD_TIMED + "time in out 1 3 exclusive 1 1 2 1.5\nend\n", "SPREAD is a fraction"),
    (GOOD_TIMED + "dump out\nend\n", "dumps its timing record"),
    ("module m\nlibrary l\ntimed\nbuffer in i32 8 0 file:x\nbuffer out i32 8 4 poison\nlaunch k 1 8 0 @in @out\n"
     "time in out 1 3 exclusive 1 1 2 0.01\nend\n", "zero or poison"),
    ("module m\ntask\nbuffer x f32 1 0 zero\nlaunch k 1 1 0 @x\nend\nlibrary l\n", "before the first task"),
])
def test_the_runner_refuses_a_bad_timed_plan(plan, said, tmp_path):
    proc = stub_runner(tmp_path, plan)
    assert proc.returncode == 2 and said in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr


# ---- the record and the judging -----------------------------------------------------------

def test_the_record_reads_back_what_was_written():
    made = record(0.150, rep_4={"out": 5})
    assert speed.parse_timing(speed.timing_bytes(made)) == made
    with pytest.raises(ValueError, match="truncated"):
        speed.parse_timing(speed.timing_bytes(made)[:-3])


@pytest.mark.parametrize("student_ms, points", [
    (0.150, 1.0),  # faster than CUB: full points
    (0.160, 1.0),  # as fast as CUB: full points
    (0.200, 0.8),  # slower: t_CUB / t
    (0.480, 1 / 3),  # exactly 3x CUB's time: still t_CUB / t
    (0.481, 0.0),  # past 3x: nothing
])
def test_points_are_full_at_cub_speed_and_scale_below_it(student_ms, points):
    verdict = speed.judge(record(student_ms), N, 1.0)
    assert verdict.valid and verdict.points == pytest.approx(points), verdict


def test_the_feedback_gives_gbps_fraction_of_copy_ratio_to_cub_and_the_points():
    verdict = speed.judge(record(0.200), N, 1.0)
    line = verdict.line("n=2^26")
    assert "0.200 ms, 2684 GB/s: 0.70 of the copy (3835 GB/s), 0.80x CUB's speed (CUB 0.160 ms" in line, line
    assert "0.80 of 1 point(s); median of 12 repetitions, SM 1980 MHz, memory 2619 MHz" in line, line


def test_the_median_is_of_the_measured_repetitions_only():
    # Warm-up repetitions (the first three) slow, one slow measured outlier: the median does not move.
    times = [5.0, 5.0, 5.0] + [0.150] * 11 + [2.0]
    verdict = speed.judge(record(times, wall_extra=[0.02] * 15), N, 1.0)
    assert verdict.valid and verdict.student_ms == pytest.approx(0.150) and verdict.measured == 12


def test_a_repetition_below_the_memory_floor_is_impossible():
    floor = COPY_MS * (1 - speed.FLOOR_MARGIN)
    times = [0.150] * 10 + [floor * 0.99] + [0.150] * 4
    verdict = speed.judge(record(times), N, 1.0)
    assert not verdict.valid and verdict.points == 0 and "below the memory floor" in verdict.why, verdict
    assert "repetition 10" in verdict.why
    assert speed.judge(record([0.150] * 10 + [floor * 1.01] + [0.150] * 4), N, 1.0).valid


def test_work_the_events_did_not_see_shows_in_the_host_clock():
    # Host time far past the event time in most repetitions: work outside the timed kernel.
    verdict = speed.judge(record(0.150, wall_extra=20.0), N, 1.0)
    assert not verdict.valid and "work the timed events did not see" in verdict.why, verdict
    # A loaded host's late wake, as the H200 showed with the suite's other shards running (about
    # 2 ms past every 0.18 ms launch): noise, not hidden work; the run counts.
    verdict = speed.judge(record(0.180, wall_extra=2.3), N, 1.0)
    assert verdict.valid and verdict.set_aside == 0, verdict
    # Host noise in one repetition of twelve: that one is set aside, the run counts.
    extra = [0.02] * 14 + [25.0]
    verdict = speed.judge(record(0.150, wall_extra=extra), N, 1.0)
    assert verdict.valid and verdict.set_aside == 1 and verdict.points == 1.0, verdict
    # A host time below the event time is a broken clock, set aside like noise.
    assert not speed.wall_fits(Repetition(0, 0.150, 0.1, 0.1, 0.100, 0, 0, 0, 0, 0, 0))


@pytest.mark.parametrize("changed, said", [
    ({"rep_1": {"out": 78}}, "your output in repetition 1 (a warm-up repetition) is not the exact scan"),
    ({"rep_9": {"out": 78}}, "your output in repetition 9 (a timed repetition) is not the exact scan"),
    ({"rep_6": {"in_after": 12}}, "your kernel changed its input in repetition 6"),
])
def test_every_repetition_is_checked_warm_up_included(changed, said):
    verdict = speed.judge(record(0.150, **changed), N, 1.0)
    assert not verdict.valid and verdict.points == 0 and said in verdict.why, verdict


# ---- grade05 end to end, on the stand-in --------------------------------------------------

def nothing(args, grid, block):
    pass


def fake_grade(monkeypatch, timed=None, fate=lambda k, kernel: "ok", correct=True, mode="self-study",
               shape=(128, 24)):
    """grade05 of the solution with the compile and every GPU run stood in for; correctness judged right
    (or wrong), the timed tasks' records from `timed(k, task)`."""
    monkeypatch.setattr(gs, "_compile_device", lambda submission, wrapper, want_ptx: (b"fatbin", "", ""))
    monkeypatch.setattr(gs, "weak_descriptor_loads", lambda ptx_text: "")
    monkeypatch.setattr(gs, "judge_scan", lambda case, dumps: ("", "") if correct else ("wrong", ""))
    kernels = {case.kernel: nothing for case in gs.cases05(5)}
    kernels[gs.kernel05(shape, "i32", False)] = nothing
    box = FakeGpuBox(kernels, fate=fate, globals={gs.TUNED05: struct.pack("<II", *shape)}, timed=timed)
    monkeypatch.setattr(gpu_plan, "Sandbox", box)
    monkeypatch.setattr(gpu_plan, "build_runner", lambda: Path("gpu_runner"))
    monkeypatch.setattr(gpu_plan, "build_timing_library", lambda: Path("libscanlab_timing.so"))
    report = gs.grade("drill05", REPO / "solutions" / "05_lookback_scan.cu", Path("."), seed=5, mode=mode)
    return report, box


def speed_checks(report):
    return [report.check(name) for name in gs.CHECK05_SPEED.values()]


def test_the_solution_on_the_stand_in_earns_speed_points_and_a_leaderboard(monkeypatch):
    def timed(k, task):
        assert task["time"][:2] == ["in", "out"] and task["launches"][0][0] == gs.kernel05((128, 24), "i32", False)
        return speed.timing_bytes(record([0.200, 0.800][k], cub_ms=[0.160, 0.640][k], copy_ms=[0.14, 0.56][k]))

    report, box = fake_grade(monkeypatch, timed)
    assert [c.name for c in report.checks] == gs.CHECKS05
    assert all(c.passed for c in report.checks), report.text()
    assert [c.score for c in speed_checks(report)] == [pytest.approx(0.8), pytest.approx(0.8)]
    assert report.score == pytest.approx(5 + 1.6) and report.max_score == 7
    assert "(0.80 of 1 points)" in report.text() and "GB/s" in speed_checks(report)[1].feedback
    assert report.speed["2^28"]["gbps"] == pytest.approx(2 * (1 << 28) * 4 / 0.8e6, rel=1e-3)
    results = report.gradescope()
    assert [e["name"] for e in results["leaderboard"]] == ["GB/s at n=2^28", "ms at n=2^28", "x CUB at n=2^28"]
    assert results["leaderboard"][1] == {"name": "ms at n=2^28", "value": 0.8, "order": "asc"}
    full = {**results, "execution_time": 1.0, "stdout_visibility": "hidden"}
    assert schema_problems(full) == []
    assert schema_problems({**full, "leaderboard": [{"name": "x", "value": True}]}) != []
    # One process for the correctness tasks, one for the timed ones: the record is read from the second.
    assert len(box.runs) == 2


def test_speed_is_not_timed_until_every_correctness_check_passes(monkeypatch):
    def timed(k, task):
        raise AssertionError("a timed task ran for a submission that fails a correctness check")

    report, _ = fake_grade(monkeypatch, timed, correct=False)
    for check in speed_checks(report):
        assert not check.passed and check.score == 0 and "not timed: speed counts once every correctness" in \
            check.feedback
    assert report.leaderboard == [] and "leaderboard" not in report.gradescope()


@pytest.mark.parametrize("fate, said", [("crash", "the timed run failed: CUDA_ERROR_ILLEGAL_ADDRESS"),
                                        ("hang", "did not finish")])
def test_a_timed_run_that_faults_or_hangs_scores_no_speed_points_and_says_so(monkeypatch, fate, said):
    timed_kernel = gs.kernel05((128, 24), "i32", False)

    def timed(k, task):
        return speed.timing_bytes(record(0.150))

    report, _ = fake_grade(monkeypatch, timed, fate=lambda k, kernel: fate if kernel == timed_kernel else "ok")
    assert all(report.check(name).passed for name in gs.CORRECTNESS05), report.text()
    for check in speed_checks(report):
        assert not check.passed and check.score == 0 and said in check.feedback, check.feedback
    assert report.leaderboard == []


def test_a_wrong_timed_output_scores_nothing_in_course_mode_too(monkeypatch):
    report, _ = fake_grade(monkeypatch, lambda k, task: speed.timing_bytes(record(0.150, rep_7={"out": 1})),
                           mode="course")
    for check in speed_checks(report):
        assert not check.passed and "is not the exact scan of its input" in check.feedback


def test_a_tuned_shape_the_drill_does_not_allow_is_not_timed(monkeypatch):
    report, _ = fake_grade(monkeypatch, lambda k, task: b"", shape=(100, 4))
    assert all("not timed: TunedShape<100, 4> is not a shape" in c.feedback for c in speed_checks(report))


def test_the_points_file_holds_the_speed_checks():
    table = grading.points_table()["drill05"]
    assert [table[name].points for name in gs.CHECK05_SPEED.values()] == [1.0, 1.0]


# ---- on the H200 --------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.slow
def test_the_solution_is_timed_for_real_against_cub():
    """The whole path on the GPU: the solution's speed checks pass, and its records are sane."""
    report = gs.grade("drill05", REPO / "solutions" / "05_lookback_scan.cu", Path("."), seed=5)
    print(report.text())
    assert report.passed, report.text()
    for size in ("2^26", "2^28"):
        row = report.speed[size]
        assert 0.3 < row["of_copy"] < 1 / (1 - speed.FLOOR_MARGIN), row
        assert 0.3 < row["against_cub"] < 3, row
        assert 1000 < row["copy_gbps"] < 6000, row  # an H200's HBM3e: 4.8 TB/s peak


@pytest.mark.gpu
@pytest.mark.cuda
def test_the_runner_times_a_copy_kernel_against_cub_with_sane_records(nvcc, tmp_path):
    """A timed task of the harness's own: a kernel that is a plain exclusive scan would be long; a
    copy kernel is wrong as a scan (its hashes differ from CUB's) but its times must be copy-like."""
    import subprocess

    from scanlab.build import cuda_gencode

    (tmp_path / "k.cu").write_text('extern "C" __global__ void copy(const int* in, int* out, unsigned long long n) {'
                                   " for (unsigned long long i = blockIdx.x * 256ull + threadIdx.x; i < n;"
                                   " i += gridDim.x * 256ull) out[i] = in[i]; }\n")
    subprocess.run([nvcc, "-fatbin", *cuda_gencode(), "-o", str(tmp_path / "k.fatbin"), str(tmp_path / "k.cu")],
                   check=True, timeout=300)
    plan = Plan()
    n = 1 << 26
    task = plan.task("copy").buffer("in", "i32", n, 256, init="zero").buffer("out", "i32", n, 256)
    task.launch("copy", 4096, 256, ["@in", "@out", f"u64:{n}"]).time("in", "out", 99, 3, False, 2, 5, 8, 0.02)
    (result,), _ = gpu_plan.run_plan((tmp_path / "k.fatbin").read_bytes(), plan)
    assert not result.error, result.error
    rec = speed.parse_timing(result.dumps[gpu_plan.TIMING])
    print(rec.device, rec.clock_source, rec.top_sm_mhz, rec.top_memory_mhz, rec.l2_bytes, len(rec.reps))
    assert rec.l2_bytes > 0 and rec.flush_bytes >= 4 * rec.l2_bytes and 7 <= len(rec.reps) <= 10
    assert len({r.in_before for r in rec.reps}) == len(rec.reps)  # a fresh input every repetition
    for r in rec.reps:
        assert r.in_after == r.in_before and r.out != r.reference  # a copy is not a scan
        assert r.student_ms > 0 and r.cub_ms > 0 and r.copy_ms > 0 and speed.wall_fits(r), r
        assert 0.5 < r.student_ms / r.copy_ms < 2, r
    assert len({r.reference for r in rec.reps}) == len(rec.reps)


# ---- the class leaderboard and results.json -------------------------------------------------

def speed_state(gbps28: float, passed: bool = True) -> dict:
    speed_rows = {"2^26": {"n": 1 << 26, "ms": 0.2, "gbps": gbps28 * 0.98, "cub_gbps": 3300.0, "copy_gbps": 3800.0,
                           "against_cub": 0.9, "of_copy": 0.8},
                  "2^28": {"n": 1 << 28, "ms": 2 * (1 << 28) * 4 / (gbps28 * 1e6), "gbps": gbps28,
                           "cub_gbps": 3400.0, "copy_gbps": 3900.0, "against_cub": gbps28 / 3400, "of_copy": 0.8}}
    return {"exercises": {"drill05": {"status": "graded", "score": 6.5, "speed": speed_rows if passed else {}},
                          "drill01": {"status": "graded", "score": 3.0}}}


def test_the_leaderboard_ranks_only_passing_submissions_fastest_first(tmp_path):
    from scanlab import class_tools

    states = {"student10": speed_state(3000.0), "student2": speed_state(3500.0), "slowpoke": speed_state(900.0),
              "failing": speed_state(9999.0, passed=False)}
    written = {}
    names = class_tools.write_leaderboard(tmp_path, states, lambda path, text: written.update({path.name: text}))
    assert names[0] == "leaderboard.csv"
    lines = written["leaderboard.csv"].splitlines()
    assert lines[0] == ",".join(class_tools.LEADERBOARD_COLUMNS)
    ranked = [(line.split(",")[0], line.split(",")[1]) for line in lines[1:] if ",2^28," in line]
    assert ranked == [("1", "student2"), ("2", "student10"), ("3", "slowpoke")]
    assert "failing" not in written["leaderboard.csv"] and len(lines) == 1 + 3 * 2
    if "leaderboard.png" in names:  # matplotlib installed
        assert (tmp_path / "leaderboard.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert class_tools.write_leaderboard(tmp_path, {"failing": speed_state(1.0, passed=False)}, None) == []


def test_a_students_results_json_carries_the_leaderboard_field(monkeypatch):
    from scanlab import classroom

    def timed(k, task):
        return speed.timing_bytes(record([0.150, 0.600][k], cub_ms=[0.160, 0.640][k], copy_ms=[0.14, 0.56][k]))

    report, _ = fake_grade(monkeypatch, timed)
    outcomes = {"drill05": classroom.Outcome("drill05", "graded", report=report, seconds=3.0)}
    results = classroom.student_results(outcomes, {"drill05": report.max_score})
    assert results["leaderboard"][0]["name"] == "GB/s at n=2^28" and results["leaderboard"][0]["value"] > 3000
    assert schema_problems({**results, "stdout_visibility": "hidden"}) == []
