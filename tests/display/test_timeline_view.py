"""The views of a Timeline (cuda_magic.display.timeline and .gantt) on synthetic timelines, no
GPU: the header and summary in text and HTML, the Gantt chart's shapes (ranges, marks, open
and nested ranges), its rows (SMs and their lanes, or the warps of chosen blocks), zoom, the
bound on shapes for a 500k-event timeline, escaping, and the widget."""

import re
from html import escape

import pytest

import cuda_magic.display as display
import cuda_magic.display.timeline as timeline_module
from cuda_magic.display import gantt, registry, view
from cuda_magic.display.timeline import TimelineView, summary_rows
from cuda_magic.errors import ShowError
from cuda_magic.runtime.measure.timeline import Event, Timeline

ARGV = ("nvcc", "-DCUDA_MAGIC_TIMELINE=1", "--generate-line-info", "cell.cu")


def timeline(events, grid=(4, 1, 1), block=(96, 1, 1), lost=0, notes=(), argv=ARGV, **kw):
    events = tuple(sorted(events, key=lambda e: (e.start, e.sm, e.block, e.warp)))
    duration = max((e.end for e in events), default=0)
    return Timeline(kernel="pipe", grid=grid, block=block, events=events, capacity=64,
                    recorded=2 * len(events), lost=lost, resolution_ns=32, duration=duration,
                    argv=argv, sm_count=132, notes=notes, **kw)


def R(name, block, warp, sm, start, end, open=False):
    return Event(name, "range", block, warp, sm, start, end, open)


def M(name, block, warp, sm, at):
    return Event(name, "mark", block, warp, sm, at, at)


def pipeline(steps=3, blocks=2):
    """Per block (one per SM): warp 0 loads, warps 1 and 2 compute after each load, then an
    epilogue and a "done" mark."""
    ev = []
    for b in range(blocks):
        for s in range(steps):
            t = s * 600
            ev.append(R("producer/load", (b, 0, 0), 0, b, t, t + 300))
            ev += [R("consumer/mma", (b, 0, 0), w, b, t + 320, t + 580) for w in (1, 2)]
        end = steps * 600
        ev += [R("epilogue", (b, 0, 0), w, b, end, end + 400) for w in (1, 2)]
        ev += [M("done", (b, 0, 0), w, b, end + 400) for w in (1, 2)]
    return timeline(ev, grid=(blocks, 1, 1))


def rows_svg(html: str) -> str:
    return re.search(r'<svg[^>]*cuda-magic-gantt-rows.*?</svg>', html, re.S).group()


def shapes(svg: str, tag: str) -> list[str]:
    """The titles of the ``tag`` shapes (rect, line) drawn for events (not the row stripes)."""
    return re.findall(rf'<{tag} [^>]*><title>([^<]*)</title></{tag}>', svg)


def fills(svg: str) -> dict:
    """name -> the fill of its group (the first word of each range title)."""
    out = {}
    for g in re.finditer(r'<g fill="([^"]+)">(.*?)</g>', svg, re.S):
        for title in shapes(g.group(2), "rect"):
            out.setdefault(title.split(" ·")[0].split(" ×")[0].split(" (")[0], g.group(1))
    return out


# -- registry, text, header ----------------------------------------------------------------------

def test_a_timeline_is_shown_by_its_view():
    t = pipeline()
    assert registry.for_type(Timeline).view == "cuda_magic.display.timeline:TimelineView"
    v = view(t)
    assert isinstance(v, TimelineView) and view(v) is v
    assert v.part("sass") == v.text() == repr(v)


def test_view_passes_the_timeline_s_options_and_names_one_it_does_not_take():
    t = pipeline()
    v = view(t, rows="warps", blocks=[0], window=(0, 200), max_rects=500)
    assert (v.rows, v.blocks, v.max_rects) == ("warps", [0], 500) and v.window[1] == 200
    with pytest.raises(display.ViewError, match=r"^row=: the view of a k.timeline Timeline "
                                                r"takes rows=, blocks=, window=, max_rects=$"):
        view(t, row="warps")
    with pytest.raises(display.ViewError, match=r"^rows=: TimelineView is already a view"):
        view(view(t), rows="warps")
    with pytest.raises(ShowError, match="rows='lanes'"):
        view(t, rows="lanes")
    assert Timeline.Event is Event      # a timeline made by hand, from the public name


def test_the_text_has_the_header_and_the_summary():
    text = view(pipeline()).text()
    lines = text.splitlines()
    assert lines[0] == ("timeline of pipe[grid=(2, 1, 1), block=(96, 1, 1)]: 26 events (22 "
                        "ranges, 4 marks) from 6 warps, 0 lost, 2.2 µs first to last event")
    assert "%globaltimer resolution 32 ns" in lines[1]
    assert "recorded by the lowest active lane of each warp" in lines[1]
    row = next(l for l in lines if l.strip().startswith("producer/load"))
    assert row.split() == ["producer/load", "range", "producer", "6", "300", "ns", "300", "ns",
                           f"{6 * 300 / (2200 * 6):.1%}"]
    assert next(l for l in lines if l.strip().startswith("done")).split() == ["done", "mark", "4"]
    assert lines[-1] == "  instrumented build: " + " ".join(ARGV)


def test_lost_events_are_red_in_html_and_flagged_in_text():
    note = "5 events lost: 1 warps filled their 64 slots (capacity=64; a larger capacity= keeps them)"
    lost = timeline(pipeline().events, grid=(2, 1, 1), lost=5, notes=(note,))
    page = view(lost).html()
    assert re.search(r'<span style="color: #c0392b; font-weight: bold">5 lost</span>', page)
    assert f"  ! {note}" in view(lost).text()
    clean = view(pipeline()).html()
    assert '<span style="">0 lost</span>' in clean and "#c0392b; font-weight: bold\">0" not in clean


def test_the_argv_is_folded_and_the_static_page_needs_no_script():
    page = view(pipeline()).html()
    details = re.search(r"<details[^>]*><summary[^>]*>instrumented build \(argv\)</summary>"
                        r"(.*?)</details>", page, re.S)
    assert details and "open" not in details.group(0).split(">")[0]
    assert "--generate-line-info" in details.group(1)
    assert "<script" not in page and not re.search(r"<[^>]*\son\w+=", page)


# -- the chart -----------------------------------------------------------------------------------

def test_each_range_and_mark_is_a_shape_with_its_hover():
    svg = rows_svg(view(pipeline()).html())
    rects, ticks = shapes(svg, "rect"), shapes(svg, "path")
    assert len(rects) == 22 and len(ticks) == 4
    assert "producer/load · block 1 warp 0 · SM 1 · start 600 ns · duration 300 ns" in rects
    assert "consumer/mma · block 0 warp 2 · SM 0 · start 1.52 µs · duration 260 ns" in rects
    assert "done (mark) · block 1 warp 1 · SM 1 · at 2.2 µs" in ticks
    labels = re.findall(r"<text [^>]*><title>[^<]*</title>([^<]*)</text>", svg)
    assert labels == ["SM 0", "SM 1"]


def test_one_colour_per_name_in_names_order_whatever_is_shown():
    t = pipeline()
    want = {n: gantt.colour(i) for i, n in enumerate(t.names())}
    assert want["producer/load"] == gantt.PALETTE[0]
    for v in (view(t), TimelineView(t, rows="warps", blocks=[1]),
              TimelineView(t, window=(1000, 2200))):
        got = fills(rows_svg(v.html()))
        assert got and all(got[n] == want[n] for n in got), got
    ticks = re.findall(r'<g stroke="([^"]+)" fill="[^"]+" stroke-width="2"', rows_svg(view(t).html()))
    assert ticks == [want["done"]]
    legend = re.search(r'<div [^>]*flex-wrap: wrap[^>]*>(.*?)</div>', view(t).html()).group(1)
    items = legend.split('<span style="margin-right')[1:]
    swatches = [(re.search("#[0-9a-f]{6}", i).group(), re.search(">([^<>]*)</span>$", i).group(1))
                for i in items]
    assert swatches == [(want[n], n) for n in t.names()]


def test_the_lanes_of_an_sm_are_its_warps_resident_at_once():
    # SM 0 runs block 0 (3 warps), then block 2 (2 warps) after it ended: 3 lanes, reused
    ev = [R("a", (0, 0, 0), w, 0, 0, 100) for w in range(3)]
    ev += [R("b", (2, 0, 0), w, 0, 200, 300) for w in range(2)]
    ev += [R("a", (1, 0, 0), 0, 5, 0, 300)]
    a = gantt.Arrays(timeline(ev))
    sms, lane, most = a.lanes()
    assert sms.tolist() == [0, 5] and most == 3
    by_event = {(e.block[0], e.warp): int(k) for e, k in zip(a.events, lane)}
    assert by_event == {(0, 0): 0, (0, 1): 1, (0, 2): 2, (2, 0): 0, (2, 1): 1, (1, 0): 0}
    svg = rows_svg(gantt.chart(a).rows)
    ys = {t.split(" ·")[1]: float(y) for y, t in re.findall(
        r'<rect x="[^"]+" y="([^"]+)"[^>]*><title>([^<]*)</title>', svg)}
    assert ys[" block 0 warp 0"] == ys[" block 2 warp 0"] < ys[" block 0 warp 1"] < ys[" block 0 warp 2"]


def test_an_open_range_is_faded_dashed_and_says_so():
    ev = [R("wait", (0, 0, 0), 0, 3, 0, 500, open=True), R("work", (0, 0, 0), 1, 3, 0, 500)]
    v = view(timeline(ev))
    svg = rows_svg(v.html())
    opened = re.search(r'<rect [^>]*fill-opacity="0.45"[^>]*stroke-dasharray[^>]*><title>([^<]*)', svg)
    assert opened and opened.group(1).startswith("wait (open: no END) · block 0 warp 0")
    assert len(re.findall("stroke-dasharray", svg)) == 1
    assert "open: no END (kernel ended or buffer full)" in v.html()
    head, cells = summary_rows(v.summary)
    assert "open" in head and cells[0][head.index("open")] == "1"


def test_a_nested_range_is_drawn_inset_over_its_outer_one():
    ev = [R("loop", (0, 0, 0), 0, 0, 0, 1000), R("tma", (0, 0, 0), 0, 0, 0, 200),
          R("tma", (0, 0, 0), 0, 0, 400, 600)]
    svg = rows_svg(view(timeline(ev, grid=(1, 1, 1))).html())
    boxes = {t.split(" ·")[0] + t.split("start ")[1][:6]: (float(y), float(h)) for y, h, t in
             re.findall(r'<rect x="[^"]+" y="([^"]+)" width="[^"]+" height="([^"]+)"[^>]*>'
                        r'<title>([^<]*)</title>', svg)}
    (oy, oh), (iy, ih) = boxes["loop0 ns ·"], boxes["tma0 ns ·"]
    assert iy > oy and iy + ih < oy + oh
    assert svg.index("<title>loop") < svg.index("<title>tma")       # inner drawn over it
    assert boxes["tma400 ns"] == (iy, ih)


def test_nesting_is_found_in_a_long_kernel_of_many_warps():
    """warp index x time would pass 64 bits here (300,000 warps, 10^14 ns): the depth still
    comes out right."""
    far, b = 10 ** 14, (99_999, 0, 0)
    ev = [R("first", (0, 0, 0), 0, 0, 0, 10), R("loop", b, 2, 1, far, far + 1000),
          R("tma", b, 2, 1, far + 10, far + 200), R("tma", b, 2, 1, far + 400, far + 600)]
    a = gantt.Arrays(timeline(ev, grid=(100_000, 1, 1)))
    assert {(e.name, e.start): int(d) for e, d in zip(a.events, a.depth)} == {
        ("first", 0): 0, ("loop", far): 0, ("tma", far + 10): 1, ("tma", far + 400): 1}


def test_a_pixel_column_is_drawn_in_the_colour_of_its_longest_range():
    # in 1 ms over ~850 px, "a" (1 ns) and "b" (900 ns) start in one column of warp 0's lane
    ev = [R("a", (0, 0, 0), 0, 0, 0, 1), R("b", (0, 0, 0), 0, 0, 1, 901),
          R("c", (0, 0, 0), 0, 0, 999_000, 1_000_000)]
    svg = rows_svg(view(timeline(ev, grid=(1, 1, 1))).html())
    joined = re.search(r'<g fill="([^"]+)"><rect [^>]*><title>(2 ranges[^<]*)</title>', svg)
    assert joined and joined.group(1) == gantt.colour(1)
    assert joined.group(2).startswith("2 ranges, the longest b (closer than a pixel at this "
                                      "zoom: zoom in) · SM 0 · 0 ns–")
    assert len(shapes(svg, "rect")) == 2


def test_the_warps_of_chosen_blocks_are_rows():
    t = pipeline(blocks=3)
    v = TimelineView(t, rows="warps", blocks=[(2, 0, 0), 0])
    svg = rows_svg(v.html())
    labels = re.findall(r"<text [^>]*><title>([^<]*)</title>([^<]*)</text>", svg)
    assert [l for _, l in labels] == ["b0 w0", "b0 w1", "b0 w2", "b2 w0", "b2 w1", "b2 w2"]
    assert labels[3][0] == "block (2, 0, 0) warp 0"
    assert not [r for r in shapes(svg, "rect") if "block 1 " in r]
    assert len(shapes(svg, "rect")) == 2 * 11
    default = TimelineView(t, rows="warps")
    assert default.blocks == [0] and "b1 w0" not in default.html()
    assert "rows: the 3 warps that recorded events in 1 chosen block" in default.html()


def test_zoom_draws_the_window_only():
    t = pipeline()
    whole, zoomed = view(t).chart(), view(t).chart(window=(600, 1200))
    assert (whole.t0, whole.t1) == (0, 2200) and (zoomed.t0, zoomed.t1) == (600, 1200)
    assert 'data-t0="600" data-t1="1200"' in zoomed.rows
    starts = [r.split("start ")[1].split(" ·")[0] for r in shapes(zoomed.rows, "rect")]
    assert sorted(starts) == ["600 ns", "600 ns", "920 ns", "920 ns", "920 ns", "920 ns"]
    assert not shapes(zoomed.rows, "path")                   # "done" is at 2.2 µs
    axis = re.findall(r"<text [^>]*>([^<]*)</text>", zoomed.axis)[1:]
    assert axis[0] == "600 ns" and axis[-1] == "1.2 µs"
    xs = [float(x) for x in re.findall(r'<rect x="([^"]+)"[^>]*><title>', zoomed.rows)]
    assert min(xs) >= gantt.LABEL_W and max(xs) < gantt.WIDTH
    assert "600 ns – 1.2 µs of 2.2 µs" in zoomed.caption


def test_many_events_are_bounded_and_the_arrays_reused(big, monkeypatch):
    """500k events draw as at most MAX_RECTS shapes, each row its share; a zoomed redraw reuses
    the arrays the first chart read the events into (the CPU time of both is
    benchmarks/bench_display.py's)."""
    made = []
    real = timeline_module.Arrays
    monkeypatch.setattr(timeline_module, "Arrays", lambda t: made.append(t) or real(t))
    v = TimelineView(big)
    c = v.chart()
    assert c.shown == len(big.events) == 500_000
    rects = len(re.findall("<rect ", c.rows)) + len(re.findall("<path ", c.rows))
    assert c.shapes <= gantt.MAX_RECTS and rects <= gantt.MAX_RECTS + 2 * 132
    per_row = {}
    for title in shapes(c.rows, "rect"):
        sm = re.search(r"· SM (\d+) ·", title).group(1)
        per_row[sm] = per_row.get(sm, 0) + 1
    assert len(per_row) == 132 and max(per_row.values()) <= gantt.MAX_RECTS // 132
    assert any("(closer than a pixel at this zoom: zoom in)" in r for r in shapes(c.rows, "rect"))
    assert len(v.html()) < 5_000_000
    z = v.chart(window=(10_000, 12_000))
    assert 0 < z.shown < 500_000 and z.merged < z.shown
    assert made == [big]                                     # read once, for both charts


def many_events(count: int = 500_000) -> Timeline:
    """``count`` ranges of 4 names on 132 SMs, 4 warps each, back to back (also
    benchmarks/bench_display.py's)."""
    names = ("a", "b/x", "c:y", "d")
    per, ev = count // (132 * 4) + 1, []
    for sm in range(132):
        for w in range(4):
            t = 0
            for k in range(per):
                if len(ev) == count:
                    break
                d = 50 + (k * 7919 + sm) % 200
                ev.append(Event(names[k % 4], "range", (sm, 0, 0), w, sm, t, t + d))
                t += d + 10
    return timeline(ev, grid=(132, 1, 1), block=(128, 1, 1))


@pytest.fixture(scope="module")
def big():
    return many_events()


def test_names_from_the_source_are_escaped():
    bad = '<script>alert("x")</script> it\'s'
    ev = [R(bad, (0, 0, 0), 0, 0, 0, 100), M(bad + "!", (0, 0, 0), 0, 0, 50)]
    t = timeline(ev, grid=(1, 1, 1), argv=("nvcc", "-DNAME=<b>"))
    page = view(t).html()
    assert "<script" not in page and "<b>" not in page
    assert escape(bad) in page and page.count(escape(bad)) >= 4     # legend, 2 titles, table
    assert "&#x27;" in page and "&quot;" in page
    assert bad in view(t).text()


def test_no_events():
    t = timeline([], grid=(1, 1, 1), notes=("no events recorded: the kernel did not reach a mark",))
    v = view(t)
    assert "no ranges or marks recorded" in v.text() and "no events in view" in v.html()
    assert v.chart().shapes == 0


def test_bad_options_name_the_parameter():
    t = pipeline()
    for kwargs, word in (({"rows": "blocks"}, "rows="), ({"blocks": [7]}, "blocks="),
                         ({"blocks": [(0, 1, 0)]}, "blocks="), ({"blocks": "0"}, "blocks="),
                         ({"window": (5, 1)}, "window="), ({"window": "x"}, "window="),
                         ({"max_rects": 10}, "max_rects=")):
        with pytest.raises(ShowError, match=re.escape(word)):
            TimelineView(t, **kwargs)
    with pytest.raises(ShowError, match="window="):
        view(t).chart(window=(1, 1))


# -- notebook forms: the bundle and the widget ---------------------------------------------------

def test_the_bundle_is_the_widget_and_the_static_page(monkeypatch):
    v = view(pipeline())
    assert v._repr_mimebundle_() == {}                       # terminal IPython: the text
    monkeypatch.setattr(display.frontend, "in_kernel", lambda: True)
    bundle = v._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/html"] == v.html() and "text/plain" not in bundle
    monkeypatch.setattr(display.frontend, "widgets_available", lambda: False)
    assert v._repr_mimebundle_() == {"text/html": v.html()}


def test_the_widget_switches_rows_picks_blocks_and_zooms():
    t = pipeline(blocks=3)
    box = view(t).widget()
    first = box.chart.value
    assert 'data-t0="0" data-t1="2200"' in first and box.blocks.layout.display == "none"
    assert [o[0] for o in box.blocks.options] == ["block 0 (SM 0)", "block 1 (SM 1)",
                                                  "block 2 (SM 2)"]
    box.zoom.value = (0.6, 1.2)
    assert 'data-t0="600" data-t1="1200"' in box.chart.value
    box.mode.value = "warps"
    assert box.blocks.layout.display == "" and "b0 w2" in box.chart.value
    box.blocks.value = (1, 2)
    assert "b1 w0" in box.chart.value and "b0 w0" not in box.chart.value
    assert 'data-t0="600" data-t1="1200"' in box.chart.value
    box.whole.click()
    assert 'data-t0="0" data-t1="2200"' in box.chart.value
    from cuda_magic.display.frontend import close
    close(box)
