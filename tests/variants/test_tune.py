"""Sweeps without a GPU: the space, what each parameter does, candidates compiled in parallel,
pruning with reasons, --compile-only, and the cell written back for the winner."""

import importlib
import pathlib

import numpy as np
import pytest

import cuda_magic
from cuda_magic.cell import CellError, parse_cell
from cuda_magic.variants import record
from cuda_magic.variants.space import (MAX_CANDIDATES, TuneError, classify, parse_space,
                                       recipe_of)
from cuda_magic.correctness.reference import differs
from cuda_magic.compile.arch import gpu_archs
from cuda_magic.runtime import driver
from cuda_magic.runtime.helper.program import Program
from cuda_magic.variants.candidates import Candidate, bench_job
from cuda_magic.variants.judge import Judge
from cuda_magic.variants.tune import tune
from cuda_magic.variants.writeback import write_back

from conftest import ARCH, HEAVY

tune_mod = importlib.import_module("cuda_magic.variants.tune")   # (.tune is also the function)

SGEMM = (pathlib.Path(__file__).parents[1] / "kernels" / "tune" / "tiled_sgemm.cu").read_text()

SCALE_T = r'''
#ifndef UNROLL
#define UNROLL 1
#endif
template <int BM>
__global__ void scale(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    #pragma unroll UNROLL
    for (int j = 0; j < BM; ++j) if (i * BM + j < n) y[i * BM + j] = a * x[i * BM + j];
}
'''

# the same without the template, and no macro in a #pragma unroll (nvcc expands none there)
PLAIN = SCALE_T.replace("template <int BM>", "#define BM 4").replace("#pragma unroll UNROLL",
                                                                    "y[0] = UNROLL;")


# ---- the space ---------------------------------------------------------------------------------

def test_space_text_forms():
    s = parse_space("BM=[64, 128] maxrreg=[none,128] block=range(64, 257, 64) T=[float,double] "
                    "ftz=[true,false] -DTILE=8")
    assert s == {"BM": (64, 128), "maxrreg": (None, 128), "block": (64, 128, 192, 256),
                 "T": ("float", "double"), "ftz": (True, False), "-DTILE": (8,)}
    assert parse_space({"BM": [64], "flags": ["-lineinfo", None]}) == \
        {"BM": (64,), "flags": ("-lineinfo", None)}


@pytest.mark.parametrize("spec, words", [
    ("BM=[]", ["'BM'", "no values"]),
    ("BM=[64", ["'BM'", "unclosed"]),
    ("BM=[64] BM=[128]", ["'BM'", "twice"]),
    ("BM=[64, 64]", ["'BM'", "twice"]),
    ("BM=[[1, 2]]", ["'BM'", "flat list"]),
    ("BM=[{a: 1}]", ["'BM'", "flat list"]),
    ("9x=[1]", ["NAME=[v1, v2, ...]"]),
    ("BM", ["NAME=[v1, v2, ...]"]),
    ("BM=range(a, b)", ["'BM'", "range(start, stop"]),
    ("BM=[1, .inf]", ["'BM'"]),
    ("A=range(100) B=range(100)", ["10000 combinations", f"at most {MAX_CANDIDATES}"]),
])
def test_bad_spaces_name_the_parameter(spec, words):
    with pytest.raises(TuneError) as info:
        parse_space(spec)
    text = str(info.value)
    for w in words:
        assert w in text, text
    assert len(text) < 300


def test_kinds_follow_the_cell():
    parsed = parse_cell(SCALE_T)
    kinds = {p.name: p.kind for p in classify(parse_space(
        "BM=[32] UNROLL=[1] block=[128] maxrreg=[none] other=[1] -Dunused=[1] fast_math=[true]"),
        parsed)}
    assert kinds == {"BM": "template", "UNROLL": "macro", "block": "launch", "maxrreg": "flag",
                     "other": "launch", "unused": "macro", "fast_math": "flag"}


@pytest.mark.parametrize("spec, words", [
    ("maxrreg=[8]", ["'maxrreg'", "16 to 255"]),
    ("ftz=[1]", ["'ftz'", "true, false or none"]),
    ("BM=[none]", ["'BM'", "template argument"]),
])
def test_bad_values_for_their_kind(spec, words):
    with pytest.raises(TuneError) as info:
        classify(parse_space(spec), parse_cell(SCALE_T))
    for w in words:
        assert w in str(info.value)


def test_recipe_flags_toggles_and_instances():
    parsed = parse_cell(SGEMM)
    params = classify(parse_space("BM=[64] BN=[32] TM=[4] TN=[4] BK=[16] maxrreg=[96] ftz=[false] "
                                  "block=[1]"), parsed)
    r = recipe_of(params, {p.name: p.values[0] for p in params}, parsed)
    assert r.instances == ("sgemm<64, 32, 4, 4>",)
    assert r.flags == ("-DBK=16", "--maxrregcount=96")
    assert r.toggles == (("ftz", False),)
    assert r.layer == "tune:BM=64,BN=32,TM=4,TN=4,BK=16,maxrreg=96,ftz=false"
    # a template parameter left out with no default is named
    params = classify(parse_space("BM=[64]"), parsed)
    with pytest.raises(TuneError, match="'BN' is not in the space"):
        recipe_of(params, {"BM": 64}, parsed)


def test_tune_header_belongs_to_the_cell_header():
    p = parse_cell("//| arch: sm_90a\n//| tune: {BM: [1, 2]}\n__global__ void k(int* x) { }\n")
    assert p.tune == {"BM": [1, 2]} and p.header == {"arch": "sm_90a"}
    with pytest.raises(CellError, match="cell header"):
        parse_cell("//| tune: {BM: [1]}\n__global__ void k(int* x) { }\n"
                   "//| tune: {X: [1]}\n__global__ void j(int* x) { }\n")
    # %%cuda builds a cell with a tune: header as written
    m = cuda_magic.build("//| tune: {UNROLL: [1, 4]}\n" + SCALE_T.replace("template <int BM>", "")
                         .replace("BM", "4"), {"arch": ARCH})
    assert "scale" in m.kernels


# ---- compiling, pruning --------------------------------------------------------------------------

def test_compile_only_every_candidate_with_provenance():
    t = tune(SCALE_T, "BM=[16, 32] UNROLL=[1, 4] block=[128, 256]", arch=ARCH, compile_only=True)
    assert len(t.candidates) == 8 and t.counts == {"compiled": 8}
    builds = {id(c.module) for c in t.candidates}
    assert len(builds) == 4            # block is launch-only: no build of its own
    c = t.candidates[-1]
    assert c.params == {"BM": 32, "UNROLL": 4, "block": 256}
    config = c.module.config_of("scale<32>")
    assert config.provenance["nvrtc"] == "default + tune:BM=32,UNROLL=4"
    assert config["nvrtc"][-1] == "-DUNROLL=4"
    assert c.registers and c.spill_bytes == 0 and c.occupancy == 1.0
    rows = t.rows()
    assert len(rows) == 8
    assert t.winner is None and t.cell is None
    assert "Tuning 8 candidates" in repr(t)


def test_where_filters_and_says_so():
    t = tune(SCALE_T, "BM=[16, 32, 64] block=[64, 128]", arch=ARCH, compile_only=True,
             where="BM * block <= 2048")
    assert [c.params for c in t.candidates] == [{"BM": 16, "block": 64}, {"BM": 16, "block": 128},
                                                {"BM": 32, "block": 64}]
    assert any("3 of 6 combinations" in n for n in t.notes)
    with pytest.raises(TuneError, match="keeps none"):
        tune(SCALE_T, "BM=[16]", arch=ARCH, compile_only=True, where="BM > 100")
    with pytest.raises(TuneError, match="--where"):
        tune(SCALE_T, "BM=[16]", arch=ARCH, compile_only=True, where="BM >")
    with pytest.raises(TuneError, match="NameError"):
        tune(SCALE_T, "BM=[16]", arch=ARCH, compile_only=True, where="nope > 1")


def test_pruned_for_spills_occupancy_and_failed_compiles():
    src = HEAVY + SCALE_T.replace("#pragma unroll UNROLL", "#if UNROLL == 3\n#error three\n#endif")
    t = tune(src, "maxrreg=[none, 24] UNROLL=[1, 3] block=[1024]", arch=ARCH, compile_only=True,
             min_occupancy=0.9, instantiate=["scale<4>"])
    by = {(c.params["maxrreg"], c.params["UNROLL"]): c for c in t.candidates}
    assert by[(None, 3)].status == "failed" and "three" in by[(None, 3)].reason
    assert by[(24, 1)].status == "pruned" and by[(24, 1)].reason.startswith("spills")
    # heavy at 1024 threads with ~100 registers: a lower occupancy than asked for
    assert by[(None, 1)].status == "pruned" and "occupancy" in by[(None, 1)].reason
    assert "%" in by[(None, 1)].reason and "registers" in by[(None, 1)].reason
    kept = tune(src, "maxrreg=[24] UNROLL=[1]", arch=ARCH, compile_only=True, keep_spills=True,
                instantiate=["scale<4>"])
    assert kept.candidates[0].status == "compiled" and kept.candidates[0].spill_bytes > 0


BOUNDED = SCALE_T.replace("__global__ void", "__global__ void __launch_bounds__(32 * BM)").replace(
    "#pragma unroll UNROLL", "")      # nvcc expands no macro in a #pragma unroll


def test_compile_only_occupancy_without_a_block_in_the_space():
    # no block, no --run: at the default block (as Module.occupancy), and said so
    t = tune(SCALE_T, "BM=[1, 8] UNROLL=[1, 4]", arch=ARCH, compile_only=True)
    assert all(c.occupancy == 1.0 and (c.occupancy_block, c.occupancy_from) == (256, "default")
               for c in t.candidates)
    assert [c.row()["occupancy"] for c in t.candidates] == [1.0] * 4
    # __launch_bounds__ from each instance's binary (a template argument in it), NVRTC and nvcc
    for config in (None, {"compiler": "nvcc"}):
        t = tune(BOUNDED, "BM=[1, 4]", arch=ARCH, compile_only=True, config=config)
        assert [(c.occupancy_block, c.occupancy_from) for c in t.candidates] == \
            [(32, "bounds"), (128, "bounds")]
        assert [c.occupancy for c in t.candidates] == [0.5, 1.0]    # 32 blocks x 1 warp of 64
        assert t.candidates[0].limiter == "blocks"
    # the space's block and --run's launch come first
    t = tune(BOUNDED, "BM=[4] block=[64]", arch=ARCH, compile_only=True)
    assert (t.candidates[0].occupancy_block, t.candidates[0].occupancy_from) == (64, "block")
    x = np.ones(8, np.float32)
    t = tune(BOUNDED, "BM=[4]", "scale[1, 96](x, x, 2.0, 8)", arch=ARCH, compile_only=True,
             namespace={"x": x})
    assert (t.candidates[0].occupancy_block, t.candidates[0].occupancy_from) == (96, "launch")
    # pruned at the default block: the reason says at which
    t = tune(HEAVY, "maxrreg=[none]", arch=ARCH, compile_only=True, min_occupancy=0.99)
    assert t.candidates[0].status == "pruned"
    assert t.candidates[0].reason.endswith(", at block 256)"), t.candidates[0].reason


def test_a_failed_build_keeps_its_log_and_error():
    broken = SCALE_T.replace("int i = blockIdx.x * blockDim.x + threadIdx.x;",
                             "int i = blockIdx.x * blockDim.x + threadIdx.x")
    t = tune(broken, "BM=[1, 4] UNROLL=[1, 2]", arch=ARCH, compile_only=True)
    assert t.counts == {"failed": 4}
    for c in t.candidates:
        assert isinstance(c.error, cuda_magic.CompileError) and c.error.__traceback__ is None
        assert 'error: expected a ";"' in c.log and c.log == c.error.log
        assert "     9 |     for (int j" in str(c.error)   # the cell line it points at
    assert len({c.failure for c in t.candidates}) == 1    # one way, whatever the values
    ok = tune(SCALE_T, "BM=[4]", arch=ARCH, compile_only=True, force=True)
    c = ok.candidates[0]
    assert c.failure is None and c.error is None and c.log == c.module.result.log.strip("\n")
    assert "Used" in c.log and "registers" in c.log        # ptxas -v
    # a launch error that names the candidate's values is still one way
    x = np.ones(8, np.float32)
    t = tune(SCALE_T, "BM=[1, 4]", "scale[1, 128](x, nope, 2.0, 8)", arch=ARCH,
             namespace={"x": x})
    assert [c.status for c in t.candidates] == ["error", "error"]
    assert "failed for BM=1" in t.candidates[0].reason and "failed for BM=4" in t.candidates[1].reason
    assert t.candidates[0].failure == t.candidates[1].failure


def test_compile_only_progress_says_none_benched():
    from cuda_magic.compile import parallel
    said = []
    with parallel.progress(lambda what, seconds: said.append(what)):
        t = tune(SCALE_T, "BM=[2, 3] UNROLL=[1, 3]", arch=ARCH, compile_only=True, force=True)
    assert t.stopped == "compile-only" and said
    assert all(w.endswith("builds compiled (compile-only: none benched)") for w in said), said
    assert tune(SCALE_T, "BM=[2]", arch=ARCH).stopped == "no --run"


def test_run_is_recorded_without_a_gpu():
    x = np.ones(1000, np.float32)
    y = np.zeros_like(x)
    n = 1000
    t = tune(SCALE_T, "BM=[4, 8] block=[128, 1024]", "scale[cdiv(n, BM * block), block](x, y, 2.0, n)",
             arch=ARCH, min_occupancy=0.6)
    # the occupancy is the launch's: block 1024 of a small kernel still fits, and nothing ran
    assert {c.status for c in t.candidates} <= {"compiled", "pruned"}
    c = t.candidates[0]
    assert c.launches[0][2] == (1, 1, 1, 128, 1, 1) or c.launches[0][2][3] == 128
    if cuda_magic.detect_arch() is None:
        assert any("no GPU" in n for n in t.notes)
    # a --run that fails while recording is that candidate's error, named
    bad = tune(SCALE_T, "BM=[4]", "scale[nope, 128](x, y, 2.0, n)", arch=ARCH)
    assert bad.candidates[0].status == "error" and "NameError" in bad.candidates[0].reason
    wrong_count = tune(SCALE_T, "BM=[4]", "scale[1, 128](x, y)", arch=ARCH)
    assert "takes 4 arguments" in wrong_count.candidates[0].reason


def test_bad_options_are_named():
    for kw, word in [({"min_occupancy": 2}, "min_occupancy"), ({"rtol": -1}, "rtol"),
                     ({"timeout": 0}, "timeout"), ({"group": "nope"}, "group"),
                     ({"repeat": 0}, "repeat")]:
        with pytest.raises(cuda_magic.Error, match=word):
            tune(SCALE_T, "BM=[4]", arch=ARCH, compile_only=True, **kw)
    with pytest.raises(TuneError, match="no space"):
        tune(SCALE_T, arch=ARCH)
    with pytest.raises(TuneError, match="one arch"):
        tune(SCALE_T, "BM=[4]", arch="sm_80,sm_90a", compile_only=True)
    with pytest.raises(TuneError, match=r"//\| tune: .*'BM'"):
        tune("//| tune: {BM: []}\n" + SCALE_T, arch=ARCH, compile_only=True)


def test_header_space_and_nvcc():
    t = tune(SGEMM, arch=ARCH, compile_only=True, where="BM == 64 and BN == 64")
    assert [c.params for c in t.candidates] == [{"BM": 64, "BN": 64, "TM": 4, "TN": 4},
                                                {"BM": 64, "BN": 64, "TM": 8, "TN": 4}]
    nvcc = {"compiler": "nvcc", "target_format": "cubin"}
    # template arguments and --instantiate work under nvcc too (lines appended after the cell)
    t = tune(SGEMM, arch=ARCH, compile_only=True, config=nvcc, where="BM == 64 and BN == 64")
    assert [c.status for c in t.candidates] == ["compiled", "compiled"]
    assert all(c.module.result.compiler == "nvcc" for c in t.candidates)
    t = tune(SCALE_T.replace("#pragma unroll UNROLL", "y[0] = UNROLL;"), "UNROLL=[1, 2]", arch=ARCH,
             compile_only=True, config=nvcc, instantiate=["scale<4>"])
    assert all(c.status == "compiled" and list(c.module.bindings) == ["scale_4"]
               for c in t.candidates)
    t = tune(PLAIN, "UNROLL=[1, 2]", arch=ARCH, compile_only=True, config=nvcc)
    assert all(c.status == "compiled" and c.module.result.compiler == "nvcc" for c in t.candidates)


# ---- checking outputs ----------------------------------------------------------------------------

def test_differs_tolerates_order_not_errors():
    ref = np.linspace(-1, 1, 1000, dtype=np.float32)
    assert differs("y", ref * (1 + 1e-6), ref, None, None) is None
    why = differs("y", np.where(np.arange(1000) == 7, 5.0, ref).astype(np.float32), ref, None, None)
    assert why.startswith("wrong: y: 1 of 1000 elements outside the rule") and "y[7]" in why
    assert differs("i", np.arange(4), np.arange(4), None, None) is None
    assert "shape" in differs("i", np.arange(4), np.arange(5), None, None)
    assert differs("n", np.array([np.nan, 1.0]), np.array([np.nan, 1.0]), None, None) is None


# ---- write-back ---------------------------------------------------------------------------------

def _winner(t, i=-1) -> Candidate:
    return t.candidates[i]


def _rebuilt(text: str):
    line, _, body = text.partition("\n")
    assert line.startswith("%%cuda ")
    import shlex
    words = shlex.split(line)[1:]
    opts, inst = {}, []
    it = iter(words)
    for w in it:
        v = next(it)
        if w == "--instantiate":
            inst.append(v)
        else:
            opts[w[2:]] = v
    layer = cuda_magic.line_config(arch=opts.get("arch"), compiler=opts.get("compiler"),
                                   target_format=opts.get("target-format"), nvrtc=opts.get("nvrtc"),
                                   nvcc=opts.get("nvcc"), nvrtc_append=opts.get("nvrtc+"))
    return cuda_magic.build(body, layer, instantiate=inst)


@pytest.mark.parametrize("cell, line, space", [
    (SCALE_T, {}, "BM=[8] UNROLL=[4] maxrreg=[64] block=[256]"),
    ("//| nvrtc: [--use_fast_math, -lineinfo]\n" + SCALE_T, {}, "BM=[8] UNROLL=[2]"),
    ("//| nvrtc+: [-lineinfo]\n//| tune: {BM: [8], UNROLL: [2]}\n" + SCALE_T, {}, None),
    (SCALE_T, {"nvrtc": ["-lineinfo"]}, "BM=[8] UNROLL=[2]"),
    (SCALE_T, {"nvrtc+": ["-lineinfo"]}, "BM=[8] UNROLL=[2]"),
    (SCALE_T, {}, "BM=[8] ftz=[false] fast_math=[true]"),
    ("//| nvrtc: [-lineinfo]\n" + SCALE_T, {}, "BM=[8] prec_div=[false] UNROLL=[3]"),
    (SCALE_T.replace("template <int BM>", "//| nvrtc: [--use_fast_math, -DX=1]\ntemplate <int BM>"),
     {}, "BM=[8] UNROLL=[2]"),
    (PLAIN, {"compiler": "nvcc", "target_format": "cubin"}, "UNROLL=[2] flags=['-lineinfo -O3']"),
])
def test_write_back_reproduces_the_argv(cell, line, space):
    layer = {"arch": ARCH, **line}
    t = tune(cell, space, compile_only=True, options=cuda_magic.line_config(**_line_kwargs(layer)))
    c = _winner(t)
    assert c.status == "compiled", c.reason
    text = write_back(cell, t.options, None, c, {"block": 256})
    assert "tune:" not in text.split("\n", 1)[1].split("template")[0]
    m = _rebuilt(text)
    kernel = next(iter(m.kernels))
    mine, theirs = m.result_of(kernel), c.module.result_of(kernel)
    assert mine.config.config == theirs.config.config, text
    if mine.compiler == "nvrtc":        # nvcc's argv names its private temporary directory
        assert mine.argv == theirs.argv, text
    assert "// tuned launch: block=256" in text


def _line_kwargs(layer):
    out = {}
    for k, v in layer.items():
        key = {"nvrtc+": "nvrtc_append", "nvcc+": "nvcc_append"}.get(k, k)
        out[key] = v if isinstance(v, str) else " ".join(v)
    return out


def test_tuning_cell_and_header_for_a_winner():
    t = tune(SCALE_T, "BM=[8] UNROLL=[4] block=[256]", arch=ARCH, compile_only=True)
    c = t.candidates[0]
    c.status, c.time_ms = "ok", 0.5
    t2 = tune_mod.Tuning(t.source, t.parameters, t.candidates, t.options, None, (), "", [], {})
    assert t2.winner is c and c.status == "winner"
    assert t2.launch == {"block": 256}
    assert t2.cell.startswith("%%cuda --arch sm_90a --instantiate 'scale<8>'\n")
    assert "//| nvrtc+: [-DUNROLL=4]" in t2.cell
    assert t2.header.splitlines()[0].startswith("%%cuda") and "template" not in t2.header
    assert set(t2.kernels) >= {"scale", "scale_8"}


def test_hostile_values_fail_their_candidate_not_the_sweep():
    t = tune(PLAIN, "flags=['-arch=sm_80', '-lineinfo'] UNROLL=['1 /* x */', 2]", arch=ARCH,
             compile_only=True)
    by = {(c.params["flags"], c.params["UNROLL"]): c for c in t.candidates}
    bad = by[("-arch=sm_80", 2)]
    assert bad.status == "failed" and "reserved" in bad.reason and "'arch'" in bad.reason
    assert by[("-lineinfo", "1 /* x */")].status == "compiled"      # a macro value as written
    with pytest.raises(TuneError, match="20000"):
        tune(PLAIN, "X=[" + "1," * 20000 + "1]", arch=ARCH, compile_only=True)
    with pytest.raises(TuneError, match="'UNROLL'.*printable"):
        tune(PLAIN, {"UNROLL": ["1\n#include </etc/passwd>"]}, arch=ARCH, compile_only=True)


def test_ctrl_c_gives_up_the_builds(monkeypatch, ctrl_c):
    import os
    import signal
    import threading
    import time
    from cuda_magic.compile import parallel
    seen, ran_out = threading.Event(), threading.Event()

    def slow(*args):
        end = time.monotonic() + 10
        while time.monotonic() < end:
            if parallel.cancelled():      # what nvcc's wait checks: its process group is killed
                seen.set()
                return None, "cancelled"
            time.sleep(0.02)
        ran_out.set()
        return None, "not cancelled"
    monkeypatch.setattr(tune_mod, "_build", slow)
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        tune(PLAIN, "UNROLL=[1, 2, 3]", arch=ARCH, compile_only=True)
    assert not ran_out.is_set()         # the wait ended on the interrupt, not on the builds
    assert seen.wait(10) and not ran_out.is_set()


# ---- the jobs and the judge, without a GPU ---------------------------------------------------------

def _recorded(x, y, n):
    t = tune(SCALE_T, "BM=[4, 8] block=[128]", "scale[cdiv(n, BM * block), block](x, y, 2.0, n)",
             arch=ARCH, compile_only=True, namespace={"x": x, "y": y, "n": n})
    return t, record.Runs(("scale[cdiv(n, BM * block), block](x, y, 2.0, n)",),
                             {"x": x, "y": y, "n": n})


def test_a_job_is_plain_data_with_the_exact_binary():
    import pickle
    from cuda_magic.runtime.measure import bench
    x = np.arange(1000, dtype=np.float32)
    y = np.zeros_like(x)
    t, runs = _recorded(x, y, 1000)
    c = t.candidates[1]
    assert c.launches[0][2] == (1, 1, 1, 128, 1, 1)        # cdiv(1000, 8 * 128) blocks
    job = bench_job(c, runs, bench.options(repeat=5), 30.0)
    assert job.program.binary == bytes(c.module.result_of("scale<8>").binary)
    assert job.program.key.startswith("sweep:")
    assert job.program.kernels["scale"].symbol == c.module["scale<8>"].symbol
    (launch,) = job.launches
    assert launch.args == (("array", "x"), ("array", "y"), ("value", 2.0), ("value", 1000))
    assert job.outputs == ("y",) and job.arrays == {}       # x and y go to the helpers once
    assert set(runs.arrays) == {"x", "y"} and runs.arrays["x"] is x   # no copy of a NumPy array
    again = pickle.loads(pickle.dumps(job))                  # what crosses to a helper or a worker
    assert again.program.binary == job.program.binary and again.launches == job.launches


_EMPTY = Program("sweep:none", b"", "cubin", ARCH)


def _outcome(i, status="ok", ms=1.0, outputs=None, checked=False, wrong=None):
    from cuda_magic.runtime import sweep
    from cuda_magic.runtime.measure.bench import Timing
    timings = (Timing.from_samples([ms] * 5),) if status == "ok" else ()
    return sweep.Outcome(i, status, "boom" if status != "ok" else "", "CUDA_ERROR_X" if
                         status == "fault" else "", outputs or {}, timings, "GPU 0 (test)",
                         checked=checked, wrong=wrong)


class _Pool:
    def __init__(self):
        self.told, self.formats = [], []

    def set_reference(self, arrays, rtol, atol, formats=None):
        self.told.append(dict(arrays))
        self.formats.append(dict(formats or {}))


def test_the_judge_takes_the_lowest_index_that_ran_as_reference():
    from cuda_magic.runtime import sweep
    t = tune(SCALE_T, "BM=[1, 2, 4, 8]", arch=ARCH, compile_only=True)
    cands = t.candidates
    pool = _Pool()
    judge = Judge(cands, None, None, None, pool)
    job = sweep.Job(0, _EMPTY, (), ("y",))
    for c in cands:
        judge.expect(c, job)
    right = np.linspace(0, 1, 100, dtype=np.float32)
    # candidate 2 finishes first: no reference yet (0 and 1 may still be it)
    judge.add(cands[2], _outcome(2, outputs={"y": right * 1.0000001}))
    judge.settle()
    assert pool.told == [] and cands[2].status == "ok" and judge.pending
    judge.add(cands[0], _outcome(0, "fault"))
    judge.add(cands[1], _outcome(1, ms=0.5, outputs={"y": right}))
    judge.settle()
    assert cands[0].status == "fault" and "CUDA_ERROR_X" in cands[0].reason
    assert cands[1].reason.startswith("the reference") and pool.told and judge.pending == []
    assert cands[2].status == "ok"                  # within tolerance of the reference
    # a helper that had the reference sends a verdict only
    judge.add(cands[3], _outcome(3, ms=0.1, checked=True, wrong="y differs at 3 of 100 elements"))
    judge.settle()
    assert cands[3].status == "wrong" and cands[3].reason.startswith("y differs")
    final = tune_mod.Tuning(t.source, t.parameters, cands, t.options, None, (), "", [], {})
    assert final.winner is cands[1]                 # the fastest right one, not the wrong 0.1 ms


def test_a_given_reference_judges_the_first_candidate_too():
    from cuda_magic.runtime import sweep
    t = tune(SCALE_T, "BM=[1, 2]", arch=ARCH, compile_only=True)
    pool = _Pool()
    right = np.ones(10, np.float32)
    judge = Judge(t.candidates, {"": right}, None, None, pool)
    for c in t.candidates:
        judge.expect(c, sweep.Job(c.index, _EMPTY, (), ("y",)))
    assert pool.told and set(pool.told[0]) == {"y"}   # one array given: the one output
    judge.add(t.candidates[0], _outcome(0, outputs={"y": right * 2}))
    judge.add(t.candidates[1], _outcome(1, outputs={"y": right}))
    judge.settle()
    assert [c.status for c in t.candidates] == ["wrong", "ok"]


def test_a_bf16_output_is_judged_as_bfloat16_not_as_its_bits():
    """--rtol means what it means to %%cuda_compare and k.verify: an output a ``__nv_bfloat16*``
    parameter wrote (its bits, as a bf16 tensor comes back: int16) one ULP from the reference
    is right under rtol=1e-2, one far from it wrong; the helpers are told the format too."""
    from cuda_magic.correctness.formats import to_bits
    from cuda_magic.runtime import sweep
    from cuda_magic.runtime.helper.program import Entry
    from cuda_magic.runtime.launch.params import Param
    program = Program("sweep:bf16", b"", "cubin", ARCH, {"k": Entry("k", (
        Param("y", "__nv_bfloat16", 1), Param("n", "int")))})
    launch = sweep.Launch("k", (1, 1, 1, 64, 1, 1), 0, (("array", "y"), ("value", 64)))
    right = to_bits(np.linspace(-3, 3, 64), "bfloat16").view(np.int16)
    far = right.copy()
    far[7] += 300
    for given in (None, {"y": right}):
        t = tune(SCALE_T, "BM=[1, 2, 4]", arch=ARCH, compile_only=True)
        pool = _Pool()
        judge = Judge(t.candidates, given, 1e-2, None, pool)
        for c in t.candidates:
            judge.expect(c, sweep.Job(c.index, program, (launch,), ("y",)))
        assert judge.formats == {"y": "bfloat16"}
        for c, y in zip(t.candidates, (right, right + 1, far)):
            judge.add(c, _outcome(c.index, outputs={"y": y}))
        judge.settle()
        assert [c.status for c in t.candidates] == ["ok", "ok", "wrong"], given
        assert pool.formats == [{"y": "bfloat16"}]


def test_every_output_array_is_checked_not_only_the_first():
    """Two outputs, the second one wrong: wrong, whether the reference is the first candidate's
    outputs, one given by the user, or the helpers' own check (``outputs.first_difference``)."""
    from cuda_magic.correctness import reference as outputs
    from cuda_magic.runtime import sweep
    right = {"y": np.ones(10, np.float32), "z": np.arange(10, dtype=np.int32)}
    bad_z = {"y": right["y"].copy(), "z": right["z"] + 1}
    refs = outputs.references(right)
    assert outputs.first_difference(right, refs) is None
    assert (outputs.first_difference(bad_z, refs) or "").startswith("wrong: z: ")
    assert (outputs.first_difference({"y": right["y"] * 3, "z": right["z"]}, refs) or "").startswith("wrong: y: ")
    assert outputs.first_difference({"y": right["y"]}, refs) is None      # z not written: not judged
    for given in (None, right):
        t = tune(SCALE_T, "BM=[1, 2, 4]", arch=ARCH, compile_only=True)
        judge = Judge(t.candidates, given, None, None, _Pool())
        for c in t.candidates:
            judge.expect(c, sweep.Job(c.index, _EMPTY, (), ("y", "z")))
        judge.add(t.candidates[0], _outcome(0, outputs=dict(right)))
        judge.add(t.candidates[1], _outcome(1, outputs=bad_z))
        judge.add(t.candidates[2], _outcome(2, outputs={"y": right["y"], "z": right["z"]}))
        judge.settle()
        assert [c.status for c in t.candidates] == ["ok", "wrong", "ok"], given
        assert t.candidates[1].reason.startswith("wrong: z: "), t.candidates[1].reason


def test_a_helper_process_starts_and_names_its_gpu_or_says_there_is_none():
    from cuda_magic.runtime import sweep
    h = sweep.Helper(None).start()
    try:
        if cuda_magic.detect_arch() is None:
            with pytest.raises(sweep.SweepError, match="has no GPU"):
                h.share("t", {})
        else:
            h.share("t", {"x": np.ones(4, np.float32)})
            assert h.label.startswith("GPU ")
    finally:
        h.close()
    assert h.proc is None


# --- Sweeps on GPUs (marked gpu): a real SGEMM sweep picks a faster candidate than the worst,
# wrong outputs and faults are recorded while the sweep goes on, a hung candidate is ended;
# every GPU of the host, and a Dask cluster (dask-cuda's LocalCUDACluster) when there are two.

RUN = "sgemm[(cdiv(N, BN), cdiv(M, BM)), (BM // TM) * (BN // TN)](a, b, c, M, N, K)"


@pytest.fixture(scope="module")
def gemm():
    if cuda_magic.detect_arch() is None:
        pytest.skip("needs a GPU")
    M = N = K = 768
    rng = np.random.default_rng(1)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    return {"a": a, "b": b, "c": np.zeros((M, N), np.float32), "M": M, "N": N, "K": K}


@pytest.mark.gpu
def test_sweep_picks_a_faster_candidate_and_binds_it(gemm):
    t = tune(SGEMM, run=RUN, namespace=gemm, repeat=20, flops=2 * 768 ** 3)
    times = [c.time_ms for c in t.candidates if c.time_ms]
    assert len(times) == 18 and t.counts.get("winner") == 1, t.counts
    assert max(times) / t.winner.time_ms > 1.2, times
    assert t.winner.tflops and t.winner.gpu.startswith("GPU ")
    ref = gemm["a"] @ gemm["b"]
    first = [c for c in t.candidates if c.reason.startswith("the reference")]
    assert len(first) == 1 and np.allclose(first[0].outcome.outputs["c"], ref, rtol=1e-3, atol=1e-2)
    # the others were checked in their helper process against it: only the verdict came back
    assert sum(c.outcome is not None and c.outcome.checked for c in t.candidates) >= 10
    assert not gemm["c"].any()             # the caller's array is untouched
    # the winner's kernels, under --run's names, launch here with the same numbers
    c = np.zeros_like(gemm["c"])
    ns = {**gemm, **t.winner.params, "c": c, **t.kernels,
          "cdiv": lambda x, y: -(-x // y)}
    exec(RUN, ns)
    assert np.allclose(c, ref, rtol=1e-3, atol=1e-2)
    assert t.cell.startswith("%%cuda ") and "--instantiate 'sgemm<" in t.cell


@pytest.mark.gpu
def test_wrong_and_faulting_candidates_do_not_stop_the_sweep(gemm):
    t = tune(SGEMM, "BM=[64] BN=[64] TM=[4] TN=[4] FAULT=[0, 1] WRONG=[0, 1]", RUN,
             namespace=gemm, repeat=5)
    status = {(c.params["FAULT"], c.params["WRONG"]): c for c in t.candidates}
    assert status[(0, 0)].status == "winner"
    assert status[(0, 1)].status == "wrong" and "elements outside the rule" in status[(0, 1)].reason
    assert status[(1, 0)].status == "fault" and "ILLEGAL_ADDRESS" in status[(1, 0)].reason
    assert status[(1, 1)].status == "fault"
    assert driver.lost() is None        # the faults ended helpers, not this process's CUDA
    # a reference given by the caller judges every candidate, the first one too
    t = tune(SGEMM, "BM=[64] BN=[64] TM=[4] TN=[4] WRONG=[1, 0]", RUN, namespace=gemm, repeat=5,
             reference={"c": gemm["a"] @ gemm["b"]})
    assert [c.status for c in t.candidates] == ["wrong", "winner"]


@pytest.mark.gpu
def test_a_hung_candidate_times_out_and_the_next_runs():
    src = r'''
    #ifndef SPIN
    #define SPIN 0
    #endif
    extern "C" __global__ void k(float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (SPIN) { long long t0 = clock64(); while (clock64() - t0 < (1LL << 62)) { } }
        if (i < n) y[i] = 2.0f * i;
    }
    '''
    y = np.zeros(1024, np.float32)
    n = 1024
    t = tune(src, "SPIN=[1, 0] block=[128]", "k[cdiv(n, block), block](y, n)", timeout=8, repeat=5)
    assert t.candidates[0].status == "timeout" and "8 s" in t.candidates[0].reason
    assert t.candidates[1].status == "winner"
    assert np.array_equal(t.candidates[1].outcome.outputs["y"], 2.0 * np.arange(1024, dtype=np.float32))


@pytest.mark.gpu
def test_device_arrays_and_launch_only_parameters():
    cupy = pytest.importorskip("cupy")
    src = r'''
    extern "C" __global__ void saxpy(const float* x, float* y, float a, int n) {
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
            y[i] = a * x[i] + y[i];
    }
    '''
    n = 1 << 20
    x = cupy.arange(n, dtype=cupy.float32)
    y = cupy.ones(n, dtype=cupy.float32)
    t = tune(src, "block=[128, 256, 512] blocks=[132, 264]", "saxpy[blocks, block](x, y, 2.0, n)",
             repeat=10, nbytes=3 * 4 * n)
    assert len(t.candidates) == 6 and all(c.status in ("ok", "winner") for c in t.candidates)
    assert len({id(c.module) for c in t.candidates}) == 1       # launch-only: one build
    out = next(c for c in t.candidates if c.outcome.outputs).outcome.outputs["y"]
    assert np.allclose(out, 2.0 * np.arange(n, dtype=np.float32) + 1.0)
    assert float(y[5].get()) == 1.0 and t.winner.gbps > 100


@pytest.mark.gpu
def test_every_gpu_of_the_host(gemm):
    if len(gpu_archs()) < 2:
        pytest.skip("needs two GPUs")
    t = tune(SGEMM, run=RUN, namespace=gemm, repeat=10)
    used = {c.gpu.split(" (")[0] for c in t.candidates if c.gpu}
    assert used == {"GPU 0", "GPU 1"}, used
    assert t.pool == "2 GPUs of this host" and t.counts.get("winner") == 1


@pytest.mark.gpu
def test_dask_local_cuda_cluster(gemm):
    if len(gpu_archs()) < 2:
        pytest.skip("needs two GPUs")
    dask_cuda = pytest.importorskip("dask_cuda")
    distributed = pytest.importorskip("distributed")
    with dask_cuda.LocalCUDACluster(n_workers=2) as cluster, distributed.Client(cluster) as client:
        t = tune(SGEMM, "BM=[64, 128] BN=[64] TM=[4, 8] TN=[4] FAULT=[0, 1]", RUN,
                 namespace=gemm, repeat=10, client=client)
        assert t.pool == "Dask, 2 workers"
        ran = [c for c in t.candidates if c.params["FAULT"] == 0]
        assert all(c.status in ("ok", "winner") for c in ran), [c.reason for c in ran]
        assert all(c.status == "fault" for c in t.candidates if c.params["FAULT"] == 1)
        workers = {c.gpu.split(" GPU")[0] for c in t.candidates if c.gpu}
        assert len(workers) == 2 and all(w.startswith("tcp://") for w in workers), workers
        first = next(c for c in t.candidates if c.outcome is not None and c.outcome.outputs)
        assert np.allclose(first.outcome.outputs["c"], gemm["a"] @ gemm["b"], rtol=1e-3, atol=1e-2)
        assert any(c.outcome.checked for c in t.candidates if c.outcome is not None)


@pytest.mark.gpu
def test_magic_binds_the_winner(shell, gemm):
    if cuda_magic.detect_arch() is None:
        pytest.skip("needs a GPU")
    shell.user_ns.update(gemm)
    shell.run_line_magic("load_ext", "cuda_magic")
    result = shell.run_cell_magic("cuda_tune", f'--run "{RUN}" --repeat 5 --name t --where "BM == 64"',
                                  SGEMM)
    t = shell.user_ns["t"]
    assert result is t and t.winner is not None
    assert shell.user_ns["sgemm"] is t.kernels["sgemm"]


@pytest.mark.gpu
def test_magic_judges_a_bf16_output_as_bfloat16(shell):
    """--rtol 1e-2 reads a __nv_bfloat16* output as bfloat16, as %%cuda_compare and k.verify do:
    one ULP from the reference (the first candidate) is right, in the notebook and in the helper
    processes, and far from it wrong (judged as bits, the one ULP was "wrong")."""
    if cuda_magic.detect_arch() is None:
        pytest.skip("needs a GPU")
    src = r'''
    #include <cuda_bf16.h>
    #ifndef BUMP
    #define BUMP 0
    #endif
    extern "C" __global__ void k(__nv_bfloat16* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        unsigned short bits = __bfloat16_as_ushort(__float2bfloat16(1.0f + 0.01f * i));
        if (i < n) y[i] = __ushort_as_bfloat16((unsigned short)(bits + BUMP));
    }
    '''
    shell.user_ns.update(y=np.zeros(1024, np.uint16), n=1024)
    shell.run_line_magic("load_ext", "cuda_magic")
    t = shell.run_cell_magic("cuda_tune", '--space "BUMP=[0, 1, 200]" --run '
                             '"k[cdiv(n, 256), 256](y, n)" --rtol 1e-2 --repeat 5 --name t', src)
    status = [c.status for c in t.candidates]
    assert status[2] == "wrong" and "outside the rule" in t.candidates[2].reason, status
    assert sorted(status[:2]) == ["ok", "winner"], [c.reason for c in t.candidates]
    assert not shell.user_ns["y"].any()        # the caller's array is untouched
