"""The corpus: hostile, broken and correct-but-unusual submissions, graded end to end.

harness/corpus/manifest.toml lists every file under harness/corpus/<exercise>/
with the only right verdict. Each entry is graded exactly as an instructor would
(`python3 harness/grade.py EXERCISE FILE --seed S --json results.json`, as a
subprocess, from a scratch folder holding a forged results.json), and then:

- the exit status and the verdict are right (0 pass, 1 fail; never 2 or 3),
  with the exact failing checks and the phrases the manifest names: anywhere
  in the report (`mentions`), in the notes, or in one check's feedback (the
  grader's diagnosis), and the reproduce line under each failing check;
- results.json was replaced, is Gradescope's format and adds up;
- the repository is byte-identical (every file hashed before and after);
- no process is left whose comm starts with "evil-" (the corpus names every
  process it starts that way) or that runs under a sandbox uid;
- after a hostile entry, the untouched starter in the same checkout still fails.

`@REPO@` in a corpus file is replaced with the repository's absolute path first:
the worst case, a student who knows where the grader lives. Every hostile file
is bounded (see its header) so that even an unsandboxed grader cannot harm the
machine, but run this module on a scratch copy of the repository when trying a
grader that is not known to be safe. Day 31 entries need an NVIDIA GPU; the
drill entries run on any machine with g++ (CI).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from scanlab import grading, registry
from scanlab.paths import REPO
from scanlab.source import built_from_base

CORPUS = REPO / "harness" / "corpus"
GRADE = REPO / "harness" / "grade.py"
EXERCISES = tuple(e for e in registry.EXERCISES if (CORPUS / e).is_dir())  # those the corpus holds
STARTERS = {e: registry.EXERCISES[e].starter for e in EXERCISES}
KINDS = ("correct", "wrong", "hostile")
DEFAULT_SEED = 11
# Generous: a grade of a well-behaved drill takes seconds; a hostile one may run into
# several limits (a compile's 40 s wall, a run's 3 s), and a Day 31 one into the GPU limit (60 s).
GRADE_TIMEOUT_S = {e: 900 if registry.EXERCISES[e].needs_gpu else 600 if registry.EXERCISES[e].runs_code else 120
                   for e in EXERCISES}
SPEED_NOISE = 0.1  # drill 05: how far two gradings of one file may differ in a speed check's points
FORGED = {"score": 1000, "tests": []}
# The grades this module runs draw their uids from a range of their own (SCANLAB_UID_RANGE, outside
# the default 200000-299999), so "no process left alive" can look at exactly their processes,
# whatever else grades on this machine at the same time.
SANDBOX_UIDS = range(400_000 + (os.getpid() % 500) * 1000, 400_000 + (os.getpid() % 500) * 1000 + 1000)
AS_ROOT = os.geteuid() == 0
GRADE_ENV = {**os.environ, "SCANLAB_UID_RANGE": f"{SANDBOX_UIDS.start}-{SANDBOX_UIDS.stop - 1}"}
SKIPPED_IN_HASH = {".git", ".venv", "__pycache__", ".pytest_cache", "build"}
# What a manifest may ask the report to mention: limits, signals, CUDA errors and the
# graders' diagnoses, all phrases the graders promise to keep.
STABLE_PHRASES = {
    "time limit", "memory limit", "process limit", "file size limit", "SIGSEGV", "SIGABRT", "CUDA_ERROR_",
    "not run", "your main() is not used", "discarded",
    "right everywhere but the last element", "only the last element is wrong", "the identity 0", "changed its input", "shifted the wrong way",
    "is not associative", "That is a left-to-right loop", "is missing from the open first segment",
    "every total is short by its tile's last input element", "this is the INCLUSIVE scan",
    "not a number", "barriers/tile column", "\\x1b[2J", "\\u202e",
    "disk limit 512 MiB exceeded", "did not compile (", "the compiler ran out of its 2 GiB memory limit",
    "No such file or directory",
    "not timed", "is not the exact scan of its input", "the timed run failed", "separate compilation mode",
}
# What no report may print raw: control characters but newline and tab, and bidi controls. A
# submission's text (prose, compiler messages, program output) reaches the report; these would let
# it redraw the instructor's terminal or reorder a line (scanlab.grading.visible escapes them).
RAW_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


# ---- the manifest --------------------------------------------------------------------

def load_manifest() -> list[dict]:
    with open(CORPUS / "manifest.toml", "rb") as f:
        entries = grading.tomllib.load(f)["submission"]
    for entry in entries:
        entry.setdefault("failing", None)
        entry.setdefault("mentions", [])
        entry.setdefault("seed", DEFAULT_SEED)
        entry.setdefault("speed", None)
        entry.setdefault("base", None)
        entry.setdefault("notes", [])
        entry.setdefault("reproduce", False)
        entry.setdefault("diagnosis", {})
    return entries


MANIFEST = load_manifest()


def entry_param(entry: dict):
    marks = [pytest.mark.gpu, pytest.mark.cuda] if entry["exercise"] in ("day31", "drill05") else [pytest.mark.slow]
    return pytest.param(entry, marks=marks, id=f"{entry['exercise']}-{Path(entry['file']).stem}")


def test_manifest_lists_exactly_the_corpus_files():
    listed = [entry["file"] for entry in MANIFEST]
    duplicates = [name for name, count in Counter(listed).items() if count > 1]
    assert not duplicates, f"listed twice in manifest.toml: {duplicates}"
    on_disk = {str(p.relative_to(CORPUS)) for ex in EXERCISES for p in (CORPUS / ex).iterdir() if p.is_file()}
    assert set(listed) == on_disk, (f"in the folder but not the manifest: {sorted(on_disk - set(listed))}; "
                                    f"in the manifest but not the folder: {sorted(set(listed) - on_disk)}")
    stray = sorted(p.name for p in CORPUS.iterdir()
                   if p.name not in {*EXERCISES, "manifest.toml", ".gitattributes"})
    assert not stray, f"harness/corpus/ holds files the test never grades: {stray}"


def test_the_corpus_is_the_one_folder_of_known_submissions():
    """The near-solutions with one mistake each (once harness/planted/) are corpus entries too,
    so one manifest states every expected verdict and diagnosis, and this module checks them all."""
    assert not (REPO / "harness" / "planted").exists(), "harness/planted/ is back: move its files here"
    others = [p.name for p in (REPO / "harness").glob("test_*.py")
              if p.name != Path(__file__).name and 'harness" / "planted"' in p.read_text()]
    assert not others, f"test modules grading a folder of submissions besides the corpus: {others}"


def test_manifest_covers_every_kind_of_every_exercise():
    assert len(MANIFEST) >= 40, f"the corpus has {len(MANIFEST)} entries; issue 9 asks for at least 40"
    kinds = Counter((entry["exercise"], entry["kind"]) for entry in MANIFEST)
    missing = [f"{ex}/{kind}" for ex in EXERCISES for kind in KINDS if kinds[ex, kind] == 0]
    assert not missing, f"no corpus entry of these exercise/kind pairs: {missing}"


@pytest.mark.parametrize("entry", MANIFEST, ids=lambda e: f"{e['exercise']}-{Path(e['file']).stem}")
def test_manifest_entry_is_well_formed(entry):
    assert entry["exercise"] in EXERCISES, f"{entry['file']}: unknown exercise {entry['exercise']!r}"
    assert entry["file"].startswith(entry["exercise"] + "/"), f"{entry['file']}: not in its exercise's folder"
    assert entry["kind"] in KINDS, f"{entry['file']}: kind must be one of {KINDS}, not {entry['kind']!r}"
    assert entry["verdict"] in ("pass", "fail"), f"{entry['file']}: verdict must be pass or fail"
    if entry["kind"] == "correct":
        assert entry["verdict"] == "pass", f"{entry['file']}: a correct submission must pass"
    if entry["kind"] == "wrong":
        assert entry["verdict"] == "fail", f"{entry['file']}: a wrong submission must fail"
    if entry["failing"] is not None:
        assert entry["verdict"] == "fail" and entry["failing"], f"{entry['file']}: `failing` only with a fail"
    if entry["reproduce"]:
        assert entry["verdict"] == "fail", f"{entry['file']}: `reproduce` only with a fail"
    phrases = [*entry["notes"], *(p for ps in entry["diagnosis"].values() for p in ps)]
    assert all(isinstance(ps, list) and ps for ps in entry["diagnosis"].values()), \
        f"{entry['file']}: each [submission.diagnosis] check needs a list of phrases"
    assert all(isinstance(p, str) and p for p in phrases), f"{entry['file']}: an empty or non-text phrase"
    unstable = [m for m in entry["mentions"] if m not in STABLE_PHRASES]
    assert not unstable, f"{entry['file']}: mentions outside the stable vocabulary: {unstable}"
    # The header comment is the file's own statement of its verdict: the two must agree.
    text = (CORPUS / entry["file"]).read_bytes().decode("utf-8-sig", errors="replace")  # h_binary: a text header only
    stated = re.findall(r"Right verdict: (PASS|FAIL)", text[:1500])
    assert stated == [entry["verdict"].upper()], (f"{entry['file']}: its header says Right verdict: "
                                                  f"{stated or 'nothing'}, the manifest says {entry['verdict']}")


# ---- what a grade must leave behind ---------------------------------------------------

def repo_digest() -> dict[str, str]:
    """Every file under the repository (but VCS, caches and builds): path -> sha256."""
    digest = {}
    for root, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in SKIPPED_IN_HASH]
        for name in files:
            path = Path(root, name)
            relative = str(path.relative_to(REPO))
            if path.is_symlink():
                digest[relative] = "symlink -> " + os.readlink(path)
            else:
                try:
                    digest[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
                except OSError as exc:  # a file that vanished or cannot be read is itself a change
                    digest[relative] = f"unreadable: {exc}"
        for name in dirs:  # a new empty folder counts too
            digest.setdefault(str(Path(root, name).relative_to(REPO)) + "/", "dir")
    return digest


def describe_changes(before: dict[str, str], after: dict[str, str]) -> str:
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(p for p in set(before) & set(after) if before[p] != after[p])
    return f"added {added[:10]}, removed {removed[:10]}, changed {changed[:10]}"


def suspects() -> dict[int, str]:
    """Live processes running as a sandbox uid (without root: named evil-*): pid -> description."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            comm = (proc / "comm").read_text().strip()
            status = (proc / "status").read_text()
        except OSError:
            continue  # gone already
        state = re.search(r"^State:\s+(\S)", status, re.M)
        uid = re.search(r"^Uid:\s+(\d+)", status, re.M)
        if state and state.group(1) == "Z":
            continue  # dead, waiting for its parent to reap it
        uid_value = int(uid.group(1)) if uid else -1
        # As root every sandboxed process runs as a uid of this process's own range, so the uid
        # alone says whose it is (another shard grades corpus entries side by side); without
        # root they all run as this user, and the corpus names what it starts evil-*.
        if uid_value in SANDBOX_UIDS or (not AS_ROOT and comm.startswith("evil-")):
            found[int(proc.name)] = f"pid {proc.name} comm {comm!r} uid {uid_value}"
    return found


def leftovers(before: dict[int, str]) -> list[str]:
    """New suspects still alive 0.5 s after the grade.

    None alive at once means none later: only a live one could start another. One still
    dying gets the 0.5 s. Survivors are killed by pid, so that one failure does not spill
    into the next test: the evil-* ones are named by the corpus, so started by the
    submission this test ran, and the uids are this module's own range (SANDBOX_UIDS),
    which no other grading on the machine draws from."""
    if not any(pid not in before for pid in suspects()):
        return []
    time.sleep(0.5)
    left = {pid: what for pid, what in suspects().items() if pid not in before}
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return sorted(left.values())


def run_grade(exercise: str, submission: Path, seed: int, results: Path, cwd: Path, timeout: float):
    command = [sys.executable, str(GRADE), exercise, str(submission), "--seed", str(seed), "--json", str(results)]
    try:
        return subprocess.run(command, cwd=cwd, capture_output=True, text=True, errors="replace",
                              timeout=timeout, stdin=subprocess.DEVNULL, env=GRADE_ENV)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the grader did not finish within {timeout} s: {shlex.join(command)}\n"
                    f"{(exc.stdout or b'')[-3000:]!r}", pytrace=False)


def check_results_json(results: Path, verdict_pass: bool, label: str) -> list[dict]:
    """results.json replaced by the grader's own, in Gradescope's format, adding up."""
    assert results.is_file() and not results.is_symlink(), f"{label}: no results.json at {results}"
    try:
        data = json.loads(results.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        pytest.fail(f"{label}: results.json is not JSON ({exc})", pytrace=False)
    assert data != FORGED, f"{label}: results.json still holds the forged content written before grading"
    assert isinstance(data.get("tests"), list) and data["tests"], f"{label}: results.json has no tests: {data}"
    assert isinstance(data.get("output"), str), f"{label}: results.json has no top-level output"
    for test in data["tests"]:
        keys = {"name", "score", "max_score", "status", "output", "visibility"}
        assert keys <= set(test), f"{label}: results.json test lacks {sorted(keys - set(test))}: {test}"
        assert test["status"] in ("passed", "failed"), f"{label}: status {test['status']!r} in {test['name']!r}"
        if test["name"].startswith("speed at "):  # drill 05: a passed speed check may earn part of its points
            assert (0 < test["score"] <= test["max_score"]) == (test["status"] == "passed"), (
                f"{label}: {test['name']!r} is {test['status']} with score {test['score']}/{test['max_score']}")
        elif test["max_score"] > 0:  # a 0-point check (builds, a kernel the starter gives) scores 0 either way
            full = test["score"] == test["max_score"]
            assert full == (test["status"] == "passed"), (f"{label}: {test['name']!r} is {test['status']} with "
                                                          f"score {test['score']}/{test['max_score']}")
        else:
            assert test["score"] == 0, f"{label}: {test['name']!r} scores {test['score']} of 0"
    total = sum(test["score"] for test in data["tests"])
    most = sum(test["max_score"] for test in data["tests"])
    assert math.isclose(data["score"], total), f"{label}: score {data['score']} is not the sum {total}"
    if verdict_pass:
        assert all(t["status"] == "passed" for t in data["tests"]), f"{label}: exit 0 but a test failed"
    else:
        assert any(t["status"] == "failed" for t in data["tests"]), f"{label}: exit 1 but no test failed"
        if any(t["status"] == "failed" and t["max_score"] > 0 for t in data["tests"]):
            assert data["score"] < most, f"{label}: exit 1 but full score {data['score']} of {most}"
    return data["tests"]


def substituted(entry: dict, folder: Path) -> Path:
    source = CORPUS / entry["file"]
    data = source.read_bytes()
    name = source.name
    if entry["base"]:
        base = REPO / entry["base"]
        data = built_from_base(data.decode(), base.read_text()).encode()
        name = source.stem + base.suffix
    copy = folder / name
    copy.write_bytes(data.replace(b"@REPO@", str(REPO).encode()))
    return copy


def test_an_entry_kept_as_edits_is_the_base_with_them():
    edits = "// Right verdict: FAIL\n@@ replace\nb = 2;\n@@ with\nb = 3;\nc = 4;\n@@ end\n"
    assert built_from_base(edits, "// the base's header\na = 1;\nb = 2;\n") == "// Right verdict: FAIL\n\na = 1;\nb = 3;\nc = 4;\n"
    with pytest.raises(ValueError, match="finds its text 0 times"):
        built_from_base(edits, "a = 1;\n")
    with pytest.raises(ValueError, match="finds its text 2 times"):
        built_from_base(edits, "b = 2;\nb = 2;\n")
    for entry in MANIFEST:  # every such entry builds from today's answer
        if entry["base"]:
            built_from_base((CORPUS / entry["file"]).read_text(), (REPO / entry["base"]).read_text())


_SOLUTION_SPEED: dict[str, float] = {}


def solution_speed(tmp_path: Path) -> dict[str, float]:
    """Drill 05's solution's speed checks' points, graded once per session (what a timed cheat is held to)."""
    if not _SOLUTION_SPEED:
        results = tmp_path / "solution.json"
        proc = run_grade("drill05", REPO / "solutions" / "05_lookback_scan.cu", DEFAULT_SEED, results, tmp_path,
                         GRADE_TIMEOUT_S["drill05"])
        assert proc.returncode == 0, f"the drill 05 solution did not pass:\n{proc.stdout[-3000:]}"
        _SOLUTION_SPEED.update({t["name"]: t["score"] for t in json.loads(results.read_text())["tests"]
                                if t["name"].startswith("speed at ")})
    return _SOLUTION_SPEED


# ---- every corpus entry ------------------------------------------------------------------

@pytest.mark.parametrize("entry", [entry_param(e) for e in MANIFEST])
def test_corpus_entry(entry, tmp_path):
    exercise, seed = entry["exercise"], entry["seed"]
    label = f"{entry['file']} ({entry['kind']}, must {entry['verdict'].upper()})"
    work = tmp_path / "grading here"  # a space: the grader must quote what it prints
    work.mkdir()
    submission = substituted(entry, work)
    results = work / "results.json"
    results.write_text(json.dumps(FORGED))

    before = repo_digest()
    suspects_before = suspects()
    proc = run_grade(exercise, submission, seed, results, work, GRADE_TIMEOUT_S[exercise])
    left = leftovers(suspects_before)
    after = repo_digest()
    output = proc.stdout + proc.stderr
    shown = f"\n--- grader output (last 4000 characters) ---\n{output[-4000:]}"

    assert "Traceback (most recent call last)" not in output, f"{label}: the grader crashed{shown}"
    assert before == after, f"{label}: the repository changed: {describe_changes(before, after)}{shown}"
    assert not left, f"{label}: processes left alive after the grade: {left}{shown}"
    expected_status = 0 if entry["verdict"] == "pass" else 1
    assert proc.returncode == expected_status, (f"{label}: grade.py exited {proc.returncode}, should be "
                                                f"{expected_status}{shown}")
    tests = check_results_json(results, entry["verdict"] == "pass", label)
    failed = sorted(t["name"] for t in tests if t["status"] == "failed")
    if entry["verdict"] == "pass":
        assert not failed, f"{label}: exit 0 but failed checks {failed}{shown}"
    if entry["failing"] is not None:
        assert failed == sorted(entry["failing"]), f"{label}: failed checks {failed}, should be exactly " \
                                                   f"{sorted(entry['failing'])}{shown}"
    feedback = {t["name"]: t["output"] for t in tests}
    for check, phrases in entry["diagnosis"].items():
        assert check in feedback, f"{label}: no check named {check!r} in {sorted(feedback)}{shown}"
        lacking = [phrase for phrase in phrases if phrase not in feedback[check]]
        assert not lacking, f"{label}: {check!r} lacks {lacking}:\n{feedback[check]}"
    notes = json.loads(results.read_text())["output"]
    lacking = [phrase for phrase in entry["notes"] if phrase not in notes]
    assert not lacking, f"{label}: the report's notes lack {lacking}:\n{notes}"
    if entry["reproduce"]:
        ran = [name for name in failed if name != "builds"
               and "not run" not in feedback[name] and "not measured" not in feedback[name]]
        unrepeatable = [name for name in ran if "reproduce: python3 harness/grade.py" not in feedback[name]
                        or f"--seed {seed}" not in feedback[name]]
        assert not unrepeatable, f"{label}: no reproduce line with --seed {seed} under {unrepeatable}{shown}"
    raw = RAW_CONTROLS.search(proc.stdout) or RAW_CONTROLS.search(results.read_text(errors="replace"))
    assert not raw, f"{label}: the report prints the control character {raw.group(0)!r} raw{shown}"
    missing = [phrase for phrase in entry["mentions"] if phrase not in output]
    assert not missing, f"{label}: the report does not mention {missing}{shown}"
    speeds = {t["name"]: t["score"] for t in tests if t["name"].startswith("speed at ")}
    if entry["speed"] == "none":
        assert speeds and not any(speeds.values()), f"{label}: speed points {speeds}, should be none{shown}"
    elif entry["speed"] == "at_most_solution":
        honest = solution_speed(tmp_path)
        over = {name: score for name, score in speeds.items() if score > honest[name] + SPEED_NOISE}
        assert speeds and not over, f"{label}: speed points {speeds}, the solution's {honest}{shown}"

    if entry["kind"] == "hostile":
        # The next student, in the same checkout: the untouched starter still fails.
        again = tmp_path / "next student"
        again.mkdir()
        follow = run_grade(exercise, STARTERS[exercise], seed, again / "results.json", again,
                           GRADE_TIMEOUT_S[exercise])
        assert follow.returncode == 1, (f"{label}: after it, the untouched starter {STARTERS[exercise].name} "
                                        f"exited {follow.returncode} instead of failing (1)\n"
                                        f"{(follow.stdout + follow.stderr)[-3000:]}")
        assert not leftovers(suspects_before), f"{label}: processes left alive after the follow-up grade"


# ---- the reproduce line -------------------------------------------------------------------

@pytest.mark.slow
def test_reproduce_line_is_shell_quoted_and_runs_from_the_repository_root(tmp_path):
    """A failing report's reproduce line, pasted into a shell at the repository root, gives the same verdict."""
    folder = tmp_path / "odd name's folder"
    folder.mkdir()
    submission = folder / "stops early (copy).cpp"
    shutil.copyfile(CORPUS / "drill01" / "w_stops_early.cpp", submission)
    first = run_grade("drill01", submission, 5, folder / "first.json", folder, GRADE_TIMEOUT_S["drill01"])
    assert first.returncode == 1, f"the wrong submission did not fail:\n{first.stdout[-3000:]}"
    lines = [line for line in first.stdout.splitlines() if "reproduce:" in line]
    assert lines, f"no reproduce line in the report:\n{first.stdout[-3000:]}"
    command = lines[0].split("reproduce:", 1)[1].strip()
    words = shlex.split(command)
    assert words[:2] == ["python3", "harness/grade.py"], f"the reproduce line does not start the grader: {command}"
    assert str(submission) in words, f"the reproduce line does not name {submission} as one word: {command}"
    assert "--seed" in words and words[words.index("--seed") + 1] == "5", f"the seed is not in: {command}"
    second = subprocess.run(["bash", "-c", f"{command} --json {shlex.quote(str(folder / 'second.json'))}"],
                            cwd=REPO, capture_output=True, text=True, timeout=GRADE_TIMEOUT_S["drill01"],
                            env=GRADE_ENV)
    assert second.returncode == first.returncode, (f"the reproduce line run from {REPO} exited "
                                                   f"{second.returncode}:\n{second.stdout[-2000:]}{second.stderr}")
    verdicts = [{t["name"]: t["status"] for t in json.loads((folder / name).read_text())["tests"]}
                for name in ("first.json", "second.json")]
    assert verdicts[0] == verdicts[1], f"the reproduced grade differs: {verdicts[0]} vs {verdicts[1]}"
