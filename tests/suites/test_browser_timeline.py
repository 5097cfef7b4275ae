"""A Timeline's views as a reader sees them in a real JupyterLab in headless chromium
(tests/browser_util.py; skipped without /usr/bin/chromium or playwright), no GPU: a synthetic
producer/consumer timeline built from the runtime's Event and Timeline, shown as a cell's
result (the registry's widget), its warps of two blocks, a zoomed widget, and a 200k-event
timeline; then the static HTML alone (what nbconvert and a saved notebook show).  Screenshots
go to $CUDA_MAGIC_ARTIFACTS, else tests/.artifacts/: timeline_sm.png, timeline_warps.png,
timeline_zoom.png, timeline_dense.png, timeline_dark.png (the JupyterLab Dark theme),
timeline_narrow.png (a narrow window: the chart scrolls inside the output) and
timeline_static.png.
"""

import json

import pytest

import browser_util as bu

pytestmark = pytest.mark.browser

# 8 blocks on 4 SMs in two waves; per block a producer warp (loads), two consumer warps (an
# outer "consumer/tile" range around each "consumer/mma"), an epilogue, a "done" mark; block 7's
# consumer never ends its last tile (an open range); 3 events lost
SETUP = '''\
%load_ext cuda_magic
from cuda_magic.runtime.measure.timeline import Event, Timeline
from cuda_magic.display.timeline import TimelineView

def pipeline(blocks=8, sms=4, steps=5):
    ev = []
    for b in range(blocks):
        sm, t0 = b % sms, (b // sms) * 4200
        for s in range(steps):
            t = t0 + s * 700
            ev.append(Event("producer/load", "range", (b, 0, 0), 0, sm, t, t + 350))
            for w in (1, 2):
                ev.append(Event("consumer/tile", "range", (b, 0, 0), w, sm, t + 360, t + 690))
                ev.append(Event("consumer/mma", "range", (b, 0, 0), w, sm, t + 380, t + 640))
        end = t0 + steps * 700
        for w in (1, 2):
            if b == 7 and w == 2:
                ev.append(Event("epilogue", "range", (b, 0, 0), w, sm, end, end + 300, True))
                continue
            ev.append(Event("epilogue", "range", (b, 0, 0), w, sm, end, end + 300))
            ev.append(Event("done", "mark", (b, 0, 0), w, sm, end + 300, end + 300))
    ev.sort(key=lambda e: (e.start, e.sm, e.block, e.warp))
    note = "3 events lost: 1 warps filled their 64 slots (capacity=64; a larger capacity= keeps them)"
    return Timeline("ws_gemm", (blocks, 1, 1), (384, 1, 1), tuple(ev), 64, 2 * len(ev), 3, 32,
                    max(e.end for e in ev), ("nvcc", "-arch=sm_90a", "-DCUDA_MAGIC_TIMELINE=1",
                    "-lineinfo", "-o", "cell.cubin", "cell.cu"), sm_count=132, notes=(note,))

t = pipeline()'''

DENSE = '''\
names = ("tma/load", "mma", "softmax", "store")
ev = []
for sm in range(66):
    for w in range(4):
        at = 0
        for k in range(760):
            d = 40 + (k * 7919 + sm * 31 + w) % 300
            ev.append(Event(names[(k + w) % 4], "range", (sm, 0, 0), w, sm, at, at + d))
            at += d + 8
ev.sort(key=lambda e: (e.start, e.sm, e.block, e.warp))
dense = Timeline("attn", (66, 1, 1), (128, 1, 1), tuple(ev), 1520, 2 * len(ev), 0, 32,
                 max(e.end for e in ev), ("nvcc", "cell.cu"), sm_count=132)
dense'''

CELLS = {
    "sm": "t",
    "warps": "TimelineView(t, rows='warps', blocks=[0, 5])",
    "zoom": "box = TimelineView(t).widget()\nbox.zoom.value = (1.0, 3.0)\nbox",
    "dense": DENSE,
}

# what one timeline's output shows: its text, the boxes of the chart and the output, the
# colour of "lost", the chart's shapes, row labels and window, the SVG text's colour
_SHOWN = """out => {
  const root = out.querySelector('.cuda-magic-gantt');
  if (!root) return null;
  const box = e => { const r = e.getBoundingClientRect(); return {left: r.left, right: r.right,
                                                                  top: r.top, bottom: r.bottom}; };
  const rows = root.querySelector('svg.cuda-magic-gantt-rows');
  const lost = [...out.querySelectorAll('span')].find(s => / lost$/.test(s.textContent));
  const label = rows.querySelector('text');
  return {text: out.innerText, area: box(out), chart: box(root), svg: box(rows),
          lost: lost ? getComputedStyle(lost).color : null,
          rects: rows.querySelectorAll('rect > title').length,
          ticks: rows.querySelectorAll('path > title').length,
          labels: [...rows.querySelectorAll('text')].map(t => t.lastChild.textContent),
          titles: [...rows.querySelectorAll('rect > title, path > title')].slice(0, 400)
                    .map(t => t.textContent),
          window: [rows.dataset.t0, rows.dataset.t1], textFill: getComputedStyle(label).fill,
          scrollWidth: root.scrollWidth, clientWidth: root.clientWidth,
          background: document.querySelector('.jp-Notebook') ?
            getComputedStyle(document.querySelector('.jp-Notebook')).backgroundColor : null};
}"""


def _luminance(css: str) -> float:
    parts = css[css.index("(") + 1:css.index(")")].split(",")
    r, g, b = (float(p) / 255 for p in parts[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


@pytest.fixture(scope="module")
def shown(tmp_path_factory):
    reason = bu.skip_reason()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("timeline")
    cells = [SETUP, *CELLS.values(), "open('static.html', 'w').write(TimelineView(t).html())"]
    (root / "timeline.ipynb").write_text(json.dumps(bu.notebook(cells)))
    with bu.lab_server(root) as (base, token), bu.browser_page(width=1400, height=1000) as page:
        bu.open_notebook(page, base, token, "timeline.ipynb", timeout=60)
        bu.run_all(page, timeout=150)
        out = bu.shown_outputs(page, ".cuda-magic-gantt", CELLS, "timeline", _SHOWN)
        areas = page.locator(".jp-CodeCell").filter(has=page.locator(".cuda-magic-gantt"))
        page.set_viewport_size({"width": 760, "height": 1000})
        page.wait_for_timeout(500)
        output = bu.view_output(page, areas.nth(0), ".cuda-magic-gantt")
        output.scroll_into_view_if_needed()
        output.screenshot(path=bu.artifacts_dir() / "timeline_narrow.png", timeout=15_000)
        out["narrow"] = output.evaluate(_SHOWN)
        page.set_viewport_size({"width": 1400, "height": 1000})
        page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', "
                      "{theme: 'JupyterLab Dark'})")
        page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'",
                               timeout=30_000)
        page.wait_for_timeout(500)
        output.scroll_into_view_if_needed()
        output.screenshot(path=bu.artifacts_dir() / "timeline_dark.png", timeout=15_000)
        out["dark"] = output.evaluate(_SHOWN)
        # the static page alone, as nbconvert or a saved notebook shows it: no widgets, no script
        page.set_content("<html><body style='font-family: sans-serif'>"
                         + (root / "static.html").read_text() + "</body></html>")
        page.wait_for_timeout(300)
        static = page.locator(".cuda-magic-timeline")
        static.screenshot(path=bu.artifacts_dir() / "timeline_static.png", timeout=15_000)
        out["static"] = static.evaluate(_SHOWN)
    return out


def test_the_header_says_the_launch_and_lost_in_red(shown):
    s = shown["sm"]
    assert s is not None, "no timeline rendered"
    first = s["text"].splitlines()[0]
    assert first.startswith("ws_gemm[grid=(8, 1, 1), block=(384, 1, 1)] · 231 events"), first
    assert "%globaltimer resolution 32 ns" in s["text"]
    assert "recorded by the lowest active lane of each warp" in s["text"]
    assert s["lost"] == "rgb(192, 57, 43)"
    assert "3 events lost: 1 warps filled their 64 slots" in s["text"]


def test_the_chart_draws_every_event_with_its_hover(shown):
    s = shown["sm"]
    assert s["labels"][:4] == ["SM 0", "SM 1", "SM 2", "SM 3"]
    assert s["rects"] == 8 * 27 and s["ticks"] == 15
    assert "consumer/mma · block 4 warp 1 · SM 0 · start 4.58 µs · duration 260 ns" in s["titles"]
    assert any(t.startswith("epilogue (open: no END) · block 7 warp 2") for t in s["titles"])
    assert s["window"] == ["0", str(4200 + 5 * 700 + 300)]
    for part in ("producer/load", "consumer/tile", "consumer/mma", "epilogue", "done", "median",
                 "p90", "share", "instrumented build (argv)"):
        assert part in s["text"], part


def test_warps_zoom_and_many_events(shown):
    w = shown["warps"]
    assert w["labels"][:1] == ["b0 w0"] and "b5 w2" in w["labels"] and len(w["labels"]) == 6
    z = shown["zoom"]
    assert z["window"] == ["1000", "3000"] and z["rects"] < shown["sm"]["rects"]
    d = shown["dense"]
    assert d["rects"] + d["ticks"] <= 20_000 and "zoom in" in d["text"]


def test_nothing_spills_out_of_the_output(shown):
    for name in (*CELLS, "narrow"):
        s = shown[name]
        assert s["chart"]["right"] <= s["area"]["right"] + 0.5, (name, s["chart"], s["area"])
    narrow = shown["narrow"]
    assert narrow["scrollWidth"] > narrow["clientWidth"]      # the chart scrolls inside


def test_the_svg_text_follows_the_theme(shown):
    light, dark = shown["sm"], shown["dark"]
    assert _luminance(light["background"]) > 0.8 and _luminance(dark["background"]) < 0.2
    assert _luminance(light["textFill"]) < 0.3 and _luminance(dark["textFill"]) > 0.7


def test_the_static_page_shows_the_same_chart_without_widgets(shown):
    s, w = shown["static"], shown["sm"]
    assert s["rects"] == w["rects"] and s["ticks"] == w["ticks"] and s["labels"] == w["labels"]
    assert s["lost"] == "rgb(192, 57, 43)" and "consumer/mma" in s["text"]
