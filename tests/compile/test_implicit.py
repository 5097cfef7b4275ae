"""What nvcc gives implicitly and real code leans on, with the real
NVRTC and nvcc (no GPU): sm_90a-only PTX in nvcc fatbins, the PTX view of the build that
runs, the -default-device retry, the pre-included nvcc-implicit names, the toolkit's NVRTC
int typedefs beside <cstdint>, the NVRTC <cub/cub.cuh>, and what-to-include hints."""

from __future__ import annotations

import re

import pytest

import cuda_magic
from cuda_magic.compile import hints, prelude
from cuda_magic.compile.backends import CompileError, nvcc as nvcc_backend
from cuda_magic.compile.backends import nvrtc as nvrtc_backend
from cuda_magic.compile.compiler import compile_source

ARCH = "sm_90a"
SAXPY = ('extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {\n'
         "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }\n")
SAME = ("template <class A, class B> struct same { static constexpr bool v = false; };\n"
        "template <class A> struct same<A, A> { static constexpr bool v = true; };\n")


def cfg(**kw):
    return {"cuda": {"arch": ARCH, **kw}}


def build(src, compiler="nvrtc", **kw):
    return compile_source(src, cfg(compiler=compiler, **kw), force=True)


# --- 6. nvcc: an a/f arch's fatbin holds that arch's SASS and PTX only ------------------------

SETMAXNREG = ('__global__ void __launch_bounds__(256, 1) k(int* p) {\n'
              '  asm volatile("setmaxnreg.dec.sync.aligned.u32 40;"); p[0] = 1; }\n')


def test_nvcc_fatbin_for_sm_90a_has_no_compute_90_ptx():
    from cuda_magic.compile.binary import fatbin_extract
    r = build(SETMAXNREG, "nvcc")          # plain -arch=sm_90a: ptxas rejects it for sm_90
    assert r.format == "fatbin"
    assert r.argv[1:3] == ("-gencode=arch=compute_90a,code=sm_90a",
                           "-gencode=arch=compute_90a,code=compute_90a")
    ptx = [d.decode("utf-8", "replace") for _, d in fatbin_extract(r.binary, "ptx")]
    assert len(ptx) == 1 and re.search(r"^\.target sm_90a\b", ptx[0], re.M)


@pytest.mark.parametrize("arch, fmt, want", [
    ("sm_90a", "fatbin", ("-gencode=arch=compute_90a,code=sm_90a",
                          "-gencode=arch=compute_90a,code=compute_90a")),
    ("sm_100f", "fatbin", ("-gencode=arch=compute_100f,code=sm_100f",
                           "-gencode=arch=compute_100f,code=compute_100f")),
    ("sm_90a", "cubin", ("-arch=sm_90a",)), ("sm_90a", "ptx", ("-arch=sm_90a",)),
    ("sm_80", "fatbin", ("-arch=sm_80",))])
def test_arch_flags(arch, fmt, want):
    assert nvcc_backend.arch_flags(arch, fmt) == want


# --- 7. nvcc: the PTX view is the PTX of the build that runs -----------------------------------

@pytest.mark.parametrize("fmt", ["cubin", "fatbin"])
def test_nvcc_ptx_view_names_the_binary_entries(fmt):
    from cuda_magic.compile.binary import entries
    from cuda_magic import inspect
    src = "namespace { __global__ void hidden(int* p) { p[0] = 7; } }\n" \
          "__global__ void shown(int* p) { p[1] = 8; }\n"
    r = build(src, "nvcc", target_format=fmt)
    assert "--keep" in r.argv and r.ptx_text        # from the same nvcc run, not a second one
    symbols = {e.symbol for e in entries(r.binary, r.format)}
    anon = [s for s in symbols if "_GLOBAL__N_" in s]
    assert len(anon) == 1
    ptx = inspect.ptx(r)
    assert set(re.findall(r"\.entry (\w+)\(", ptx)) == symbols
    # a second nvcc run hashes the anonymous namespace differently: the reason for the above
    again = build(src + "\n", "nvcc", target_format="ptx")
    assert anon[0] not in again.binary.decode()


# --- 2. unannotated constexpr helpers: NVRTC retries with -default-device ---------------------

CONSTEXPR = ("constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }\n"
             "__global__ void k(int* p, int n) { constexpr int t = ceil_div(100, 32); "
             "p[0] = ceil_div(n, 32) + t; }\n")


def test_unannotated_constexpr_compiles_under_nvrtc_with_default_device_shown():
    r = build(CONSTEXPR)
    assert r.argv.count("-default-device") == 1
    assert r.log.startswith(nvrtc_backend.RETRIED)
    assert "-default-device" not in build(SAXPY).argv           # nothing added elsewhere


def test_nvcc_needs_relaxed_constexpr_for_the_same_cell():
    with pytest.raises(CompileError, match="--expt-relaxed-constexpr"):
        build(CONSTEXPR, "nvcc")
    build(CONSTEXPR, "nvcc", nvcc=["--expt-relaxed-constexpr"])


def test_default_device_given_by_the_user_is_not_retried():
    r = build(CONSTEXPR, nvrtc=["-default-device"])
    assert r.argv.count("-default-device") == 1 and nvrtc_backend.RETRIED not in r.log


def test_a_failure_after_the_retry_says_so():
    with pytest.raises(CompileError) as info:
        build(CONSTEXPR.replace("+ t;", "+ t + undefined_thing;"))
    assert "-default-device" in info.value.argv and nvrtc_backend.RETRIED in str(info.value)


# --- 1 and 5. what nvcc's implicit cuda_runtime.h declares -------------------------------------

IMPLICIT = SAME + r"""
__extension__ typedef long long wide;
static_assert(same<uint, unsigned int>::v && same<ushort, unsigned short>::v
              && same<ulong, unsigned long>::v && same<u_char, unsigned char>::v
              && same<u_int64_t, unsigned long>::v, "glibc's <sys/types.h>");
static_assert(same<int64_t, long>::v && same<int32_t, int>::v && same<int8_t, signed char>::v, "");
static_assert(INT_MAX == 2147483647 && same<decltype(LONG_MAX), long>::v && CHAR_BIT == 8, "");
static_assert(M_PI > 3.14159 && M_PI < 3.1416, "");
__global__ void k(uint* p, int64_t* q) {
  cudaGridDependencySynchronize();
  p[0] = (ushort)p[1]; q[0] = (wide)INT_MAX;
  cudaTriggerProgrammaticLaunchCompletion();
}
"""


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_nvcc_implicit_names_mean_the_same_with_both_compilers(compiler):
    r = build(IMPLICIT, compiler, target_format="ptx")
    ptx = r.binary.decode()
    assert "griddepcontrol.wait" in ptx and "griddepcontrol.launch_dependents" in ptx
    if compiler == "nvrtc":
        assert f"--pre-include={prelude.IMPLICIT}" in r.argv
        assert "pre-included" in r.log


PDL = ("__global__ void k(int* p) {\n  cudaGridDependencySynchronize(); p[0] = 1;\n"
       "  cudaTriggerProgrammaticLaunchCompletion();\n}\n")
DEVRT = "#include <cuda_device_runtime_api.h>\n"


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
@pytest.mark.parametrize("head, flags", [
    pytest.param(DEVRT, [], id="include"),      # what NVIDIA's docs tell NVRTC users to write
    pytest.param("", ["-rdc=true"], id="rdc"),  # NVRTC's built-in header declares them then
    pytest.param(DEVRT, ["-rdc=true"], id="include-rdc"),
    pytest.param(PDL.replace("k(", "before(") + DEVRT, [], id="include-after-use"),
])
def test_pdl_with_the_device_runtime_header_or_rdc_is_defined_once(compiler, head, flags):
    """The pre-include never defines the PDL functions a second time: it includes the toolkit's
    cuda_device_runtime_api.h (as nvcc's cuda_runtime.h does), whose guard keeps it once."""
    r = build(head + PDL, compiler, target_format="ptx", **{compiler: flags})
    ptx = r.binary.decode()
    assert "griddepcontrol.wait" in ptx and "griddepcontrol.launch_dependents" in ptx
    if compiler == "nvrtc":
        assert f"--pre-include={prelude.IMPLICIT}" in r.argv


PRODUCE_CONSUME = r"""
__global__ void produce(int* buf, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) buf[i] = 3 * i;
  cudaTriggerProgrammaticLaunchCompletion();
}
__global__ void consume(const int* buf, int* out, int n) {
  cudaGridDependencySynchronize();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = buf[i] + 1;
}
"""


@pytest.mark.gpu
@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
@pytest.mark.parametrize("head, flags", [pytest.param("", "", id="pre-include"),
                                         pytest.param(DEVRT, "", id="include"),
                                         pytest.param(DEVRT, "-rdc=true", id="include-rdc")])
def test_pdl_kernels_launch_with_pdl_however_declared(compiler, head, flags):
    """The consumer launched with pdl=True (programmatic stream serialization) waits in
    cudaGridDependencySynchronize for the producer's writes."""
    import numpy as np
    m = cuda_magic.build(head + PRODUCE_CONSUME, cuda_magic.line_config(
        arch=ARCH, compiler=compiler, **({compiler: flags} if flags else {})))
    n = 1 << 16
    buf, out = np.zeros(n, np.int32), np.zeros(n, np.int32)
    for _ in range(3):
        buf[:], out[:] = 0, 0
        m.produce.launch(n // 256, 256, (buf, n))
        m.consume.launch(n // 256, 256, (buf, out, n), pdl=True)
        np.testing.assert_array_equal(out, 3 * np.arange(n, dtype=np.int32) + 1)


def test_pdl_without_the_toolkit_header_is_defined_by_the_pre_include(monkeypatch):
    """Where no cuda_device_runtime_api.h is found, the pre-include's own definitions."""
    parts = tuple((names, text.replace("<cuda_device_runtime_api.h>", "<cm_no_such_devrt.h>"))
                  for names, text in prelude._IMPLICIT_PARTS)
    monkeypatch.setattr(prelude, "_IMPLICIT_PARTS", parts)
    assert "cm_no_such_devrt.h" in prelude.implicit([PDL])
    ptx = build(PDL, target_format="ptx").binary.decode()
    assert "griddepcontrol.wait" in ptx and "griddepcontrol.launch_dependents" in ptx


def test_the_prelude_is_only_for_cells_that_use_its_names():
    assert not any(a.startswith("--pre-include") for a in build(SAXPY).argv)
    assert prelude.implicit([SAXPY]) is None
    # each part only when named: a cell using 'uint' gets no PDL functions and no <cstdint>
    text = prelude.implicit(["__global__ void k(uint n) {}"])
    assert "typedef unsigned int uint;" in text
    assert "griddepcontrol" not in text and "_CUDA_STD_CSTDINT" not in text
    # the supplied standard headers' own text does not count as the cell's
    r = build("#include <cstdio>\n#include <cmath>\n" + SAXPY)
    assert not any(a.startswith("--pre-include") for a in r.argv)


def test_a_user_typedef_of_the_same_name_still_compiles():
    src = "typedef unsigned int uint;\n__global__ void k(uint* p) { p[0] = 1; }\n"
    for compiler in ("nvrtc", "nvcc"):
        build(src, compiler)


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_undefined_names_say_what_to_include(compiler):
    with pytest.raises(CompileError) as info:
        build("__global__ void k(float* p) { uint64_t n = 1; p[0] = n + FLT_MAX; }\n", compiler)
    msg = str(info.value)
    assert "'uint64_t' is declared in <cstdint>: add #include <cstdint>" in msg
    assert "'FLT_MAX' is declared in <cfloat>: add #include <cfloat>" in msg


def test_infinity_and_nan_say_what_nvrtc_lacks():
    src = "__global__ void k(float* p) { p[0] = INFINITY; p[1] = NAN; }\n"
    with pytest.raises(CompileError) as info:
        build(src, "nvrtc")
    msg = str(info.value)
    for name in ("INFINITY", "NAN"):
        assert (f"'{name}' is declared in <cmath>: add #include <cmath> (nvcc compiles it "
                f"without: its implicit cuda_runtime.h includes the math headers") in msg
    build(src, "nvcc")                                  # as the hint says
    build("#include <cmath>\n" + src, "nvrtc")          # and the fix works


def test_std_member_hint():
    assert hints.log_hints('error: namespace "std" has no member "min"') == [
        "'std::min' is declared in <algorithm>: add #include <algorithm>"]


# --- 4. the toolkit's NVRTC uint64_t typedefs beside cuda-magic's <cstdint> -------------------

PIPELINE = SAME + r"""
static_assert(same<uint64_t, unsigned long>::v && same<uintptr_t, unsigned long>::v, "as nvcc");
__global__ void k(const uint64_t* in, uint64_t* out) {
  __shared__ alignas(16) uint64_t t[32];
  __pipeline_memcpy_async(&t[threadIdx.x], &in[threadIdx.x], sizeof(uint64_t));
  __pipeline_commit(); __pipeline_wait_prior(0);
  out[threadIdx.x] = t[threadIdx.x];
}
"""


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
@pytest.mark.parametrize("order", [("cstdint", "cuda_pipeline.h"), ("cuda_pipeline.h", "cstdint"),
                                   ("cuda/pipeline", "cstdint", "cuda_awbarrier.h",
                                    "cuda_pipeline_primitives.h"),
                                   ("cstdint", "cooperative_groups.h",
                                    "cooperative_groups/memcpy_async.h")])
def test_cstdint_and_the_pipeline_headers_in_either_order(order, compiler):
    src = "".join(f"#include <{h}>\n" for h in order) + PIPELINE
    r = build(src, compiler, nvrtc=["-std=c++17"])
    if compiler == "nvrtc":
        assert "cuda_pipeline_helpers.h in memory" in r.log


def test_the_helper_keeps_its_line_numbers_and_replaces_only_the_typedefs():
    from cuda_magic.compile.toolkit_headers import toolkit_dirs
    for name in prelude.TOOLKIT_INT_TYPEDEFS:
        text = nvrtc_backend._toolkit_file(name, toolkit_dirs())
        if text is None:
            pytest.skip(f"{name} is not installed")
        fixed = prelude.with_glibc_int_types(name, text)
        assert fixed.count("\n") == text.count("\n")
        changed = [(a, b) for a, b in zip(text.splitlines(), fixed.splitlines()) if a != b]
        assert changed and all(re.match(r"\s*typedef .*int\w*_t\s*;", a) for a, _ in changed)


# --- 3. <cub/cub.cuh> under NVRTC --------------------------------------------------------------

CUB = r"""#include <cub/cub.cuh>
__global__ void k(const float* x, float* out) {
  using BR = cub::BlockReduce<float, 128>;
  __shared__ typename BR::TempStorage tmp;
  float s = BR(tmp).Sum(x[threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}
"""


def test_cub_umbrella_compiles_under_nvrtc_and_is_listed():
    r = build(CUB)
    assert "cub/cub.cuh" in r.supplied_headers


def test_cub_device_algorithms_under_nvrtc_say_use_nvcc():
    src = CUB.replace("float s = BR(tmp).Sum(x[threadIdx.x]);",
                      "float s = 0; cub::DeviceReduce::Sum(nullptr, s, x, out, 4);")
    with pytest.raises(CompileError, match=r"cub::DeviceReduce .* --compiler nvcc"):
        build(src)


# --- 4. C++20 headers libcu++ has --------------------------------------------------------------

CXX20 = r"""#include <concepts>
#include <span>
#include <numbers>
template <class T> concept Small = std::integral<T> && sizeof(T) <= 4;
template <Small T> __device__ T inc(T x) { return x + 1; }
static_assert(std::same_as<int, int> && !std::floating_point<int>, "");
__global__ void k(int* p, float* f) {
  std::span<int> s(p, 4);
  s[0] = inc(s[1]) + (int)s.size();
  f[0] = std::numbers::pi_v<float>;
}
"""


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_cxx20_concepts_span_numbers(compiler):
    r = build(CXX20, compiler, nvrtc=["-std=c++20"],
              nvcc=["-std=c++20", "--expt-relaxed-constexpr"])
    if compiler == "nvrtc":
        assert {"concepts", "span", "numbers"} <= set(r.supplied_headers)


# --- 8. device-side launches -------------------------------------------------------------------

DYNAMIC = ("__global__ void child(int* p) { p[threadIdx.x] = 1; }\n"
           "__global__ void parent(int* p) { child<<<1, 32>>>(p); }\n")


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
@pytest.mark.parametrize("head", [
    pytest.param("", id="plain"), pytest.param(DEVRT, id="include"),
    pytest.param("__device__ void w() { cudaGridDependencySynchronize(); }\n", id="pdl")])
def test_device_side_launch_says_what_it_needs(compiler, head):
    """The front ends refuse the launch; NVRTC, where the device runtime API is declared (the
    cell's #include, or the PDL pre-include), compiles it and ptxas finds __cudaCDP2* missing.
    Each way, the hint names the flag for the compiler that ran."""
    other = {"nvrtc": "nvcc", "nvcc": "nvrtc"}[compiler]
    with pytest.raises(CompileError, match=r"device-side launch.*dynamic parallelism") as info:
        build(head + DYNAMIC, compiler)
    msg = str(info.value)
    assert f'%%cuda --{compiler}+ "-rdc=true"' in msg and f"//| {compiler}+: [-rdc=true]" in msg
    assert f"--{other}+" not in msg and f"{other}+:" not in msg
    if compiler == "nvrtc" and head:
        assert "Unresolved extern function '__cudaCDP2" in info.value.log


def test_device_launch_hints_read_ptxas_too():
    log = "ptxas fatal   : Unresolved extern function '__cudaCDP2GetParameterBufferV2'\n"
    assert hints.log_hints(log) == [hints.device_launch("nvrtc")]
    assert hints.log_hints("ptxas fatal   : Unresolved extern function 'my_helper'\n") == []


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_with_rdc_the_device_runtime_is_linked_in(compiler):
    from cuda_magic.compile import binary, link
    from cuda_magic.compile.binary import _elf
    m = cuda_magic.build(DYNAMIC, cuda_magic.line_config(
        arch="sm_90a", compiler=compiler, **{compiler: "--use_fast_math -rdc=true"}))
    r = m.result
    assert r.format == "cubin" and "linked into one cubin by nvJitLink" in r.log
    assert link.devrt() in r.log and "-arch=sm_90a" in r.log
    # the device runtime's own kernels (32 memcpy/memset helpers) are not the cell's: never bound
    assert set(m.python_names()) == {"child", "parent"}
    assert [e.name for e in r.entries] == ["child", "parent"]
    # loadable: an executable image (ET_EXEC), the device runtime's calls resolved
    assert int.from_bytes(r.binary[16:18], "little") == 2
    secs = _elf.sections(r.binary)
    symbols = _elf.symbols(r.binary, secs, next(i for i, s in enumerate(secs) if s.type == 2))
    undefined = {s.name for s in symbols if s.shndx == 0 and s.name}
    assert not {n for n in undefined if n.startswith("__cudaCDP2")}, undefined
    assert any(e.name == "parent" for e in binary.entries(r.binary, "cubin"))


def test_relocatable_reads_every_spelling():
    from cuda_magic.compile.link import relocatable
    assert relocatable(["-rdc=true"]) and relocatable(["--relocatable-device-code=true"])
    assert relocatable(["-rdc", "true"]) and relocatable(["-dc"])
    assert not relocatable(["-rdc=false"]) and not relocatable(["-rdc=true", "-rdc=false"])
    assert not relocatable(["--use_fast_math"])


def test_a_glibc_typedef_in_a_header_from_disk_gets_a_hint_under_nvrtc():
    """``ushort`` in a header reached through -I: nvcc compiles it, NVRTC stops, and the error
    says what the name is and how to give it (naming it in the cell works)."""
    import pathlib
    inc = pathlib.Path(__file__).resolve().parents[1] / "kernels" / "include"
    cell = ('#include "packed_half.h"\n'
            'extern "C" __global__ void pack(unsigned short* y, const float* x) {\n'
            '    y[threadIdx.x] = pack_half(x[threadIdx.x]); }\n')
    assert build(cell, "nvcc", nvcc=[f"-I{inc}"]).kernels == ["pack"]
    with pytest.raises(CompileError) as info:
        build(cell, nvrtc=[f"-I{inc}"])
    assert re.search(r"packed_half\.h\(\d+\): error: identifier \"ushort\" is undefined",
                     str(info.value))
    assert ("'ushort' is glibc's typedef of unsigned short, which nvcc declares through its "
            "implicit cuda_runtime.h; under NVRTC cuda-magic supplies it when the cell or a "
            "%%cuda_header names it, not to a header read from disk (-I): name it in the cell "
            "(typedef unsigned short ushort;) before the #include") in str(info.value)
    fixed = build("typedef unsigned short ushort;\n" + cell, nvrtc=[f"-I{inc}"])
    assert fixed.kernels == ["pack"]
