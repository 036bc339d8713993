"""The CI wiring: .github/workflows/ci.yml calls scripts that exist and do what SETUP.md says.

The workflow cannot run here (no GitHub); these tests read it. The cpu job runs
.ci/run, the gpu job runs on a runner labelled self-hosted, linux, gpu and runs
.ci/gpu, which requires the GPU; both upload the JUnit XML `make test` writes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from scanlab.env import MAKE_VARIABLES

REPO = Path(__file__).resolve().parent.parent
WORKFLOW = REPO / ".github" / "workflows" / "ci.yml"


@pytest.fixture(scope="module")
def workflow() -> dict:
    yaml = pytest.importorskip("yaml", reason="PyYAML (harness/requirements.txt) reads the workflow")
    return yaml.safe_load(WORKFLOW.read_text())


def steps_running(job: dict) -> list[str]:
    return [step["run"] for step in job["steps"] if "run" in step]


def test_the_workflow_has_a_cpu_and_a_gpu_job(workflow):
    assert set(workflow["jobs"]) == {"cpu", "gpu"}
    assert workflow["jobs"]["gpu"]["runs-on"] == ["self-hosted", "linux", "gpu"]
    assert "ubuntu" in workflow["jobs"]["cpu"]["runs-on"]
    assert steps_running(workflow["jobs"]["cpu"]) == [".ci/run"]
    assert steps_running(workflow["jobs"]["gpu"]) == [".ci/gpu"]


@pytest.mark.parametrize("job", ["cpu", "gpu"])
def test_every_job_uploads_the_junit_xml_even_when_tests_fail(workflow, job):
    uploads = [s for s in workflow["jobs"][job]["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert len(uploads) == 1 and uploads[0].get("if") == "always()", uploads
    assert uploads[0]["with"]["path"] == "build/test-results.xml"
    script = (REPO / "harness" / "run-tests.sh").read_text()  # results default to build/
    assert 'results=${SCANLAB_RESULTS:-build}' in script and '--junitxml="$results/test-results.xml"' in script


def test_every_command_the_workflow_runs_exists_and_is_executable(workflow):
    for job in workflow["jobs"].values():
        for command in steps_running(job):
            program = command.split()[0]
            path = REPO / program
            assert path.is_file() and os.access(path, os.X_OK), f"{program}: not an executable file in the repository"
            proc = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, timeout=30)
            assert proc.returncode == 0, proc.stderr
            assert "make test" in path.read_text()


def test_the_cpu_job_installs_python_3_9_and_names_it_to_the_strict_run(workflow):
    """.ci/run requires python39 (the graders' tests under the oldest Python the docs promise); a
    GitHub-hosted runner has none of its own, so the job installs one, without making it the runner's
    python3 (the suite runs on that), and hands its path to .ci/run as SCANLAB_OLDEST_PYTHON."""
    steps = workflow["jobs"]["cpu"]["steps"]
    setups = [s for s in steps if str(s.get("uses", "")).startswith("actions/setup-python@")]
    assert len(setups) == 1, "the cpu job installs Python 3.9 with actions/setup-python"
    setup = setups[0]
    assert setup["with"]["python-version"] == "3.9", setup  # a string: unquoted, YAML reads 3.10 as 3.1
    assert setup["with"].get("update-environment") is False, "python3 stays the runner's own"
    assert setup.get("id"), "an id, to read its python-path output"
    run = next(s for s in steps if s.get("run") == ".ci/run")
    assert steps.index(setup) < steps.index(run)
    assert run.get("env", {}).get("SCANLAB_OLDEST_PYTHON") == f"${{{{ steps.{setup['id']}.outputs.python-path }}}}", run
    script = (REPO / ".ci" / "run").read_text()
    required = script.split('SCANLAB_REQUIRE="${SCANLAB_REQUIRE:-', 1)[1].split("}", 1)[0].split(",")
    assert "python39" in required, required


@pytest.fixture
def ci_run(tmp_path):
    """.ci/run with a stand-in for make that records the environment it was given (nothing is tested)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "make").write_text(f"#!/bin/sh\nenv > {tmp_path / 'make-env'}\n")
    (fake / "make").chmod(0o755)

    def go(**env_vars: str) -> tuple[subprocess.CompletedProcess, dict | None]:
        env = {k: v for k, v in os.environ.items() if k not in ("SCANLAB_REQUIRE", "SCANLAB_OLDEST_PYTHON",
                                                                "SCANLAB_SHARDS", "MAKEFLAGS", "MAKELEVEL")}
        env.update(PATH=f"{fake}:{os.environ['PATH']}", **env_vars)
        proc = subprocess.run([str(REPO / ".ci" / "run")], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=120)
        made = tmp_path / "make-env"
        seen = dict(line.split("=", 1) for line in made.read_text().splitlines() if "=" in line) if made.exists() else None
        return proc, seen

    if not (shutil.which("hipcc") and shutil.which("bwrap")):
        pytest.skip(".ci/run would install hipcc or bubblewrap here first")
    return go


def test_a_strict_ci_run_without_python_3_9_stops_at_once_saying_so(ci_run, tmp_path):
    proc, made = ci_run(SCANLAB_OLDEST_PYTHON=str(tmp_path / "no-such-python3.9"))
    assert proc.returncode == 1 and made is None, proc.stdout + proc.stderr  # make test never ran
    said = proc.stderr.strip().splitlines()
    assert len(said) == 1 and said[0].startswith("ci: SCANLAB_REQUIRE names python39 but there is no Python 3.9"), \
        proc.stderr
    assert "actions/setup-python" in said[0] and "SCANLAB_OLDEST_PYTHON" in said[0], said[0]


def test_a_strict_ci_run_hands_make_test_the_python_3_9_it_found(ci_run, tmp_path):
    python = tmp_path / "python3.9"
    python.write_text("#!/bin/sh\necho 3.9\n")  # what env.oldest_python asks it: its major.minor
    python.chmod(0o755)
    proc, made = ci_run(SCANLAB_OLDEST_PYTHON=str(python))
    assert proc.returncode == 0 and made is not None, proc.stdout + proc.stderr
    assert made["SCANLAB_OLDEST_PYTHON"] == str(python) and "python39" in made["SCANLAB_REQUIRE"].split(",")
    assert f"ci: SCANLAB_OLDEST_PYTHON={python}" in proc.stdout.splitlines(), proc.stdout
    # Not required, not looked for: a run that names its own list goes on without one.
    proc, made = ci_run(SCANLAB_REQUIRE="nvcc", SCANLAB_OLDEST_PYTHON=str(tmp_path / "no-such-python3.9"))
    assert proc.returncode == 0 and made is not None, proc.stdout + proc.stderr


def test_the_gpu_script_requires_the_gpu_and_the_tools():
    text = (REPO / ".ci" / "gpu").read_text()
    required = text.split('SCANLAB_REQUIRE="${SCANLAB_REQUIRE:-', 1)[1].split("}", 1)[0].split(",")
    assert {"nvcc", "gpu", "sanitizer", "triton"} <= set(required), required


def test_the_gpu_script_fails_without_a_gpu(tmp_path):
    if shutil.which("nvidia-smi"):
        pytest.skip("this machine has nvidia-smi: the no-GPU path cannot be shown here")
    proc = subprocess.run([str(REPO / ".ci" / "gpu")], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SCANLAB_BWRAP": "/bin/true"})
    assert proc.returncode != 0 and "this job needs one" in proc.stderr, proc.stdout + proc.stderr


# ---- make test and harness/run-tests.sh, with a stand-in for pytest -------------------------
#
# FAKE_PYTHON answers `import pytest`, runs everything else (the shard planner) with the real
# interpreter, and for `-m pytest ...` records its arguments and environment, writes a JUnit
# file with one test per module it was given, and fails when FAKE_FAIL names one of them.

FAKE_PYTHON = """#!{python}
import json, os, subprocess, sys
args = sys.argv[1:]
if args == ["-c", "import pytest"]:
    sys.exit(0)
if args[:2] != ["-m", "pytest"]:
    sys.exit(subprocess.call([{python!r}, *args]))
modules = [a for a in args if a.startswith("harness/test_")]  # modules and node ids
junit = next(a.split("=", 1)[1] for a in args if a.startswith("--junitxml="))
with open(os.path.join(os.environ["FAKE_LOG"], f"{{os.getpid()}}.json"), "w") as f:
    json.dump({{"args": args, "env": dict(os.environ)}}, f)
failed = [m for m in modules if os.environ.get("FAKE_FAIL") and os.environ["FAKE_FAIL"] in m]
with open(junit, "w") as f:
    f.write(f'<testsuites><testsuite name="pytest" tests="{{max(1, len(modules))}}" failures="{{len(failed)}}" '
            f'errors="0" skipped="0"/></testsuites>')
print("FAILED " + failed[0] + "::test_x" if failed else "", flush=True)
print(f"=== {{max(1, len(modules))}} passed ===")
sys.exit(1 if failed else 0)
"""


@pytest.fixture
def fake_pytest(tmp_path):
    import sys

    script = tmp_path / "python"
    script.write_text(FAKE_PYTHON.format(python=sys.executable))
    script.chmod(0o755)
    log = tmp_path / "calls"
    log.mkdir()
    results = tmp_path / "results"

    def run(command: list[str], **env_vars: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
        env = {k: v for k, v in os.environ.items() if k not in ("ARGS", "SCANLAB_SHARDS", "MAKEFLAGS", "MAKELEVEL")}
        env.update(PYTHON=str(script), FAKE_LOG=str(log), SCANLAB_RESULTS=str(results), **env_vars)
        proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
        calls = [json.loads(p.read_text()) for p in sorted(log.glob("*.json"))]
        for p in log.glob("*.json"):
            p.unlink()
        return proc, calls

    return run


def test_make_test_hands_the_harness_none_of_the_makefiles_variables(fake_pytest):
    """They sent the notebook test's clone builds into this checkout (BUILD), on the H200."""
    proc, calls = fake_pytest(["make", "-s", "test", "BUILD=/elsewhere", "SM_ARCH=sm_80"])
    assert proc.returncode == 0 and len(calls) == 1, proc.stdout + proc.stderr
    leaked = set(MAKE_VARIABLES) & set(calls[0]["env"])  # the list test_colab and test_docs strip too
    assert not leaked, leaked


def test_args_keeps_the_shells_quoting(fake_pytest):
    """SETUP.md's ARGS="-k 'stretch or trace'" was split into four words before."""
    proc, calls = fake_pytest(["harness/run-tests.sh"], ARGS="-k 'stretch or trace' -x")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    args = calls[0]["args"]
    assert args[args.index("-k") + 1] == "stretch or trace" and "-x" in args, args


@pytest.mark.parametrize("machine", ["cpu", "gpu"])
def test_the_corpus_is_cut_into_parts_of_about_a_minute(machine):
    """A part holds one exercise's entries of one kind, PART_S of weight at most (or one entry), so no
    shard waits on one long part (a whole exercise's hostile entries were 160 s of one shard)."""
    from scanlab import shards

    pieces = shards.corpus_parts("harness/test_corpus.py", machine)
    entries = [i for _, ids in pieces for i in ids if "::test_corpus_entry[" in i]
    assert len(entries) == len(set(entries)) == len(re.findall(
        r"^\[\[submission\]\]", (REPO / "harness/corpus/manifest.toml").read_text(), re.M))
    for weight, ids in pieces:
        counted = [i for i in ids if "::test_corpus_entry[" in i]
        assert weight <= shards.PART_S or len(counted) == 1, (weight, counted)
        assert len({i.split("[")[1].split("-")[0] for i in counted}) == 1, counted  # one exercise a part
    if machine == "cpu":
        assert len(pieces) > len({i.split("[")[1].split("-")[0] for i in entries}) * 3  # something was cut


def test_modules_that_build_the_same_program_share_a_shard():
    """The builder compiles a program once a pytest process: two modules whose BUILDS share one are a
    TOGETHER group, and every plan puts a group's modules in one shard."""
    import importlib

    from scanlab import shards

    names = sorted(p.name for p in (REPO / "harness").glob("test_*.py"))
    builds = {}
    for name in names:
        text = (REPO / "harness" / name).read_text()
        if re.search(r"^BUILDS = ", text, re.M):
            builds[name] = {program.name for program in importlib.import_module(name[:-3]).BUILDS}
    sharing = {frozenset((a, b)) for a in builds for b in builds if a < b and builds[a] & builds[b]}
    assert sharing == {frozenset(group) for group in shards.TOGETHER}, sharing
    for kind in ("cpu", "gpu"):
        for n in (2, 3, 4, 8, 12):
            plan = shards.plan(n, [f"harness/{name}" for name in names], kind)
            for group in shards.TOGETHER:
                holding = {i for i, line in enumerate(plan) for m in line if Path(m).name in group}
                assert len(holding) == 1, (kind, n, group, plan)


def test_shards_run_every_module_once_merge_their_results_and_fail_loudly(fake_pytest, tmp_path):
    modules = sorted(f"harness/{p.name}" for p in (REPO / "harness").glob("test_*.py"))
    proc, calls = fake_pytest(["harness/run-tests.sh"], SCANLAB_SHARDS="3")
    assert proc.returncode == 0 and len(calls) == 3, proc.stdout + proc.stderr
    given = [a for call in calls for a in call["args"] if a.startswith("harness/test_")]
    whole = sorted(a for a in given if "::" not in a)
    parts = [a for a in given if "::" in a]
    assert sorted(whole + sorted({a.split("::")[0] for a in parts})) == modules  # each module once,
    assert len(parts) == len(set(parts)) and {a.split("::")[0] for a in parts} == {"harness/test_corpus.py"}
    assert len({i for i, call in enumerate(calls) for a in call["args"] if "::" in a}) >= 2  # the corpus: split
    entries = len(re.findall(r"^\[\[submission\]\]", (REPO / "harness/corpus/manifest.toml").read_text(), re.M))
    assert sum("::test_corpus_entry[" in a for a in parts) == entries  # every entry, in one shard each
    merged = (tmp_path / "results" / "test-results.xml").read_text()
    assert merged.count("<testsuite ") == 3 and f"all shards: {len(given)} tests, 0 failed" in proc.stdout

    proc, calls = fake_pytest(["harness/run-tests.sh"], SCANLAB_SHARDS="3", FAKE_FAIL="test_release.py")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAILED harness/test_release.py::test_x" in proc.stdout and "1 failed" in proc.stdout

    proc, calls = fake_pytest(["harness/run-tests.sh"], SCANLAB_SHARDS="two")
    assert proc.returncode == 2 and not calls and "SCANLAB_SHARDS must be a positive whole number" in proc.stderr


def test_make_test_skips_the_exhaustive_tests_and_make_test_full_runs_them(monkeypatch):
    """`full` tests (another knob combination of a program make test builds once) skip under
    make test, saying so; make test-full sets SCANLAB_FULL=1, which runs them."""
    from scanlab import env

    recipe = re.search(r"^test-full:\n\t(.*)$", (REPO / "Makefile").read_text(), re.M)
    assert recipe and "SCANLAB_FULL=1" in recipe.group(1) and "harness/run-tests.sh" in recipe.group(1)
    for value, full in (("", False), ("0", False), ("1", True)):
        monkeypatch.setenv("SCANLAB_FULL", value)
        assert env.full() is full, value
    monkeypatch.delenv("SCANLAB_FULL")
    assert not env.full()
    ini = (REPO / "harness" / "pytest.ini").read_text()
    assert re.search(r"^\s+full: .*make test-full", ini, re.M), ini
