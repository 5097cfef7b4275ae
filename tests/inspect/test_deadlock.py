"""The deadlock check before the launch (cuda_magic/inspect/deadlock.py), read from real sm_90a
builds of NVRTC and nvcc (no GPU, nothing launched): an mbarrier wait in a kernel where nothing
arrives, a block-wide barrier under a condition on threadIdx; what must not be flagged
(uniform conditions, early returns, counted barriers, loaded conditions, every arrive form the
compilers make, the whole corpus); the parts of the SASS the check cannot decide; the pipeline
result and views that show the findings."""

from __future__ import annotations

import re

import pytest

import cuda_magic
from corpus import BUILDS, CASES, KERNELS, build_case, hang_waits
from cuda_magic.cell import build
from cuda_magic.display import pipeline as pview
from cuda_magic.inspect.deadlock import Finding, check, deadlocks
from cuda_magic.inspect.lines import placed

COMPILERS = ("nvrtc", "nvcc")

# Each kernel's lines are marked: "// BAR" is the barrier a finding names, "// IF" its condition.
BARRIERS = r"""
extern "C" __global__ void divergent_sync(int* out, volatile int* flag) {
    if (threadIdx.x < 64) {                              // IF divergent_sync
        __syncthreads();                                 // BAR divergent_sync
        *flag = 1;
    } else {
        while (*flag == 0) { }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}
extern "C" __global__ void lane_sync(int* out) {
    unsigned lane; asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    if (lane == 3) { __syncthreads(); out[0] = 1; }      // BAR lane_sync
    out[threadIdx.x] = 2;
}
extern "C" __global__ void y_sync(int* out) {
    if (threadIdx.y > 1) { __syncthreads(); out[1] = 1; }  // BAR y_sync
    out[threadIdx.x] = 2;
}
extern "C" __global__ void loop_sync(float* out, const float* x, int n) {
    __shared__ float s[256];
    float acc = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {  // IF loop_sync
        s[threadIdx.x] = x[i];
        __syncthreads();                                 // BAR loop_sync
        acc += s[255 - threadIdx.x];
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
extern "C" __global__ void role_bar(int* out) {
    if (threadIdx.x / 128 == 1) { asm volatile("bar.sync 3;"); out[0] = 1; }  // BAR role_bar
    out[threadIdx.x] = 2;
}
extern "C" __global__ void or_sync(int* out) {
    int c = out[threadIdx.x];
    if ((threadIdx.x & 31) == 0) out[1] = __syncthreads_or(c > 3);  // BAR or_sync
    out[threadIdx.x + 64] = c;
}
// --- not flagged ---
extern "C" __global__ void block_sync(int* out, volatile int* flag) {
    if (blockIdx.x < 4) { __syncthreads(); *flag = 1; }
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}
extern "C" __global__ void dim_sync(int* out) {
    if (blockDim.x > 32) { __syncthreads(); out[0] = 1; }
    out[threadIdx.x] = 2;
}
extern "C" __global__ void param_sync(int* out, int k) {
    if (k > 3) { __syncthreads(); out[0] = k; } else { out[1] = k; }
    out[threadIdx.x] = 3;
}
extern "C" __global__ void early_return(float* out, const float* x, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    s[threadIdx.x] = x[i];
    __syncthreads();
    out[i] = s[255 - threadIdx.x];
}
extern "C" __global__ void init_then_sync(int* out) {
    __shared__ int v;
    if (threadIdx.x == 0) v = out[0];
    __syncthreads();
    out[threadIdx.x + 1] = v;
}
extern "C" __global__ void counted_bar(int* out) {
    if (threadIdx.x >= 128) { asm volatile("bar.sync 1, 128;"); out[0] = 1; }
    else { asm volatile("bar.arrive 2, 256;"); }
    out[threadIdx.x] = 2;
}
extern "C" __global__ void loaded_sync(int* out, const int* data) {
    if (data[threadIdx.x] > 0) { __syncthreads(); out[0] = 1; }
    out[threadIdx.x] = 2;
}
extern "C" __global__ void uniform_loop(float* out, const float* x, int n) {
    __shared__ float s[256];
    for (int k = 0; k < n; ++k) {
        s[threadIdx.x] = x[k * 256 + threadIdx.x];
        __syncthreads();
        if (threadIdx.x == 0) out[k] = s[7];
        __syncthreads();
    }
}
"""
FLAGGED = {"divergent_sync": ("threadIdx.x", "__syncthreads()"),
           "lane_sync": ("the lane index", "__syncthreads()"),
           "y_sync": ("threadIdx.y", "__syncthreads()"),
           "loop_sync": ("threadIdx.x", "__syncthreads()"),
           "role_bar": ("threadIdx.x", "a block-wide barrier (bar.sync 3)"),
           "or_sync": ("threadIdx.x", "__syncthreads_count/_and/_or()")}
CLEAN = ("block_sync", "dim_sync", "param_sync", "early_return", "init_then_sync", "counted_bar",
         "loaded_sync", "uniform_loop")

# a kernel per arrive form: KERNEL(name, the arrive), then its wait
PRELUDE = r"""
#include <cstdio>
#include <cuda.h>
__device__ __forceinline__ unsigned sa(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
#define WAIT(bar) do { unsigned d = 0; while (!d) asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }" : "=r"(d) : "r"(sa(&bar)) : "memory"); } while (0)
#define KERNEL(name, body) extern "C" __global__ void name(const int* g, int* out) { \
    __shared__ __align__(128) int buf[256]; __shared__ __align__(8) unsigned long long bar; \
    body; WAIT(bar); out[threadIdx.x] = buf[threadIdx.x]; }
"""
MBARRIERS = PRELUDE + r"""extern "C" __global__ void no_arrive(int* out) {
    __shared__ __align__(8) unsigned long long bar;
    if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sa(&bar)));
    __syncthreads();
    WAIT(bar);                                            // WAIT no_arrive
    out[threadIdx.x] = 1;
}
__device__ __noinline__ void arrive_on(unsigned a) { asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(a)); }
KERNEL(callee_arrive, arrive_on(sa(&bar)))
KERNEL(plain_arrive, asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(sa(&bar))))
KERNEL(expect_tx, asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 16;" :: "r"(sa(&bar))))
KERNEL(complete_tx, asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], 16;" :: "r"(sa(&bar))))
KERNEL(remote_arrive, asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(sa(&bar))))
KERNEL(cp_async_arrive, asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" :: "r"(sa(&bar))))
KERNEL(bulk_copy, asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 1024, [%2];" :: "r"(sa(buf)), "l"(g), "r"(sa(&bar)) : "memory"))
KERNEL(bulk_reduce, asm volatile("cp.reduce.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes.add.u32 [%0], [%1], 128, [%2];" :: "r"(sa(buf)), "r"(sa(buf + 128)), "r"(sa(&bar)) : "memory"))
KERNEL(st_async, asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%0], 5, [%1];" :: "r"(sa(buf)), "r"(sa(&bar)) : "memory"))
KERNEL(red_async, asm volatile("red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 [%0], 5, [%1];" :: "r"(sa(buf)), "r"(sa(&bar)) : "memory"))
extern "C" __global__ void tma_load(const __grid_constant__ CUtensorMap map, int* out) {
    __shared__ __align__(128) int buf[256]; __shared__ __align__(8) unsigned long long bar;
    asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2}], [%3];"
                 :: "r"(sa(buf)), "l"(&map), "r"(0), "r"(sa(&bar)) : "memory");
    WAIT(bar);
    out[threadIdx.x] = buf[threadIdx.x];
}
"""
ARRIVING = ("callee_arrive", "plain_arrive", "expect_tx", "complete_tx", "remote_arrive",
            "cp_async_arrive", "bulk_copy", "bulk_reduce", "st_async", "red_async", "tma_load")


def _line(source: str, marker: str) -> int:
    (n,) = [k for k, text in enumerate(source.split("\n"), 1) if text.rstrip().endswith(marker)]
    return n


@pytest.fixture(scope="module", params=COMPILERS)
def barriers(request):
    return build(BARRIERS, {"arch": "sm_90a", "compiler": request.param})


@pytest.fixture(scope="module", params=COMPILERS)
def mbarriers(request):
    return build(MBARRIERS, {"arch": "sm_90a", "compiler": request.param})


def _found(m, name) -> tuple[Finding, ...]:
    return deadlocks(m.result_of(name), m.kernels[name].symbol)


@pytest.mark.parametrize("name", FLAGGED)
def test_a_barrier_under_a_condition_on_the_thread_index_is_said_with_its_lines(barriers, name):
    (f,) = _found(barriers, name)
    source, what = FLAGGED[name]
    assert f.kind == "barrier" and f.file == "cell.cu" and f.line == _line(BARRIERS, f"// BAR {name}")
    assert re.match(r"(@!?P\d )?BAR\.(SYNC|RED)", f.instruction), f.instruction
    assert f.sources == (source,)
    code = {p.address: (p.pred + " " + p.text).strip()
            for p in placed(barriers.result_of(name), name)[0]}
    assert code[f.address] == f.instruction          # the SASS instruction at that offset
    assert f.message.startswith(f"line {f.line}: {what} runs only where a condition on {source} "
                                f"holds")
    assert "CUDA requires such a condition to be the same for the whole block, otherwise the " \
           "block may wait forever" in f.message
    assert f"{f.instruction} at +{f.address:#06x}" in f.message


@pytest.mark.parametrize("name", ("divergent_sync", "loop_sync"))
def test_the_condition_is_the_branch_and_its_line(barriers, name):
    """The brief's example and a loop whose trip count depends on threadIdx.x: the branch the
    barrier is control dependent on, on the if's (the for's) line."""
    (f,) = _found(barriers, name)
    assert f.condition_line == _line(BARRIERS, f"// IF {name}")
    assert "BRA" in f.condition
    assert f"holds (line {f.condition_line})" in f.message


@pytest.mark.parametrize("name", CLEAN)
def test_uniform_conditions_early_returns_counted_barriers_and_loaded_conditions_say_nothing(
        barriers, name):
    assert _found(barriers, name) == ()


@pytest.mark.parametrize("compiler", COMPILERS)
def test_a_debug_build_reads_the_same(compiler):
    """-G: no optimisation, fences before each EXIT (an early return still exits at once),
    __syncthreads_or a call (a barrier in a called function is not read: nothing said)."""
    m = build(BARRIERS, {"arch": "sm_90a", "compiler": compiler, compiler: ["-G"]})
    for name in FLAGGED:
        found = _found(m, name)
        if name == "or_sync":
            assert found == ()
            continue
        (f,) = found
        assert (f.kind, f.line, f.sources[0]) == ("barrier", _line(BARRIERS, f"// BAR {name}"),
                                                  FLAGGED[name][0])
    for name in CLEAN:
        assert _found(m, name) == (), name


def test_an_mbarrier_wait_with_nothing_that_arrives_is_said_once_per_line(mbarriers):
    (f,) = _found(mbarriers, "no_arrive")             # the retry loop's waits: one line, one finding
    assert f.kind == "mbarrier" and f.line == _line(MBARRIERS, "// WAIT no_arrive")
    assert f.instruction.startswith("SYNCS.PHASECHK")
    assert "nothing in this kernel arrives on an mbarrier or completes a transaction on one" in \
        f.message
    assert "only this kernel's code reaches" in f.message


@pytest.mark.parametrize("name", ARRIVING)
def test_every_arrive_form_the_compilers_make_counts(mbarriers, name):
    """mbarrier.arrive (plain, expect_tx, remote), complete_tx, cp.async.mbarrier.arrive, bulk
    copies and reductions, st.async / red.async, a TMA load, an arrive in a __noinline__
    function: each is the only one of its kernel, and the kernel's wait is not flagged."""
    r = mbarriers.result_of(name)
    assert "SYNCS.PHASECHK" in cuda_magic.inspect.sass(r, name)
    assert _found(mbarriers, name) == ()


PRINTF = PRELUDE + r"""
extern "C" __global__ void printf_no_arrive(int* out) {
    __shared__ __align__(8) unsigned long long bar;
    printf("block %d\n", blockIdx.x);
    WAIT(bar);                                            // WAIT printf_no_arrive
    out[threadIdx.x] = 1;
}
"""


@pytest.mark.parametrize("compiler", COMPILERS)
def test_a_call_out_of_the_kernel_reads_the_whole_module(compiler):
    """printf calls vprintf (outside the module: no mbarrier there); nothing in the module
    arrives, so the wait is said; with a kernel beside it that arrives (one the call could
    reach, for all the SASS says), nothing is."""
    m = build(PRINTF, {"arch": "sm_90a", "compiler": compiler})
    assert "CALL" in cuda_magic.inspect.sass(m.result_of("printf_no_arrive"), "printf_no_arrive")
    (f,) = _found(m, "printf_no_arrive")
    assert f.kind == "mbarrier" and f.line == _line(PRINTF, "// WAIT printf_no_arrive")
    beside = build(PRINTF + 'KERNEL(arrives, asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" '
                   ':: "r"(sa(&bar))))\n', {"arch": "sm_90a", "compiler": compiler})
    assert _found(beside, "printf_no_arrive") == ()


@pytest.mark.parametrize("compiler", COMPILERS)
def test_tcgen05_commit_counts_on_blackwell(compiler):
    src = PRELUDE + r"""
KERNEL(commit_wait, asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" :: "r"(sa(&bar))))
KERNEL(only_wait, (void)g)
"""
    m = build(src, {"arch": "sm_100a", "compiler": compiler})
    assert "UTCBAR" in cuda_magic.inspect.sass(m.result_of("commit_wait"), "commit_wait")
    assert _found(m, "commit_wait") == ()
    assert [f.kind for f in _found(m, "only_wait")] == ["mbarrier"]


# --- the corpus: nothing on correct kernels, the hang kernels as their comments say --------------

@pytest.mark.slow
@pytest.mark.parametrize("case, compiler", BUILDS)
def test_the_corpus_has_no_findings_but_the_divergent_sync(case, compiler):
    m = build_case(case, compiler)
    for name, k in m.python_names().items():
        found = deadlocks(m.result_of(name), k.symbol)
        if case.file != "hang_divergent_sync.cu":
            assert found == (), (case.file, name, [f.message for f in found])
            continue
        (f,) = found
        waits = {what: line for _, line, what in hang_waits(case)}
        assert f.kind == "barrier" and f.line == waits["__syncthreads"]
        assert f.condition_line == _line(case.text, "// warps 0-1 load the tile")
        assert f.sources == ("threadIdx.x",)


def test_the_hang_kernels_comments_name_their_waits():
    """Each // HANG: line names a line of the file that holds the wait it describes."""
    parity, divergent = (next(c for c in CASES if c.file == f)
                         for f in ("hang_parity.cu", "hang_divergent_sync.cu"))
    for case, expect in ((parity, ("try_wait", "try_wait")), (divergent, ("__syncthreads", "while"))):
        waits = hang_waits(case)
        assert len(waits) == 2 and case.hangs and case.run is None
        lines = case.text.split("\n")
        for (_, line, _), text in zip(waits, expect):
            assert text in lines[line - 1], (case.file, line)
    assert (KERNELS / "hang_parity.cu").exists()


# --- what cannot be decided says nothing: SASS as nvdisasm writes it ------------------------------

def _sass(*body: str) -> str:
    """A function's listing: one instruction or label per item, addresses every 16 bytes."""
    out, at = ["//--------------------- .text.k --------------------------", "k:"], 0
    for item in body:
        if item.endswith(":"):
            out.append(item)
        else:
            out.append(f"        /*{at:04x}*/                   {item} ;")
            at += 16
    return "\n".join(out) + "\n"


def _divergent(*between: str, tid: str = "SR_TID.X") -> str:
    """if (R5 < 64) { BAR } else { a store }; then a store and EXIT; ``between``: after S2R."""
    return _sass(f"S2R R5, {tid}", *between, "ISETP.GE.U32.AND P0, PT, R5, 0x40, PT",
                 "@!P0 BRA `(.L_x_1)", "STG.E desc[UR4][R2.64], R7", "BRA `(.L_x_2)",
                 ".L_x_1:", "BAR.SYNC.DEFER_BLOCKING 0x0", ".L_x_2:", "STG.E desc[UR4][R2.64], R5",
                 "EXIT", ".L_x_3:", "BRA `(.L_x_3)")


def test_the_trace_follows_registers_through_the_flow():
    assert [f[0] for f in check(_divergent())] == ["barrier"]
    assert check(_divergent("IADD3 R6, R5, 0x1, RZ", "MOV R5, R6"))[0][3] == ("threadIdx.x",)
    assert check(_divergent(tid="SR_LANEID"))[0][3] == ("the lane index",)
    assert check(_divergent(tid="SR_CTAID.X")) == []                     # uniform
    assert check(_divergent("S2R R5, SR_CTAID.X")) == []                 # the register reused
    assert check(_divergent("LDG.E R5, desc[UR4][R4.64]")) == []         # a loaded value
    assert check(_divergent("IMAD.WIDE R4, R9, 0x4, R2")) == []          # R5: high half, rewritten


def test_what_the_trace_cannot_follow_says_nothing():
    assert check(_divergent("FOOBAR R5, R6")) == []                      # an unknown instruction
    assert check(_divergent("CALL.ABS.NOINC R8")) == []                  # a call may write any
    assert check(_divergent("BRX R2 -0x10")) == []                       # an indirect branch
    spin = _divergent().replace("EXIT ;", "BRA `(.L_x_2) ;")            # never exits
    assert check(spin) == []


def test_an_early_exit_is_not_a_divergent_barrier():
    """if (tid >= 64) return;: threads that exit are not waited for; a side that does work
    first is a divergent barrier."""
    exits = _sass("S2R R5, SR_TID.X", "ISETP.GE.U32.AND P0, PT, R5, 0x40, PT",
                  "@P0 BRA `(.L_x_1)", "BAR.SYNC.DEFER_BLOCKING 0x0", "STG.E desc[UR4][R2.64], R5",
                  ".L_x_1:", "EXIT")
    assert check(exits) == []
    works = _sass("S2R R5, SR_TID.X", "ISETP.GE.U32.AND P0, PT, R5, 0x40, PT",
                  "@P0 BRA `(.L_x_1)", "BAR.SYNC.DEFER_BLOCKING 0x0", "STG.E desc[UR4][R2.64], R5",
                  "EXIT", ".L_x_1:", "STG.E desc[UR4][R2.64], R7", "EXIT")
    assert [f[0] for f in check(works)] == ["barrier"]
    predicated = _sass("S2R R5, SR_TID.X", "ISETP.GE.U32.AND P0, PT, R5, 0x40, PT", "@P0 EXIT",
                       "BAR.SYNC.DEFER_BLOCKING 0x0", "EXIT")
    assert check(predicated) == []


def test_barriers_with_a_thread_count_and_divergence_branches_say_nothing():
    assert check(_divergent().replace("BAR.SYNC.DEFER_BLOCKING 0x0", "BAR.SYNC.DEFER_BLOCKING 0x1, 0x80")) == []
    assert check(_divergent().replace("@!P0 BRA", "BRA.DIV UR6,")) == []
    assert check(_divergent().replace("BAR.SYNC.DEFER_BLOCKING 0x0", "BAR.ARV 0x1, 0x80")) == []


def test_an_mbarrier_wait_reads_calls_out_of_the_kernel_in_the_module():
    waits = _sass("SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R0", "EXIT")
    assert [f[0] for f in check(waits)] == ["mbarrier"]
    fenced = _sass("WARPGROUP.ARRIVE", "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R0", "EXIT")
    assert [f[0] for f in check(fenced)] == ["mbarrier"]      # wgmma.fence arrives on no mbarrier
    calls = _sass("CALL.ABS.NOINC `(helper)", "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R0", "EXIT")
    other = calls + "//--------------------- .text.helper --------------------------\nhelper:\n" \
        "        /*0000*/                   SYNCS.ARRIVE.TRANS64.A1T0 RZ, [UR4], RZ ;\n"
    assert check(calls, other) == []                  # the module arrives somewhere it may call
    assert [f[0] for f in check(calls, calls)] == ["mbarrier"]     # nothing arrives anywhere
    assert check(calls) == []                         # no module to read: nothing said


# --- the pipeline result and its views -----------------------------------------------------------

def test_the_pipeline_keeps_the_findings_and_warns_of_them(barriers):
    p = barriers.pipeline("divergent_sync")
    assert p.deadlocks == _found(barriers, "divergent_sync")
    assert f"divergent_sync: {p.deadlocks[0].message}" in p.warnings
    assert barriers.pipeline("block_sync").deadlocks == ()
    text = cuda_magic.display.view(barriers).part("pipeline", "divergent_sync")
    assert f"warning: divergent_sync: line {p.deadlocks[0].line}: __syncthreads() runs only" in text


def test_the_resources_tab_shows_the_warnings_alone_on_any_arch():
    src = (KERNELS / "hang_divergent_sync.cu").read_text()
    m = build(src, {"arch": "sm_80"})
    assert not pview.worth_showing(src, ["sm_80"])
    html = pview.resources_html(cuda_magic.display.view(m).content)
    assert "divergent_stage</b>: before the launch" in html and "<table" not in html
    assert "line 23: __syncthreads() runs only where a condition on threadIdx.x holds (line 20)" \
        in html
    clean = build('extern "C" __global__ void k(float* y) { __syncthreads(); y[0] = 1; }',
                  {"arch": "sm_80"})
    assert pview.resources_html(cuda_magic.display.view(clean).content) == ""
