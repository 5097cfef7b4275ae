"""Insight without a profiler: the cost of each source line (live registers, spills,
instructions) read from the binary that runs, occupancy in the views, the heat map."""

import re

import pytest

import cuda_magic
from conftest import ARCH, HEAVY, SAXPY, cfg
from cuda_magic import build, compile_source, line_config, view
from cuda_magic.compile import binary
from cuda_magic.inspect import diff
from cuda_magic.inspect import lines as lines_mod
from cuda_magic.inspect.occupancy import OccupancyError, occupancy
from corpus import BUILDS, build_case, skip_unless_gpu_runs

SPILL = ["--use_fast_math", "--maxrregcount=24"]

DIVIDE = r'''
extern "C" __global__ void divide(const float* x, float* y, float* z, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    y[i] = x[i] / a;
    z[i] = __fdividef(x[i], a);
}
'''


def _line(kl, text):
    return next(r for r in kl.rows if r.text and text in r.text)


def test_spills_land_on_the_loops_lines():
    r = compile_source(HEAVY, cfg(nvrtc=SPILL))
    kl = lines_mod.lines(r, "heavy")
    assert kl.same_code and "inspection build with -lineinfo added" in kl.binary
    spilling = {row.line for row in kl.rows if row.spill_stores or row.spill_loads}
    loops = {n for n, text in enumerate(HEAVY.split("\n"), 1) if "for (int k" in text}
    assert spilling and spilling <= loops, (spilling, loops)
    # every instruction (but the alignment padding) is on some line; the figures add up
    text = cuda_magic.sass(r, "heavy")
    code = [x for x in diff.instructions(text) if not x.endswith(":")]
    assert sum(row.instructions for row in kl.rows) == len(code)
    assert sum(row.spill_stores for row in kl.rows) == \
        len(re.findall(r"^\s*/\*[0-9a-f]{4}\*/\s+STL", text, re.M))
    assert kl.peak <= r.resources["heavy"].registers
    hot = kl.hottest(3)
    assert hot[0].registers == kl.peak and hot[0].spills and hot[0].line in loops
    assert [row.line for row in kl.hottest(2, by="spills")][0] in loops


def test_without_spill_marks_a_spilling_kernels_local_traffic_counts(monkeypatch):
    """nvdisasm 13.0 (the CUDA 13.0 toolkit) prints no SpillRefill marks; 13.5 does."""
    real = lines_mod.disasm._run
    monkeypatch.setattr(lines_mod.disasm, "_run",
                        lambda *a, **k: real(*a, **k).replace('(*"SpillRefill"*)', ""))
    r = compile_source(HEAVY, cfg(nvrtc=SPILL + ["-DOLD_NVDISASM"]))
    kl = lines_mod.lines(r, "heavy")
    assert "marks no spill code" in kl.binary
    assert sum(row.spills for row in kl.rows) == len(re.findall(
        r"^\s*/\*[0-9a-f]{4}\*/\s+(STL|LDL)", cuda_magic.sass(r, "heavy"), re.M))
    unspilled = lines_mod.lines(compile_source(SAXPY, cfg(nvrtc=["-DOLD_NVDISASM"])), "scale")
    assert "marks no spill code" not in unspilled.binary


def test_a_division_line_shows_its_instructions():
    r = compile_source(DIVIDE, cfg(nvrtc=[]))        # IEEE division: no fast math
    kl = lines_mod.lines(r, "divide")
    slash, fast = _line(kl, "x[i] / a"), _line(kl, "__fdividef")
    assert "CALL" in slash.notable and slash.instructions > fast.instructions
    assert "MUFU.RCP" in fast.notable and "CALL" not in fast.notable
    assert slash.count("float") >= 1 and fast.count("float") >= 1


def test_a_build_with_line_info_is_read_as_it_is():
    r = compile_source(SAXPY, cfg(nvrtc=["--use_fast_math", "-lineinfo"]))
    kl = lines_mod.lines(r, "scale")
    assert kl.binary.startswith("the running binary") and kl.same_code
    assert _line(kl, "y[i] = x[i] * a").ftz == 1


@pytest.mark.parametrize("fmt", ["fatbin", "cubin", "ptx"])
def test_nvcc_builds_and_ptx(fmt):
    compiler = "nvcc" if fmt != "ptx" else "nvrtc"
    r = compile_source(HEAVY, cfg(compiler=compiler, target_format=fmt,
                                  **{compiler: SPILL}))
    kl = lines_mod.lines(r, "heavy")
    assert kl.same_code and any(row.spills for row in kl.rows)
    if fmt == "ptx":
        assert "the driver compiles the PTX itself" in kl.binary


@pytest.mark.parametrize("case, compiler", BUILDS)
def test_the_inspection_build_has_the_running_code(case, compiler):
    """Fidelity on the corpus: the -lineinfo build's machine code equals the running one's,
    kernel by kernel, byte for byte; every instruction gets a row."""
    m = build_case(case, compiler)
    for r in m.results:
        table = lines_mod.lines(r)
        assert table, case.file
        for symbol, kl in table.items():
            assert kl.same_code, (case.file, compiler, symbol, kl.binary)
            assert all(row.instructions for row in kl.rows)
            assert any(row.file == "cell.cu" and row.line for row in kl.rows), (case.file, symbol)


def test_kernel_code_differs_when_the_code_does():
    a = compile_source(HEAVY, cfg(nvrtc=SPILL))
    b = compile_source(HEAVY, cfg(nvrtc=["--use_fast_math"]))
    assert binary.kernel_code(a.binary)["heavy"] != binary.kernel_code(b.binary)["heavy"]


# ---- occupancy ---------------------------------------------------------------------------------

def test_module_occupancy_names_the_limiter():
    m = build(HEAVY + SAXPY, line_config(arch=ARCH, nvrtc=" ".join(SPILL)))
    res = m.result.resources["heavy"]
    o = m.occupancy("heavy", block=1024)
    assert o == occupancy(ARCH, 1024, registers=res.registers, static_shared=res.shared,
                          barriers=res.barriers)
    assert o.driver is None                              # nothing loaded here
    assert m.occupancy("heavy", block=(32, 32)) == o     # a launch's 2-D block: 1024 threads
    assert m.occupancy("heavy", block=[8, 4, 32]) == o
    with pytest.raises(OccupancyError, match=r"block \(1, 2, 3, 4\): give 1 to 3 dimensions"):
        m.occupancy("heavy", block=(1, 2, 3, 4))
    big = m.occupancy("scale", block=256, shared=200 * 1024)
    assert big.blocks == 1 and big.limiter == "shared memory"
    with pytest.raises(OccupancyError, match="ptxas runs at load time"):
        build(SAXPY, line_config(arch=ARCH, target_format="ptx")).occupancy("scale")


def test_resources_show_occupancy_per_block_size(shell):
    m = shell.run_cell_magic("cuda", f"--arch {ARCH}", SAXPY)
    text = shell.display_formatter.format(m)[0]["text/plain"]
    assert "occupancy per block size (sm_90a;" in text
    assert re.search(r"^  kernel\s+32\s+64\s+128\s+256\s+512\s+1024$", text, re.M)
    o = m.occupancy("scale", 32)
    assert re.search(rf"^  scale\s+{o.blocks} · {o.percent} B", text, re.M)     # 32 blocks: B
    page = view(m).html(sass=False)
    assert "<b>Occupancy</b>" in page and 'title="32 threads: 32 blocks/SM' in page


# ---- the views -----------------------------------------------------------------------------

def test_show_lines_and_lines_as_data(capsys, monkeypatch):
    m = build(HEAVY + SAXPY, line_config(arch=ARCH, nvrtc=" ".join(SPILL)))
    cuda_magic.show(m, "lines", kernel="heavy")
    out = capsys.readouterr().out
    assert out.startswith("heavy: peak ") and "hottest lines" in out
    assert re.search(r"^  line 9: \d+ live registers, \d+ B spilled \(\d+ spill instructions\)",
                     out, re.M)
    import builtins
    real = builtins.__import__
    monkeypatch.setattr(builtins, "__import__", lambda name, *a, **k: (
        (_ for _ in ()).throw(ImportError(name)) if name == "pandas" else real(name, *a, **k)))
    rows = cuda_magic.lines(m, "heavy")
    assert isinstance(rows, list) and rows[0]["file"] == "cell.cu"
    assert {"line", "registers", "spill_stores", "spill_bytes", "memory", "tensor", "source"} <= set(rows[0])
    with pytest.raises(cuda_magic.ShowError, match="this cell has 2 kernels"):
        cuda_magic.lines(m)
    with pytest.raises(cuda_magic.ShowError, match="no such kernel"):
        cuda_magic.lines(m, "nope")


def test_lines_become_a_dataframe_when_pandas_is_there(monkeypatch):
    import sys
    import types

    fake = types.ModuleType("pandas")
    fake.DataFrame = lambda data: ("frame", data)
    monkeypatch.setitem(sys.modules, "pandas", fake)
    kind, data = cuda_magic.lines(build(SAXPY, line_config(arch=ARCH)))
    assert kind == "frame" and data[0]["file"] == "cell.cu"


def test_heat_map_colours_lines_and_opens_their_sass():
    pytest.importorskip("ipywidgets")
    m = build(HEAVY + SAXPY, line_config(arch=ARCH, nvrtc=" ".join(SPILL)))
    w = view(m).widget()
    assert "computed when this tab is opened" in w.hot.value
    w.tab.selected_index = 1                                  # Resources: the hottest lines
    assert "heavy</b>: peak" in w.hot.value and "B spilled" in w.hot.value
    w.tab.selected_index = 5                                  # Source: the heat map
    page = w.heat.pane.value
    assert "colour: live registers" in page and "<details>" in page
    assert "STL [R1" in page                                  # a loop line's SASS, one click away
    assert page.count("background: rgba(231,76,60,") >= 4
    w.metric.value = "spills"
    assert "colour: spill instructions" in w.heat.pane.value
    assert "background: rgba(211,84,0," in w.heat.pane.value
    w.heat.dropdown.value = 1                                  # scale: no spills
    assert "scale: peak" in w.heat.pane.value
    # static HTML carries the hottest lines once they were computed
    assert "Hottest lines" in view(m).html(sass=False)


HEAT_ROW = re.compile(r'<tr[^>]*><td style="[^"]*">(\d+)</td><td[^>]*>([^<]*)</td>'
                      r'<td[^>]*>([^<]*)</td><td[^>]*>([^<]*)</td><td[^>]*>[▸]?</td><td[^>]*>'
                      r'(?:<details><summary[^>]*>)?(.*?)(?:</summary>|</td></tr>)')


def _heat_rows(page):
    """{gutter line number: (regs, spills, instr, source text)} as the heat map shows them."""
    import html as h
    rows = {}
    for n, regs, spills, instr, code in HEAT_ROW.findall(page):
        text = h.unescape(re.sub(r"<[^>]+>", "", code.split("<span", 1)[0])).replace("\xa0", "")
        rows[int(n)] = (regs, spills, instr, text)
    return rows


def test_heat_map_shows_each_lines_own_figures_on_its_own_row():
    """Every source line on its own row, numbered, with the figures of that line (not a
    neighbour's) and the hottest line in the strongest colour."""
    pytest.importorskip("ipywidgets")
    m = build(HEAVY + SAXPY, line_config(arch=ARCH, nvrtc=" ".join(SPILL)))
    from cuda_magic.display.line_cost import GUTTER, heat_map
    kl = m.lines("heavy")
    cell = {r.line: r for r in kl.rows if r.file == "cell.cu" and r.line is not None}
    assert len(cell) >= 5
    w = view(m).widget()
    w.tab.selected_index = 5
    w.heat.dropdown.value = dict(w.heat.dropdown.options)["heavy"]
    for page in (w.heat.pane.value, heat_map(m.source, kl)):
        shown = _heat_rows(page)
        source = m.source.split("\n")
        assert sorted(shown) == list(range(1, len(source) + 1))
        for n, (regs, spills, instr, text) in shown.items():
            assert text == source[n - 1], n
            r = cell.get(n)
            want = ("", "", "") if r is None else (str(r.registers), str(r.spills or ""),
                                                   str(r.instructions))
            assert (regs, spills, instr) == want, (n, source[n - 1])
        hottest = max(cell.values(), key=lambda r: r.registers)
        at = page.index(f'">{hottest.line}</td><td style="{GUTTER}">{hottest.registers}</td>')
        assert page[page.rindex("<tr ", 0, at):at].startswith(
            '<tr style="background: rgba(231,76,60,0.63)')


def test_heat_map_falls_back_to_the_source_without_nvdisasm(monkeypatch):
    pytest.importorskip("ipywidgets")
    m = build(SAXPY, line_config(arch=ARCH, nvrtc="--use_fast_math -DX=1"))

    def missing(*a, **k):
        raise cuda_magic.ToolNotFoundError("nvdisasm was not found")
    monkeypatch.setattr(lines_mod.disasm, "_run", missing)
    w = view(m).widget()
    w.tab.selected_index = 5
    assert "per-line cost unavailable: ToolNotFoundError" in w.heat.pane.value
    assert "blockIdx" in w.heat.pane.value


# ---- on the GPU: the driver agrees -------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("case, compiler", [b for b in BUILDS if b.values[1] == "nvrtc"])
def test_driver_occupancy_agrees(case, compiler):
    skip_unless_gpu_runs(case)
    m = build_case(case, compiler)
    m.load()
    for name, k in m.kernels.items():
        if m.result_of(name).resources.get(k.symbol) is None:
            continue
        for block in (64, 128, 256, 1024):
            for shared in (0, 4096):
                o = m.occupancy(name, block, shared)
                assert o.driver == o.blocks, (case.file, name, block, shared, str(o))
