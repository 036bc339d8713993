"""The CI wiring: .github/workflows/ci.yml calls scripts that exist and do what SETUP.md says.

The workflow cannot run here (no GitHub); these tests read it. The cpu job runs
.ci/run, the gpu job runs on a runner labelled self-hosted, linux, gpu and runs
.ci/gpu, which requires the GPU; both upload the JUnit XML `make test` writes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

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
    assert "--junitxml=build/test-results.xml" in (REPO / "harness" / "run-tests.sh").read_text()


def test_every_command_the_workflow_runs_exists_and_is_executable(workflow):
    for job in workflow["jobs"].values():
        for command in steps_running(job):
            program = command.split()[0]
            path = REPO / program
            assert path.is_file() and os.access(path, os.X_OK), f"{program}: not an executable file in the repository"
            proc = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, timeout=30)
            assert proc.returncode == 0, proc.stderr
            assert "make test" in path.read_text()


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
