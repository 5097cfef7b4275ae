"""SASS and PTX from real compiles: nvdisasm for cubins, cuobjdump for fatbins."""

import pytest

import cuda_magic.inspect.disasm as inspect_mod
from cuda_magic import ToolNotFoundError, compile_source, ptx, sass, sass_text
from conftest import SAXPY, cfg

TWO = SAXPY + "__global__ void twice(float* y) { y[threadIdx.x] *= 2.0f; }\n"


@pytest.mark.parametrize("compiler,fmt", [("nvrtc", "cubin"), ("nvcc", "cubin"), ("nvcc", "fatbin")])
def test_sass_split_per_kernel(compiler, fmt):
    r = compile_source(TWO, cfg(compiler=compiler, target_format=fmt))
    funcs = sass(r)
    assert set(funcs) == {"scale", "_Z5twicePf"} == set(r.kernels)
    assert "FMUL" in funcs["scale"] and "EXIT" in funcs["scale"]
    assert "FADD" in funcs["_Z5twicePf"] and "FMUL" not in funcs["_Z5twicePf"]
    assert "/* 0x" not in funcs["scale"]  # cuobjdump's encodings are dropped
    assert sass(r, "scale") == funcs["scale"]
    with pytest.raises(KeyError, match="no function 'nope'.*scale"):
        sass(r, "nope")


def test_sass_is_lazy_and_cached(monkeypatch):
    r = compile_source(SAXPY + "// lazy\n", cfg(), force=True)
    assert r.derived == {}
    calls = []
    real = inspect_mod._run
    monkeypatch.setattr(inspect_mod, "_run", lambda *a: calls.append(a[0]) or real(*a))
    first = sass_text(r)
    assert sass_text(r) is first and calls == ["nvdisasm"]
    hit = compile_source(SAXPY + "// lazy\n", cfg())
    assert hit.cache_hit and sass_text(hit) is first and calls == ["nvdisasm"]


def test_lineinfo_gives_source_markers():
    r = compile_source(SAXPY, cfg(nvrtc=["--use_fast_math", "-lineinfo"]))
    assert '//## File "cell.cu", line 4' in sass(r, "scale")


def test_ptx_for_every_kind_of_result():
    nvrtc_cubin = compile_source(SAXPY, cfg())
    assert nvrtc_cubin.ptx_text and ptx(nvrtc_cubin) == nvrtc_cubin.ptx_text
    nvcc_cubin = compile_source(SAXPY, cfg(compiler="nvcc", target_format="cubin"))
    # nvcc: the PTX of the same run (--keep), not of a second compilation
    assert nvcc_cubin.ptx_text and ptx(nvcc_cubin) == nvcc_cubin.ptx_text
    assert ".entry scale" in nvcc_cubin.ptx_text
    as_ptx = compile_source(SAXPY, cfg(target_format="ptx"))
    assert ptx(as_ptx) == as_ptx.binary.decode()
    assert "FMUL" in sass(as_ptx, "scale")  # SASS of a cubin built under the same config


def test_disassembler_absent(monkeypatch, tmp_path):
    import cuda.pathfinder
    import cuda_magic.tools as finder
    r = compile_source(SAXPY + "// absent\n", cfg(), force=True)
    r_nvcc = compile_source(SAXPY + "// absent\n", cfg(compiler="nvcc"), force=True)
    monkeypatch.setattr(cuda.pathfinder, "find_nvidia_binary_utility", lambda name: None)
    monkeypatch.setattr(finder, "SYSTEM", {})            # not in /usr/local/cuda/bin either
    monkeypatch.setattr(finder, "_found", {})            # nor found before
    for var in ("CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolNotFoundError, match="nvdisasm was not found.*nvidia-cuda-nvdisasm"):
        sass(r)
    with pytest.raises(ToolNotFoundError, match="cuobjdump was not found.*nvidia-cuda-cuobjdump"):
        sass(r_nvcc)
