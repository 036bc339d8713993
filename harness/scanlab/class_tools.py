"""What an instructor of a large class reaches for, around `grade.py class` (scanlab/classroom.py).

- course settings in a file: CLASS_DIR/course.toml or --config FILE (load_config);
- the layouts an LMS download comes in: a student folder holding one .zip (extracted into a
  private scratch under limits: safe_extract), Canvas's flat files, Gradescope's export with
  submission_metadata.yml (intake);
- a locale-independent natural order for every list of students (natural_key);
- the class summary: summary.md, summary.csv and a histogram of totals (write_summary);
- a similarity report per exercise: winnowed token k-grams less the starter's, Jaccard (fingerprints,
  similar_pairs). It flags pairs for a person to look at; it never changes a score.

harness/README.md, "Grading a class", documents every file these write.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import os
import re
import shutil
import stat
import statistics
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from .grading import SUBMISSION_LIMIT_BYTES, tomllib

# ---- natural order -----------------------------------------------------------------------------

_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str):
    """student2 before student10, case folded, the same on every machine (no locale): digit runs
    compare as numbers, the rest by code point of the case-folded text; the raw name breaks ties."""
    parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p.casefold()) for p in _DIGITS.split(name) if p)
    return parts, name


# ---- course.toml ----------------------------------------------------------------------------------

CONFIG_NAME = "course.toml"
CONFIG_KEYS = {"mode": str, "seed": int, "jobs": int, "exercises": list, "points": dict}


class ConfigError(Exception):
    """A bad course.toml: one line, status 2."""


def load_config(path: Path, modes, exercises, points_table) -> dict:
    """The settings of a course file, every key and type checked. points: {exercise: {check: P}}."""
    try:
        with open(path, "rb") as f:
            table = tomllib.load(f)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    for key, value in table.items():
        if key not in CONFIG_KEYS:
            raise ConfigError(f"{path}: unknown key {key!r} (known: {', '.join(CONFIG_KEYS)})")
        wanted = CONFIG_KEYS[key]
        if isinstance(value, bool) or not isinstance(value, wanted):
            raise ConfigError(f"{path}: {key} must be a {wanted.__name__}, not {value!r}")
    if "mode" in table and table["mode"] not in modes:
        raise ConfigError(f"{path}: mode must be one of {', '.join(modes)}, not {table['mode']!r}")
    if "jobs" in table and table["jobs"] < 1:
        raise ConfigError(f"{path}: jobs must be a whole number >= 1, not {table['jobs']!r}")
    if "exercises" in table:
        chosen = table["exercises"]
        bad = [e for e in chosen if e not in exercises]
        if bad or not chosen or len(set(chosen)) != len(chosen):
            raise ConfigError(f"{path}: exercises must be a list of distinct names from {', '.join(exercises)}, "
                              f"not {chosen!r}")
    for exercise, checks in table.get("points", {}).items():
        known = points_table.get(exercise)
        if exercise not in exercises or known is None or not isinstance(checks, dict):
            raise ConfigError(f"{path}: [points.{exercise}] must be a table of checks of one of "
                              f"{', '.join(exercises)}")
        for name, value in checks.items():
            if name not in known:
                raise ConfigError(f"{path}: [points.{exercise}] has no check {name!r} (see harness/points.toml)")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
                raise ConfigError(f"{path}: [points.{exercise}] {name!r} must be a number >= 0, not {value!r}")
    return table


# ---- archives --------------------------------------------------------------------------------------

ZIP_MAX_BYTES = 20 << 20  # the archive itself
ZIP_MAX_TOTAL = 20 << 20  # everything it unpacks to, counted as it is written (a header can lie)
ZIP_MAX_MEMBERS = 500
ZIP_MAX_RATIO = 200  # a member that unpacks to more than 200 times its compressed size: a bomb


class Refused(Exception):
    """An archive that is not unpacked: why, in one line."""


def safe_extract(archive: Path, target: Path) -> None:
    """Unpack `archive` into the empty folder `target`, or raise Refused (then `target` is emptied)."""
    try:
        size = archive.stat().st_size
        if size > ZIP_MAX_BYTES:
            raise Refused(f"{archive.name} is {size >> 20} MiB; at most {ZIP_MAX_BYTES >> 20} MiB is unpacked")
        with zipfile.ZipFile(archive) as z:
            members = z.infolist()
            if len(members) > ZIP_MAX_MEMBERS:
                raise Refused(f"{archive.name} holds {len(members)} entries; at most {ZIP_MAX_MEMBERS} are unpacked")
            total = 0
            for m in members:
                name = m.filename
                parts = name.replace("\\", "/").split("/")
                if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name) or ".." in parts or "\0" in name:
                    raise Refused(f"{archive.name}: the entry {name!r} points outside the archive's folder")
                kind = stat.S_IFMT(m.external_attr >> 16)  # 0: a zip from a system without Unix modes
                if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
                    raise Refused(f"{archive.name}: the entry {name!r} is a link or a special file")
                if m.file_size > ZIP_MAX_TOTAL or m.file_size > ZIP_MAX_RATIO * max(m.compress_size, 1024):
                    raise Refused(f"{archive.name}: the entry {name!r} would unpack to {m.file_size} bytes "
                                  "(a zip bomb?)")
            for m in members:
                rel = [p for p in m.filename.replace("\\", "/").split("/") if p not in ("", ".")]
                if not rel:
                    continue
                out = target.joinpath(*rel)
                if m.is_dir():
                    out.mkdir(parents=True, exist_ok=True)
                    continue
                out.parent.mkdir(parents=True, exist_ok=True)
                with z.open(m) as src, open(out, "xb") as dst:
                    while chunk := src.read(1 << 16):
                        total += len(chunk)
                        if total > ZIP_MAX_TOTAL:
                            raise Refused(f"{archive.name} unpacks to more than {ZIP_MAX_TOTAL >> 20} MiB (a zip bomb?)")
                        dst.write(chunk)
    except Refused:
        _empty(target)
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError, OSError, ValueError,
            EOFError) as exc:
        _empty(target)
        raise Refused(f"{archive.name} cannot be unpacked: {exc}") from None


def _empty(folder: Path) -> None:
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


# ---- LMS layouts ------------------------------------------------------------------------------------

GRADESCOPE_METADATA = "submission_metadata.yml"


@dataclass
class Intake:
    """Where each student's files are, and who they are."""
    sources: dict[str, Path] = field(default_factory=dict)  # student -> the folder discover() reads
    identity: dict[str, dict] = field(default_factory=dict)  # student -> {"name", "email", "sid", "canvas_id"}
    refused: dict[str, str] = field(default_factory=dict)  # student -> why their archive was not unpacked
    archive: dict[str, str] = field(default_factory=dict)  # student -> the archive's name (reports say so)
    used: set[str] = field(default_factory=set)  # names of CLASS_DIR entries these layouts took (not "ignored")
    layout: str = "folders"


# Canvas: "lastfirst_12345_67890_01_exclusive_to_inclusive.cpp", "lastfirst_LATE_12345_67890_...",
# a resubmission "..._01_exclusive_to_inclusive-1.cpp".
_CANVAS = re.compile(r"^(?P<name>[^_]+)_(?:late_)?(?P<id>\d+)_(?P<file>.+)$", re.I)


def canvas_file(name: str, wanted: dict[str, str]) -> tuple[str, str, str] | None:
    """(student name, Canvas id, exercise) for a Canvas flat file, or None."""
    m = _CANVAS.match(name)
    if not m:
        return None
    file = re.sub(r"-\d+(\.[^.]+)$", r"\1", m.group("file"))
    for exercise, exercise_file in wanted.items():
        if file == exercise_file or file.endswith("_" + exercise_file):
            return m.group("name"), m.group("id"), exercise
    return None


def _copy_bounded(src: Path, dst: Path) -> None:
    """The bytes a grader reads (so a file too large stays too large), never through a link."""
    fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        dst.write_bytes(f.read(SUBMISSION_LIMIT_BYTES + 1))


def read_metadata(path: Path) -> dict[str, list[dict]]:
    """submission folder -> its submitters ({"name", "email", "sid"}), from Gradescope's export."""
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        import yaml
    except ImportError:
        yaml = None
    if yaml is not None:
        try:
            data = yaml.safe_load(text) or {}
        except yaml.YAMLError:
            data = None
        if isinstance(data, dict):
            found = {}
            for folder, entry in data.items():
                people = entry.get(":submitters", entry.get("submitters", [])) if isinstance(entry, dict) else []
                found[str(folder)] = [{k: str(p.get(f":{k}", p.get(k, "")) or "") for k in ("name", "email", "sid")}
                                      for p in people or [] if isinstance(p, dict)]
            return found
    return _read_metadata_plainly(text)


def _read_metadata_plainly(text: str) -> dict[str, list[dict]]:
    """The few fields needed, without PyYAML: top-level keys, and `:name:`/`:email:`/`:sid:` under
    `:submitters:`."""
    found: dict[str, list[dict]] = {}
    folder, people = None, None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace() and line.rstrip().endswith(":"):
            folder, people = line.rstrip()[:-1].strip("'\""), None
            found[folder] = []
            continue
        m = re.match(r"^\s*(-\s+)?:?(name|email|sid):\s*(.*)$", line)
        if folder is None or not m:
            continue
        value = m.group(3).strip().strip("'\"")
        if m.group(1) or people is None:
            people = {"name": "", "email": "", "sid": ""}
            found[folder].append(people)
        people[m.group(2)] = value
    return found


def intake(class_dir: Path, scratch: Path, exercise_files: dict[str, str], students: list[str],
           skipped_files: list[str]) -> Intake:
    """Every student of `class_dir` whatever the layout: its folders (`students`, as list_students
    found them), a Gradescope export's folders mapped to names, Canvas's flat files grouped by
    name and id (copied into `scratch`), and a lone .zip in a folder unpacked into `scratch`."""
    got = Intake()
    metadata = class_dir / GRADESCOPE_METADATA
    names: dict[str, str] = {}
    if metadata.is_file():
        got.layout, got.used = "gradescope", {GRADESCOPE_METADATA}
        for folder, people in read_metadata(metadata).items():
            if folder in students and people:
                names[folder] = " & ".join(p["name"] or p["email"] or folder for p in people)
                got.identity[names[folder]] = {"name": names[folder], "email": people[0]["email"],
                                               "sid": people[0]["sid"], "submitters": people}
    for folder in students:
        student = names.get(folder, folder)
        if student in got.sources:  # two folders, one name: the folder's own name keeps them apart
            student = folder
        got.sources[student] = class_dir / folder
    canvas: dict[str, dict] = {}
    for name in skipped_files:
        hit = canvas_file(name, exercise_files)
        if hit is None or (class_dir / name).is_symlink() or not (class_dir / name).is_file():
            continue
        who, ident, exercise = hit
        student = f"{who}_{ident}"
        entry = canvas.setdefault(student, {"files": {}, "id": ident, "name": who})
        # the latest resubmission (-2 after -1 after none) wins
        if exercise not in entry["files"] or natural_key(name) > natural_key(entry["files"][exercise]):
            entry["files"][exercise] = name
        got.used.add(name)
    if canvas:
        got.layout = "canvas" if got.layout == "folders" and not students else got.layout
        for student, entry in canvas.items():
            folder = scratch / "canvas" / student
            folder.mkdir(parents=True)
            for exercise, name in entry["files"].items():
                _copy_bounded(class_dir / name, folder / exercise_files[exercise])
            got.sources.setdefault(student, folder)
            got.identity[student] = {"name": entry["name"], "canvas_id": entry["id"]}
    for student, source in list(got.sources.items()):
        if not source.is_relative_to(class_dir):
            continue
        try:
            entries = [e for e in os.scandir(source) if e.name != "__MACOSX" and not e.name.startswith(".")]
        except OSError:
            continue
        if len(entries) == 1 and entries[0].name.lower().endswith(".zip") and entries[0].is_file(follow_symlinks=False):
            target = scratch / "zip" / str(len(got.archive))
            target.mkdir(parents=True)
            got.archive[student] = entries[0].name
            try:
                safe_extract(Path(entries[0].path), target)
            except Refused as exc:
                got.refused[student] = str(exc)
            got.sources[student] = target
    return got


# ---- similarity -----------------------------------------------------------------------------------

SIMILARITY_K = 10  # tokens per k-gram
SIMILARITY_WINDOW = 6  # winnowing window (a shared run of k + w - 1 = 15 tokens is always seen)
SIMILARITY_THRESHOLD = 0.8  # Jaccard of two fingerprint sets, the starter's taken out
SIMILARITY_MIN_PRINTS = 8  # a pair is compared only when each has this many of its own fingerprints

_TOKEN = re.compile(r'//[^\n]*|/\*(?:[^*]|\*(?!/))*(?:\*/)?|<!--(?:[^-]|-(?!->))*(?:-->)?'
                    r'|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|\w+|[^\w\s]')


def tokens(text: str) -> list[str]:
    """C, C++, CUDA or Markdown as tokens: comments (and HTML comments) dropped, whitespace gone."""
    return [t for t in _TOKEN.findall(text) if not t.startswith(("//", "/*", "<!--"))]


def fingerprints(text: str, k: int = SIMILARITY_K, window: int = SIMILARITY_WINDOW) -> set[int]:
    """Winnowing (Schleimer, Wilkerson and Aiken, 2003): the smallest hash of every window of k-gram hashes."""
    toks = tokens(text)
    hashes = [int.from_bytes(hashlib.blake2b("\0".join(toks[i:i + k]).encode(), digest_size=4).digest(), "big")
              for i in range(len(toks) - k + 1)]
    if len(hashes) <= window:
        return set(hashes)
    return {min(hashes[i:i + window]) for i in range(len(hashes) - window + 1)}


def student_prints(path: Path, starter: set[int]) -> list[int]:
    with open(path, "rb") as f:
        text = f.read(SUBMISSION_LIMIT_BYTES).decode("utf-8", errors="replace")
    return sorted(fingerprints(text) - starter)


def similar_pairs(prints: dict[str, list[int]], threshold: float = SIMILARITY_THRESHOLD):
    """(similarity, a, b, shared) for every pair at or above the threshold, most similar first."""
    sets = {s: set(p) for s, p in prints.items() if len(p) >= SIMILARITY_MIN_PRINTS}
    index: dict[int, list[str]] = {}
    for student, found in sets.items():
        for h in found:
            index.setdefault(h, []).append(student)
    shared: dict[tuple[str, str], int] = {}
    for owners in index.values():
        if len(owners) > 50:  # a k-gram half the class has is the assignment's, not a copy
            continue
        for i, a in enumerate(owners):
            for b in owners[i + 1:]:
                pair = (a, b) if natural_key(a) < natural_key(b) else (b, a)
                shared[pair] = shared.get(pair, 0) + 1
    pairs = []
    for (a, b), common in shared.items():
        jaccard = common / len(sets[a] | sets[b])
        if jaccard >= threshold:
            pairs.append((jaccard, a, b, common))
    return sorted(pairs, key=lambda p: (-p[0], natural_key(p[1]), natural_key(p[2])))


# ---- the summary ---------------------------------------------------------------------------------

def likely_causes(check) -> list[str]:
    """The "likely cause:" lines of a check's instructor-side text."""
    found = []
    for line in f"{check.feedback}\n{check.detail}".splitlines():
        line = line.strip()
        if line.startswith("likely cause:"):
            cause = line[len("likely cause:"):].strip()
            if cause and cause not in found:
                found.append(cause)
    return found


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}".rstrip("0").rstrip(".")


def _stats(values: list[float]) -> dict:
    if not values:
        return {"count": 0, "mean": "", "median": "", "min": "", "max": ""}
    return {"count": len(values), "mean": _fmt(round(statistics.fmean(values), 2)),
            "median": _fmt(statistics.median(values)), "min": _fmt(min(values)), "max": _fmt(max(values))}


def text_histogram(values: list[float], maximum: float, bins: int = 5, width: int = 30) -> list[str]:
    """`bins` equal ranges from 0 to `maximum`, each a line with a bar of #, one # per student at
    most (scaled down to `width` for a large class)."""
    if not values:
        return ["  (no scores)"]
    top = maximum if maximum and maximum > 0 else max(values) or 1.0
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, max(0, int(v / top * bins)))] += 1
    biggest = max(counts)
    scale = min(1.0, width / biggest) if biggest else 1.0
    lines = []
    for i, n in enumerate(counts):
        lo, hi = top * i / bins, top * (i + 1) / bins
        close = "]" if i == bins - 1 else ")"
        bar = "#" * (math.ceil(n * scale) if n else 0)
        lines.append(f"  [{_fmt(round(lo, 2)):>5}, {_fmt(round(hi, 2)):>5}{close} {n:4d} {bar}")
    return lines


def write_summary(out_dir: Path, states: dict[str, dict], maxima: dict[str, float | None],
                  write) -> list[str]:
    """summary.md, summary.csv and total-scores.png (when matplotlib imports) from every student's
    state.json; the names of the files written."""
    exercises = [e for e in maxima]
    order = sorted(states, key=natural_key)
    md = ["# Class summary", "", f"{len(order)} students.", ""]
    table = io.StringIO()
    w = csv.writer(table, lineterminator="\n")
    w.writerow(["exercise", "check", "submitted", "graded", "not_graded", "failed", "mean", "median", "min", "max",
                "maximum", "commonest_cause", "commonest_cause_students"])
    totals = []
    for student in order:
        entries = states[student]["exercises"]
        if all(entries.get(e, {}).get("status") != "not graded" for e in exercises):
            totals.append(sum(entries.get(e, {}).get("score", 0.0) for e in exercises))
    maximum = sum(v for v in maxima.values() if v is not None)
    st = _stats(totals)
    md += ["## Total", "", f"{st['count']} students with every exercise graded: mean {st['mean']}, median "
           f"{st['median']}, min {st['min']}, max {st['max']} (of {_fmt(maximum)}).", "", "```",
           *text_histogram(totals, maximum), "```", ""]
    w.writerow(["total", "", len(order), st["count"], len(order) - st["count"], "", st["mean"], st["median"],
                st["min"], st["max"], _fmt(maximum), "", ""])
    for exercise in exercises:
        graded, not_graded, submitted, waiting = [], 0, 0, 0
        checks: dict[str, dict] = {}
        for student in order:
            entry = states[student]["exercises"].get(exercise, {})
            status = entry.get("status")
            if status != "not submitted":
                submitted += 1
            if status == "not graded":
                not_graded += 1
                waiting += entry.get("why") == "no GPU"  # classroom.NO_GPU: graded once a GPU machine reruns
            if status != "graded":
                continue
            graded.append(entry.get("score", 0.0))
            for check in entry.get("checks", []):
                c = checks.setdefault(check["name"], {"graded": 0, "failed": 0, "causes": {}})
                c["graded"] += 1
                if not check["passed"]:
                    c["failed"] += 1
                    for cause in check.get("causes", []):
                        c["causes"][cause] = c["causes"].get(cause, 0) + 1
        st = _stats(graded)
        top = maxima.get(exercise)
        md += [f"## {exercise}", "", f"{submitted} submitted, {len(graded)} graded"
               + (f", {not_graded} not graded" if not_graded else "")
               + (f" ({waiting} waiting for a GPU)" if waiting else "")
               + (f": mean {st['mean']}, median {st['median']}, min {st['min']}, max {st['max']} (of "
                  f"{_fmt(top) if top is not None else '?'})." if graded else "."), ""]
        if graded:
            md += ["```", *text_histogram(graded, top or 0), "```", ""]
        w.writerow([exercise, "", submitted, len(graded), not_graded, "", st["mean"], st["median"], st["min"],
                    st["max"], "" if top is None else _fmt(top), "", ""])
        failing = sorted(checks.items(), key=lambda kv: (-kv[1]["failed"], kv[0]))
        if any(c["failed"] for _, c in failing):
            md += ["| check | failed | commonest likely causes (students) |", "|---|---|---|"]
        for name, c in failing:
            causes = sorted(c["causes"].items(), key=lambda kv: (-kv[1], kv[0]))
            first = causes[0] if causes else ("", "")
            w.writerow([exercise, name, "", c["graded"], "", c["failed"], "", "", "", "", "", first[0], first[1]])
            if c["failed"]:
                said = "; ".join(f"{cause} ({n})" for cause, n in causes[:3]) or "-"
                md.append(f"| {name.replace('|', '/')} | {c['failed']} of {c['graded']} | {said.replace('|', '/')} |")
        if any(c["failed"] for _, c in failing):
            md.append("")
    md += similarity_section(states, exercises)
    written = ["summary.md", "summary.csv"]
    png = out_dir / "total-scores.png"
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        md += ["", f"No histogram picture: matplotlib cannot be imported here ({exc}); "
               "`pip install -r harness/requirements.txt` to have total-scores.png."]
    else:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.hist(totals, bins=max(1, min(20, int(maximum) or 1)), range=(0, maximum or 1), color="#4477aa")
        ax.set_xlabel(f"total score (of {_fmt(maximum)})")
        ax.set_ylabel("students")
        ax.set_title(f"{len(totals)} students")
        fig.tight_layout()
        tmp = png.with_name(".total-scores.png.tmp")
        fig.savefig(tmp, format="png", metadata={"Software": None})
        plt.close(fig)
        if png.is_file() and png.read_bytes() == tmp.read_bytes():
            tmp.unlink()  # the same picture: left alone, as every unchanged output is
        else:
            os.chmod(tmp, 0o644)
            os.replace(tmp, png)
        md += ["", "Histogram of totals: total-scores.png."]
        written.append("total-scores.png")
    written += write_leaderboard(out_dir, states, write)
    write(out_dir / "summary.md", "\n".join(md) + "\n")
    write(out_dir / "summary.csv", table.getvalue())
    return written


LEADERBOARD_COLUMNS = ["rank", "student", "exercise", "size", "gbps", "ms", "against_cub", "of_copy", "cub_gbps",
                       "copy_gbps"]


def leaderboard_rows(states: dict[str, dict]) -> list[list]:
    """A row per (student, exercise, timed size) of every submission that passed all its checks (only those
    carry "speed" in state.json), ranked per exercise by GB/s at its largest size, fastest first."""
    rows = []
    for exercise in sorted({e for st in states.values() for e, entry in st["exercises"].items() if entry.get("speed")}):
        passing = {s: states[s]["exercises"][exercise]["speed"] for s in states
                   if states[s]["exercises"].get(exercise, {}).get("speed")}
        largest = max((size for sp in passing.values() for size in sp), key=lambda size: next(
            sp[size]["n"] for sp in passing.values() if size in sp))
        order = sorted(passing, key=lambda s: (-passing[s].get(largest, {}).get("gbps", 0.0), natural_key(s)))
        for rank, student in enumerate(order, start=1):
            for size, row in sorted(passing[student].items(), key=lambda kv: kv[1]["n"]):
                rows.append([rank, student, exercise, size, *(row[c] for c in LEADERBOARD_COLUMNS[4:])])
    return rows


def write_leaderboard(out_dir: Path, states: dict[str, dict], write) -> list[str]:
    """leaderboard.csv and leaderboard.png (GB/s by student at the largest timed size, CUB's and the copy's
    medians as lines) when a passing submission was timed; the names of the files written."""
    rows = leaderboard_rows(states)
    if not rows:
        return []
    table = io.StringIO()
    w = csv.writer(table, lineterminator="\n")
    w.writerow(LEADERBOARD_COLUMNS)
    w.writerows(rows)
    write(out_dir / "leaderboard.csv", table.getvalue())
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return ["leaderboard.csv"]
    largest = max(rows, key=lambda r: (states[r[1]]["exercises"][r[2]]["speed"][r[3]]["n"]))[3]
    top = [r for r in rows if r[3] == largest]
    fig, ax = plt.subplots(figsize=(max(4.0, 0.35 * len(top) + 2), 3.8))
    ax.bar(range(len(top)), [r[4] for r in top], color="#4477aa")
    ax.set_xticks(range(len(top)), [r[1] for r in top], rotation=60, ha="right", fontsize=7)
    for column, colour, label in ((8, "#cc6677", "CUB"), (9, "#228833", "copy")):
        ax.axhline(statistics.median(r[column] for r in top), color=colour, linestyle="--", label=f"{label} (median)")
    ax.set_ylabel(f"GB/s at n={largest}")
    ax.set_title(f"{top[0][2]}: {len(top)} passing submissions, fastest first")
    ax.legend(fontsize=7)
    fig.tight_layout()
    png = out_dir / "leaderboard.png"
    tmp = png.with_name(".leaderboard.png.tmp")
    fig.savefig(tmp, format="png", metadata={"Software": None})
    plt.close(fig)
    if png.is_file() and png.read_bytes() == tmp.read_bytes():
        tmp.unlink()
    else:
        os.chmod(tmp, 0o644)
        os.replace(tmp, png)
    return ["leaderboard.csv", "leaderboard.png"]


def similarity_section(states: dict[str, dict], exercises: list[str]) -> list[str]:
    md = ["## Similar submissions", "",
          f"Pairs whose token fingerprints (comments and whitespace dropped, the starter's own taken out; "
          f"{SIMILARITY_K}-grams, winnowing window {SIMILARITY_WINDOW}) have a Jaccard similarity of at least "
          f"{SIMILARITY_THRESHOLD:g}. A flag for a person to look at: scores are never changed.", ""]
    any_pair = False
    for exercise in exercises:
        prints = {s: st["exercises"].get(exercise, {}).get("fingerprints") for s, st in states.items()}
        pairs = similar_pairs({s: p for s, p in prints.items() if p})
        for jaccard, a, b, common in pairs:
            any_pair = True
            md.append(f"- {exercise}: {a} and {b}: {jaccard:.2f} ({common} shared fingerprints)")
    if not any_pair:
        md.append("No pair above the threshold.")
    return md + [""]


# ---- grade-book shapes ------------------------------------------------------------------------------

def canvas_rows(rows, identity: dict[str, dict], exercises: list[str]) -> list[list[str]]:
    """Canvas's grade-book import: Student, ID, SIS User ID, SIS Login ID, Section, then one column
    per exercise and the total (blank cells stay blank: Canvas leaves them alone)."""
    out = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *exercises, "scan-lab total"]]
    for row in rows:
        who = identity.get(row.student, {})
        out.append([who.get("name", row.student), who.get("canvas_id", ""), who.get("sid", ""),
                    who.get("email", ""), "", *(row.cells[e] for e in exercises), row.total_cell])
    return out


def gradescope_rows(rows, identity: dict[str, dict], exercises: list[str]) -> list[list[str]]:
    """Gradescope's "upload scores" shape: Name, Email, SID, then each exercise and Total Score."""
    out = [["Name", "Email", "SID", *exercises, "Total Score"]]
    for row in rows:
        who = identity.get(row.student, {})
        out.append([who.get("name", row.student), who.get("email", ""), who.get("sid", ""),
                    *(row.cells[e] for e in exercises), row.total_cell])
    return out
