"""Arch lists (one build per arch, compiled in parallel, compared side by side) and SASS diffs
that explain (register numbering normalised, instruction mix, one-line summaries).  Real NVRTC
compiles; the launch tests at the end need a GPU."""

import os
import signal
import threading
import time

import numpy as np
import pytest

import cuda_magic
from cuda_magic.cell import module as cell_module   # where builds are compiled and bound
from cuda_magic import ConfigError
from cuda_magic.cell import CellError
from cuda_magic.compile.arch import pick_arch
from cuda_magic.compile import parallel
from cuda_magic.config import resolve, validate
from cuda_magic.display import compare as compare_view
from cuda_magic.inspect import diff
from cuda_magic.runtime import CudaError

from conftest import SAXPY

FOUR = "sm_80,sm_90a,sm_100a,sm_120"

TWO_KERNELS = SAXPY + r'''
//| nvrtc: [--use_fast_math, --ftz=false]
extern "C" __global__ void keep(const float* x, float* y) { y[threadIdx.x] = x[threadIdx.x] * 0.5f; }
'''

# Four independent products: under --register-usage-level=0 ptxas (sm_80) picks other registers
# for the same instructions.
RENUMBERED = r'''
extern "C" __global__ void k(const float* x, float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = x[i], b = x[i + n], c = x[i + 2 * n], d = x[i + 3 * n];
    z[i] = a * b + c * d; z[i + n] = a * c - b * d; z[i + 2 * n] = (a + b) * (c + d);
}
'''


# ---- config: the list lives at the layer level -------------------------------------------------

def test_arch_lists_in_a_layer_and_one_arch_per_resolved_config():
    assert validate({"arch": "sm_80, sm_90a"}) == {"arch": ["sm_80", "sm_90a"]}
    assert validate({"arch": ["sm_80", "sm_90a"]}) == {"arch": ["sm_80", "sm_90a"]}
    assert validate({"arch": ["sm_90a"]}) == {"arch": "sm_90a"}     # one arch stays a string
    r = resolve(("session", {"arch": ["sm_80", "sm_90a"]}), ("cell", {"nvrtc": ["-lineinfo"]}))
    assert r["arch"] == "sm_80" and r.archs == ("sm_80", "sm_90a")
    assert '"arch":"sm_80"' in r.json()          # the cache key part: one arch
    one = r.expand()
    assert [x["arch"] for x in one] == ["sm_80", "sm_90a"]
    assert {x.provenance["arch"] for x in one} == {"session"}    # the layer that gave the list
    assert all(x.archs == (x["arch"],) for x in one)
    # a later layer's single arch replaces the list; a list replaces a single arch
    assert resolve(("session", {"arch": "sm_80,sm_90a"}), ("cell", {"arch": "sm_120"})).archs == \
        ("sm_120",)
    assert r.with_value("arch", "sm_100a", "variant:x").archs == ("sm_100a",)
    assert r.with_value("nvrtc", [], "variant:x").archs == ("sm_80", "sm_90a")


@pytest.mark.parametrize("value, message", [
    ("sm_80,sm_9x", "'arch' item 2 must look like sm_90, sm_90a or sm_100f, not 'sm_9x'"),
    (["sm_80", "bogus"], "'arch' item 2 must look like .* not 'bogus'"),
    ("sm_80,", "'arch' item 2 .* not an empty item"),
    ("sm_80,sm_80", "'arch' lists sm_80 twice"),
    ([], "'arch' is an empty list"),
    (["sm_80", 90], "'arch' item 2 must be a string, not int 90"),
])
def test_every_item_of_an_arch_list_is_checked(value, message):
    with pytest.raises(ConfigError, match=message) as e:
        validate({"arch": value})
    assert e.value.key == "arch"


def test_one_compile_refuses_an_arch_list():
    with pytest.raises(ConfigError, match="'arch' lists sm_80, sm_90a .* one compile makes one arch"):
        cuda_magic.compile_source(SAXPY, {"cuda": {"arch": ["sm_80", "sm_90a"]}})


def test_pick_arch_prefers_the_exact_arch_then_compatible_code():
    assert pick_arch(("sm_80", "sm_90", "sm_90a"), "sm_90a") == "sm_90a"
    assert pick_arch(("sm_80", "sm_90"), "sm_90a") == "sm_90"        # same compute capability
    assert pick_arch(("sm_80", "sm_100a"), "sm_90a") is None
    assert pick_arch(("sm_75", "sm_80", "sm_120"), "sm_86") == "sm_80"   # binary compatible
    assert pick_arch(("sm_80a",), "sm_86") is None                   # 'a' code: its own CC only
    assert pick_arch(("sm_80", "sm_100a"), "sm_90a", ptx=True) == "sm_80"   # the driver JITs PTX
    assert pick_arch(("sm_80",), None) is None


# ---- four archs, in parallel -------------------------------------------------------------------

def test_four_archs_build_in_parallel(monkeypatch, fresh_cache):
    """Each build waits at a barrier for the other three: only concurrent builds pass it."""
    barrier = threading.Barrier(4, timeout=60)
    seen = []
    real = cell_module.compile_resolved

    def together(*args, **kwargs):
        seen.append(threading.current_thread().name)
        barrier.wait()
        return real(*args, **kwargs)
    monkeypatch.setattr(cell_module, "compile_resolved", together)
    m = cuda_magic.build(SAXPY, {"arch": FOUR})        # the barrier: all four at once, or hangs
    assert len(m.results) == 4 and m.archs == ("sm_80", "sm_90a", "sm_100a", "sm_120")
    assert [r.arch for r in m.results] == list(m.archs)                 # the order given
    assert all(name.startswith("cuda-magic build") for name in seen) and len(set(seen)) == 4
    assert all(r.config.provenance["arch"] == "cell" and not r.cache_hit for r in m.results)
    assert len(m.kernels) == 1 and m.scale.result is m.result_of("scale")
    if cuda_magic.detect_arch() is None:       # kernels bound to the first arch's build
        assert m.arch == "sm_80" and m.scale.result.arch == "sm_80"
    assert [m.result_of("scale", a).arch for a in m.archs] == list(m.archs)
    with pytest.raises(cuda_magic.NoKernelError, match="not built for 'sm_75'; it was built for sm_80"):
        m.result_of("scale", "sm_75")


def test_per_kernel_configs_compile_in_parallel_too(monkeypatch):
    barrier = threading.Barrier(2, timeout=60)
    real = cell_module.compile_resolved

    def together(*args, **kwargs):
        barrier.wait()
        return real(*args, **kwargs)
    monkeypatch.setattr(cell_module, "compile_resolved", together)
    m = cuda_magic.build(TWO_KERNELS, {"arch": "sm_90a"}, force=True)
    assert len(m.results) == 2 and m.keep.result is not m.scale.result


def test_arch_list_with_per_kernel_configs():
    m = cuda_magic.build(TWO_KERNELS + r'''
//| arch: sm_120
extern "C" __global__ void own(float* x) { x[threadIdx.x] += 1.0f; }
''', {"arch": "sm_80,sm_90a"})
    # scale: 2 archs, keep (own flags): 2 archs, own (its own arch): 1
    assert len(m.results) == 5 and m.archs == ("sm_80", "sm_90a", "sm_120")
    assert m.own.result.arch == "sm_120" and m.config_of("own").provenance["arch"] == "kernel:own"
    assert m.result_of("keep", "sm_90a").config["nvrtc"] == ["--use_fast_math", "--ftz=false"]
    kernels = {(r.kernel, r.arch) for r in m.arch_matrix()}
    assert kernels == {("scale", "sm_80"), ("scale", "sm_90a"), ("keep", "sm_80"),
                       ("keep", "sm_90a"), ("own", "sm_120")}


def test_a_kernel_block_takes_one_arch():
    cell = TWO_KERNELS.replace("//| nvrtc:", "//| arch: [sm_80, sm_90a]\n//| nvrtc:")
    line = cell.splitlines().index("//| arch: [sm_80, sm_90a]") + 1
    with pytest.raises(CellError, match=rf"cell line {line}: kernel 'keep': an arch list \(sm_80, "
                                        r"sm_90a\) is for the whole cell") as e:
        cuda_magic.build(cell, {"arch": "sm_90a"})
    assert e.value.key == "arch"
    # at the top of the cell the block is the cell header: a list is fine there
    m = cuda_magic.build(SAXPY.replace('extern "C"', '//| arch: [sm_80, sm_90a]\nextern "C"', 1))
    assert m.archs == ("sm_80", "sm_90a")


# ---- the matrix ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def four():
    return cuda_magic.build(SAXPY + r'''
extern "C" __global__ void heavy_smem(const float* x, float* y) {
    __shared__ float tile[8192];
    tile[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    y[threadIdx.x] = tile[(threadIdx.x * 7) % 8192];
}
''', {"arch": FOUR})


def test_arch_matrix_rows_per_kernel_and_arch(four):
    rows = four.arch_matrix(block=256)
    assert [(r.kernel, r.arch) for r in rows] == [(k, a) for k in ("scale", "heavy_smem")
                                                  for a in four.archs]
    for r in rows:
        assert r.registers > 0 and r.spill_stores == r.spill_loads == 0 and r.spills == "0 / 0"
        assert r.occupancy.block == 256 and r.occupancy.arch == r.arch
    by = {(r.kernel, r.arch): r for r in rows}
    assert by["heavy_smem", "sm_90a"].shared == 32768
    # 32 KB a block: 228 KB per SM on sm_90 holds 6 blocks, 100 KB on sm_120 only 3
    assert by["heavy_smem", "sm_90a"].occupancy.blocks == 6
    assert by["heavy_smem", "sm_120"].occupancy.blocks == 3
    assert by["heavy_smem", "sm_120"].occupancy.limiter == "shared memory"
    assert by["scale", "sm_120"].occupancy.max_warps == 48 and by["scale", "sm_90a"].occupancy.max_warps == 64
    assert [r.occupancy.block for r in four.arch_matrix(block=1024)] == [1024] * 8
    with pytest.raises(cuda_magic.Error, match="block=2048: threads per block"):
        four.arch_matrix(block=2048)


def test_show_archs_prints_the_table_and_the_first_diff(four, capsys):
    cuda_magic.show(four, "archs")
    out = capsys.readouterr().out
    assert out.startswith("archs (sm_80, sm_90a, sm_100a, sm_120; occupancy at 256 threads")
    assert "registers" in out and "occupancy @256" in out and "spills st/ld B" in out
    assert "SASS sm_90a vs sm_80" in out and "scale: sm_90a vs sm_80:" in out
    assert "instructions" in out          # the summary line under each diff
    cuda_magic.show(four, "archs", kernel="scale", block=64)
    out = capsys.readouterr().out
    assert "occupancy @64" in out and "heavy_smem" not in out
    # the summary text of the cell has the archs too, each build named by its arch
    text = cuda_magic.view(four).text()
    assert "scale (sm_100a)" in text and "archs (sm_80, sm_90a" in text
    assert "4 archs: sm_80, sm_90a, sm_100a, sm_120; kernels bound to" in text
    with pytest.raises(cuda_magic.ShowError, match="what='archs' is for a cell built for several"):
        cuda_magic.show(cuda_magic.build(SAXPY, {"arch": "sm_90a"}), "archs")


def test_widget_has_an_archs_tab(four):
    w = cuda_magic.view(four).widget()
    titles = tuple(w.tab.titles)
    assert titles[-1] == "Archs" and titles[:-1] == ("Config", "Resources", "Log", "SASS", "PTX",
                                                     "Source")
    archs = w.tab.archs
    assert "made when this tab is opened" in archs.pane.value
    w.tab.selected_index = len(titles) - 1
    assert "scale: sm_90a vs sm_80" in archs.pane.value
    archs.left.value, archs.right.value = "sm_100a", "sm_120"
    assert "scale: sm_120 vs sm_100a" in archs.pane.value
    archs.kernel.value = "heavy_smem"
    assert "heavy_smem: sm_120 vs sm_100a" in archs.pane.value
    archs.block.value = 1024
    assert "occupancy @1024" in archs.table.value
    assert list(archs.block.options)[0] == 32 and list(archs.block.options)[-1] == 1024
    # one arch: no Archs tab
    one = cuda_magic.view(cuda_magic.build(SAXPY, {"arch": "sm_90a"})).widget()
    assert "Archs" not in one.tab.titles
    # static HTML: the table and the first two archs' diff
    page = cuda_magic.view(four).html()
    assert "Archs" in page and "occupancy @256" in page and "scale: sm_90a vs sm_80" in page


# ---- the magics ----------------------------------------------------------------------------------

def test_line_and_header_forms(shell):
    m = shell.run_cell_magic("cuda", "--arch sm_80,sm_90a --compile-only --name m", SAXPY)
    assert m.archs == ("sm_80", "sm_90a") and m.config_of("scale").provenance["arch"] == "cell"
    header = "//| arch: [sm_80, sm_100a]\n" + SAXPY
    m = shell.run_cell_magic("cuda", "--compile-only", header)
    assert m.archs == ("sm_80", "sm_100a")
    with pytest.raises(CellError, match="'arch' is set on the %%cuda line and 'arch' in the //| header"):
        shell.run_cell_magic("cuda", "--arch sm_80 --compile-only", header)
    shell.run_line_magic("cuda_config", "--arch sm_80,sm_120")
    m = shell.run_cell_magic("cuda", "--compile-only", SAXPY)
    assert m.archs == ("sm_80", "sm_120") and m.config_of("scale").provenance["arch"] == "session"


def test_cuda_config_shows_and_prints_the_list(shell, capsys):
    shell.run_line_magic("cuda_config", "--arch sm_80,sm_90a --json")
    out = capsys.readouterr().out
    assert '"arch":["sm_80","sm_90a"]' in out
    shell.run_line_magic("cuda_config", "")
    assert '["sm_80", "sm_90a"]' in capsys.readouterr().out


def test_bad_items_are_named(shell):
    with pytest.raises(ConfigError, match="'arch' item 2 .* not 'sm_9x'"):
        shell.run_cell_magic("cuda", "--arch sm_80,sm_9x", SAXPY)
    with pytest.raises(CellError, match="cell line 1: 'arch' item 2 .* not 'bogus'"):
        shell.run_cell_magic("cuda", "", "//| arch: [sm_80, bogus]\n" + SAXPY)
    with pytest.raises(ConfigError, match="'arch' item 1 .* not 'sm80'"):
        shell.run_line_magic("cuda_config", "--arch sm80,sm_90a")


# ---- binding and launching (the GPU is faked: no launch reaches the driver) ---------------------

def test_kernels_bind_to_the_gpus_arch(monkeypatch):
    monkeypatch.setattr(cell_module, "detect_arch", lambda: "sm_90a")
    m = cuda_magic.build(SAXPY, {"arch": "sm_80,sm_90,sm_90a"})
    assert m.scale.result.arch == "sm_90a" and m.arch == "sm_90a"     # exact before sm_90
    assert m.scale.unavailable is None
    assert "kernels bound to sm_90a (this GPU's, sm_90a)" in m.arch_note()
    m = cuda_magic.build(SAXPY, {"arch": "sm_80,sm_90"})
    assert m.scale.result.arch == "sm_90"
    members = {(r.arch, name, bound) for r in m.results for name, _, bound in m.members(r)}
    assert members == {("sm_80", "scale", False), ("sm_90", "scale", True)}


def test_no_matching_arch_binds_and_the_launch_says_why(monkeypatch):
    monkeypatch.setattr(cell_module, "detect_arch", lambda: "sm_90a")
    m = cuda_magic.build(SAXPY, {"arch": "sm_80,sm_100a"})
    assert m.scale.result.arch == "sm_80"          # bound all the same: the first arch
    message = "built for sm_80, sm_100a; this GPU is sm_90a: add it to --arch"
    assert m.scale.unavailable == message and message in m.arch_note()
    x = np.ones(4, np.float32)
    with pytest.raises(CudaError, match=f"scale: {message}") as e:
        m.scale[1, 4](x, x, 2.0, 4)
    assert e.value.name == "CUDA_ERROR_NO_BINARY_FOR_GPU"
    with pytest.raises(CudaError, match=message):
        m.load()


# ---- parallel builds: Ctrl-C and errors ------------------------------------------------------------

def test_parallel_raises_the_first_failure_in_order():
    def fail(what, delay):
        def work():
            time.sleep(delay)
            raise ValueError(what)
        return work
    with pytest.raises(ValueError, match="first"):
        parallel.parallel([fail("first", 0.3), fail("second", 0.0), lambda: 3], "testing")
    assert parallel.parallel([lambda: 1, lambda: 2, lambda: 3], "testing") == [1, 2, 3]


def test_ctrl_c_stops_the_wait_and_cancels_the_builds(ctrl_c):
    seen, ran_out = threading.Event(), threading.Event()

    def slow():
        end = time.monotonic() + 10
        while time.monotonic() < end:
            if parallel.cancelled():      # what nvcc's wait checks: its process group is killed
                seen.set()
                return
            time.sleep(0.02)
        ran_out.set()
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        parallel.parallel([slow, slow], "compiling 2 builds with nvcc")
    assert not ran_out.is_set()         # the wait ended on the interrupt, not on the builds
    assert seen.wait(10) and not ran_out.is_set()


# ---- SASS diffs that explain ------------------------------------------------------------------

A = ["S2R R0, SR_TID.X ;", "IMAD R3, R0, 0x4, R2 ;", "ISETP.GE.AND P0, PT, R3, 0x10, PT ;",
     "@P0 EXIT ;", "LDG.E R5, desc[UR4][R2.64] ;", "FMUL R5, R5, R0 ;", "FADD R7, R5, R3 ;",
     "STG.E desc[UR4][R2.64], R7 ;", ".L_x_0:", "EXIT ;"]
# the same code, other registers (R5 holds two values; its second one is R9 here)
B = ["S2R R4, SR_TID.X ;", "IMAD R6, R4.reuse, 0x4, R2 ;", "ISETP.GE.AND P2, PT, R6, 0x10, PT ;",
     "@P2 EXIT ;", "LDG.E R8, desc[UR6][R2.64] ;", "FMUL R9, R8, R4 ;", "FADD R5, R9, R6 ;",
     "STG.E desc[UR6][R2.64], R5 ;", ".L_x_0:", "EXIT ;"]


def test_renumbered_registers_change_no_line():
    d = diff.compare(A, B)
    assert d.changed == 0 and d.normalized
    assert d.renames["R4"] == "R0" and d.renames["P2"] == "P0" and d.renames["UR6"] == "UR4"
    raw = diff.compare(A, B, normalize=False)
    assert raw.changed >= 8 and not raw.normalized          # nearly every line
    assert [r.tag for r in d.rows()] == ["equal"] * len(A)
    assert diff.summary(A, B) == "same instructions, registers renumbered"
    # RZ/PT/SR_ and opcodes that contain register-like names stay as they are
    assert diff.compare(["R2UR UR4, R2 ;"], ["R2UR UR5, R7 ;"]).changed == 0
    assert diff.compare(["MOV R1, RZ ;"], ["MOV R1, R2 ;"]).changed == 1


def test_a_real_change_still_shows_among_renamed_registers():
    b = list(B)
    b[5] = "FMUL.FTZ R9, R8, R4 ;"
    d = diff.compare(A, b)
    assert d.changed == 1
    row = next(r for r in d.rows() if r.tag != "equal")
    assert (row.left, row.right) == ("FMUL R5, R5, R0 ;", "FMUL.FTZ R9, R8, R4 ;")
    assert diff.summary(A, b) == "1 FMUL \u2192 FMUL.FTZ"
    unified = d.unified("a", "b")
    assert "-FMUL R5, R5, R0 ;" in unified and "+FMUL.FTZ R9, R8, R4 ;" in unified
    assert not any(line.startswith(("-S2R", "+S2R")) for line in unified)
    # an inserted call and a register more
    c = A[:6] + ["MUFU.RCP R9, R5 ;", "CALL.REL.NOINC `(__internal_0) ;"] + A[6:]
    res = type("Res", (), {"registers": 10, "spill_stores": 0, "spill_loads": 0})
    more = type("Res", (), {"registers": 16, "spill_stores": 8, "spill_loads": 8})
    assert diff.summary(A, c, resources=(res, more)) == (
        "+2 instructions (float +1, control +1), +1 MUFU.RCP, +1 CALL, registers 10 \u2192 16, "
        "spills 0/0 \u2192 8/8 B")
    assert diff.mix(A) == {"memory": 2, "float": 2, "integer": 3, "control": 2, "tensor": 0}
    assert diff.mix_change(A, c) == {"float": 1, "control": 1}


def test_a_real_renumbering_from_ptxas(fresh_cache):
    cmp = cuda_magic.compare(RENUMBERED, {
        "level=10": {"ptxas": ["-v", "--register-usage-level=10"]},
        "level=0": {"ptxas": ["-v", "--register-usage-level=0"]}}, arch="sm_80")
    raw = cmp.diff("level=0", "k", raw=True)
    if raw.changed == 0:
        pytest.skip("this ptxas allocates the same registers at both levels")
    assert cmp.diff("level=0", "k").changed == 0
    assert cmp.summary("level=0", "k").startswith("same instructions, registers renumbered")
    text = compare_view.text(cmp)
    assert f"k: level=0 vs level=10: 0 lines changed ({raw.changed} with register numbers)" in text
    page = compare_view.page(cmp)
    assert "<details>" in page and f"raw registers: {raw.changed} lines changed" in page


def test_show_sass_raw_and_the_widget_toggle(fresh_cache, capsys):
    cmp = cuda_magic.compare(RENUMBERED, {
        "level=10": {"ptxas": ["-v", "--register-usage-level=10"]},
        "level=0": {"ptxas": ["-v", "--register-usage-level=0"]}}, arch="sm_80")
    raw = cmp.diff("level=0", "k", raw=True).changed
    cuda_magic.show(cmp, "sass", raw=True)
    assert capsys.readouterr().out.startswith(f"k: level=0 vs level=10: {raw} line")
    w = compare_view.CompareView(cmp).widget()
    pane = w.panes["SASS diff"].children[1]
    normalised = pane.value
    w.raw.value = True
    assert pane.value != normalised or raw == 0
    assert f"{raw} line" in pane.value


# ---- summaries in %%cuda_compare ---------------------------------------------------------------

def test_summaries_name_what_changed(fresh_cache):
    c = cuda_magic.compare(SAXPY, arch="sm_90a")          # ftz=false vs ftz=true
    assert c.summary("ftz=true", "scale") == "1 FMUL \u2192 FMUL.FTZ"
    assert "scale \u00b7 ftz=true: 1 FMUL \u2192 FMUL.FTZ" in compare_view.text(c)
    assert "1 FMUL \u2192 FMUL.FTZ" in compare_view.html_resources(c)
    assert "1 FMUL \u2192 FMUL.FTZ" in compare_view.html_sass(c, "scale", "side")
    rows = {label: values for k, label, values, _ in compare_view.resource_diff(c)}
    assert rows["float instructions"] == ["1", "1"] and rows["memory instructions"][0] == \
        rows["memory instructions"][1]
    div = cuda_magic.compare(r'''
extern "C" __global__ void ratio(const float* a, const float* b, float* q, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) q[i] = a[i] / b[i];
}''', vary=["prec-div"], arch="sm_90a")
    s = div.summary("prec-div=true", "ratio")
    n = len([x for x in div.instructions("prec-div=true", "ratio") if not x.endswith(":")]) - \
        len([x for x in div.instructions("baseline", "ratio") if not x.endswith(":")])
    assert s.startswith(f"+{n} instructions (") and "+1 CALL" in s and n > 20
    w = compare_view.CompareView(div).widget()
    assert "+1 CALL" in w.children[0].value           # the header
    assert "+1 CALL" in w.panes["Resources"].value


def test_vary_arch_makes_one_variant_per_arch(fresh_cache):
    c = cuda_magic.compare(SAXPY, vary=["arch=sm_80,sm_90a,sm_120"])
    assert c.names == ["sm_80", "sm_90a", "sm_120"] and c.baseline == "sm_80"
    assert [c.modules[n].result.arch for n in c.names] == ["sm_80", "sm_90a", "sm_120"]
    assert c.modules["sm_90a"].result.config.provenance["arch"] == "variant:sm_90a"
    assert "sm_80 / sm_90a / sm_120" in compare_view.header(c)
    for name in ("sm_90a", "sm_120"):
        s = c.summary(name, "scale")
        delta = len(c.instructions(name, "scale")) - len(c.instructions("sm_80", "scale"))
        assert s.startswith(f"+{delta} instructions (" if delta > 0 else "same instruction")
        regs = [c.resources(n, "scale").registers for n in ("sm_80", name)]
        assert (f"registers {regs[0]} \u2192 {regs[1]}" in s) == (regs[0] != regs[1])
    # a toggled arch variant keeps its arch in its name
    assert c.toggled("ftz", False).names[-1] == "sm_120, ftz=false"


def test_arch_lists_in_comparisons_say_how(shell):
    with pytest.raises(ConfigError, match="takes nothing beside it .*--arch sm_90a --vary ftz"):
        cuda_magic.compare(SAXPY, vary=["ftz", "arch=sm_80,sm_90a"])
    with pytest.raises(ConfigError, match="give two archs or more"):
        cuda_magic.compare(SAXPY, vary=["arch=sm_80"])
    with pytest.raises(ConfigError, match=r"--vary arch='sm_80,nope': 'arch' item 2"):
        cuda_magic.compare(SAXPY, vary=["arch=sm_80,nope"])
    with pytest.raises(ConfigError, match="variant 'ftz=false': 'arch' lists sm_80, sm_90a .* "
                                          "--vary arch=sm_80,sm_90a"):
        cuda_magic.compare(SAXPY, arch="sm_80,sm_90a")
    c = shell.run_cell_magic("cuda_compare", "--vary arch=sm_80,sm_90a", SAXPY)
    assert c.names == ["sm_80", "sm_90a"]


# ---- on a GPU (an H200, sm_90a) --------------------------------------------------------------------

@pytest.mark.gpu
def test_launch_uses_the_gpus_build(shell):
    gpu = cuda_magic.detect_arch()
    shell.run_cell_magic("cuda", f"--arch sm_80,{gpu} --name m", SAXPY)
    m, k = shell.user_ns["m"], shell.user_ns["scale"]
    assert k.result.arch == gpu and m.arch == gpu and k.loaded
    x = np.arange(1000, dtype=np.float32)
    y = np.zeros_like(x)
    k[4, 256](x, y, 2.0, 1000)
    np.testing.assert_array_equal(y, x * 2)
    assert "Archs" in cuda_magic.view(m).widget().tab.titles


@pytest.mark.gpu
def test_launch_without_a_build_for_this_gpu_says_so(shell):
    gpu = cuda_magic.detect_arch()
    others = [a for a in ("sm_75", "sm_80", "sm_90a", "sm_100a", "sm_120") if pick_arch((a,), gpu) is None]
    archs = others[:2]
    m = shell.run_cell_magic("cuda", f"--arch {','.join(archs)} --name m", SAXPY)
    k = shell.user_ns["scale"]
    assert k.result.arch == archs[0] and not k.loaded
    message = f"built for {', '.join(archs)}; this GPU is {gpu}: add it to --arch"
    assert message in str(m.load_error)
    x = np.ones(4, np.float32)
    with pytest.raises(CudaError, match=message):
        k[1, 4](x, x, 2.0, 4)
