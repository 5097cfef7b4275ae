"""The SASS tab and ``show(m, "sass")`` (cuda_magic/display/sass.py, markup.sass): a kernel's
listing headed by its C++ name, the padding after its end folded, each listing coloured once."""

import re

import pytest

from conftest import ARCH, SAXPY
from cuda_magic import build, show, view
from cuda_magic.display import markup
from cuda_magic.display.sass import annotate, fold_tail, heading

TEMPLATE = r'''
template <typename T, int N>
__global__ void axpy(const T* x, T* y, T a, int n) {
    int i = blockIdx.x * N + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
template __global__ void axpy<float, 256>(const float*, float*, float, int);
'''
MANGLED = "_Z4axpyIfLi256EEvPKT_PS0_S0_i"

# nvdisasm -c's layout: two functions, each ending EXIT, the BRA to itself, NOPs, an end label
LISTING = """\t.target\tsm_90a

//--------------------- .text.first               --------------------------
\t.section\t.text.first,"ax",@progbits
first:
.text.first:
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   EXIT ;
.L_x_0:
        /*0020*/                   BRA `(.L_x_0);
        /*0030*/                   NOP;
        /*0040*/                   NOP;
        /*0050*/                   NOP;
.L_x_1:


//--------------------- .text.second              --------------------------
second:
.text.second:
        /*0000*/                   EXIT ;
.L_x_2:
        /*0010*/                   BRA `(.L_x_2);
.L_x_3:


//--------------------- SYMBOLS --------------------------

\t.type\t\t.nv.reservedSmem.offset0,@object
"""


def test_fold_tail_folds_the_nops_and_the_end_label_of_each_function():
    folded = fold_tail(LISTING)
    lines = folded.splitlines()
    assert not any(line.strip() == "NOP;" for line in lines)
    assert "  // … 3 trailing NOPs folded (alignment padding)" in lines
    assert ".L_x_1:" not in lines and ".L_x_3:" not in lines           # the dangling labels
    assert folded.count("trailing NOP") == 1                            # `second` had none
    for kept in ("        /*0020*/                   BRA `(.L_x_0);", ".L_x_0:", ".L_x_2:",
                 "        /*0010*/                   BRA `(.L_x_2);", "//--------------------- SYMBOLS",
                 "\t.type\t\t.nv.reservedSmem.offset0,@object"):
        assert any(line.startswith(kept) for line in lines), kept
    assert lines.index("  // … 3 trailing NOPs folded (alignment padding)") == \
        lines.index("        /*0020*/                   BRA `(.L_x_0);") + 1
    assert fold_tail(folded) == folded                                  # nothing more to fold


def test_fold_tail_leaves_code_that_ends_otherwise_alone():
    text = "//----- .text.k -----\nk:\n        /*0000*/                   EXIT ;\n"
    assert fold_tail(text) == text
    one = text + "        /*0010*/                   NOP;\n"
    assert fold_tail(one).splitlines()[-1] == "  // … 1 trailing NOP folded (alignment padding)"


def test_heading_takes_the_functions_own_labels():
    assert heading("k:\n.text.k:\n  /*0000*/ EXIT ;\n") == ("k", "  /*0000*/ EXIT ;\n")
    assert heading("  /*0000*/ EXIT ;\n") == (None, "  /*0000*/ EXIT ;\n")
    assert heading("k:\n  /*0000*/ EXIT ;") == ("k", "  /*0000*/ EXIT ;")     # cuobjdump's


def test_sass_tab_heads_a_template_kernel_with_its_cpp_name():
    pytest.importorskip("ipywidgets")
    m = build(TEMPLATE, {"arch": ARCH})
    w = view(m).widget()
    w.tab.selected_index = 3
    page = w.sass.pane.value
    assert [label for label, _ in w.sass.dropdown.options] == ["axpy<float, 256>"]
    head, listing = page.split('<div class="highlight">', 1)
    assert "<b>axpy&lt;float, 256&gt;</b>" in head
    assert re.search(rf'<span style="[^"]*font-size: 11px[^"]*"[^>]*>{MANGLED}</span>', head)
    plain = re.sub(r"<[^>]+>", "", listing)
    assert f"{MANGLED}:" not in plain and f".text.{MANGLED}:" not in plain
    assert not re.search(r"\bNOP\b", plain) and "trailing NOPs folded" in plain
    assert re.search(r"BRA `\(\.L_x_\d+\);\s*// … \d+ trailing NOPs folded", plain)
    assert not re.search(r"\.L_x_\d+:\s*$", plain.strip())              # no label at the end


def test_static_page_heads_each_listing_like_the_tab():
    """The saved page's "SASS (start)" (a view with static_sass) is headed by the C++ name with
    the symbol beside it, as the SASS tab is: no raw ``SYMBOL:`` labels in the listing."""
    m = build(TEMPLATE, {"arch": ARCH})
    page = view(m, static_sass=True)._repr_html_()
    part = page.split(">SASS (start)</summary>", 1)[1].split("</details>", 1)[0]
    head, listing = part.split('<div class="highlight">', 1)
    assert "<b>axpy&lt;float, 256&gt;</b>" in head and f">{MANGLED}</span>" in head
    plain = re.sub(r"<[^>]+>", "", listing)
    assert f"{MANGLED}:" not in plain and f".text.{MANGLED}:" not in plain
    assert plain.lstrip().startswith("/*0000*/")


def test_an_extern_c_kernel_is_headed_by_its_name_alone():
    m = build(SAXPY, {"arch": ARCH})
    b, e = view(m).content.entries[0]
    page = markup.sass(view(m).sass_of(b, e), m.source, name=e.name)
    assert page.startswith(f'<div style="{markup.MONO}; margin: 2px 0"><b>scale</b></div>')


def test_text_view_of_sass_is_headed_and_folded(capsys):
    m = build(TEMPLATE, {"arch": ARCH})
    show(m, "sass")
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"// axpy<float, 256>  ({MANGLED})"
    assert f"{MANGLED}:" not in out and not any(re.search(r"\bNOP\b", line) for line in out)
    assert out[-1] == "  // … 13 trailing NOPs folded (alignment padding)"
    assert annotate("k:\n.text.k:\n  /*0000*/ EXIT ;\n", "", name="k").splitlines()[:2] == \
        ["// k", "  /*0000*/       EXIT ;"]


def test_each_listing_and_source_is_coloured_once(monkeypatch):
    """Showing a build again (a new widget: each display makes one) colours nothing again."""
    pytest.importorskip("ipywidgets")
    m = build(TEMPLATE + "// coloured once\n", {"arch": ARCH}, force=True)
    from collections import OrderedDict
    monkeypatch.setattr(markup, "_MEMO", OrderedDict())        # nothing coloured yet
    monkeypatch.setattr(markup, "_memo_size", 0)
    calls = []
    real = markup._coloured
    monkeypatch.setattr(markup, "_coloured", lambda code, lexer, linenos: (
        calls.append(type(lexer).__name__), real(code, lexer, linenos))[1])
    pages = []
    for _ in range(3):
        w = view(m).widget()
        w.tab.selected_index = 3
        pages.append(w.sass.pane.value)
        view(m).html(sass=False)                  # the static HTML of every display: the source
    assert pages[0] == pages[1] == pages[2]
    # the tab's listing once (the static HTML's start of it is the same text here: the listing
    # is under 40 lines, headed the same way, so the memo serves it); the source once
    assert calls.count("SassLexer") == 1 and calls.count("CudaLexer") == 1, calls
