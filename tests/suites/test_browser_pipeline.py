"""The async-pipeline table in a real JupyterLab (headless chromium, tests/browser_util.py;
skipped without it): the warp-specialised corpus cell built for sm_90a and sm_100a, its
Resources tab opened. Screenshot: $CUDA_MAGIC_ARTIFACTS (else tests/.artifacts/)/pipeline.png."""

import json

import pytest

import browser_util as bu
from corpus import KERNELS

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def resources(tmp_path_factory):
    reason = bu.skip_reason()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("pipeline")
    cell = "%%cuda --arch sm_90a,sm_100a\n" + (KERNELS / "warp_specialized.cu").read_text()
    (root / "pipeline.ipynb").write_text(json.dumps(bu.notebook(["%load_ext cuda_magic", cell])))
    with bu.lab_server(root) as (base, token), bu.browser_page(width=1400, height=1400) as page:
        bu.open_notebook(page, base, token, "pipeline.ipynb", timeout=60)
        bu.run_all(page, timeout=150)
        tab = bu.widget_tab(page, "Resources", timeout=60)
        panel = bu.select_tab(tab, "Resources")
        bu.expect(panel).to_contain_text("async pipeline", timeout=60_000)
        page.wait_for_timeout(300)
        first = panel.get_by_text("ws_scale_regs: async pipeline")
        first.scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        page.screenshot(path=bu.artifacts_dir() / "pipeline.png")
        return panel.evaluate("""p => {
          const box = e => { const r = e.getBoundingClientRect(); return {right: r.right}; };
          return {text: p.innerText, panel: box(p),
                  tables: [...p.querySelectorAll('table')].map(box)};
        }""")


def test_the_resources_tab_shows_each_kernels_pipeline_per_arch(resources):
    text = resources["text"]
    for k in ("ws_scale_regs", "ws_scale", "ws_scale_greedy"):
        assert f"{k}: async pipeline" in text
    assert "TMA load" in text and "mbarrier wait" in text and "sm_100a" in text
    assert "66,560 of 65,536" in text
    assert "warp-specialised TMA pipeline over 2 warpgroups with no setmaxnreg" in text


def test_the_tables_fit_the_panel(resources):
    for t in resources["tables"]:
        assert t["right"] <= resources["panel"]["right"] + 0.5, (t, resources["panel"])
