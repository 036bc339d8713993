#!/usr/bin/env python3
"""Pictures of a traced tile: the Hillis-Steele steps and Blelloch's tree, drawn from a
trace the kernels captured themselves (`trace --trace-out FILE`: the traced twin,
cuda/trace.cu or hip/trace.cpp).

    python3 trace_pictures.py TRACE [--out DIR]     (from a05-scan/)

For every kernel in TRACE, DIR/trace-<kernel>.png and .svg (DIR defaults to
../build/a05-scan/trace): one row of boxes per captured step, the values in them, and
an arrow for every addition that step made (Blelloch's down-sweep also shows the
copy of a node's value to its left child). The title names the GPU the trace came
from. The trace format, one line each:

    program|WHAT RAN           gpu|GPU NAME
    kernel|NAME                then, per step:  row|LABEL|V0 V1 ... (one value per slot)

Labels say what a step did: "in", "offset K" (Hillis-Steele), "leaves",
"up, stride K", "root := 0", "down, stride K" (Blelloch).

Exit status: 0 pictures written; 1 the trace could not be read (the line is named);
2 bad command line; 3 matplotlib is not importable.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_NO_PLOT = 0, 1, 2, 3
TITLES = {"hillis-steele-pingpong": "Hillis-Steele, ping-pong buffers",
          "hillis-steele-staged": "Hillis-Steele, in place, register-staged",
          "blelloch": "Blelloch: up-sweep, the identity at the root, down-sweep"}


class TraceError(ValueError):
    """A line of the trace that is not in the format."""


@dataclass
class Step:
    label: str
    values: list[float]

    @property
    def kind(self) -> tuple[str, int]:
        """("in" | "offset" | "leaves" | "up" | "root" | "down", the offset or stride, 0 if none)."""
        found = re.fullmatch(r"(offset|up, stride|down, stride) (\d+)", self.label)
        if found:
            return found.group(1).split(",")[0], int(found.group(2))
        if self.label in ("in", "leaves"):
            return self.label, 0
        if self.label.startswith("root"):
            return "root", 0
        raise TraceError(f"unknown step label {self.label!r}")


@dataclass
class Kernel:
    name: str
    steps: list[Step] = field(default_factory=list)


@dataclass
class Trace:
    program: str = ""
    gpu: str = ""
    kernels: list[Kernel] = field(default_factory=list)


def parse(text: str) -> Trace:
    """A trace file's contents; TraceError names the first line that is wrong."""
    trace = Trace()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("|")
        try:
            if parts[0] in ("program", "gpu") and len(parts) == 2:
                setattr(trace, parts[0], parts[1])
            elif parts[0] == "kernel" and len(parts) == 2 and parts[1]:
                trace.kernels.append(Kernel(parts[1]))
            elif parts[0] == "row" and len(parts) == 3:
                if not trace.kernels:
                    raise TraceError("a row before any kernel line")
                values = [float(v) for v in parts[2].split()]
                step = Step(parts[1], values)
                step.kind  # noqa: B018 - the label must be one we can draw
                steps = trace.kernels[-1].steps
                if steps and len(values) != len(steps[0].values):
                    raise TraceError(f"{len(values)} values where the kernel's first row has {len(steps[0].values)}")
                if not values:
                    raise TraceError("a row with no values")
                steps.append(step)
            else:
                raise TraceError("not program|, gpu|, kernel| or row|LABEL|VALUES")
        except (TraceError, ValueError) as exc:
            raise TraceError(f"line {number}: {exc}: {line!r}") from None
    if not trace.kernels or any(not k.steps for k in trace.kernels):
        raise TraceError("no kernel with any rows")
    return trace


def additions(previous: Step, step: Step) -> list[tuple[int, int, str]]:
    """The arrows from the previous row into this one: (from slot, to slot, "add" | "copy")."""
    width = len(step.values)
    kind, k = step.kind
    if kind == "offset":  # every lane from k on adds the lane k below it
        return [(i - k, i, "add") for i in range(k, width)]
    if kind == "up":  # slot k(2j+2)-1 += slot k(2j+1)-1
        return [(k * (2 * j + 1) - 1, k * (2 * j + 2) - 1, "add") for j in range(width // (2 * k))]
    if kind == "down":  # left child takes the node's value; the node adds the left child's old value
        arrows = []
        for j in range(width // (2 * k)):
            left, node = k * (2 * j + 1) - 1, k * (2 * j + 2) - 1
            arrows += [(node, left, "copy"), (left, node, "add")]
        return arrows
    return []


def draw(trace: Trace, kernel: Kernel, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, Rectangle

    width, rows = len(kernel.steps[0].values), len(kernel.steps)
    fig, ax = plt.subplots(figsize=(1.2 + 0.62 * width + 2.2, 0.9 + 0.75 * rows))
    for r, step in enumerate(kernel.steps):
        y = rows - 1 - r
        arrows = additions(kernel.steps[r - 1], step) if r > 0 else []
        written = {dst for _, dst, how in arrows if how == "add"}
        seeded = {width - 1} if step.kind[0] == "root" else set()
        for i, v in enumerate(step.values):
            colour = "#FDE68A" if i in seeded else "#BAE6FD" if i in written else "#F8FAFC"
            ax.add_patch(Rectangle((i - 0.4, y - 0.3), 0.8, 0.6, facecolor=colour, edgecolor="#0F172A", lw=0.8))
            ax.text(i, y, f"{v:g}", ha="center", va="center", fontsize=10)
        ax.text(-0.7, y, step.label, ha="right", va="center", fontsize=9, color="#334155")
        if r > 0:
            for src, dst, how in arrows:
                ax.add_patch(FancyArrowPatch((src, y + 1 - 0.3), (dst, y + 0.3), arrowstyle="-|>", mutation_scale=9,
                                             lw=1.0, color="#0891B2" if how == "add" else "#94A3B8",
                                             linestyle="-" if how == "add" else "--"))
    ax.set_xlim(-3.4, width - 0.4)
    ax.set_ylim(-1.0, rows - 0.4)
    ax.text(-3.3, -0.75, "blue: written by an addition in this step; solid arrow: the value added in"
            + ("; dashed: a value copied; yellow: the identity" if kernel.name == "blelloch" else ""),
            fontsize=8, color="#475569", va="center")
    ax.axis("off")
    title = TITLES.get(kernel.name, kernel.name)
    ax.set_title(f"{title}\n{trace.gpu} ({trace.program})", fontsize=10)
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for suffix in (".png", ".svg"):
        path = out / f"trace-{kernel.name}{suffix}"
        fig.savefig(path, dpi=130)
        written.append(path)
    plt.close(fig)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", type=Path, help="a file written by trace --trace-out FILE (cuda/trace.cu, hip/trace.cpp)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "build" / "a05-scan" / "trace")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return EXIT_PASS if exit_.code == 0 else EXIT_USAGE
    try:
        trace = parse(args.trace.read_text())
    except OSError as exc:
        print(f"trace_pictures: cannot read {args.trace}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    except TraceError as exc:
        print(f"trace_pictures: {args.trace}: {exc}", file=sys.stderr)
        return EXIT_FAIL
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("trace_pictures: matplotlib is not importable (pip install -r harness/requirements.txt)", file=sys.stderr)
        return EXIT_NO_PLOT
    try:
        written = [path for kernel in trace.kernels for path in draw(trace, kernel, args.out)]
    except OSError as exc:
        print(f"trace_pictures: cannot write into {args.out}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    print(f"trace_pictures: {len(written)} files in {args.out}: " + ", ".join(p.name for p in written))
    return EXIT_PASS


if __name__ == "__main__":
    sys.exit(main())
