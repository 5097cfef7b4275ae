"""%cuda_export's result as a reader sees it in a real JupyterLab in headless chromium
(tests/browser_util.py; skipped without /usr/bin/chromium or playwright): a torch export of a
two-arch cell and a cubin export, no GPU needed.  Screenshots go to $CUDA_MAGIC_ARTIFACTS, else
tests/.artifacts/: export_torch.png, export_cubin.png, export_torch_narrow.png (a narrow
window, where the tables must scroll inside the output rather than spill out of it).
"""

import json

import pytest

import browser_util as bu

pytestmark = pytest.mark.browser

CELL = """%%cuda --arch sm_90a,sm_100a --name m
extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}"""

CELLS = {
    "torch": '%cuda_export m torch ops/scale_ops grid="cdiv(n, 256)" block=256 '
             'outputs={"y": "like x"}',
    "cubin": "%cuda_export m cubin out/scale_c",
}

_SHOWN = """out => {
  const root = out.querySelector('.cuda-magic-export');
  if (!root) return null;
  const box = e => { const r = e.getBoundingClientRect(); return {left: r.left, right: r.right}; };
  return {text: root.innerText, area: box(out), root: box(root),
          scrolls: [...root.querySelectorAll('.cm-scroll')].map(box),
          rows: [...root.querySelectorAll('table tr')].length};
}"""


@pytest.fixture(scope="module")
def shown(tmp_path_factory):
    reason = bu.skip_reason()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("export")
    (root / "export.ipynb").write_text(json.dumps(bu.notebook(
        ["%load_ext cuda_magic", CELL, *CELLS.values()])))
    with bu.lab_server(root) as (base, token), bu.browser_page(width=1400, height=1000) as page:
        bu.open_notebook(page, base, token, "export.ipynb", timeout=60)
        bu.run_all(page, timeout=150)
        out = bu.shown_outputs(page, ".cuda-magic-export", CELLS, "export", _SHOWN)
        areas = page.locator(".jp-CodeCell").filter(has=page.locator(".cuda-magic-export"))
        page.set_viewport_size({"width": 700, "height": 1000})
        page.wait_for_timeout(500)
        output = bu.view_output(page, areas.nth(0), ".cuda-magic-export")
        output.scroll_into_view_if_needed()
        output.screenshot(path=bu.artifacts_dir() / "export_torch_narrow.png", timeout=15_000)
        out["narrow"] = output.evaluate(_SHOWN)
    return out


def test_a_torch_export_shows_its_op_builds_files_and_use(shown):
    s = shown["torch"]
    assert s is not None, "no export rendered"
    text = s["text"]
    assert text.startswith("exported scale as torch 'scale_ops' to ")
    assert "scale_ops::scale(Tensor x, float a, SymInt n) -> Tensor" in text
    assert "scale.sm_90a.cubin" in text and "scale.sm_100a.cubin" in text
    assert "binaries/scale.sm_90a.cubin" in text and "manifest.json" in text
    assert "import scale_ops; scale_ops.scale(x, a, n)" in text
    assert s["rows"] == 1 + 2 + 1 + 6        # builds: head + 2 archs; files: head + 6


def test_a_cubin_export_shows_how_c_and_python_use_it(shown):
    text = shown["cubin"]["text"]
    assert "exported scale as cubin 'scale_c'" in text
    assert 'C: #include "' in text and "scale_c_load(&m)" in text
    assert "kernel.scale[grid, block](x, y, a, n)" in text


def test_nothing_spills_out_of_the_output(shown):
    for name in (*CELLS, "narrow"):
        s = shown[name]
        assert s["root"]["right"] <= s["area"]["right"] + 0.5, (name, s["root"], s["area"])
        for b in s["scrolls"]:               # wide tables scroll inside their own box
            assert b["right"] <= s["area"]["right"] + 0.5, (name, b, s["area"])
