"""Never stale: a cache entry describes what the compiler actually read.

A header saved while a cell compiles, a ``%%cuda_header`` in a subdirectory, a PCH over a
user header, the same header name in the working directory and an ``-I`` dir, the compiler
version: each must be a cache miss when what the compiler reads changes, from memory and
from disk.
"""

import dataclasses
import re

import pytest

import cuda_magic
from cuda_magic import compile_source
from cuda_magic.compile import backends, header_store

from conftest import cfg

CELL = '#include "value.cuh"\nextern "C" __global__ void k(int* y) { *y = VALUE; }\n'


def value(result) -> int:
    """The constant the kernel stores (``mov.u32 %r, N`` / ``st.global.u32 [..], N``)."""
    ptx = cuda_magic.ptx(result)
    found = re.findall(r"(?:mov|st\.global)\.u32\s+(?:%r\d+|\[%rd\d+\]),\s*(\d+);", ptx)
    assert found, ptx[-400:]
    return int(found[-1])


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


class _Saving:
    """Backend ``name`` writes ``texts[0]`` to ``path`` just before the compiler runs and
    ``texts[1:]`` (if any) after it: an editor saving while the cell compiles."""

    def __init__(self, name, path, texts):
        self.name, self.real = name, backends.get_backend(name)
        self.path, self.texts = path, texts

    def compile(self, *args, **kw):
        self.path.write_text(self.texts[0])
        try:
            return self.real.compile(*args, **kw)
        finally:
            for text in self.texts[1:]:
                self.path.write_text(text)

    def __enter__(self):
        backends._REGISTRY[self.name] = dataclasses.replace(self.real, compile=self.compile)
        return self

    def __exit__(self, *exc):
        backends._REGISTRY[self.name] = self.real


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_a_header_saved_during_the_compile_is_never_served_stale(here, compiler, fresh_cache):
    header = here / "value.cuh"
    header.write_text("#define VALUE 1\n")
    config = cfg(compiler=compiler, target_format="ptx")
    cuda_magic.set_cache_dir(here / "cache")
    try:
        with _Saving(compiler, header, ["#define VALUE 2\n"]):
            during = compile_source(CELL, config)     # scanned VALUE 1, the compiler read 2
        assert value(during) == 2
        assert during.cache_note == "not cached: value.cuh changed during the compile"
        header.write_text("#define VALUE 1\n")
        again = compile_source(CELL, config)          # memory: never the binary that says 2
        assert not again.cache_hit and value(again) == 1
        assert compile_source(CELL, config).cache_hit
        cuda_magic.clear_cache()                      # as a fresh process: the disk cache
        from_disk = compile_source(CELL, config)
        assert from_disk.cache_hit and value(from_disk) == 1
    finally:
        cuda_magic.set_cache_dir(None)


def test_a_header_changed_and_changed_back_during_the_compile_is_not_cached(here, fresh_cache):
    header = here / "value.cuh"
    header.write_text("#define VALUE 1\n")
    config = cfg(target_format="ptx")
    with _Saving("nvrtc", header, ["#define VALUE 2\n", "#define VALUE 1\n"]):
        during = compile_source(CELL, config)     # same text before and after, 2 in between
    assert value(during) == 2 and "changed during the compile" in during.cache_note
    again = compile_source(CELL, config)
    assert not again.cache_hit and value(again) == 1


def test_a_pch_over_a_user_header_changes_with_the_header(here, monkeypatch, fresh_cache):
    monkeypatch.setenv("CUDA_MAGIC_PCH_DIR", str(here / "pch"))
    src = ('#include <cub/block/block_reduce.cuh>\n#include "my.cuh"\n'
           'extern "C" __global__ void k(int* y) {\n'
           '    using R = cub::BlockReduce<int, 128>;\n    __shared__ R::TempStorage t;\n'
           '    int s = R(t).Sum(int(threadIdx.x));\n    if (threadIdx.x == 0) y[0] = s + VALUE;\n}\n')
    (here / "my.cuh").write_text("#define VALUE 1234567\n")
    first = compile_source(src, cfg(target_format="cubin"))
    assert first.pch == "created" and "1234567" in cuda_magic.ptx(first)
    (here / "my.cuh").write_text("#define VALUE 7654321\n")
    second = compile_source(src, cfg(target_format="cubin"))
    assert not second.cache_hit and second.cache_note == "my.cuh changed"
    assert second.pch == "created"                       # a new PCH, not the one holding 1234567
    ptx = cuda_magic.ptx(second)
    assert "7654321" in ptx and "1234567" not in ptx
    (here / "my.cuh").write_text("#define VALUE 1234567\n")  # back: the first PCH again
    third = compile_source(src, cfg(target_format="cubin"), force=True)
    assert third.pch == "used" and "1234567" in cuda_magic.ptx(third)


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_a_session_header_in_a_subdirectory_includes_beside_itself(here, compiler, fresh_cache):
    """NVRTC reads ``"helper.cuh"`` from session header ``lib/util.cuh`` at ``cwd/lib/`` (not
    ``cwd/``), and so does nvcc (``-Ilib`` before ``-I.``): the key must hash that file."""
    (here / "lib").mkdir()
    (here / "lib" / "helper.cuh").write_text("#define VALUE 1\n")
    (here / "helper.cuh").write_text("#define VALUE 99\n")      # not the one NVRTC reads
    header_store.define_header("lib/util.cuh", '#include "helper.cuh"\n')
    try:
        src = CELL.replace("value.cuh", "lib/util.cuh")
        config = cfg(compiler=compiler, target_format="ptx")
        assert value(compile_source(src, config)) == 1
        assert compile_source(src, config).cache_hit
        (here / "lib" / "helper.cuh").write_text("#define VALUE 2\n")
        r = compile_source(src, config)
        assert not r.cache_hit and value(r) == 2
        assert r.cache_note == f"{here / 'lib' / 'helper.cuh'} changed"   # two helper.cuh
        assert str(here / "lib" / "helper.cuh") in r.user_headers
    finally:
        header_store.remove_header("lib/util.cuh")


def test_nvcc_finds_a_session_header_beside_a_session_header(here, fresh_cache):
    """nvcc finds session headers as files in its private directory: ``"helper.cuh"`` from
    ``lib/util.cuh`` is ``lib/helper.cuh`` there; it must be written, and editing it a miss."""
    header_store.define_header("lib/util.cuh", '#include "helper.cuh"\n')
    header_store.define_header("lib/helper.cuh", "#define VALUE 1\n")
    try:
        src = CELL.replace("value.cuh", "lib/util.cuh")
        config = cfg(compiler="nvcc", target_format="ptx")
        first = compile_source(src, config)
        assert value(first) == 1 and "lib/helper.cuh" in first.inputs.session
        header_store.define_header("lib/helper.cuh", "#define VALUE 2\n")
        r = compile_source(src, config)
        assert not r.cache_hit and value(r) == 2
    finally:
        header_store.remove_header("lib/util.cuh")
        header_store.remove_header("lib/helper.cuh")


def test_nvcc_reads_the_i_dir_before_the_working_directory(here, fresh_cache):
    (here / "inc").mkdir()
    (here / "value.cuh").write_text("#define VALUE 1\n")
    (here / "inc" / "value.cuh").write_text("#define VALUE 2\n")
    # a header that includes it from another directory: nvcc looks beside it, then -I, then -I.
    (here / "sub").mkdir()
    (here / "sub" / "wrap.cuh").write_text('#include "value.cuh"\n')
    src = CELL.replace("value.cuh", "sub/wrap.cuh")
    config = cfg(compiler="nvcc", target_format="ptx", nvcc=["-Iinc"])
    assert value(compile_source(src, config)) == 2           # -Iinc first
    (here / "inc" / "value.cuh").write_text("#define VALUE 3\n")
    r = compile_source(src, config)
    assert not r.cache_hit and value(r) == 3
    (here / "value.cuh").write_text("#define VALUE 4\n")      # the one shadowed: still a miss
    r = compile_source(src, config)
    assert not r.cache_hit and value(r) == 3


def test_a_session_header_does_not_hide_a_file_nvcc_reads(here, fresh_cache):
    """From a file on disk, nvcc reads ``"x.cuh"`` beside it even when a session header has
    that name (NVRTC takes the session header): both are in the key."""
    (here / "d").mkdir()
    (here / "d" / "a.cuh").write_text('#include "value.cuh"\n')
    (here / "d" / "value.cuh").write_text("#define VALUE 1\n")
    header_store.define_header("value.cuh", "#define VALUE 7\n")
    try:
        src = CELL.replace("value.cuh", "d/a.cuh")
        nvcc, nvrtc = cfg(compiler="nvcc", target_format="ptx"), cfg(target_format="ptx")
        assert value(compile_source(src, nvcc)) == 1 and value(compile_source(src, nvrtc)) == 7
        (here / "d" / "value.cuh").write_text("#define VALUE 2\n")
        r = compile_source(src, nvcc)
        assert not r.cache_hit and value(r) == 2
    finally:
        header_store.remove_header("value.cuh")


def test_the_compiler_version_is_in_the_memory_key(here, fresh_cache):
    (here / "value.cuh").write_text("#define VALUE 1\n")
    config = cfg(target_format="ptx")
    compile_source(CELL, config)
    assert compile_source(CELL, config).cache_hit
    real = backends.get_backend("nvrtc")
    mp = pytest.MonkeyPatch()
    try:
        mp.setitem(backends._REGISTRY, "nvrtc", dataclasses.replace(real, version=lambda: "99.9"))
        r = compile_source(CELL, config)
        assert not r.cache_hit and r.compiler_version == "99.9"
    finally:
        mp.undo()
    assert compile_source(CELL, config).cache_hit


def test_a_failed_compile_keeps_its_pch_unless_a_header_changed_meanwhile(here, monkeypatch,
                                                                         fresh_cache):
    """The PCH holds the leading directives only: a typo below them keeps it, so the compile
    after the fix uses it; but a header saved during the failed compile discards it."""
    from cuda_magic.compile import pch
    monkeypatch.setenv("CUDA_MAGIC_PCH_DIR", str(here / "pch"))
    (here / "my.cuh").write_text("#define VALUE 1234567\n")
    head = '#include <utility>\n#include "my.cuh"\n'
    typo = head + 'extern "C" __global__ void k(int* y) { *y = VALUE + typo; }\n'
    fixed = head + 'extern "C" __global__ void k(int* y) { *y = VALUE; }\n'
    with pytest.raises(cuda_magic.CompileError):
        compile_source(typo, cfg(target_format="cubin"))
    assert pch.usage()[0] == 1
    good = compile_source(fixed, cfg(target_format="cubin"))
    assert good.pch == "used" and value(good) == 1234567
    pch.clear()
    with _Saving("nvrtc", here / "my.cuh", ["#define VALUE 1234567\n", "#define VALUE 42\n"]):
        with pytest.raises(cuda_magic.CompileError):
            compile_source(typo, cfg(target_format="cubin"))
    assert pch.usage()[0] == 0                 # made from 1234567, named for it: not kept
    again = compile_source(fixed, cfg(target_format="cubin"))
    assert again.pch == "created" and value(again) == 42
