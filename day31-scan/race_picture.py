#!/usr/bin/env python3
"""The race, drawn: which lanes read a stale value at which step, from a trace the
kernels recorded themselves (`trace --trace-out FILE`, the traced twin day31-scan/trace.cu).

    python3 race_picture.py TRACE [--out DIR]     (from day31-scan/)

Writes DIR/race.png and DIR/race.svg (DIR defaults to ../build/day31-scan): one panel
per kernel, lanes across and steps down. A cell is red where the lane read a STALE
value (the lane it read had already written its new one), blue where it read the
previous step's value, grey where it read nothing (lanes below the offset); in the
no-copy kernel, orange marks a lane's STALE WORD (it wrote nothing, and its word is
not its current value). The warp boundaries are drawn; the title names the GPU.

The trace format (one line each): program|..., gpu|..., lanes|N, warp|W, kernel|NAME,
optionally block|B (which block of the launch the record is), then per step
read|STEP|OFFSET|V..., before|..., after|... with one value per lane ("?" where there
is none).

Exit status: 0 pictures written; 1 the trace could not be read (the line is named);
2 bad command line; 3 matplotlib is not importable.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_NO_PLOT = 0, 1, 2, 3
TITLES = {"in-place": "in place (the race)", "no-copy": "two halves, no copy-forward",
          "double-buffer": "double buffered (the fix)"}
NONE = None


class TraceError(ValueError):
    """A line of the trace that is not in the format."""


@dataclass
class Step:
    offset: int
    read: list = field(default_factory=list)
    before: list = field(default_factory=list)
    after: list = field(default_factory=list)

    def stale_reads(self) -> list[int]:
        """Lanes whose read differs from what the lane they read held before the step."""
        return [t for t in range(self.offset, len(self.read)) if self.read[t] != self.before[t - self.offset]]

    def stale_words(self) -> list[int]:
        """Lanes that wrote nothing (below the offset) and whose word is not their value."""
        return [t for t in range(min(self.offset, len(self.read))) if self.after[t] != self.before[t]]


@dataclass
class Race:
    program: str = ""
    gpu: str = ""
    lanes: int = 0
    warp: int = 32
    kernels: dict[str, list[Step]] = field(default_factory=dict)
    blocks: dict[str, int] = field(default_factory=dict)  # which block of the launch each kernel's record is


def parse(text: str) -> Race:
    race = Race()
    current: list[Step] | None = None
    name = ""
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("|")
        try:
            if parts[0] in ("program", "gpu") and len(parts) == 2:
                setattr(race, parts[0], parts[1])
            elif parts[0] in ("lanes", "warp") and len(parts) == 2:
                setattr(race, parts[0], int(parts[1]))
            elif parts[0] == "kernel" and len(parts) == 2 and parts[1]:
                current = race.kernels.setdefault(parts[1], [])
                name = parts[1]
            elif parts[0] == "block" and len(parts) == 2:
                if current is None:
                    raise TraceError("a block line before any kernel line")
                race.blocks[name] = int(parts[1])
            elif parts[0] in ("read", "before", "after") and len(parts) == 4:
                if current is None:
                    raise TraceError("a step before any kernel line")
                step_no, offset = int(parts[1]), int(parts[2])
                values = [NONE if v == "?" else float(v) for v in parts[3].split()]
                if len(values) != race.lanes:
                    raise TraceError(f"{len(values)} values for {race.lanes} lanes")
                if len(current) < step_no:
                    if len(current) != step_no - 1:
                        raise TraceError(f"step {step_no} out of order")
                    current.append(Step(offset))
                setattr(current[step_no - 1], parts[0], values)
            else:
                raise TraceError("not program|, gpu|, lanes|, warp|, kernel| or read|/before|/after|STEP|OFFSET|VALUES")
        except (TraceError, ValueError) as exc:
            raise TraceError(f"line {number}: {exc}: {line!r}") from None
    if race.lanes <= 0 or not race.kernels:
        raise TraceError("no lanes| line or no kernel")
    for name, steps in race.kernels.items():
        for step in steps:
            if not (step.read and step.before and step.after):
                raise TraceError(f"kernel {name}: a step without all of read, before and after")
    return race


def draw(race: Race, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    names = list(race.kernels)
    steps = max(len(s) for s in race.kernels.values())
    fig, axes = plt.subplots(len(names), 1, figsize=(max(11.0, 2 + 0.16 * race.lanes), 1.1 + (0.45 * steps + 0.9) * len(names)),
                             squeeze=False)
    for ax, name in zip(axes[:, 0], names):
        for s, step in enumerate(race.kernels[name]):
            stale, words = set(step.stale_reads()), set(step.stale_words())
            y = steps - 1 - s
            for lane in range(race.lanes):
                if lane in words:
                    colour = "#F59E0B"
                elif lane < step.offset:
                    colour = "#E2E8F0"
                elif lane in stale:
                    colour = "#DC2626"
                else:
                    colour = "#38BDF8"
                ax.add_patch(Rectangle((lane, y), 0.92, 0.8, facecolor=colour, edgecolor="none"))
            ax.text(-0.6, y + 0.4, f"offset {step.offset}", ha="right", va="center", fontsize=8)
        for boundary in range(race.warp, race.lanes, race.warp):
            ax.axvline(boundary - 0.04, color="#0F172A", lw=1.5)
        reads = sum(len(st.stale_reads()) for st in race.kernels[name])
        block = f" (block {race.blocks[name]})" if name in race.blocks else ""
        ax.set_title(f"{TITLES.get(name, name)}{block}: {reads} stale reads", fontsize=10, loc="left")
        ax.set_xlim(-2 - 0.1 * race.lanes, race.lanes)
        ax.set_ylim(-0.2, steps)
        ax.set_yticks([])
        ax.set_xticks(range(0, race.lanes + 1, max(1, race.warp // 2)))
        ax.set_xlabel("lane", fontsize=8)
        for side in ("top", "right", "left"):
            ax.spines[side].set_visible(False)
    fig.legend(handles=[Patch(color="#38BDF8", label="read the previous step's value"),
                        Patch(color="#DC2626", label="read a STALE value (already overwritten)"),
                        Patch(color="#E2E8F0", label="read nothing (lane < offset)"),
                        Patch(color="#F59E0B", label="stale word (no copy-forward)")],
               loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.suptitle(f"Hillis-Steele in one block of {race.lanes} lanes, warps of {race.warp} (black lines): "
                 f"{race.gpu}", fontsize=11)
    fig.tight_layout(rect=(0, 0.08, 1, 0.96))
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for suffix in (".png", ".svg"):
        path = out / f"race{suffix}"
        fig.savefig(path, dpi=130)
        written.append(path)
    plt.close(fig)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", type=Path, help="a file written by trace --trace-out FILE (day31-scan/trace.cu)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "build" / "day31-scan")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return EXIT_PASS if exit_.code == 0 else EXIT_USAGE
    try:
        race = parse(args.trace.read_text())
    except OSError as exc:
        print(f"race_picture: cannot read {args.trace}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    except TraceError as exc:
        print(f"race_picture: {args.trace}: {exc}", file=sys.stderr)
        return EXIT_FAIL
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("race_picture: matplotlib is not importable (pip install -r harness/requirements.txt)", file=sys.stderr)
        return EXIT_NO_PLOT
    try:
        written = draw(race, args.out)
    except OSError as exc:
        print(f"race_picture: cannot write into {args.out}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    print(f"race_picture: {', '.join(str(p) for p in written)}")
    return EXIT_PASS


if __name__ == "__main__":
    sys.exit(main())
