"""The Source tab's heat map as HTML (cuda_magic/display/line_cost.py): its colour scale and
legend, the same columns on every line, long lines wrapped in place.  How it looks in a real
browser: tests/suites/test_browser_views.py."""

import re

from cuda_magic.display import line_cost
from cuda_magic.display.line_cost import DARK, LIGHT, heat_map, legend, scale, shade
from cuda_magic.inspect.lines import KernelLines, LineCost

SOURCE = """extern "C" __global__ void k(float* y) {
    float a = y[0];
    for (int i = 0; i < 9; ++i) a = a * a + 1.0f;
    y[0] = a;
}"""


def _row(line: int, registers: int, instructions: int = 4, spills: int = 0) -> LineCost:
    return LineCost("cell.cu", line, instructions, registers, 1, 0, spills, 0, 4 * spills,
                    4 * spills, 0, (("memory", 1), ("float", instructions - 1)), (),
                    (f"/*{line * 16:04x}*/ FFMA R{line}, R0, R0, 1",), SOURCE.split("\n")[line - 1])


def _kernel(*rows: LineCost) -> KernelLines:
    return KernelLines("k", rows, "the running binary (built with line info)", True)


def _alphas(page: str, red=231, green=76, blue=60) -> dict:
    """{line number: background alpha} of the lines with code."""
    return {int(n): float(a) for a, n in re.findall(
        rf'<tr style="background: rgba\({red},{green},{blue},([\d.]+)\)"[^>]*><td[^>]*>(\d+)</td>',
        page)}


def test_heat_map_colours_span_the_lines_own_range_not_zero_to_peak():
    """A kernel at its register limit: every line with code has 20 to 24 live registers.  The
    colours go from the lightest at 20 to the darkest at 24 (0..peak made them all alike)."""
    kl = _kernel(_row(1, 20), _row(2, 22), _row(3, 24, spills=6), _row(4, 21))
    page = heat_map(SOURCE, kl)
    alpha = _alphas(page)
    assert alpha[1] == LIGHT and alpha[3] == DARK, alpha
    assert alpha[1] < alpha[4] < alpha[2] < alpha[3]
    assert alpha[2] == round(LIGHT + (DARK - LIGHT) * 2 / 4, 2)
    assert "colour: live registers, lightest 20 … darkest 24 (the range over the lines with " \
           "code)" in page


def test_heat_map_legend_says_when_every_line_has_the_same_value():
    kl = _kernel(_row(1, 24), _row(3, 24), _row(4, 24))
    page = heat_map(SOURCE, kl, "spills")
    assert "colour: spill instructions: 0 on every line with code" in page
    assert set(_alphas(page, 211, 84, 0).values()) == {LIGHT}
    assert set(_alphas(heat_map(SOURCE, kl)).values()) == {DARK}
    assert "live registers: 24 on every line with code" in heat_map(SOURCE, kl)


def test_scale_and_shade():
    assert scale([]) == (0, 0) and scale([3, 9, 5]) == (3, 9)
    assert shade(3, 3, 9) == LIGHT and shade(9, 3, 9) == DARK
    assert shade(0, 0, 0) == LIGHT and shade(7, 7, 7) == DARK
    assert legend("instructions", 2, 40) == ("instructions, lightest 2 … darkest 40 (the range "
                                             "over the lines with code)")


def test_heat_map_rows_have_the_same_columns_with_or_without_code():
    """The disclosure triangle of a line that opens to its SASS took two columns from its code:
    every row now has the same cells, the opener in a column of its own."""
    page = heat_map(SOURCE, _kernel(_row(1, 4), _row(3, 8)))
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", page)[1:]        # after the header
    assert len(rows) == len(SOURCE.split("\n"))
    cells = [re.findall(r"<td[^>]*>", r) for r in rows]
    assert {len(c) for c in cells} == {6}, cells
    for n, (row, tds) in enumerate(zip(rows, cells), 1):
        assert tds[4] == f'<td style="{line_cost.OPENER}">', tds
        assert ("<details>" in row) == (n in (1, 3))
        assert ("▸" in row) == (n in (1, 3))
    assert 'list-style: none' in page and "display: block; list-style: none" in page


def test_heat_map_wraps_a_long_line_under_its_own_indentation():
    long = "    y[0] = a;  // " + "and on " * 60 + "END"
    page = heat_map(SOURCE.replace("    y[0] = a;", long), _kernel(_row(1, 4), _row(4, 6)))
    row = next(r for r in re.findall(r"<tr[^>]*>.*?</tr>", page) if "END" in r)
    assert "white-space: pre-wrap; overflow-wrap: anywhere" in row
    assert "padding-left: 8ch; text-indent: -8ch" in row       # 4 spaces + 4: the rest hangs
    no_code = next(r for r in re.findall(r"<tr[^>]*>.*?</tr>", page) if "float a" in r)
    assert "white-space: pre-wrap" in no_code and "padding-left: 8ch" in no_code
    assert f'<div style="{line_cost.SCROLL}">' in page


def test_live_registers_are_told_apart_from_ptxas_registers():
    """"peak 6 live" beside ptxas's "10 registers" said nothing of the difference."""
    from cuda_magic import show, view
    from cuda_magic.cell import build
    m = build('extern "C" __global__ void k(float* y, int n) { if (threadIdx.x < n) y[threadIdx.x] = 1; }\n',
              {"arch": "sm_90a"})
    assert "reserved ones such as the stack pointer" in view(m).html()
    import io
    out = io.StringIO()
    show(m, "lines", file=out)
    assert "live: registers holding a value at once; ptxas's 'registers' (Resources)" in out.getvalue()
