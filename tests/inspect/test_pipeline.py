"""The async-pipeline table of Hopper and Blackwell kernels, from sm_90a and sm_100a builds (no
GPU): every count equals a grep of ``cuobjdump -sass`` for the opcodes this file lists itself
(:data:`OPCODES`, not the implementation's patterns), and each warning comes when its cause is
there and not otherwise."""

from __future__ import annotations

import re
import subprocess

import pytest

import cuda_magic
from corpus import KERNELS
from cuda_magic.cell import build
from cuda_magic.compile.hints import arch_hint
from cuda_magic.inspect.disasm import cubin
from cuda_magic.inspect.pipeline import REGISTER_FILE, ROWS, count, needed_suffix, pipeline
from cuda_magic.tools import find

FILES = ("tma_wgmma_gemm.cu", "warp_specialized.cu", "cluster_dsmem.cu", "tensormap.cu",
         "wgmma_regs.cu", "tcgen05_mma.cu")
ARCHS = {"tcgen05_mma.cu": ("sm_100a",), "tma_wgmma_gemm.cu": ("sm_90a",)}   # wgmma: Hopper's


# The oracle: each row's SASS opcodes as NVIDIA's instruction set reference names them (CUDA
# Binary Utilities, "Hopper Instruction Set" and "Blackwell Instruction Set"), written here and
# never taken from cuda_magic/inspect/pipeline.py, so that an opcode dropped there shows.  An
# instruction counts when its opcode is one of these, or one of these then "." and modifiers.
OPCODES = {
    "TMA load": ("UTMALDG",),
    "TMA store": ("UTMASTG",),
    "TMA reduce": ("UTMAREDG",),
    "TMA prefetch": ("UTMAPF",),
    "bulk copy": ("UBLKCP",),
    "bulk reduce / prefetch": ("UBLKRED", "UBLKPF"),
    "WGMMA": ("HGMMA", "IGMMA", "QGMMA", "BGMMA"),      # fp16/bf16/tf32, integer, fp8, binary
    "warpgroup sync": ("WARPGROUP",),                    # WARPGROUP.ARRIVE, WARPGROUP.DEPBAR
    "tcgen05 MMA": ("UTCHMMA", "UTCIMMA", "UTCQMMA", "UTCOMMA", "UTCMMA"),
    "tcgen05 commit": ("UTCBAR",),
    "tcgen05 other": ("UTCATOMSWS", "UTCCP", "UTCSHIFT"),  # alloc/dealloc, cp, shift
    "tensor memory ld/st": ("LDTM", "STTM"),
    "mbarrier arrive": ("SYNCS.ARRIVE",),
    "mbarrier wait": ("SYNCS.PHASECHK",),
    "mbarrier other": ("SYNCS.EXCH", "SYNCS.CCTL"),       # init, invalidate
    "async fence": ("FENCE.VIEW.ASYNC",),
    "cluster barrier": ("UCGABAR_ARV", "UCGABAR_WAIT"),
    "elect": ("ELECT",),
    "PDL wait": ("ACQBULK",),
    "setmaxnreg": ("USETMAXREG",),
}
# opcodes of these families must be in OPCODES (a new one is added there, not missed by both)
FAMILIES = ("UTMA", "UBLK", "UTC", "SYNCS", "UCGABAR", "USETMAXREG", "LDTM", "STTM", "ACQBULK")


def _row_of(op: str) -> str | None:
    """The row an opcode counts in, by :data:`OPCODES` (None: no row)."""
    rows = [row for row, names in OPCODES.items()
            if any(op == n or op.startswith(n + ".") for n in names)]
    assert len(rows) <= 1, (op, rows)
    return rows[0] if rows else None


def _oracle(ops) -> dict[str, int]:
    counts = dict.fromkeys(OPCODES, 0)
    for op in ops:
        row = _row_of(op)
        if row is not None:
            counts[row] += 1
        else:
            assert not op.startswith(FAMILIES) and not op.split(".")[0].endswith("GMMA"), \
                f"{op}: an opcode of the async machinery that OPCODES does not list"
    return counts


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


# The other wgmma kinds (the corpus GEMM is bf16: HGMMA): one warpgroup multiplies int8 tiles
# (m64n64k32.s32.s8.s8: IGMMA), 1-bit tiles (m64n64k256.s32.b1.b1.and.popc: BGMMA) and fp8
# tiles (m64n64k32.f32.e4m3.e4m3: QGMMA), each operand a K-major shared-memory tile.
INT_MMA = r"""
#include <cstdint>

__device__ __forceinline__ unsigned long long descriptor(const void* tile) {
    unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(tile));
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (unsigned long long)(128 >> 4) << 16
         | (unsigned long long)(256 >> 4) << 32;
}

#define D32(t, d) t(d[0]), t(d[1]), t(d[2]), t(d[3]), t(d[4]), t(d[5]), t(d[6]), t(d[7]), \
    t(d[8]), t(d[9]), t(d[10]), t(d[11]), t(d[12]), t(d[13]), t(d[14]), t(d[15]), t(d[16]), \
    t(d[17]), t(d[18]), t(d[19]), t(d[20]), t(d[21]), t(d[22]), t(d[23]), t(d[24]), t(d[25]), \
    t(d[26]), t(d[27]), t(d[28]), t(d[29]), t(d[30]), t(d[31])
#define REGS32 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"

extern "C" __global__ void __launch_bounds__(128)
int_mma(const int8_t* a, const int8_t* b, const uint32_t* abits, const uint32_t* bbits,
        int* c, float* f) {
    __shared__ alignas(128) int8_t sa[64 * 32], sb[64 * 32];
    __shared__ alignas(128) uint32_t xa[64 * 8], xb[64 * 8];
    for (int i = threadIdx.x; i < 64 * 32; i += 128) { sa[i] = a[i]; sb[i] = b[i]; }
    for (int i = threadIdx.x; i < 64 * 8; i += 128) { xa[i] = abits[i]; xb[i] = bbits[i]; }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    int d[32] = {}, e[32] = {};
    float g[32] = {};
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 " REGS32 ", %32, %33, 0;"
                 : D32("+r", d) : "l"(descriptor(sa)), "l"(descriptor(sb)));
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k256.s32.b1.b1.and.popc " REGS32
                 ", %32, %33, 0;" : D32("+r", e) : "l"(descriptor(xa)), "l"(descriptor(xb)));
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 " REGS32
                 ", %32, %33, 0, 1, 1;" : D32("+f", g) : "l"(descriptor(sa)), "l"(descriptor(sb)));
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    for (int i = 0; i < 32; ++i) {
        c[threadIdx.x * 32 + i] = d[i] + e[i];
        f[threadIdx.x * 32 + i] = g[i];
    }
}
"""


@pytest.fixture(scope="module")
def int_mma():
    """{("int_mma", "sm_90a", compiler): Module} of :data:`INT_MMA`."""
    return {("int_mma", "sm_90a", c): build(INT_MMA, {"arch": "sm_90a", "compiler": c})
            for c in ("nvrtc", "nvcc")}


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


def test_the_oracle_has_every_row():
    assert list(OPCODES) == [row for row, _, _ in ROWS]


@pytest.mark.slow
def test_every_count_is_a_grep_of_cuobjdump(built, int_mma, tmp_path):
    checked = 0
    for (f, arch, compiler), m in [*built.items(), *int_mma.items()]:
        for name, k in m.python_names().items():
            r = m.result_of(name)
            grep = _oracle(_grep_cuobjdump(cubin(r), tmp_path)[k.symbol])
            p = pipeline(r, k.symbol, name, m.source)
            assert p.counts == grep, (f, arch, compiler, name)
            checked += sum(n > 0 for n in p.counts.values())
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


# cuobjdump's listing of a kernel with every wgmma kind, one predicated
SYNTHETIC = """
        Function : k
        .headerflags    @"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0070*/                   WARPGROUP.ARRIVE ;
        /*0080*/                   HGMMA.64x64x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT ;
        /*0090*/                   IGMMA.64x64x32.S8.S8 R24, gdesc[UR4], RZ, !UPT ;
        /*00a0*/              @P0  IGMMA.64x128x32.U8.S8 R24, gdesc[UR8], R24, gsb0 ;
        /*00b0*/                   BGMMA.64x64x256.AND.POPC R56, gdesc[UR4], RZ, !UPT, gsb0 ;
        /*00c0*/                   QGMMA.64x64x32.F32.E4M3.E4M3 R88, gdesc[UR4], RZ, !UPT, gsb0 ;
        /*00d0*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*00e0*/                   IMMA.16816.S32.S8 R4, R8, R12, R4 ;
        /*00f0*/                   EXIT ;
"""


def test_integer_binary_and_fp8_wgmma_are_counted_in_synthetic_sass():
    counts, opcodes = count(SYNTHETIC)
    ops = re.findall(r"^\s*/\*[0-9a-f]{4}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)", SYNTHETIC,
                     re.M)
    assert counts == _oracle(ops)
    assert counts["WGMMA"] == 5 and counts["warpgroup sync"] == 2   # IMMA is no wgmma
    assert {op.split(".")[0]: n for op, n in opcodes["WGMMA"].items()} == \
        {"HGMMA": 1, "IGMMA": 2, "BGMMA": 1, "QGMMA": 1}


def test_integer_binary_and_fp8_wgmma_are_counted(int_mma):
    m = int_mma["int_mma", "sm_90a", "nvrtc"]
    p = m.pipeline("int_mma")
    assert p["WGMMA"] == 3 and p["warpgroup sync"] >= 2
    assert sorted(op.split(".")[0] for op in p.opcodes["WGMMA"]) == ["BGMMA", "IGMMA", "QGMMA"]
    text = cuda_magic.display.view(m).part("pipeline", "int_mma")
    assert re.search(r"^\s*WGMMA\s+3$", text, re.M), text


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


def test_a_register_budget_of_exactly_the_register_file_gives_no_warning():
    """1 producer at dec 32 + 2 consumers at inc 240, x 128 threads = 65,536: all of the SM's
    registers, not more (the warning is for a budget over the register file)."""
    greedy = "pipeline<40, 240>(&tmap, out, alpha, 2)"
    src = _text("warp_specialized.cu")
    assert greedy in src
    m = build(src.replace(greedy, "pipeline<32, 240>(&tmap, out, alpha, 2)"), {"arch": "sm_90a"})
    p = m.pipeline("ws_scale_greedy")
    assert sorted(set(p.setmaxnreg)) == [("dec", 32), ("inc", 240)] and p.warpgroups == 3
    assert p.register_total == REGISTER_FILE == 65536
    assert p.warnings == ()
    text = cuda_magic.display.view(m).part("pipeline", "ws_scale_greedy")
    assert "65,536 of 65,536" in text and "warning" not in text


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
