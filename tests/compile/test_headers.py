"""Headers a compile reads: never stale, %%cuda_header, missing includes, NVRTC precompiled headers."""

import re
import subprocess
import sys
import textwrap

import pytest

from cuda_magic import settings

import cuda_magic
from cuda_magic import compile_source, sass
from cuda_magic.compile import header_store, include_scan, pch
from cuda_magic.compile.backends import CompileError

from conftest import ARCH, cfg

CELL = r'''
#include "factor.cuh"
extern "C" __global__ void scale(float* x) { x[threadIdx.x] *= FACTOR; }
'''


def constant(result) -> str:
    """The FACTOR the PTX multiplies by (0f40400000 is 3.0f)."""
    return re.search(r"mul(?:\.\w+)*\.f32\s+%f\d+, %f\d+, (0f[0-9A-F]{8})", cuda_magic.ptx(result))[1]


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_editing_an_included_header_recompiles_and_says_why(here, compiler, fresh_cache):
    (here / "inc").mkdir()
    (here / "factor.cuh").write_text('#include "inner.cuh"\n#define FACTOR (3.0f * INNER)\n')
    (here / "inc" / "inner.cuh").write_text("#define INNER 1.0f\n")
    config = cfg(compiler=compiler, **{compiler: ["-Iinc"]})
    first = compile_source(CELL, config)
    assert constant(first) == "0f40400000" and not first.cache_hit
    assert compile_source(CELL, config).cache_hit                     # unchanged: a hit
    (here / "inc" / "inner.cuh").write_text("#define INNER 2.0f\n")   # two levels down, via -I
    second = compile_source(CELL, config)
    assert not second.cache_hit and second.cache_note == "inner.cuh changed"
    assert constant(second) == "0f40C00000"                            # 6.0f: the new text
    assert str(here / "inc" / "inner.cuh") in second.user_headers
    view = cuda_magic.view(second).text()
    assert "cache miss: inner.cuh changed" in view and "inner.cuh" in view


def test_a_header_appearing_earlier_on_the_search_path_is_a_miss(here, fresh_cache):
    (here / "inc").mkdir()
    (here / "inc" / "factor.cuh").write_text("#define FACTOR 3.0f\n")
    config = cfg(nvrtc=["-Iinc"])
    assert constant(compile_source(CELL, config)) == "0f40400000"
    (here / "factor.cuh").write_text("#define FACTOR 5.0f\n")   # the working directory comes first
    r = compile_source(CELL, config)
    assert not r.cache_hit and constant(r) == "0f40A00000"


def test_disk_cache_is_not_stale_across_processes(here):
    (here / "factor.cuh").write_text("#define FACTOR 3.0f\n")
    script = textwrap.dedent(f'''
        import cuda_magic
        cuda_magic.set_cache_dir({str(here / "cache")!r})
        r = cuda_magic.compile_source({CELL!r}, {{"cuda": {{"arch": "{ARCH}"}}}})
        import re; print(r.cache_hit, re.search(r"(0f[0-9A-F]{{8}})", cuda_magic.ptx(r))[1])
    ''')

    def run():
        return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              cwd=here, check=True).stdout.split()
    assert run() == ["False", "0f40400000"]
    assert run() == ["True", "0f40400000"]
    (here / "factor.cuh").write_text("#define FACTOR 5.0f\n")
    assert run() == ["False", "0f40A00000"]


def test_include_through_an_unknown_macro_is_never_served_from_the_cache(here, fresh_cache):
    (here / "factor.cuh").write_text("#define FACTOR 3.0f\n")
    src = CELL.replace('#include "factor.cuh"', '#include HEADER')
    config = cfg(nvrtc=['-DHEADER="factor.cuh"'])
    compile_source(src, config)
    again = compile_source(src, config)
    assert not again.cache_hit and again.cache_note.startswith("not cached: cell line 2: #include HEADER")
    # a macro defined in the source is followed
    known = '#define HEADER "factor.cuh"\n' + src
    compile_source(known, cfg())
    assert compile_source(known, cfg()).cache_hit


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_cuda_header_cells(shell, compiler, fresh_cache):
    shell.run_cell_magic("cuda_header", "factor.cuh", "#pragma once\n#define FACTOR 3.0f\n")
    try:
        m = shell.run_cell_magic("cuda", f"--arch {ARCH} --compiler {compiler} --compile-only", CELL)
        assert constant(m.result) == "0f40400000"
        assert m.result.inputs.session == ("factor.cuh",)
        assert "%%cuda_header: factor.cuh" in cuda_magic.view(m).text()
        view = shell.run_cell_magic("cuda_header", "factor.cuh", "#pragma once\n#define FACTOR 5.0f\n")
        text = view.text()
        assert "factor.cuh" in text and "replaced" in text and "(scale)" in text
        again = shell.run_cell_magic("cuda", f"--arch {ARCH} --compiler {compiler} --compile-only", CELL)
        assert not again.result.cache_hit and constant(again.result) == "0f40A00000"
        assert again.result.cache_note == "factor.cuh (%%cuda_header) changed"
    finally:
        header_store.remove_header("factor.cuh")


def test_cuda_header_rejects_a_path_outside_the_session(shell):
    from cuda_magic import ConfigError
    for bad in ("../x.cuh", "/etc/passwd", "a//b.h", ""):
        with pytest.raises(ConfigError, match="relative file name"):
            header_store.define_header(bad, "")


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_a_missing_include_says_where_it_looked_and_what_to_do(here, compiler):
    (here / "inc").mkdir()
    src = '#include "nowhere.cuh"\nextern "C" __global__ void k() {}\n'
    with pytest.raises(CompileError) as info:
        compile_source(src, cfg(compiler=compiler, **{compiler: ["-Iinc"]}), force=True)
    msg = str(info.value)
    assert "'nowhere.cuh' was not found; searched, in order:" in msg
    assert f"the working directory {here}" in msg and f"-I {here / 'inc'}" in msg
    assert "%%cuda_header" in msg
    with pytest.raises(CompileError, match=r"'iostream' was not found.*--compiler nvcc"):
        compile_source("#include <iostream>\n__global__ void k() {}\n", cfg(), force=True)


CUB = r'''
#include <cub/block/block_reduce.cuh>
template <int B> __global__ void reduce(const float* x, float* y) {
    using R = cub::BlockReduce<float, B>;
    __shared__ typename R::TempStorage tmp;
    float v = R(tmp).Sum(x[threadIdx.x] * y[2]);
    if (threadIdx.x == 0) y[blockIdx.x] = v * 0.5f;
}
template __global__ void reduce<128>(const float*, float*);
'''


def test_pch_is_created_then_used_and_every_flag_still_counts(tmp_path, monkeypatch, fresh_cache):
    monkeypatch.setenv("CUDA_MAGIC_PCH_DIR", str(tmp_path / "pch"))
    seen = []
    for ftz in ("false", "true", "false", "true"):
        r = compile_source(CUB, cfg(nvrtc=["--use_fast_math", f"--ftz={ftz}"]), force=True)
        flag = [a for a in r.argv if "pch=" in a]
        seen.append((r.pch, flag[0].split("=")[0], ".FTZ" in "".join(sass(r).values())))
        assert r.pch in cuda_magic.view(r).text()
    assert seen == [("created", "--create-pch", False), ("created", "--create-pch", True),
                    ("used", "--use-pch", False), ("used", "--use-pch", True)]
    assert pch.usage()[0] == 2
    # the same binary as without a PCH
    monkeypatch.setenv("CUDA_MAGIC_PCH", "0")
    plain = compile_source(CUB, cfg(nvrtc=["--use_fast_math", "--ftz=true"]), force=True)
    assert not plain.pch and not any("pch" in a for a in plain.argv)
    assert sass(plain) == sass(r)
    # the cap evicts the least recently used file; clear() empties the directory
    monkeypatch.delenv("CUDA_MAGIC_PCH")
    pch.set_limit(pch.usage()[1] - 1)
    try:
        assert pch.usage()[0] == 1
    finally:
        settings.reset("pch_limit")     # back to the default, as it was
    assert pch.clear() == 1 and pch.usage() == (0, 0)


def test_pch_is_not_used_for_light_cells(tmp_path, monkeypatch, fresh_cache):
    monkeypatch.setenv("CUDA_MAGIC_PCH_DIR", str(tmp_path / "pch"))
    r = compile_source('#include <cuda_fp16.h>\n__global__ void k(__half* x) { x[0] = x[1]; }\n',
                       cfg(), force=True)
    assert not r.pch and pch.usage() == (0, 0)


def test_pch_heap_grows_when_nvrtc_needs_more(tmp_path, monkeypatch, fresh_cache):
    from cuda.bindings import nvrtc
    from cuda_magic.compile import pch_heap
    from cuda_magic.compile.backends import nvrtc as backend
    monkeypatch.setenv("CUDA_MAGIC_PCH_DIR", str(tmp_path / "pch"))
    monkeypatch.setattr(backend, "_heap_size", [16 << 20])     # too small for CUB (~120 MiB)
    r = compile_source(CUB, cfg(), force=True)
    grown = backend._heap_size[0]
    assert r.pch == "created" and grown >= 64 << 20 and nvrtc.nvrtcGetPCHHeapSize()[1] == grown
    assert compile_source(CUB, cfg(), force=True).pch == "used"
    assert pch_heap.token() == f"600000000000+{grown >> 20}M"      # placed again, at its address
    # named for the heap it was made in: one file, none left for the 16 MiB heap
    assert [f.suffix for f in (tmp_path / "pch").iterdir() if f.suffix != ".mac"] == [".pch"]


def test_search_dirs_reads_every_spelling(here):
    dirs, pre = include_scan.search_dirs(["-Iinc", "-I", "b", "--include-path=c", "-isystem", "d",
                                     "-include", "p.h", "--pre-include=q.h", "-DX", "-O3"])
    assert dirs == [str(here / n) for n in "inc b c d".split()]
    assert pre == [str(here / "p.h"), str(here / "q.h")]
