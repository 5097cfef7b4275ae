"""Toolkit headers found wherever the install put them, CUTLASS's
tools/util on the include path, the supplied standard headers on every CCCL a
CUDA 13 toolkit ships."""

import os
import sys

import pytest

import cuda_magic
from cuda_magic import compile_source
from cuda_magic.compile import toolkit_headers
from cuda_magic.compile.backends import CompileError, nvrtc as nvrtc_backend

from conftest import cfg


def _touch(path, text="\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _forget():
    """Drop every memo of the header directories (they are looked up once per process)."""
    for f in (toolkit_headers.header_dirs, toolkit_headers.toolkit_dirs, toolkit_headers.toolkit_identity,
              nvrtc_backend.added_flags):
        f.cache_clear()


@pytest.fixture
def lookup(monkeypatch):
    """Point the family lookup at other roots for one test: ``lookup(first)`` puts ``first``
    before the real search roots."""
    real = toolkit_headers.search_roots

    def use(first):
        monkeypatch.setattr(toolkit_headers, "search_roots", lambda: [str(d) for d in first] + real())
        _forget()
    yield use
    monkeypatch.setattr(toolkit_headers, "search_roots", real)
    _forget()


def test_each_family_is_found_on_its_own_over_site_dirs_then_cuda_home(tmp_path, monkeypatch):
    # pip: cudart and CCCL in one site directory, curand in another; crt/mma.h only in the toolkit
    site_a, site_b, home = tmp_path / "a", tmp_path / "b", tmp_path / "cuda"
    _touch(site_a / "nvidia" / "cu13" / "include" / "cuda_runtime.h")
    _touch(site_a / "nvidia" / "cu13" / "include" / "crt" / "host_defines.h")   # no crt/mma.h
    _touch(site_a / "nvidia" / "cu13" / "include" / "cccl" / "cuda" / "std" / "version")
    _touch(site_b / "nvidia" / "curand" / "include" / "curand_kernel.h")
    _touch(site_b / "cutlass_library" / "source" / "include" / "cute" / "tensor.hpp")
    _touch(site_b / "cutlass_library" / "source" / "tools" / "util" / "include" / "cutlass" /
           "util" / "helper_cuda.hpp")
    _touch(home / "include" / "crt" / "mma.h")
    _touch(home / "include" / "cuda_runtime.h")          # found later than pip's: not used
    monkeypatch.setattr(sys, "path", [str(site_a), str(site_b)])
    monkeypatch.setattr(toolkit_headers, "_package_dirs", lambda name: [])
    monkeypatch.setattr(toolkit_headers, "_site_dirs", lambda: [str(site_a), str(site_b)])
    monkeypatch.setenv("CUDA_HOME", str(home))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    roots = toolkit_headers.search_roots()
    assert roots.index(str(site_a / "nvidia" / "cu13" / "include")) < roots.index(str(home / "include"))
    assert roots.index(str(home / "include")) < roots.index("/usr/local/cuda/include")
    found = toolkit_headers.find_header_dirs(roots)
    assert found["cudart"] == str(site_a / "nvidia" / "cu13" / "include")
    assert found["crt"] == str(home / "include")          # crt/mma.h only in the toolkit
    assert found["curand"] == str(site_b / "nvidia" / "curand" / "include")
    assert found["cccl"] == str(site_a / "nvidia" / "cu13" / "include" / "cccl")
    assert found["cutlass"] == str(site_b / "cutlass_library" / "source" / "include")
    assert found["cutlass-util"] == str(site_b / "cutlass_library" / "source" / "tools" / "util" /
                                        "include")


def test_the_namespace_package_dirs_come_first(tmp_path, monkeypatch):
    ns = tmp_path / "ns" / "nvidia"
    _touch(ns / "cu13" / "include" / "curand_kernel.h")
    monkeypatch.setattr(toolkit_headers, "_package_dirs", lambda name: [str(ns)] if name == "nvidia" else [])
    roots = toolkit_headers.search_roots()
    assert roots[:2] == [str(ns / "cu13" / "include"), str(ns / "cu13" / "include" / "cccl")]
    assert toolkit_headers.find_header_dirs(roots)["curand"] == str(ns / "cu13" / "include")


def test_the_log_tab_says_where_each_family_came_from():
    dirs = toolkit_headers.header_dirs()
    assert {"cudart", "crt", "curand", "cccl"} <= set(dirs)
    assert toolkit_headers.toolkit_dirs() == tuple(dict.fromkeys(dirs.values()))
    r = compile_source('#include <mma.h>\nextern "C" __global__ void k(int* y) { *y = 1; }\n',
                       cfg(), force=True)
    assert all(f"-I{d}" in r.argv for d in toolkit_headers.toolkit_dirs())
    from cuda_magic.display.content import content
    from cuda_magic.display.text import log as log_text
    log = log_text(content(r))
    line = next(line for line in log.splitlines() if line.startswith("toolkit headers: "))
    home = os.path.join(os.path.expanduser("~"), "")

    def shown(d):
        return "~/" + d[len(home):] if d.startswith(home) else d
    # by the names the Config defines once (the argv and every log use the names)
    assert "cccl from <cccl-headers>" in line and "curand from <cuda-headers>" in line
    text = cuda_magic.view(r).text()
    assert f"<cccl-headers> = {shown(dirs['cccl'])}" in text
    assert f"<cuda-headers> = {shown(dirs['cudart'])}" in text
    assert "toolkit headers: " in cuda_magic.view(r).html()
    nvcc = compile_source('extern "C" __global__ void k(int* y) { *y = 1; }\n',
                          cfg(compiler="nvcc"), force=True)
    assert ("CUTLASS headers: cutlass from <cutlass-headers>" in log_text(content(nvcc))) == \
        ("cutlass" in dirs)


needs_cutlass = pytest.mark.skipif(toolkit_headers.cutlass_dir() is None, reason="no nvidia-cutlass wheel")


@needs_cutlass
@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_cutlass_tools_util_is_on_the_include_path(compiler, fresh_cache):
    util = toolkit_headers.header_dirs()["cutlass-util"]
    assert util.endswith(os.path.join("tools", "util", "include")) and util in toolkit_headers.cutlass_dirs()
    src = ('#include <cutlass/util/print_error.hpp>\n' if compiler == "nvcc" else
           '#include <cutlass/util/index_sequence.h>\n') + \
        'extern "C" __global__ void k(int* y) { *y = 1; }\n'
    r = compile_source(src, cfg(compiler=compiler))
    assert f"-I{util}" in r.argv


@needs_cutlass
def test_a_missing_cutlass_header_does_not_say_install_the_installed_wheel(fresh_cache):
    src = '#include <cutlass/util/no_such_header.hpp>\nextern "C" __global__ void k() {}\n'
    with pytest.raises(CompileError) as e:
        compile_source(src, cfg(compiler="nvcc"))
    text = str(e.value)
    assert "has no such header" in text and "pip install" not in text


# -- the supplied standard headers on CCCL 3.0 (CUDA 13.0's own), 3.1, 3.2 and the installed one

_CCCL_CELLS = {
    "algorithm": "int a[4] = {3, 1, 2, 0}; *y = *std::max_element(a, a + 4) + std::max(a[0], a[3]);",
    "cstring": "char s[4] = {'a', 'b', 0, 0}; *y = int(strlen(s));",
    "functional": "*y = std::plus<int>()(1, 2);",
    "bit": "*y = std::popcount(7u);",
    "cstdint": "uint64_t v = 1; *y = int(v);",
    "cmath": "*y = int(std::sqrt(float(*y)));",
}


def _cell(name: str) -> str:
    return f'#include <{name}>\nextern "C" __global__ void k(int* y) {{ {_CCCL_CELLS[name]} }}\n'


# a TMA-style cell: <cstdint> with CCCL's PTX wrappers (CCCL 3.0 failed: "namespace
# cuda::std::__4 has no member uint64_t")
_TMA = r'''
#include <cstdint>
#include <cuda/ptx>
#include <cuda/barrier>
extern "C" __global__ void k(uint64_t* bar) {
    __shared__ uint64_t b;
    if (threadIdx.x == 0) cuda::ptx::mbarrier_init(&b, 1);
    bar[0] = b;
}
'''


@pytest.mark.parametrize("version", ["13.0.85", "13.1.115"])
def test_supplied_headers_work_with_older_cccl(old_cccls, version, lookup, fresh_cache,
                                               monkeypatch):
    monkeypatch.setenv("CUDA_MAGIC_PCH", "0")
    inc = old_cccls[version]
    lookup([inc, inc / "cccl"])
    assert toolkit_headers.header_dirs()["cccl"] == str(inc / "cccl")
    for name in _CCCL_CELLS:
        if name == "cstring" and version == "13.0.85":   # CCCL 3.0 has no cuda::std::strlen & co.
            with pytest.raises(CompileError) as e:
                compile_source(_cell(name), cfg())
            assert "strlen: not in CCCL 3.0.1" in str(e.value) and "pip install -U" in str(e.value)
            continue
        r = compile_source(_cell(name), cfg())
        assert f"-I{inc / 'cccl'}" in r.argv, name
    compile_source(_TMA, cfg())


@needs_cutlass
def test_cute_under_nvrtc_compiles_with_cccl_3_1_first_and_says_how_otherwise(old_cccls,
                                                                               fresh_cache,
                                                                               monkeypatch):
    """nvidia-cutlass 4.2's CuTe and CCCL 3.2+ disagree on std::tuple_size; with CCCL 3.1 first
    on the path (CUTLASS includes <cccl/cuda/std/...> too: both dirs) it compiles."""
    import pathlib
    monkeypatch.setenv("CUDA_MAGIC_PCH", "0")
    src = (pathlib.Path(__file__).parents[1] / "kernels" / "cute_copy.cu").read_text()
    inc = old_cccls["13.1.115"]
    r = compile_source(src, cfg(nvrtc=["-std=c++17", "-default-device", f"-I{inc}",
                                       f"-I{inc / 'cccl'}"]))
    assert {"cute_tile_copy", "cute_tile_transpose"} <= {e.name for e in r.entries}
    if toolkit_headers.cccl_version() >= (3, 2, 0):
        with pytest.raises(CompileError) as e:
            compile_source(src, cfg())
        assert "'nvidia-cuda-cccl<13.2'" in str(e.value) and "--compiler nvcc" in str(e.value)
