"""verify()'s Verdicts as a reader sees them in a real JupyterLab in headless chromium
(tests/browser_util.py; skipped without /usr/bin/chromium or playwright).

One notebook, run once for the module, NumPy only (no GPU): a passing output checked over three
runs, an output wrong in its last (partial) tile column beside a bfloat16 output that passes,
and a large output wrong on the first row of its tiles (a tile grid wider than the map draws).
Screenshots go to $CUDA_MAGIC_ARTIFACTS, else tests/.artifacts/: verify_pass.png,
verify_tail.png, verify_tile_edge.png, verify_floor.png (an output wrong in its small elements,
which the floor's limit fails) and verify_tail_dark.png (the JupyterLab Dark theme).
"""

import json

import pytest

import browser_util as bu

pytestmark = pytest.mark.browser

SETUP = """\
import numpy as np
import ml_dtypes
from cuda_magic.correctness import verify
from cuda_magic.display.verdict import VerdictView
rng = np.random.default_rng(0)"""

# within 1 ULP everywhere: passes the float32 default; three runs, bitwise the same
PASS = """\
ref = rng.standard_normal((64, 64)).astype(np.float32)
out = ref.copy()
out[::7] = np.nextafter(out[::7], np.float32(np.inf))
VerdictView(verify(out, ref, tile=(16, 16)).with_runs(3, True, {"out": 0.0}))"""

# a (50, 250) output in 16 x 16 tiles: columns 240..249 (the partial last tile column) not written
TAIL = """\
ref = rng.standard_normal((50, 250)).astype(np.float32) + 2
y = ref.copy()
y[:, 240:] = 0
sref = rng.standard_normal(64).astype(ml_dtypes.bfloat16)
VerdictView(verify({"y": y, "s": sref.copy()}, {"y": ref, "s": sref}, tile={"y": (16, 16)}))"""

# a (1024, 2048) output in 16 x 16 tiles (64 x 128 tiles): the first row of each tile wrong in
# the left half of the output
EDGE = """\
ref = rng.standard_normal((1024, 2048)).astype(np.float32)
c = ref.copy()
c[::16, :1024] += 1
VerdictView(verify(c, ref, tile=(16, 16), name="c"))"""

# exp(-20..20) with every element below 1 written as 0: within the floor (D ULPs of max|ref|),
# but off by 2x in half the output: the floor's limit fails them, and the view says so
FLOOR = """\
ref = np.exp(np.linspace(-20, 20, 1000)).astype(np.float32)
z = np.where(ref < 1, np.float32(0), ref)
VerdictView(verify(z, ref, name="z"))"""

CELLS = {"pass": PASS, "tail": TAIL, "tile_edge": EDGE, "floor": FLOOR}


# what one verdict's output shows: its text, the badges' colours, the boxes of the table, the
# figure and the output area, the squares of each map by fill, the SVG text's colour
_SHOWN = """out => {
  const root = out.querySelector('.cuda-magic-verify');
  if (!root) return null;
  const box = e => { const r = e.getBoundingClientRect(); return {left: r.left, right: r.right,
                                                                  top: r.top, bottom: r.bottom}; };
  const badges = [...root.querySelectorAll('span[style*="border-radius"]')].map(b => ({
    text: b.innerText.trim(), background: getComputedStyle(b).backgroundColor}));
  const maps = [...root.querySelectorAll('svg')].map(svg => {
    const fills = {};
    for (const r of svg.querySelectorAll('g > rect')) {
      const f = r.getAttribute('fill') || r.parentElement.getAttribute('fill');
      fills[f] = (fills[f] || 0) + 1;
    }
    const label = svg.querySelector('text');
    return {box: box(svg), fills, squares: svg.querySelectorAll('g > rect').length,
            textFill: getComputedStyle(label).fill,
            texts: [...svg.querySelectorAll('text')].map(t => t.textContent)};
  });
  return {text: root.innerText, badges, maps, area: box(out),
          table: box(root.querySelector('table')),
          background: getComputedStyle(document.querySelector('.jp-Notebook')).backgroundColor};
}"""


def _luminance(css: str) -> float:
    parts = css[css.index("(") + 1:css.index(")")].split(",")
    r, g, b = (float(p) / 255 for p in parts[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


@pytest.fixture(scope="module")
def shown(tmp_path_factory):
    """{name: what its output shows} in the light theme, and the tail's in the dark theme."""
    reason = bu.skip_reason()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("verify")
    (root / "verify.ipynb").write_text(json.dumps(bu.notebook([SETUP, *CELLS.values()])))
    with bu.lab_server(root) as (base, token), bu.browser_page(width=1400, height=1000) as page:
        bu.open_notebook(page, base, token, "verify.ipynb", timeout=60)
        bu.run_all(page, timeout=150)
        out = bu.shown_outputs(page, ".cuda-magic-verify", CELLS, "verify", _SHOWN)
        areas = page.locator(".jp-CodeCell").filter(has=page.locator(".cuda-magic-verify"))
        page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', "
                      "{theme: 'JupyterLab Dark'})")
        page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'",
                               timeout=30_000)
        page.wait_for_timeout(500)
        output = bu.view_output(page, areas.nth(1), ".cuda-magic-verify")
        output.scroll_into_view_if_needed()
        output.screenshot(path=bu.artifacts_dir() / "verify_tail_dark.png", timeout=15_000)
        out["tail_dark"] = output.evaluate(_SHOWN)
    return out


def test_a_pass_shows_its_badge_runs_and_memory_and_no_map(shown):
    s = shown["pass"]
    assert s is not None, "no verdict rendered"
    assert s["text"].splitlines()[0].startswith("PASS 1 output")
    assert "3 runs: bitwise deterministic" in s["text"]
    assert "peak extra memory of the check:" in s["text"] and "on the host" in s["text"]
    assert s["maps"] == []
    green = [b for b in s["badges"] if b["text"] == "PASS"]
    assert green and all(b["background"] == "rgb(39, 174, 96)" for b in green)


def test_a_tail_shows_its_category_reason_and_the_last_tile_column(shown):
    s = shown["tail"]
    lines = s["text"].splitlines()
    assert lines[0].startswith("FAIL tail 1 of 2 outputs fails"), lines[0]
    assert [b["text"] for b in s["badges"]] == ["FAIL", "tail", "FAIL", "tail", "PASS"]
    red = {b["background"] for b in s["badges"] if b["text"] == "FAIL"}
    assert red == {"rgb(192, 57, 43)"}
    assert "rule: " in s["text"] and "bfloat16" in s["text"]
    assert "500 of 12,500 (4 %)" in s["text"]
    (m,) = s["maps"]
    assert m["squares"] == 4 * 16                       # one square per tile
    wrong = {f: n for f, n in m["fills"].items() if not f.startswith("rgba")}
    assert sum(wrong.values()) == 4                     # the last tile column, every row of tiles
    assert "tile row (axis 0)" in m["texts"] and "tile column (axis 1)" in m["texts"]
    assert "none" in m["texts"] and "100 %" in m["texts"]
    assert "y: 4 of 64 tiles have mismatches; tiles of 16 x 16 elements" in s["text"]


def test_nothing_is_cut_off(shown):
    for name in CELLS:
        s = shown[name]
        assert s["table"]["right"] <= s["area"]["right"] + 0.5, (name, s["table"], s["area"])
        for m in s["maps"]:
            assert m["box"]["right"] <= s["area"]["right"] + 0.5, (name, m["box"], s["area"])


def test_a_tile_edge_map_is_downsampled_and_says_so(shown):
    s = shown["tile_edge"]
    assert s["text"].splitlines()[0].startswith("FAIL tile-edge"), s["text"][:200]
    (m,) = s["maps"]
    assert m["squares"] == 64 * 64
    assert "a grid of 64 x 128 tiles; downsampled to at most 64 x 64 squares: each square is " \
           "1 x 2 tiles" in s["text"]
    wrong = sum(n for f, n in m["fills"].items() if not f.startswith("rgba"))
    assert wrong == 64 * 32                             # the left half: every square there


def test_the_svg_text_follows_the_theme(shown):
    light, dark = shown["tail"], shown["tail_dark"]
    assert _luminance(light["background"]) > 0.8 and _luminance(dark["background"]) < 0.2
    assert _luminance(light["maps"][0]["textFill"]) < 0.3
    assert _luminance(dark["maps"][0]["textFill"]) > 0.7
    assert dark["text"] == light["text"]


def test_the_floor_s_limit_is_said(shown):
    text = shown["floor"]["text"]
    assert "FAIL" in text and "wrong" in text, text
    assert "off by a factor of 2 or more, which the floor passes in at most 1% of the elements" \
        in text, text
