"""The async-pipeline table of Hopper and Blackwell kernels, from sm_90a and sm_100a builds (no
GPU): every count equals a grep of ``cuobjdump -sass``, and each warning comes when its cause
is there and not otherwise."""

from __future__ import annotations

import re
import subprocess

import pytest

import cuda_magic
from corpus import KERNELS
from cuda_magic.cell import build
from cuda_magic.compile.hints import arch_hint
from cuda_magic.inspect.disasm import cubin
from cuda_magic.inspect.pipeline import ROWS, needed_suffix, pipeline
from cuda_magic.tools import find

FILES = ("tma_wgmma_gemm.cu", "warp_specialized.cu", "cluster_dsmem.cu", "tensormap.cu",
         "wgmma_regs.cu", "tcgen05_mma.cu")
ARCHS = {"tcgen05_mma.cu": ("sm_100a",), "tma_wgmma_gemm.cu": ("sm_90a",)}   # wgmma: Hopper's


def _text(name: str) -> str:
    return (KERNELS / name).read_text()


@pytest.fixture(scope="module")
def built():
    """{(file, arch, compiler): Module} of the Hopper/Blackwell corpus files."""
    out = {}
    for f in FILES:
        for arch in ARCHS.get(f, ("sm_90a", "sm_100a")):
            for compiler in ("nvrtc", "nvcc"):
                out[f, arch, compiler] = build(_text(f), {"arch": arch, "compiler": compiler})
    return out


def _grep_cuobjdump(elf: bytes, tmp_path) -> dict[str, list[str]]:
    """{function: its opcodes}, from ``cuobjdump -sass`` of a cubin (the other tool)."""
    f = tmp_path / "k.cubin"
    f.write_bytes(elf)
    out = subprocess.run([find("cuobjdump"), "-sass", str(f)], capture_output=True, text=True,
                         check=True).stdout
    funcs, current = {}, None
    for line in out.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            current = funcs.setdefault(m[1], [])
            continue
        m = re.match(r"\s*/\*[0-9a-f]{4}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if m and current is not None:
            current.append(m[1])
    return funcs


@pytest.mark.slow
def test_every_count_is_a_grep_of_cuobjdump(built, tmp_path):
    checked = 0
    for (f, arch, compiler), m in built.items():
        for name, k in m.python_names().items():
            r = m.result_of(name)
            ops = _grep_cuobjdump(cubin(r), tmp_path)[k.symbol]
            p = pipeline(r, k.symbol, name, m.source)
            for row, _, pattern in ROWS:
                grep = sum(1 for op in ops if re.match(rf"(?:{pattern})[._A-Z0-9]*$", op))
                assert p.counts[row] == grep, (f, arch, compiler, name, row, p.counts[row], grep)
                checked += p.counts[row] > 0
    assert checked > 60          # the counts are not all zero: the corpus uses the machinery


def test_a_hopper_gemm_shows_tma_wgmma_and_its_barriers(built):
    m = built["tma_wgmma_gemm.cu", "sm_90a", "nvrtc"]
    p = m.pipeline("tma_wgmma_gemm")
    assert p.arch == "sm_90a" and p.warpgroups == 1 and p.cluster is None
    assert p["TMA load"] >= 2 and p["WGMMA"] >= 4 and p["warpgroup sync"] >= 2
    assert p["mbarrier wait"] >= 1 and p["mbarrier arrive"] >= 1 and p["async fence"] >= 1
    assert p["tcgen05 MMA"] == 0 and p["setmaxnreg"] == 0
    assert set(p.opcodes["WGMMA"]) <= {op for op in p.opcodes["WGMMA"] if op.startswith("HGMMA")}
    assert p.shared == m.result.resources[m.tma_wgmma_gemm.symbol].shared > 16384
    assert p.warnings == ()       # one warpgroup: no warp specialisation to miss


def test_a_blackwell_gemm_shows_tcgen05(built):
    m = built["tcgen05_mma.cu", "sm_100a", "nvcc"]
    p = m.pipeline("tcgen05_gemm")
    assert p["tcgen05 MMA"] >= 4 and p["tcgen05 commit"] >= 1 and p["tensor memory ld/st"] >= 1
    assert p["tcgen05 other"] >= 1                  # alloc / dealloc
    assert p["WGMMA"] == 0 and p["TMA load"] >= 2


def test_setmaxnreg_per_warpgroup_and_the_register_file(built):
    m = built["warp_specialized.cu", "sm_90a", "nvrtc"]
    regs, plain, greedy = (m.pipeline(k) for k in ("ws_scale_regs", "ws_scale", "ws_scale_greedy"))
    assert sorted(regs.setmaxnreg) == [("dec", 40), ("inc", 232)] and regs.warpgroups == 2
    assert regs.register_total == 128 * (40 + 232) and regs.warnings == ()
    assert greedy.warpgroups == 3 and greedy.register_total == 128 * (40 + 2 * 240) == 66560
    (w,) = greedy.warnings
    assert "66,560 registers, more than the SM's 65,536" in w and "2 at 240" in w
    (w,) = plain.warnings
    assert "warp-specialised TMA pipeline over 2 warpgroups with no setmaxnreg" in w
    assert plain.setmaxnreg == () and plain.register_total is None


def test_setmaxnreg_that_ptxas_dropped_is_said_with_its_reason():
    """No __launch_bounds__: ptxas cannot tell the register count at entry and ignores
    setmaxnreg (the cutlass#3308 failure): the SASS has no USETMAXREG."""
    src = _text("wgmma_regs.cu").replace("__global__ void __launch_bounds__(256, 1)",
                                         "__global__ void")
    m = build(src, {"arch": "sm_90a"})
    p = m.pipeline("specialized_scale")
    assert p["setmaxnreg"] == 0
    (w,) = p.warnings
    assert "setmaxnreg is in the PTX but not in the SASS: ptxas dropped it" in w
    assert "'setmaxnreg' ignored; unable to determine register count at entry" in w
    kept = build(_text("wgmma_regs.cu"), {"arch": "sm_90a"}).pipeline("specialized_scale")
    assert kept["setmaxnreg"] == 2 and kept.warnings == ()


def test_a_cluster_kernel_shows_its_dims_and_barriers(built):
    for arch in ("sm_90a", "sm_100a"):
        p = built["cluster_dsmem.cu", arch, "nvcc"].pipeline("cluster_swap")
        assert p.cluster == (2, 1, 1) and p["cluster barrier"] >= 2, arch
    assert built["tensormap.cu", "sm_90a", "nvrtc"].pipeline("tma_scale_tile").cluster is None


GUARDED = r"""
__global__ void guarded(float* d) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
    d[threadIdx.x] = 1.f;
}
"""


def test_instructions_compiled_out_for_want_of_the_suffix():
    p = build(GUARDED, {"arch": "sm_90"}).pipeline("guarded")
    (w,) = p.warnings
    assert "the source uses wgmma, which sm_90 does not have (it needs sm_90a)" in w
    assert "compiled out (--arch sm_90a)" in w
    assert build(GUARDED, {"arch": "sm_90a"}).pipeline("guarded").warnings == ()


def test_needed_suffix():
    gemm, tc, regs = _text("tma_wgmma_gemm.cu"), _text("tcgen05_mma.cu"), _text("wgmma_regs.cu")
    assert needed_suffix(gemm, "sm_90") == [("wgmma", "sm_90a")]
    assert needed_suffix(gemm, "sm_90a") == []
    assert needed_suffix(gemm, "sm_100a") == [("wgmma", "sm_90a")]    # wgmma is Hopper's only
    assert needed_suffix(tc, "sm_100a") == [] and needed_suffix(tc, "sm_100f") == []
    assert needed_suffix(tc, "sm_100") == [("tcgen05", "sm_100a or sm_100f")]
    assert needed_suffix(regs, "sm_90") == [("setmaxnreg", "sm_90a or sm_100a")]
    assert needed_suffix(regs, "sm_100a") == [] and needed_suffix("int x;", "sm_80") == []


@pytest.mark.parametrize("file, arch, needs", [
    ("tma_wgmma_gemm.cu", "sm_90", "--arch sm_90a"),
    ("wgmma_regs.cu", "sm_90", "--arch sm_90a"),
    ("tcgen05_mma.cu", "sm_90a", "--arch sm_100a"),
    ("tcgen05_mma.cu", "sm_100", "--arch sm_100a"),
])
def test_a_refused_instruction_names_the_arch_it_needs(file, arch, needs):
    with pytest.raises(cuda_magic.CompileError) as info:
        build(_text(file), {"arch": arch})
    hint = arch_hint(info.value.log)
    assert hint is not None and hint.endswith(needs) and f"is not on {arch}:" in hint
    assert hint in info.value.notes and needs in str(info.value)


def test_no_hint_for_other_errors():
    assert arch_hint("error   : Instruction 'mma' not supported on .target 'sm_70'") is None
    assert arch_hint("") is None


def test_show_pipeline_compares_an_arch_list_side_by_side():
    m = build(_text("warp_specialized.cu"), {"arch": ["sm_90a", "sm_100a"]})
    text = cuda_magic.display.view(m).part("pipeline", "ws_scale_greedy")
    lines = text.splitlines()
    assert lines[0] == "ws_scale_greedy"
    assert re.match(r"\s+stage\s+sm_90a\s+sm_100a$", lines[1]), lines[1]
    setmax = next(ln for ln in lines if ln.strip().startswith("setmaxnreg "))
    assert "inc 240, dec 40" in setmax or "dec 40, inc 240" in setmax
    assert sum("66,560 of 65,536" in ln for ln in lines) == 1
    assert "warning (sm_90a, sm_100a): ws_scale_greedy: setmaxnreg asks for 66,560 registers" in text
    assert "ws_scale_regs" not in text
    everything = cuda_magic.display.view(m).part("pipeline")
    # ws_scale's warning names its registers, which differ per arch (40, 30): said for each
    assert everything.count("  warning (") == 3 and "ws_scale_regs\n" in everything


def test_show_pipeline_of_a_plain_kernel_says_so():
    m = build('extern "C" __global__ void k(float* y) { y[0] = 1.f; }', {"arch": "sm_90a"})
    out = cuda_magic.display.view(m).part("pipeline")
    assert "no TMA, wgmma, tcgen05, mbarrier, cluster or setmaxnreg instructions" in out


def test_the_resources_tab_table(built):
    from cuda_magic.display import pipeline as pview
    m = built["warp_specialized.cu", "sm_100a", "nvrtc"]
    html = pview.html(pview.of_content(cuda_magic.display.view(m).content))
    assert html.count("async pipeline") == 3 and "<table" in html
    assert "66,560 of 65,536" in html and "warp-specialised TMA pipeline" in html
    assert 'title="cp.async.bulk.tensor global -&gt; shared"' in html
    assert pview.worth_showing(m.source, ["sm_100a"])
    assert not pview.worth_showing(m.source, ["sm_80"])
    assert not pview.worth_showing("__global__ void k(float* y) { y[0] = 1; }", ["sm_90a"])


def test_a_comparison_shows_the_pipeline_per_variant():
    c = cuda_magic.compare(_text("warp_specialized.cu"), vary=["arch=sm_90a,sm_100a"],
                           arch="sm_90a")
    out = cuda_magic.display.view(c).part("pipeline", "ws_scale")
    lines = out.splitlines()
    assert lines[0] == "ws_scale" and re.match(r"\s+stage\s+sm_90a\s+sm_100a$", lines[1])
    assert re.search(r"registers \(ptxas\)\s+40\s+30", out)
    assert "warning (sm_90a): ws_scale: a warp-specialised TMA pipeline" in out
    assert "warning (sm_100a): ws_scale: a warp-specialised TMA pipeline" in out
