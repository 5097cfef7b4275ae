"""A failed compile's view as a reader sees it in a real JupyterLab in headless chromium
(tests/browser_util.py; skipped without /usr/bin/chromium or playwright), no GPU needed: a
wgmma kernel built for plain sm_90 (the arch it needs is the first line under the heading,
before ptxas's lines) and a device-side launch under nvcc without -rdc (the hint after the
compiler's lines names nvcc's flag).  Each cell runs the magic as a user's cell does and keeps
going past its error, so that the notebook runs to the end.  Screenshots go to
$CUDA_MAGIC_ARTIFACTS, else tests/.artifacts/: error_arch.png, error_rdc.png.
"""

import json
import pathlib

import pytest

import browser_util as bu

pytestmark = pytest.mark.browser

KERNELS = pathlib.Path(__file__).parents[1] / "kernels"

# the magic displays the error's view, then raises; the cell catches it so run-all goes on
_CELL = """\
from cuda_magic.errors import CompileError
try:
    get_ipython().run_cell_magic("cuda", {line!r}, {source!r})
except CompileError:
    pass"""

_DEVICE_LAUNCH = """\
__global__ void child(float* x) { x[threadIdx.x] *= 2; }
__global__ void parent(float* x) { child<<<1, 32>>>(x); }
"""

CELLS = {
    "arch": _CELL.format(line="--arch sm_90",
                         source=(KERNELS / "wgmma_regs.cu").read_text()),
    "rdc": _CELL.format(line="--arch sm_90a --compiler nvcc", source=_DEVICE_LAUNCH),
}

# what one error view shows: its text, and the lines of its first <pre> (the compiler's lines)
_SHOWN = """out => {
  const root = out.querySelector('.cuda-magic');
  if (!root) return null;
  return {text: root.innerText, pre: root.querySelector('pre')?.innerText || ''};
}"""


@pytest.fixture(scope="module")
def shown(tmp_path_factory):
    reason = bu.skip_reason()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("errors")
    (root / "errors.ipynb").write_text(json.dumps(bu.notebook(
        ["%load_ext cuda_magic", *CELLS.values()])))
    with bu.lab_server(root) as (base, token), bu.browser_page(width=1400, height=1000) as page:
        bu.open_notebook(page, base, token, "errors.ipynb", timeout=60)
        bu.run_all(page, timeout=240)
        return bu.shown_outputs(page, ".cuda-magic", CELLS, "error", _SHOWN)


def test_the_arch_an_instruction_needs_is_said_before_ptxas_s_lines(shown):
    s = shown["arch"]
    assert s is not None, "no error view rendered"
    lines = [line for line in s["text"].splitlines() if line.strip()]
    assert lines[0].startswith("nvrtc failed to compile"), lines[:3]
    assert "is not on sm_90:" in lines[1] and lines[1].endswith("--arch sm_90a"), lines[:3]
    assert s["text"].index("--arch sm_90a") < s["text"].index("not supported on .target")


def test_a_device_side_launch_under_nvcc_names_nvcc_s_flag(shown):
    text = shown["rdc"]["text"]
    assert '--nvcc+ "-rdc=true"' in text, text
    assert "--nvrtc+" not in text, text
    assert text.index("--nvcc+") > text.index(shown["rdc"]["pre"].splitlines()[0])
