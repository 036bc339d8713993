"""The hosted-notebook path (harness/colab/scan-lab.ipynb) for students without a GPU.

CPU: the notebook is valid nbformat 4 (checked with the nbformat package when it is
importable, and against the format's rules here either way), every code cell is Python
that compiles (no `!` shell magics, so the cells also run as one script), the clone
honours SCANLAB_REPO, and the README links the notebook with an "Open in Colab" badge.
GPU: the code cells run as one script against a clone of this checkout, the way a student
runs them top to bottom on a notebook GPU.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scanlab.env import fresh_environ

REPO = Path(__file__).resolve().parent.parent
NOTEBOOK = REPO / "harness" / "colab" / "scan-lab.ipynb"


def notebook() -> dict:
    return json.loads(NOTEBOOK.read_text())


def source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def code_cells() -> list[str]:
    return [source(c) for c in notebook()["cells"] if c["cell_type"] == "code"]


def test_the_notebook_is_valid_nbformat_4():
    nb = notebook()
    assert nb["nbformat"] == 4 and isinstance(nb["nbformat_minor"], int) and nb["nbformat_minor"] >= 5
    assert isinstance(nb["metadata"], dict) and nb["metadata"]["kernelspec"]["language"] == "python"
    ids = set()
    for cell in nb["cells"]:
        assert cell["cell_type"] in ("code", "markdown"), cell["cell_type"]
        assert isinstance(cell["metadata"], dict) and isinstance(source(cell), str)
        assert cell["id"] not in ids and 1 <= len(cell["id"]) <= 64, cell["id"]  # nbformat 4.5: unique ids
        ids.add(cell["id"])
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, "commit the notebook without outputs"
        else:
            assert "outputs" not in cell and "execution_count" not in cell
    try:
        import nbformat
    except ImportError:
        return  # the rules above are the ones nbformat's schema enforces for these fields
    nbformat.validate(nbformat.reads(NOTEBOOK.read_text(), as_version=4))


def test_every_code_cell_is_python_that_also_runs_as_one_script():
    for i, text in enumerate(code_cells()):
        assert not any(line.lstrip().startswith(("!", "%")) for line in text.splitlines()), f"cell {i}: a magic"
        compile(text, f"{NOTEBOOK.name} code cell {i}", "exec")
    script = "\n\n".join(code_cells())
    assert 'os.environ.get("SCANLAB_REPO"' in script and "compute_cap" in script
    assert "harness/grade.py day31 exercises/day31_shift_then_scan.cu" in script


@pytest.mark.parametrize("readme", ["README.md", "harness/RELEASE-README.md"])
def test_the_readme_links_the_notebook_with_a_colab_badge(readme):
    """The repository's README and the release's: the badge goes to the placeholder, which
    `make student-release REPO=OWNER/NAME` replaces in the release (test_release.py)."""
    text = (REPO / readme).read_text()
    assert "colab-badge.svg" in text
    assert "https://colab.research.google.com/github/COURSE-ORG/scan-lab/blob/main/harness/colab/scan-lab.ipynb" in text


def test_the_notebook_clones_the_placeholder_the_release_replaces():
    script = "\n\n".join(code_cells())
    assert 'os.environ.get("SCANLAB_REPO", "https://github.com/COURSE-ORG/scan-lab.git")' in script
    assert "make student-release REPO=OWNER/NAME" in script  # says how it gets filled in


def test_the_notebook_runs_the_sanitizer_and_the_stretch_drills():
    cells = code_cells()
    sanitize = [c for c in cells if 'sh("make sanitize"' in c]
    assert len(sanitize) == 1, "one cell runs make sanitize"
    assert "needs no special rights" in sanitize[0]  # racecheck runs as the student on a hosted GPU
    stretch = [c for c in cells if "run-stretch" in c]
    assert len(stretch) == 1 and "-C exercises run-stretch SM_ARCH={SM_ARCH}" in stretch[0]
    for drill, kernel_file in (("drill04", "04_warp_scan.cu"), ("drill05", "05_lookback_scan.cu"),
                               ("drill06", "06_copy_if_partition.cu")):
        assert f'("{drill}", "{kernel_file}")' in stretch[0], drill
        assert (REPO / "exercises" / kernel_file).is_file(), kernel_file
    # Both after the build (they use SM_ARCH and build/), the sanitizer before the stretch drills.
    order = [i for i, c in enumerate(cells) if " cuda SM_ARCH={SM_ARCH}" in c] + [cells.index(sanitize[0]),
                                                                          cells.index(stretch[0])]
    assert len(order) == 3 and order == sorted(order), order


def test_the_notebook_warns_that_edits_are_lost_with_the_runtime():
    intro = source(notebook()["cells"][0])
    assert notebook()["cells"][0]["cell_type"] == "markdown"
    assert "Your edits live only on this runtime" in intro and "recycles the runtime" in intro
    assert "Download" in intro


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.slow
def test_the_notebook_runs_top_to_bottom_on_this_gpu(tmp_path):
    script = tmp_path / "notebook.py"
    script.write_text("\n\n".join(code_cells()))
    clone = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{REPO}", str(clone)], check=True, timeout=300)
    env = fresh_environ(SCANLAB_REPO=str(clone), SCANLAB_WORKDIR=str(tmp_path / "work"))  # its make, its build/
    (tmp_path / "work").mkdir()
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path / "work", env=env, capture_output=True,
                          text=True, timeout=3000)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert "building for sm_" in out and "graded: exit status 1" in out, out[-6000:]  # the untouched starter
