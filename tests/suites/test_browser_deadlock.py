"""The deadlock check's warning in a real JupyterLab (headless chromium, tests/browser_util.py;
skipped without it): the corpus cell with a divergent __syncthreads() (no async pipeline),
its Resources tab opened.  Screenshot: $CUDA_MAGIC_ARTIFACTS (else tests/.artifacts/)/deadlock.png."""

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
    root = tmp_path_factory.mktemp("deadlock")
    cell = "%%cuda --arch sm_90a\n" + (KERNELS / "hang_divergent_sync.cu").read_text()
    (root / "deadlock.ipynb").write_text(json.dumps(bu.notebook(["%load_ext cuda_magic", cell])))
    with bu.lab_server(root) as (base, token), bu.browser_page(width=1400, height=1000) as page:
        bu.open_notebook(page, base, token, "deadlock.ipynb", timeout=60)
        bu.run_all(page, timeout=150)
        tab = bu.widget_tab(page, "Resources", timeout=60)
        panel = bu.select_tab(tab, "Resources")
        bu.expect(panel).to_contain_text("before the launch", timeout=60_000)
        page.wait_for_timeout(300)
        panel.get_by_text("divergent_stage: before the launch").scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        page.screenshot(path=bu.artifacts_dir() / "deadlock.png")
        return panel.evaluate("p => p.innerText")


def test_the_resources_tab_warns_of_the_divergent_syncthreads(resources):
    # the cell's lines are the file's (the %%cuda line is not one of them)
    assert "divergent_stage: before the launch" in resources
    assert "divergent_stage: line 23: __syncthreads() runs only where a condition on " \
           "threadIdx.x holds (line 20)" in resources
    assert "async pipeline" not in resources           # no table: the warning alone
