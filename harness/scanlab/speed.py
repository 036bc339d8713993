"""Speed as a grade: drill 05's timed check, judged from the plan runner's timing records.

The runner (drivers/gpu_runner.cpp, a `timed` task) runs the submission's kernel many
times on fresh inputs, interleaved with CUB's DeviceScan of the same input and a
device-to-device copy of it, and records per repetition the three event times, the
host wall time of the submission's launch, and hashes: of the submission's whole
output buffer (guard words too), of CUB's, and of the input before and after the
submission ran. Everything is judged here:

- every repetition, warm-up included: the submission's hash equals CUB's (its output
  is CUB's word for word: bar a 2^-64 accident of the hash, exact) and the input's
  hash did not change; one wrong repetition and the timed run scores nothing;
- every measured repetition: its event time is at least the memory floor, the time
  of the copy's 2n*4 bytes (median over the run) less FLOOR_MARGIN; one faster
  repetition is impossible and the run scores nothing;
- its host wall time (launch to a device-wide synchronize) exceeds its event time by
  at most WALL_SLACK_MS + WALL_SLACK_FRACTION of it; a repetition that does not is
  set aside (host noise), and when more than MOST_SET_ASIDE of them are, the run
  scores nothing (work that the events did not see);
- the times are the medians of the measured repetitions kept; the points of a size:
  full at or above CUB's speed, full * t_CUB / t below it, 0 slower than ZERO_AT
  times CUB's time.

    record = parse_timing(result.dumps["timing"])
    verdict = judge(record, n, full_points)
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from statistics import median

from .gpu_plan import Reader

FLOOR_MARGIN = 0.25  # faster than the copy by more than 1 / (1 - 0.25) = 1.33x: impossible
# A device-wide synchronize on a loaded host wakes late: on the H200 machine with the suite's
# other shards running (2026-12-04), every repetition's host time ran about 2 ms past an 0.18 ms
# launch, and a slack of 0.25 ms set aside all 40 of an honest answer's. A kernel-only submission
# cannot queue work on another stream (a device-side launch does not build without -rdc), so this
# check is a backstop against gross hidden work: 10 ms, well above the host's noise.
WALL_SLACK_MS = 10.0
WALL_SLACK_FRACTION = 0.5
MOST_SET_ASIDE = 0.25
ZERO_AT = 3.0  # slower than 3x CUB's time scores 0
# The runner's repetition count: warm-up, then at least LEAST and at most MOST measured,
# stopping once the submission's and CUB's times spread (MAD / median) by at most SPREAD.
WARMUP, LEAST, MOST, SPREAD = 3, 10, 40, 0.01


@dataclass
class Repetition:
    order: int
    student_ms: float
    cub_ms: float
    copy_ms: float
    wall_ms: float
    in_before: int
    in_after: int
    out: int
    reference: int
    sm_mhz: int
    memory_mhz: int


@dataclass
class TimingRecord:
    device: str
    major: int
    minor: int
    l2_bytes: int
    flush_bytes: int
    clock_source: str
    top_sm_mhz: int
    top_memory_mhz: int
    warmup: int
    spread_reached: bool
    reps: list[Repetition] = field(default_factory=list)


REP_FORMAT = "<I4d4Q2I"


def parse_timing(data: bytes) -> TimingRecord:
    r = Reader(data, "timing record")
    if r.take(8) != b"GPRTIM01":
        raise ValueError("the runner's timing record has the wrong header")
    record = TimingRecord(r.text(), r.u32(), r.u32(), r.u64(), r.u64(), r.text(), r.u32(), r.u32(), r.u32(),
                          r.u32() == 0)
    for _ in range(r.u32()):
        record.reps.append(Repetition(*struct.unpack(REP_FORMAT, r.take(struct.calcsize(REP_FORMAT)))))
    return record


def timing_bytes(record: TimingRecord) -> bytes:
    """The runner's record of `record` (the inverse of parse_timing: fakes and recorded tests write it)."""
    def text(s: str) -> bytes:
        return struct.pack("<I", len(s.encode())) + s.encode()

    data = b"GPRTIM01" + text(record.device) + struct.pack("<IIQQ", record.major, record.minor, record.l2_bytes,
                                                           record.flush_bytes)
    data += text(record.clock_source) + struct.pack("<IIIII", record.top_sm_mhz, record.top_memory_mhz,
                                                    record.warmup, 0 if record.spread_reached else 1,
                                                    len(record.reps))
    for rep in record.reps:
        data += struct.pack(REP_FORMAT, rep.order, rep.student_ms, rep.cub_ms, rep.copy_ms, rep.wall_ms,
                            rep.in_before, rep.in_after, rep.out, rep.reference, rep.sm_mhz, rep.memory_mhz)
    return data


@dataclass
class Verdict:
    n: int
    valid: bool
    why: str = ""  # not valid: what the student is told
    student_ms: float = 0.0
    cub_ms: float = 0.0
    copy_ms: float = 0.0
    points: float = 0.0
    full: float = 1.0
    measured: int = 0
    set_aside: int = 0
    sm_mhz: int = 0
    memory_mhz: int = 0

    def gbps(self, ms: float) -> float:
        return 2 * self.n * 4 / (ms * 1e6) if ms > 0 else 0.0

    @property
    def student_gbps(self) -> float:
        return self.gbps(self.student_ms)

    @property
    def of_copy(self) -> float:
        return self.copy_ms / self.student_ms if self.student_ms > 0 else 0.0

    @property
    def against_cub(self) -> float:
        """CUB's time over the submission's: above 1, faster than CUB."""
        return self.cub_ms / self.student_ms if self.student_ms > 0 else 0.0

    def line(self, size: str) -> str:
        if not self.valid:
            return f"{size}: no speed points: {self.why}"
        clocks = f", SM {self.sm_mhz} MHz, memory {self.memory_mhz} MHz" if self.sm_mhz else ""
        return (f"{size}: {self.student_ms:.3f} ms, {self.student_gbps:.0f} GB/s: {self.of_copy:.2f} of the copy "
                f"({self.gbps(self.copy_ms):.0f} GB/s), {self.against_cub:.2f}x CUB's speed (CUB {self.cub_ms:.3f} ms, "
                f"{self.gbps(self.cub_ms):.0f} GB/s): {self.points:.2f} of {self.full:g} point(s); median of "
                f"{self.measured - self.set_aside} repetitions{clocks}")


def points_for(student_ms: float, cub_ms: float, full: float) -> float:
    """Full at or above CUB's speed, full * t_CUB / t below it, 0 past ZERO_AT times CUB's time."""
    if student_ms <= cub_ms:
        return full
    if student_ms > ZERO_AT * cub_ms:
        return 0.0
    return full * cub_ms / student_ms


def wall_fits(rep: Repetition) -> bool:
    return rep.student_ms * 0.99 - 0.01 <= rep.wall_ms <= rep.student_ms * (1 + WALL_SLACK_FRACTION) + WALL_SLACK_MS


def judge(record: TimingRecord, n: int, full: float) -> Verdict:
    for k, rep in enumerate(record.reps):
        which = "a warm-up repetition" if k < record.warmup else "a timed repetition"
        if rep.in_after != rep.in_before:
            return Verdict(n, False, f"your kernel changed its input in repetition {k} ({which}): in is read-only",
                           full=full)
        if rep.out != rep.reference:
            return Verdict(n, False, f"your output in repetition {k} ({which}) is not the exact scan of its input "
                           "(it differs from CUB's in the same run; every repetition's output is checked, and the "
                           "input is new every repetition)", full=full)
    measured = record.reps[record.warmup:]
    if not measured:
        return Verdict(n, False, "the timed run measured no repetition", full=full)
    copy_ms = median(rep.copy_ms for rep in measured)
    floor_ms = copy_ms * (1 - FLOOR_MARGIN)
    for k, rep in enumerate(measured, start=record.warmup):
        if rep.student_ms < floor_ms or rep.student_ms <= 0:
            return Verdict(n, False, f"repetition {k} took {rep.student_ms:.3f} ms, below the memory floor of "
                           f"{floor_ms:.3f} ms (2n*4 bytes at the copy's {2 * n * 4 / (copy_ms * 1e6):.0f} GB/s, less "
                           f"{FLOOR_MARGIN:.0%}): impossible, so this run is not scored", full=full)
    kept = [rep for rep in measured if wall_fits(rep)]
    set_aside = len(measured) - len(kept)
    if set_aside > MOST_SET_ASIDE * len(measured):
        return Verdict(n, False, f"in {set_aside} of {len(measured)} repetitions the host clock around your launch "
                       "and a device-wide synchronize ran well past the launch's event time: work the timed events "
                       "did not see", full=full, measured=len(measured), set_aside=set_aside)
    student_ms, cub_ms = median(r.student_ms for r in kept), median(r.cub_ms for r in kept)
    return Verdict(n, True, student_ms=student_ms, cub_ms=cub_ms, copy_ms=copy_ms,
                   points=points_for(student_ms, cub_ms, full), full=full, measured=len(measured),
                   set_aside=set_aside, sm_mhz=int(median(r.sm_mhz for r in kept)),
                   memory_mhz=int(median(r.memory_mhz for r in kept)))
