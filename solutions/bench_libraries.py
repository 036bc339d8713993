#!/usr/bin/env python3
"""The library benchmark of stretch drill 05: one run, one GPU, every scan we have.

Rows, for n = 2^16 .. 2^28:
  copy           cudaMemcpyAsync device to device of the same bytes (the ceiling)
  look-back      solutions/05_lookback_scan.cu, the single-pass scan (float32 and int32), built
                 into drill 05's bench program (exercises/bench/05_lookback_scan_bench.cu)
  CUB, Thrust    cub::DeviceScan::{Exclusive,Inclusive}Sum and thrust::{exclusive,inclusive}_scan,
                 timed by the same program, in the same way
  3-phase 256x1  a05-scan/cuda/scan.cu Part 3 at its default shape (one element a thread)
  3-phase 256x8  ... with 8 elements a thread, and 128x8 with the warp block scan, its
                 fastest shape on the H200 (float32 and exclusive only: Lab 1 scans floats)
  torch.cumsum   when torch with CUDA is importable (an inclusive scan; it has no exclusive one)
  pipelined      with --pipelined BIN (solutions/experiments/pipelined_bench, sm_90): the persistent,
                 pipelined scan of solutions/pipelined_scan.cu forced at every n, and "pipelined
                 dispatch", its dispatcher (drill 05's look-back below 2^PIPE_CROSSOVER_LOG2)

Every implementation is checked exactly against the CPU at every size before it is timed (the
two C++ programs check their own and exit 1 on a mismatch; torch is checked here). GB/s counts
n * 4 bytes read plus n * 4 written. Writes libraries.csv, and libraries.png when matplotlib is
importable (or later: --plot CSV).

    make -C solutions bench-libraries                  builds the programs, runs this
    python3 bench_libraries.py --lookback B1 --scan B2 [--pipelined B3] [--out DIR] [--min 16] [--reps 20]
    python3 bench_libraries.py --plot DIR/libraries.csv   redraw the PNG from a CSV
    python3 bench_libraries.py --parts pipelined --pipelined B3 --reuse results/h200-libraries.csv
        time only the pipelined bench (its copy, look-back, CUB, pipelined and dispatch rows) and
        take every other row from an earlier run's CSV (its ratios recomputed against this run's
        copy and CUB; the CSV's first line names both runs)

Exit status: 0 every implementation matched at every size; 1 a mismatch or a program failed;
2 bad command line; 3 no usable GPU.
"""

from __future__ import annotations

import argparse
import csv
import re
import statistics
import subprocess
import sys
from pathlib import Path

EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_NO_GPU = 0, 1, 2, 3
FIELDS = ["n", "type", "scan", "implementation", "ms", "gb_per_s", "of_copy", "vs_cub"]
PARTS = ("lookback", "three-phase", "torch", "pipelined")
PIPELINED_ROWS = {"pipelined": "pipelined", "dispatch": "pipelined dispatch"}  # its CSV's name: ours
THREE_PHASE = [("3-phase 256x1", []), ("3-phase 256x8", ["--items", "8"]),
               ("3-phase 128x8 warp", ["--threads", "128", "--items", "8", "--block-scan", "warp"])]
EXACT_LIMIT = 1 << 24  # float32 holds every integer up to here
COLOURS = {"copy": "tab:gray", "look-back": "tab:red", "CUB": "tab:blue", "Thrust": "tab:cyan",
           "torch.cumsum": "tab:purple", "3-phase 256x1": "tab:olive", "3-phase 256x8": "tab:green",
           "3-phase 128x8 warp": "tab:brown", "pipelined": "tab:orange", "pipelined dispatch": "gold"}


def fail(message: str, status: int = EXIT_FAIL) -> None:
    print(f"bench_libraries: {message}", file=sys.stderr)
    sys.exit(status)


def gpu_title() -> str:
    """'<GPU>, driver <d>, CUDA <c>' from nvidia-smi."""
    try:
        query = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                               capture_output=True, text=True, timeout=60)
        banner = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        fail("nvidia-smi is missing: this benchmark needs an NVIDIA GPU", EXIT_NO_GPU)
    if query.returncode != 0 or not query.stdout.strip():
        fail("nvidia-smi lists no GPU", EXIT_NO_GPU)
    name, _, driver = query.stdout.splitlines()[0].partition(",")
    cuda = re.search(r"CUDA Version:\s*([\d.]+)", banner)
    return f"{name.strip()}, driver {driver.strip()}, CUDA {cuda.group(1) if cuda else '?'}"


def run_lookback(binary: Path, out: Path, low: int, reps: int, seed: int) -> list[dict]:
    table = out / "lookback.csv"
    proc = subprocess.run([str(binary), "--bench", "--bench-min", str(low), "--csv", str(table), "--reps", str(reps),
                           "--seed", str(seed)], capture_output=True, text=True)
    (out / "lookback.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode == EXIT_NO_GPU:
        fail(f"{binary.name}: {proc.stderr.strip()}", EXIT_NO_GPU)
    if proc.returncode != 0:
        fail(f"{binary.name} exited {proc.returncode} (a mismatch or a CUDA error): see {out / 'lookback.log'}")
    rows = []
    with table.open() as f:
        for r in csv.DictReader(f):
            rows.append({"n": int(r["n"]), "type": r["type"], "scan": r["scan"], "implementation": r["implementation"],
                         "ms": float(r["ms"]), "gb_per_s": float(r["gb_per_s"])})
    return rows


def run_pipelined(binary: Path, out: Path, low: int, high: int, reps: int, seed: int,
                  with_library_rows: bool) -> tuple[list[dict], str]:
    """The pipelined bench's rows (it checks every size exactly first and exits 1 on a mismatch):
    pipelined and its dispatcher; with_library_rows also its copy, look-back and CUB rows.
    ([], why) on a GPU it can not run on (it is sm_90 only) when other rows stand without it."""
    table = out / "pipelined.csv"
    proc = subprocess.run([str(binary), "--bench", "--bench-min", str(low), "--bench-max", str(high), "--csv", str(table),
                           "--reps", str(reps), "--seed", str(seed), "--timeout", "60"], capture_output=True, text=True)
    (out / "pipelined.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode == EXIT_NO_GPU:
        if with_library_rows:
            fail(f"{binary.name}: {proc.stderr.strip()}", EXIT_NO_GPU)
        return [], proc.stderr.strip() or "no usable GPU for it"
    if proc.returncode != 0:
        fail(f"{binary.name} exited {proc.returncode} (a mismatch, a hang or a CUDA error): see {out / 'pipelined.log'}")
    rows = []
    with table.open() as f:
        for r in csv.DictReader(f):
            name = PIPELINED_ROWS.get(r["implementation"], r["implementation"] if with_library_rows else None)
            if name is not None:
                rows.append({"n": int(r["n"]), "type": r["type"], "scan": r["scan"], "implementation": name,
                             "ms": float(r["ms"]), "gb_per_s": float(r["gb_per_s"])})
    return rows, "ran"


def reuse_rows(table: Path, have: list[dict]) -> tuple[list[dict], str]:
    """Every row of an earlier run's CSV that this run did not time, and that run's title."""
    lines = table.read_text().splitlines()
    title = lines[0][2:] if lines and lines[0].startswith("# ") else "?"
    done = {(r["n"], r["type"], r["scan"], r["implementation"]) for r in have}
    rows = []
    for r in csv.DictReader(line for line in lines if not line.startswith("#")):
        key = (int(r["n"]), r["type"], r["scan"], r["implementation"])
        if key not in done:
            rows.append({"n": key[0], "type": key[1], "scan": key[2], "implementation": key[3], "ms": float(r["ms"]),
                         "gb_per_s": float(r["gb_per_s"])})
    return rows, title.split(" (rows")[0]


def run_three_phase(binary: Path, out: Path, low: int, high: int, reps: int) -> list[dict]:
    rows = []
    log = []
    for k in range(low, high + 1):
        n = 1 << k
        for label, extra in THREE_PHASE:
            proc = subprocess.run([str(binary), "--part", "3", "--n", str(n), "--reps", str(reps), *extra],
                                  capture_output=True, text=True)
            log.append(f"==== {label}, n = 2^{k}\n{proc.stdout}{proc.stderr}")
            if proc.returncode != 0:
                (out / "three_phase.log").write_text("".join(log))
                fail(f"{binary.name} --part 3 --n {n} {' '.join(extra)} exited {proc.returncode}: "
                     f"see {out / 'three_phase.log'}", EXIT_NO_GPU if proc.returncode == EXIT_NO_GPU else EXIT_FAIL)
            found = re.search(r"^3-phase scan\s+([\d.]+)\s+\d+\s+([\d.]+)", proc.stdout, re.M)
            if not found:
                fail(f"cannot read the 3-phase timing row of {binary.name} --part 3 --n {n}")
            rows.append({"n": n, "type": "float32", "scan": "exclusive", "implementation": label,
                         "ms": float(found.group(1)), "gb_per_s": float(found.group(2))})
    (out / "three_phase.log").write_text("".join(log))
    return rows


def run_torch(low: int, high: int, reps: int, seed: int) -> tuple[list[dict], str]:
    """torch.cumsum rows, each checked exactly first; ([], why) without torch or CUDA."""
    try:
        import torch
    except ImportError:
        return [], "torch is not importable"
    if not torch.cuda.is_available():
        return [], "torch has no CUDA device"
    gen = torch.Generator().manual_seed(seed)
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4 + (1 << 20), dtype=torch.int32,
                        device="cuda")
    rows = []
    for k in range(low, high + 1):
        n = 1 << k
        for name, dtype in (("float32", torch.float32), ("int32", torch.int32)):
            values = torch.randint(0, 4, (n,), generator=gen, dtype=torch.int64)
            if dtype == torch.float32 and 3 * n > EXACT_LIMIT:  # keep the float total exact (<= 2^24)
                values = (torch.rand(n, generator=gen) < EXACT_LIMIT / (2 * n)).to(torch.int64)
            expected = torch.cumsum(values, 0)
            x = values.to(dtype).cuda()
            got = torch.cumsum(x, 0, dtype=dtype)
            torch.cuda.synchronize()
            if not torch.equal(got.cpu().to(torch.int64), expected):
                bad = int((got.cpu().to(torch.int64) != expected).nonzero()[0])
                fail(f"torch.cumsum {name} n={n}: element {bad} is {got[bad].item()}, should be {expected[bad].item()}")
            times = []
            for r in range(reps + 2):  # two warm-up runs
                flush.zero_()
                start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                torch.cumsum(x, 0, dtype=dtype, out=got)
                stop.record()
                stop.synchronize()
                if r >= 2:
                    times.append(start.elapsed_time(stop))
            ms = statistics.median(times)
            rows.append({"n": n, "type": name, "scan": "inclusive", "implementation": "torch.cumsum", "ms": ms,
                         "gb_per_s": 2 * n * 4 / (ms * 1e6)})
    return rows, f"torch {torch.__version__}"


def add_ratios(rows: list[dict]) -> list[dict]:
    copy = {r["n"]: r["gb_per_s"] for r in rows if r["implementation"] == "copy"}
    cub = {(r["n"], r["type"], r["scan"]): r["ms"] for r in rows if r["implementation"] == "CUB"}
    for r in rows:
        r["of_copy"] = r["gb_per_s"] / copy[r["n"]] if r["n"] in copy else float("nan")
        key = (r["n"], r["type"], r["scan"])
        r["vs_cub"] = cub[key] / r["ms"] if key in cub else float("nan")
    return rows


def print_table(rows: list[dict]) -> None:
    header = ["n", "type", "scan", "implementation", "ms", "GB/s", "of copy", "vs CUB"]
    cells = [[f"2^{r['n'].bit_length() - 1}", r["type"], r["scan"], r["implementation"], f"{r['ms']:.4f}",
              f"{r['gb_per_s']:.1f}", f"{r['of_copy']:.2f}", "-" if r["vs_cub"] != r["vs_cub"] else f"{r['vs_cub']:.2f}x"]
             for r in rows]
    width = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]
    for line in [header, ["-" * w for w in width], *cells]:
        print("  ".join(c.ljust(w) for c, w in zip(line, width)).rstrip())


def plot(table: Path, title: str | None = None) -> Path | None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench_libraries: matplotlib is not importable: no PNG (draw it later with --plot CSV)")
        return None
    with table.open() as f:
        lines = f.read().splitlines()
    title = title or (lines[0][2:] if lines and lines[0].startswith("# ") else "")
    rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    fig, axes = plt.subplots(1, 2, figsize=(13, 5), sharey=True)
    for ax, dtype in zip(axes, ("float32", "int32")):
        names = []
        for r in rows:
            if r["implementation"] not in names and r["type"] in (dtype, "-"):
                names.append(r["implementation"])
        for name in names:
            mine = [r for r in rows if r["implementation"] == name and r["type"] in (dtype, "-")
                    and r["scan"] in ("exclusive", "-", "inclusive" if name == "torch.cumsum" else "exclusive")]
            mine.sort(key=lambda r: int(r["n"]))
            style = "--" if name == "copy" else "-"
            ax.plot([int(r["n"]) for r in mine], [float(r["gb_per_s"]) for r in mine], style, marker="o",
                    markersize=3, label=name, color=COLOURS.get(name, "black"))
        ax.set_xscale("log", base=2)
        ax.set_xlabel("n (elements)")
        ax.set_title(f"{dtype}, exclusive (torch.cumsum: inclusive)")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("GB/s (n*4 read + n*4 written)")
    for ax in axes:
        ax.legend(loc="upper left", fontsize=8)
    fig.suptitle(f"Scan throughput: {title}")
    fig.tight_layout()
    png = table.with_suffix(".png")
    fig.savefig(png, dpi=120)
    return png


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lookback", type=Path, help="the built solutions/05_lookback_scan")
    parser.add_argument("--scan", type=Path, help="the built a05-scan/cuda/scan")
    parser.add_argument("--pipelined", type=Path, help="the built experiments/pipelined_bench (sm_90): adds its rows")
    parser.add_argument("--parts", default=None,
                        help=f"comma-separated subset of {','.join(PARTS)} (default: all; pipelined with --pipelined)")
    parser.add_argument("--reuse", type=Path, metavar="CSV",
                        help="take the rows this run does not time from an earlier run's CSV")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "build" / "bench-libraries")
    parser.add_argument("--min", type=int, default=16, help="smallest n = 2^MIN (10..28, default 16)")
    parser.add_argument("--max", type=int, default=28, help="largest n = 2^MAX for the 3-phase and torch rows")
    parser.add_argument("--reps", type=int, default=20, help="timed repetitions, median reported (default 20)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--plot", type=Path, metavar="CSV", help="only draw the PNG of an existing CSV")
    try:
        args = parser.parse_args()
    except SystemExit as exit_:
        return EXIT_PASS if exit_.code == 0 else EXIT_USAGE
    if args.plot:
        if not args.plot.is_file():
            fail(f"{args.plot} does not exist", EXIT_USAGE)
        png = plot(args.plot)
        return EXIT_PASS if png else EXIT_FAIL
    parts = set(args.parts.split(",")) if args.parts else set(PARTS[:3]) | ({"pipelined"} if args.pipelined else set())
    if not parts or not parts <= set(PARTS):
        fail(f"--parts: a comma-separated subset of {','.join(PARTS)}", EXIT_USAGE)
    needed = {"lookback": args.lookback, "three-phase": args.scan, "pipelined": args.pipelined}
    if "lookback" in parts and not args.lookback or "three-phase" in parts and not args.scan:
        fail("--lookback and --scan name the two built programs (or use --plot CSV)", EXIT_USAGE)
    if "pipelined" in parts and not args.pipelined:
        fail("--parts pipelined needs --pipelined BIN", EXIT_USAGE)
    if not 10 <= args.min <= args.max <= 28 or not 1 <= args.reps <= 1000:
        fail("want 10 <= --min <= --max <= 28 and 1 <= --reps <= 1000", EXIT_USAGE)
    for part, binary in needed.items():
        if part in parts and not binary.is_file():
            fail(f"{binary} is not built", EXIT_USAGE)
    if args.reuse and not args.reuse.is_file():
        fail(f"{args.reuse} does not exist", EXIT_USAGE)
    title = gpu_title()
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"GPU: {title}; n = 2^{args.min} .. 2^{args.max}; median of {args.reps}; results in {args.out}")
    rows = []
    if "lookback" in parts:
        rows += run_lookback(args.lookback, args.out, args.min, args.reps, args.seed)
    pipelined_note = "not asked for"
    if "pipelined" in parts:  # without the look-back bench, its copy / look-back / CUB rows stand in
        found, pipelined_note = run_pipelined(args.pipelined, args.out, args.min, args.max, args.reps, args.seed,
                                              "lookback" not in parts)
        rows += found
    rows = [r for r in rows if r["n"] <= 1 << args.max]
    if "three-phase" in parts:
        rows += run_three_phase(args.scan, args.out, args.min, args.max, args.reps)
    torch_rows, torch_note = run_torch(args.min, args.max, args.reps, args.seed) if "torch" in parts else ([], "not asked for")
    rows += torch_rows
    if args.reuse:
        old, old_title = reuse_rows(args.reuse, rows)
        rows += old
        title += f" (rows not timed in this run: from {args.reuse.name}, {old_title})"
    rows = add_ratios(rows)
    rows.sort(key=lambda r: (r["n"], r["type"], r["scan"], r["implementation"]))
    table = args.out / "libraries.csv"
    with table.open("w", newline="") as f:
        f.write(f"# {title}\n")
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        for r in rows:
            writer.writerow({k: (f"{r[k]:.5f}" if isinstance(r[k], float) else r[k]) for k in FIELDS})
    print_table([r for r in rows if r["n"] in (1 << args.min, 1 << 22, 1 << args.max)])
    print(f"torch.cumsum: {torch_note if torch_rows else 'not run: ' + torch_note}")
    print(f"pipelined: {pipelined_note if pipelined_note == 'ran' else 'not run: ' + pipelined_note}")
    png = plot(table, title)
    print(f"every implementation matched the CPU at every size; wrote {table}" + (f" and {png}" if png else ""))
    return EXIT_PASS


if __name__ == "__main__":
    sys.exit(main())
