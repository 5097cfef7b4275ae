"""Inlined library code in the per-line table and the heat map: a CUB call line carries the
cost of the code inlined at it (from the line table's inline chains, what ``nvdisasm -gi``
prints), the library lines are grouped under it with short paths, each once."""

import re
from html.parser import HTMLParser

import pytest

import cuda_magic
from conftest import ARCH
from cuda_magic import build, line_config
from cuda_magic.compile import binary
from cuda_magic.compile.backends import ToolNotFoundError
from cuda_magic.compile.header_store import define_header, remove_header
from cuda_magic.display.line_cost import heat_map, hottest_html, text_table_of
from cuda_magic.inspect import diff
from cuda_magic.inspect.lines import inspection_build, short_path
from corpus import KERNELS
from test_debug_line import check_chains

# CuTe, CUB and Thrust cells with both compilers: left out of the quick check (-m "not slow")
pytestmark = pytest.mark.slow


CELL = (KERNELS / "cub_heat.cu").read_text()
_MODULES: dict = {}


def module(compiler: str):
    if compiler not in _MODULES:
        try:
            _MODULES[compiler] = build(CELL, line_config(arch=ARCH, compiler=compiler))
        except ToolNotFoundError as e:
            pytest.skip(str(e))
    return _MODULES[compiler]


def _line(kl, text):
    return next(r for r in kl.rows if r.file == "cell.cu" and r.text and text in r.text)


def _instructions(m, kernel) -> int:
    return len([x for x in diff.instructions(cuda_magic.sass(m.result_of(kernel), m[kernel].symbol))
                if not x.endswith(":")])


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_the_call_line_carries_the_inlined_library_code(compiler):
    m = module(compiler)
    kl = m.lines("sum_squares")
    call = _line(kl, "BlockReduce(temp).Sum(v)")
    # the call line is coloured: it holds the shuffles, the barrier, the adds CUB made
    assert call.instructions >= 20 and call.registers and "BAR" in call.notable
    assert any("SHFL.DOWN" in s for s in call.sass)
    assert call.inlined and call.inlined_instructions == sum(r.instructions for r in call.inlined)
    assert call.inlined_instructions <= call.instructions
    assert kl.hottest(1, by="instructions")[0] is call
    # every instruction in exactly one row, every row on a cell line: none left on CUB's lines
    assert sum(r.instructions for r in kl.rows) == _instructions(m, "sum_squares")
    assert all(r.file == "cell.cu" for r in kl.rows), [r.where for r in kl.rows]
    assert len({(r.file, r.line) for r in kl.rows}) == len(kl.rows)
    # the library lines under the call: short paths, each line once, most instructions first
    subs = [(r.file, r.line) for r in call.inlined]
    assert len(set(subs)) == len(subs)
    assert all(f.startswith(("<cccl>/cub/", "<cccl>/cuda/")) for f, _ in subs), subs
    assert any(f.startswith("<cccl>/cub/warp/") for f, _ in subs)
    assert [r.instructions for r in call.inlined] == sorted((r.instructions for r in call.inlined),
                                                           reverse=True)
    assert all(r.path.startswith("/") and r.path.endswith(r.file.split(">", 1)[1])
               for r in call.inlined)
    shfl = next(r for r in call.inlined if any("SHFL" in s for s in r.sass))
    assert re.search(r"SHFL\.DOWN.*// <cccl>/cub/.*:\d+$", "\n".join(call.sass), re.M)
    assert shfl.text                                      # the library's own source line
    assert call.row()["inlined"] == call.inlined_instructions


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_a_cell_helper_and_functor_keep_their_own_lines(compiler):
    """CUB inlined in a cell __forceinline__ helper belongs to the helper's line; the cell's
    functor that CUB calls back keeps its own line (the innermost cell line of the chain)."""
    kl = module(compiler).lines("max_abs")
    reduce_line, functor = _line(kl, "Reduce(v, Max())"), _line(kl, "fmaxf(a, b)")
    assert reduce_line.instructions >= 20 and reduce_line.inlined
    assert any("SHFL" in s for s in reduce_line.sass)
    assert any(s.split("*/ ", 1)[1].startswith("FMNMX") for s in functor.sass)
    assert not functor.inlined
    assert all(r.file == "cell.cu" for r in kl.rows)


def test_inline_chains_match_nvdisasm_gi(tmp_path):
    """binary.inline_table: for every address, the chain nvdisasm -gi prints, innermost first."""
    seen = inspection_build(module("nvrtc").result)              # the -lineinfo build
    cubin = binary.cubin_for(seen.binary, seen.format, ARCH)
    checked, deep = check_chains(cubin, tmp_path)
    assert checked >= 30 and deep >= 5    # shuffle < warp reduce x2 < block reduce x2 < cell


def test_text_view_groups_library_lines_under_the_call(capsys):
    m = module("nvrtc")
    cuda_magic.show(m, "lines", kernel="sum_squares")
    out = capsys.readouterr().out
    assert "site-packages" not in out and not re.search(r"\b1 instructions\b", out)
    rows = out.splitlines()
    call = next(i for i, ln in enumerate(rows) if "BlockReduce(temp).Sum(v)" in ln)
    assert re.match(r"^  16\s+\d{2}\s", rows[call])
    under = []
    for ln in rows[call + 1:]:
        if not ln.startswith("    ↳"):
            break
        under.append(re.search(r"(<cccl>/\S+:\d+)", ln).group(1))
    assert under and len(under) == len(set(under)) == len(m.lines("sum_squares").of(16).inlined)
    assert re.search(r"^  line 16: \d+ live registers, \d+ instructions \(\d+ inlined\)$", out, re.M)


class _Tags(HTMLParser):
    """Checks that every element opened is closed in order (void elements aside)."""
    VOID = {"br", "hr", "img", "input", "meta", "link", "wbr"}

    def __init__(self):
        super().__init__()
        self.stack, self.errors = [], []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(tag)


def test_heat_map_colours_the_call_line_and_lists_the_library_lines():
    m = module("nvrtc")
    kl = m.lines("sum_squares")
    call = kl.of(16)
    page = heat_map(m.result.source, kl, "instructions")
    checker = _Tags()
    checker.feed(page)
    assert not checker.errors and not checker.stack
    at = page.index("BlockReduce(temp).Sum(v)")
    row = page[page.rindex("<tr ", 0, at):page.index("</details></td></tr>", at)]
    assert row.startswith('<tr style="background: rgba(41,128,185,0.63)')  # the hottest colour
    assert f">{call.instructions}</td>" in row and f">{call.registers}</td>" in row
    assert f"{call.inlined_instructions} of its {call.instructions} instructions inlined from" in row
    assert "&lt;cccl&gt;/cub/warp/specializations/warp_reduce_shfl.cuh:" in row
    assert "site-packages" not in page and not re.search(r"\b1 instructions\b", page)
    for sub in call.inlined:
        assert row.count(f'<td style="padding: 0 6px; white-space: pre">&lt;cccl&gt;'
                         f'{sub.file[len("<cccl>"):]}:{sub.line}</td>') == 1
    assert f"line 16: {call.registers} live registers, {call.instructions} instructions " \
        f"({call.inlined_instructions} inlined)" in hottest_html("sum_squares", kl)


def test_widget_heat_map_shows_the_call_line():
    pytest.importorskip("ipywidgets")
    m = module("nvrtc")
    w = cuda_magic.view(m).widget()
    w.tab.selected_index = 5                                   # Source: the heat map
    w.heat.dropdown.value = dict(w.heat.dropdown.options)["sum_squares"]
    page = w.heat.pane.value
    assert "sum_squares: peak" in page and "BlockReduce(temp).Sum(v)" in page
    assert "instructions inlined from:" in page and "&lt;cccl&gt;/cub/" in page
    assert "site-packages" not in page


def test_cute_code_lands_on_the_cells_lines():
    """CuTe (nvcc, the CUTLASS wheel): every row on a cell line, CuTe's lines under them."""
    from corpus import CASES, missing
    from corpus import build_case
    case = next(c for c in CASES if c.file == "cute_copy.cu")
    if missing(case, "nvcc"):
        pytest.skip(missing(case, "nvcc"))
    kl = build_case(case, "nvcc").lines("cute_tile_copy")
    assert all(r.file == "cell.cu" for r in kl.rows), [r.where for r in kl.rows]
    subs = [s for r in kl.rows for s in r.inlined]
    assert subs and all(s.file.startswith(("<cutlass>/cute/", "<cccl>/", "<cuda>/")) for s in subs)
    assert any(s.file == "<cutlass>/cute/algorithm/copy.hpp" for s in subs)


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_code_that_reaches_no_cell_line_keeps_its_header_rows(compiler):
    """A kernel defined in a header: its rows stay on the header's lines (short), said once."""
    define_header("inl_heat_kernels.cuh", "extern \"C\" __global__ void twice(float* y) {\n"
                                          "    y[threadIdx.x] *= 2.0f;\n}\n")
    try:
        m = build('#include "inl_heat_kernels.cuh"\n', line_config(arch=ARCH, compiler=compiler))
        kl = m.lines("twice")
    finally:
        remove_header("inl_heat_kernels.cuh")
    files = {r.file for r in kl.rows if r.line is not None}
    assert files == {"inl_heat_kernels.cuh"}, files
    assert not any(r.inlined for r in kl.rows)
    text = text_table_of("twice", kl)
    assert text.count("inl_heat_kernels.cuh:2") == 1
    page = heat_map(m.result.source, kl)
    notes = re.findall(r"inl_heat_kernels\.cuh:\d+: [^<]*", page)
    assert notes and all(n.count("inl_heat_kernels.cuh") == 1 for n in notes)
    assert not re.search(r"\b1 instructions\b", page)


@pytest.mark.parametrize("path, short", [
    ("/venv/lib/python3.11/site-packages/nvidia/cu13/include/cccl/cub/block/block_reduce.cuh",
     "<cccl>/cub/block/block_reduce.cuh"),
    ("/usr/local/cuda-13.0/targets/x86_64-linux/include/cccl/cuda/std/__cccl/config.h",
     "<cccl>/cuda/std/__cccl/config.h"),
    ("/usr/local/cuda-12.4/include/cub/warp/warp_reduce.cuh", "<cccl>/cub/warp/warp_reduce.cuh"),
    ("/sp/nvidia/cuda_cccl/include/thrust/functional.h", "<cccl>/thrust/functional.h"),
    ("/sp/cutlass_library/source/include/cute/tensor.hpp", "<cutlass>/cute/tensor.hpp"),
    ("/sp/cutlass_library/source/include/cutlass/numeric_types.h",
     "<cutlass>/cutlass/numeric_types.h"),
    ("/venv/site-packages/nvidia/cu13/include/crt/math_functions.hpp",
     "<cuda>/crt/math_functions.hpp"),
    ("/usr/local/cuda/bin/../targets/x86_64-linux/include/cuda_fp16.hpp", "<cuda>/cuda_fp16.hpp"),
    ("/opt/conda/envs/x/include/cuda_runtime.h", "/opt/conda/envs/x/include/cuda_runtime.h"),
    ("/home/me/cuda-samples/include/helper.h", "/home/me/cuda-samples/include/helper.h"),
    ("util.cuh", "util.cuh"), ("cell.cu", "cell.cu"), ("/home/me/proj/kernels.cuh",
                                                        "/home/me/proj/kernels.cuh"),
])
def test_short_paths(path, short):
    assert short_path(path) == short


def test_profile_and_check_lines_put_inlined_library_code_on_the_call_line():
    """k.profile / k.check map SASS offsets to lines through tools.line_rows: a CUB call's
    instructions land on the cell line that called it, as in the heat map."""
    from cuda_magic.runtime.nsight.run import line_rows
    m = module("nvrtc")
    k = m["sum_squares"]
    rows, note = line_rows(m.result_of("sum_squares"), k.symbol)
    assert rows, note
    call = next(i + 1 for i, t in enumerate(CELL.splitlines()) if "BlockReduce(temp).Sum" in t)
    on_call = [r for r in rows if r[1:] == ("cell.cu", call)]
    assert on_call                                   # the inlined CUB code is on the call line
    plain = binary.line_table(_lineinfo_cubin(m, "sum_squares"))[k.symbol]
    assert len([r for r in plain if r[1] != "cell.cu"]) > \
        len([r for r in rows if r[1] != "cell.cu"])   # fewer rows left on library files


def _lineinfo_cubin(m, kernel):
    from cuda_magic.inspect.disasm import cubin, machine_code
    r = m.result_of(kernel)
    elf = cubin(machine_code(r))
    if binary.line_table(elf).get(m[kernel].symbol):
        return elf
    return cubin(inspection_build(r))
