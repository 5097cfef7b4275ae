"""The view of a verify() Verdict (cuda_magic.display.verdict): the text table, the HTML table
with its badges, reasons and rules, the determinism and memory lines, and the inline SVG tile map
(one square per tile, coloured by the share of its elements that mismatch; downsampled grids)."""

import re
from html import escape
from dataclasses import replace

import numpy as np
import pytest

from cuda_magic.correctness import verdict as cv
from cuda_magic.correctness.verdict import OutputCheck, Verdict
from cuda_magic.display import verdict as dv
from cuda_magic.display.tile_map import NEUTRAL, colour, tile_sizes
from cuda_magic.display.verdict import MEANINGS, VerdictView
from cuda_magic.errors import ShowError


RULE = "<= 64 ULP per element, or 64 ULP of max|ref| (float32 default)"


def check(**kw) -> OutputCheck:
    """A passing float32 output of 1000 elements unless ``kw`` says otherwise."""
    base = dict(name="y", dtype="float32", shape=(1000,), size=1000, passed=True, category="pass",
                reason=None, rule=RULE, mismatches=0, max_ulp=2.0, p99_ulp=1.0, p99_exact=True,
                max_abs=1.2e-7, max_rel=3e-7, worst=None, worst_out=None, worst_ref=None,
                nan_misplaced=0, inf_misplaced=0, zero_sign_misplaced=0, tile=None,
                tile_map=None, trivial=None)
    base.update(kw)
    return OutputCheck(**base)


def failing(category="wrong", **kw) -> OutputCheck:
    base = dict(passed=False, category=category, reason=f"the {category} reason.",
                mismatches=13, max_ulp=3.0, p99_ulp=2.0, max_abs=0.5, max_rel=0.25, worst=(999,),
                worst_out=1.5, worst_ref=1.25)
    base.update(kw)
    return check(**base)


def verdict(*outputs, runs=1, deterministic=None, spread=None, peak_bytes=4_000, where="host"):
    return Verdict(tuple(outputs) or (check(),), runs, deterministic, spread, peak_bytes, where)


def tail_map():
    """A (50, 250) output in 16 x 16 tiles: a 4 x 16 grid whose last column mismatches; the
    bottom-right tile holds 2 x 10 elements, all wrong."""
    m = np.zeros((4, 16), dtype=np.int64)
    m[:3, 15] = 16 * 10
    m[3, 15] = 2 * 10
    return failing("tail", shape=(50, 250), size=12500, mismatches=int(m.sum()), tile=(16, 16),
                   tile_map=m, worst=(49, 249), worst_out=0.0, worst_ref=3.5)


def rects(svg: str) -> list[str]:
    """The fills of the squares of a tile map, one per drawn square."""
    grid = svg.split("</title>", 1)[1].split("<text", 1)[0]
    out = []
    for group in re.findall(r'<g fill="([^"]+)">(.*?)</g>', grid):
        out += [group[0]] * group[1].count("<rect")
    out += re.findall(r'<rect [^>]*fill="(#[0-9a-f]{6})"><title>', grid)
    return out


# -- text ---------------------------------------------------------------------------------------

def test_pass_text_is_a_table_with_the_rule_and_memory():
    text = VerdictView(verdict(check())).text()
    lines = text.splitlines()
    assert lines[0] == "verify: PASS · 1 output · max 2 ULP"
    head = lines[1].split()
    assert head[:4] == ["output", "dtype", "shape", "result"]
    assert "NaN/Inf/±0" in lines[1]
    row = lines[2].split()
    assert row[:5] == ["y", "float32", "(1000,)", "PASS", "0"] and "1.2e-07" in row
    assert f"  rule: {RULE}" in lines
    assert lines[-1] == "peak extra memory of the check: 4.0 kB on the host"
    assert "runs" not in text and "≈" not in text


def test_every_category_has_a_meaning():
    assert set(cv.CATEGORIES) | {"pass"} == set(MEANINGS)


@pytest.mark.parametrize("category", cv.CATEGORIES)
def test_each_failing_category_reads_in_text_and_html(category):
    v = verdict(failing(category), check(name="s"))
    text = VerdictView(v).text()
    assert text.splitlines()[0] == f"verify: FAIL {category} · 1 of 2 outputs fails · max 3 ULP"
    assert f"FAIL {category}" in text.splitlines()[2]
    assert f"  y: the {category} reason." in text
    assert ("–" if category == "missing" else "13 of 1,000 (1.3 %)") in text.splitlines()[2]
    assert "[999]: 1.5 vs 1.25" in text
    html = VerdictView(v)._repr_html_()
    tip = escape(MEANINGS[category], quote=True)
    assert html.count(f'title="{tip}"') == 2          # the headline's badge and the row's
    assert f">{category}</span>" in html and f"the {category} reason." in html
    assert html.count(">PASS</span>") == 1 and html.count(">FAIL</span>") == 2   # headline + row


def test_the_first_failing_output_names_the_verdicts_category():
    v = verdict(check(), failing("tail", name="a"), failing("wrong", name="b"))
    assert VerdictView(v).text().startswith("verify: FAIL tail · 2 of 3 outputs fail")


def test_special_values_placed_differently_are_counted():
    c = failing("special", nan_misplaced=2, inf_misplaced=1, zero_sign_misplaced=3,
                worst_out=float("nan"), worst_ref=-0.0)
    text = VerdictView(verdict(c)).text()
    assert "2/1/3" in text and "[999]: nan vs -0.0" in text
    assert re.search(r"<b><span [^>]*>2/1/3</span></b>", VerdictView(verdict(c))._repr_html_())
    assert not re.search(r"<b><span [^>]*>0/0/0", VerdictView(verdict(check()))._repr_html_())


def test_approximate_p99_is_marked_and_explained():
    v = verdict(failing("precision", p99_ulp=512.0, p99_exact=False, max_ulp=1.2e9))
    text = VerdictView(v).text()
    assert "≈512" in text and "1.2e+09" in text and dv.P99_NOTE in text
    assert "≈512" in VerdictView(v)._repr_html_()
    exact = VerdictView(verdict(failing("precision", p99_ulp=512.0))).text()
    assert "≈" not in exact and " 512 " in exact


def test_rules_per_output_when_they_differ():
    v = verdict(check(), check(name="s", dtype="bfloat16", rule="<= 2 ULP per element"))
    text = VerdictView(v).text()
    assert f"  y: rule {RULE}" in text and "  s: rule <= 2 ULP per element" in text
    assert "  rule:" not in text
    html = VerdictView(v)._repr_html_()
    assert html.count("rule: ") == 2 and "rule: &lt;= 2 ULP per element" in html


def test_a_missing_output_shows_dashes():
    c = failing("missing", shape=None, size=0, mismatches=0, max_ulp=float("nan"),
                p99_ulp=float("nan"), max_abs=float("nan"), max_rel=float("nan"), worst=None,
                reason="there is no output 'z' in out.", name="z", rule="")
    text = VerdictView(verdict(c)).text()
    row = text.splitlines()[2].split()
    assert row[:5] == ["z", "float32", "–", "FAIL", "missing"] and "nan" not in text
    assert "there is no output &#x27;z&#x27; in out." in VerdictView(verdict(c))._repr_html_()


def test_integer_outputs_show_whole_values():
    c = failing("wrong", dtype="int32", worst=(3, 4), worst_out=7.0, worst_ref=-2.0, max_ulp=9.0)
    assert "[3, 4]: 7 vs -2" in VerdictView(verdict(c)).text()


@pytest.mark.parametrize("x, shown", [(np.float32(0.1), "0.1"), (1.0000001192092896, "1.0000001"),
                                      (-0.0, "-0.0"), (3.0, "3.0"), (float("inf"), "inf"),
                                      (0.1, "0.1"), (0.30000000000000004, "0.30000000000000004")])
def test_values_are_as_short_as_shows_them_exactly(x, shown):
    assert dv.value(x) == shown


@pytest.mark.parametrize("x, shown", [(3.0, "3"), (0.5, "0.5"), (0.515625, "0.516"),
                                      (12345.0, "12,345"),
                                      (float(2 ** 64 - 1), "1.84e+19"), (float("inf"), "inf"),
                                      (float("nan"), "–"), (None, "–")])
def test_ulp_figures(x, shown):
    assert dv.ulp(x) == shown


# -- runs and memory ----------------------------------------------------------------------------

def test_runs_bitwise_deterministic():
    v = verdict(check(), runs=3, deterministic=True, spread={"y": 0.0}, peak_bytes=64_000_000,
                where="device")
    text = VerdictView(v).text()
    assert "3 runs: bitwise deterministic" in text
    assert text.splitlines()[-1] == "peak extra memory of the check: 64.0 MB on the device"
    assert "3 runs: bitwise deterministic" in VerdictView(v)._repr_html_()


def test_runs_not_deterministic_give_the_spread_per_output():
    v = verdict(failing("nondeterministic"), check(name="s"), runs=2, deterministic=False,
                spread={"y": 2.0, "s": 0.0})
    line = [x for x in VerdictView(v).text().splitlines() if x.startswith("2 runs")]
    assert line == ["2 runs: not bitwise deterministic: y up to 2 ULP apart between runs; s the "
                    "same in every run"]
    html = VerdictView(v)._repr_html_()
    assert re.search(r'color: #d35400[^"]*">2 runs: not bitwise deterministic', html)


def test_one_run_has_no_determinism_line():
    assert dv.determinism(verdict(check(), runs=1)) is None


# -- HTML ---------------------------------------------------------------------------------------

def test_html_is_static_and_escapes_names():
    c = replace(tail_map(), name="<y&>", reason="a <b>bold</b> claim", rule="<= 1 ULP & more")
    html = VerdictView(verdict(c))._repr_html_()
    assert "<script" not in html and not re.search(r"\son[a-z]+=", html)
    assert "<y&>" not in html and "<b>bold</b>" not in html
    assert html.count("&lt;y&amp;&gt;") >= 3          # the row, the map's caption, its SVG title
    assert "rule: &lt;= 1 ULP &amp; more" in html
    assert html.startswith('<div class="cuda-magic cuda-magic-verify">')


def test_pass_has_no_map_even_with_a_tile_map():
    c = check(tile=(16, 16), tile_map=np.zeros((4, 4), dtype=np.int64), shape=(64, 64), size=4096)
    assert "<svg" not in VerdictView(verdict(c))._repr_html_()
    assert "<svg" not in VerdictView(verdict(failing("wrong")))._repr_html_()   # no tile map


def test_a_failing_output_with_a_tile_map_gets_one_square_per_tile():
    c = tail_map()
    html = VerdictView(verdict(c, check(name="s")))._repr_html_()
    assert html.count("<svg") == 1
    svg = html[html.index("<svg"):html.index("</svg>")]
    fills = rects(svg)
    assert len(fills) == 64
    assert fills.count(NEUTRAL) == 60
    # the partial bottom-right tile (20 elements, all wrong) is as dark as the full ones
    assert [f for f in fills if f != NEUTRAL] == [colour(1.0)] * 4
    assert "tiles (3, 15)" not in svg and "tile (3, 15): 20 of 20 elements mismatch (100 %)" in svg
    assert "tile row (axis 0)" in svg and "tile column (axis 1)" in svg
    assert ">none</text>" in svg and ">100 %</text>" in svg
    assert ("4 of 64 tiles have mismatches; tiles of 16 x 16 elements, a grid of 4 x 16 "
            "tiles") in html
    assert "downsampled" not in html
    text = VerdictView(verdict(c)).text()
    assert ("y: 4 of 64 tiles have mismatches; tiles of 16 x 16 elements, a grid of 4 x 16 tiles; "
            "most in tiles (0, 15): 160, (1, 15): 160, (2, 15): 160") in text


def test_tile_colour_is_the_share_of_the_tile_that_mismatches():
    m = np.array([[0, 1, 128, 256]])
    c = failing("wrong", shape=(16, 64), size=1024, tile=(16, 16), tile_map=m, mismatches=385)
    svg = VerdictView(verdict(c))._repr_html_()
    fills = rects(svg[svg.index("<svg"):])
    assert fills == [NEUTRAL, colour(1 / 256), colour(0.5), colour(1.0)]
    assert "(0.391 %)" in svg and "(50 %)" in svg


def test_colours_go_from_light_to_dark_and_none_is_grey():
    def luminance(hexcolour):
        r, g, b = (int(hexcolour[i:i + 2], 16) for i in (1, 3, 5))
        return 0.2126 * r + 0.7152 * g + 0.0722 * b
    assert colour(0) == colour(float("nan")) == NEUTRAL
    shades = [luminance(colour(f)) for f in (1 / 256, 0.01, 0.1, 0.3, 0.6, 1.0)]
    assert shades == sorted(shades, reverse=True) and len(set(shades)) == len(shades)


def test_a_large_tile_grid_is_downsampled():
    m = np.zeros((200, 100), dtype=np.int64)
    m[199, :] = 256
    c = failing("tail", shape=(3200, 1600), size=3200 * 1600, tile=(16, 16), tile_map=m,
                mismatches=int(m.sum()))
    html = VerdictView(verdict(c))._repr_html_()
    fills = rects(html[html.index("<svg"):])
    assert len(fills) == 50 * 50
    # the last row of squares holds 4 x 2 tiles, one row of them all wrong: a quarter
    assert fills[-50:] != [NEUTRAL] * 50 and set(fills[-50:]) == {colour(0.25)}
    assert ("a grid of 200 x 100 tiles; downsampled to at most 64 x 64 squares: each square is "
            "4 x 2 tiles") in html
    assert "tiles (196–199, 0–1): 512 of 2,048 elements mismatch (25 %)" in html
    small = VerdictView(verdict(c), max_cells=10)._repr_html_()
    assert len(rects(small[small.index("<svg"):])) == 10 * 10
    assert "at most 10 x 10 squares: each square is 20 x 10 tiles" in small


def test_a_1d_tile_map_is_a_row_and_a_long_one_wraps():
    m = np.array([0, 0, 0, 7])                  # 1000 elements in tiles of 256: the last has 232
    c = failing("tail", tile=(256,), tile_map=m, mismatches=7)
    html = VerdictView(verdict(c))._repr_html_()
    assert len(rects(html[html.index("<svg"):])) == 4
    assert "tile 3: 7 of 232 elements mismatch" in html and "tiles of 256 elements" in html
    n = 10_000
    m = np.zeros(n, dtype=np.int64)
    m[-1] = 3
    c = failing("tail", shape=(n * 256,), size=n * 256, tile=(256,), tile_map=m, mismatches=3)
    html = VerdictView(verdict(c))._repr_html_()
    fills = rects(html[html.index("<svg"):])
    assert len(fills) == -(-n // 3)             # 3 tiles a square: 10,000 tiles in 64 x 64
    assert "drawn 192 tiles to a row" in html and "each square is 3 tiles" in html
    assert "tile 9999: 3 of 256 elements mismatch" in html
    assert "first tile of the row" in html


def test_tile_sizes_count_partial_tiles():
    s = tile_sizes((50, 250), (16, 16), (4, 16))
    assert s[0, 0] == 256 and s[3, 15] == 20 and s[0, 15] == 160 and s[3, 0] == 32
    assert s.sum() == 50 * 250
    assert tile_sizes((30, 40), (256,), (5,)).tolist() == [256] * 4 + [176]   # flattened
    three = tile_sizes((2, 20, 20), (16, 16), (2, 2, 2))                        # (1, 16, 16)
    assert three[0, 0, 0] == 256 and three[1, 1, 1] == 16 and three.sum() == 800
    assert tile_sizes((2, 20, 20), (16, 16), (2, 2)).sum() == 800               # over 2 x ...
    assert (tile_sizes((50, 250), (16, 16), (9, 9)) == 256).all()               # grid mismatch


def test_3d_tile_maps_fold_the_leading_axes_into_rows():
    m = np.zeros((2, 2, 2), dtype=np.int64)
    m[1, 1, 1] = 16
    c = failing("tail", shape=(2, 20, 20), size=800, tile=(1, 16, 16), tile_map=m, mismatches=16)
    html = VerdictView(verdict(c))._repr_html_()
    assert len(rects(html[html.index("<svg"):])) == 8
    assert "tile-grid axes 0–1 flattened (C order)" in html and "tile column (axis 2)" in html
    assert "tiles of 16 x 16 elements over the last two axes" in html


def test_non_square_tiles_say_rows_by_columns():
    assert dv.tile_text((8, 32)) == "tiles of 8 x 32 elements (rows x columns)"
    assert dv.tile_text((16, 16)) == "tiles of 16 x 16 elements"
    assert dv.tile_text((2, 16, 16)) == "tiles of 2 x 16 x 16 elements (C order of the axes)"
    assert dv.tile_text((1, 1, 4, 8)) == ("tiles of 4 x 8 elements (rows x columns) over the "
                                          "last two axes")


# -- the view's protocol ------------------------------------------------------------------------

def test_part_and_pretty_print_are_the_text():
    v = VerdictView(verdict(tail_map()))
    assert v.part("summary") == v.part("sass", "k") == v.text() == repr(v)

    class P:
        def text(self, s):
            self.s = s
    p = P()
    v._repr_pretty_(p, False)
    assert p.s == v.text()


def test_max_cells_must_be_a_positive_whole_number():
    with pytest.raises(ShowError, match=r"max_cells=0: give a whole number"):
        VerdictView(verdict(), max_cells=0)
    with pytest.raises(ShowError, match=r"max_cells=True"):
        VerdictView(verdict(), max_cells=True)
