"""Kernel entries read from real binaries (NVRTC cubin + PTX, nvcc fatbins), checked
against what ptxas and the PTX of the same compile say, and demangling."""

import dataclasses
import re
import struct
import sys

import pytest

from cuda_magic.compile import binary as B
from cuda_magic.compile.binary import _demangle, _fatbin
from cuda_magic.compile.backends import ToolNotFoundError, get_backend
from cuda_magic.compile.binary import (BinaryFormatError, c_type, demangle, entries,
                                       fatbin_images, split_signature)

ARCH = "sm_90a"

# Every parameter shape we marshal, kernels the source parser gets wrong (#if 0, a
# macro-made name), C++ names of every kind, and a __noinline__ device function.
SRC = r'''
#ifdef __CUDACC_RTC__
typedef struct CUtensorMap_st { alignas(128) unsigned long long opaque[16]; } CUtensorMap;
#else
#include <cuda.h>
#endif
typedef unsigned int uint;
struct S3 { char a, b, c; };
struct S12 { float x; int y; short z; };
struct alignas(16) A16 { float v[4]; };
struct alignas(32) A32 { double v[3]; };
struct __align__(8) S8 { int a; char c; };
struct Big { char b[128]; };
struct Huge { char b[20000]; };
struct E {};

__device__ __noinline__ float twice(const float* x, int i) { return x[i] * x[i + 1] + 3.0f; }

extern "C" __global__ void none() {}
extern "C" __global__ void shapes(char c, short s, int i, long long l, float f, double d, float* p,
                                  S3 s3, S12 s12, A16 a16, S8 s8, char c2, uint u, E e) {
    if (p) *p = c + s + i + l + f + d + s3.a + s12.x + a16.v[0] + s8.c + c2 + u;
}
extern "C" __global__ void aligned(char c, A32 a, short s, const __grid_constant__ CUtensorMap m,
                                   float* out) {
    out[0] = c + a.v[0] + s + (float)(size_t)&m;
}
extern "C" __global__ void grid_const(const __grid_constant__ Big b, int n, float* out) {
    out[n] = b.b[n];
}
extern "C" __global__ void huge(int n, Huge h, float* out) { out[n] = h.b[n]; }
extern "C" __global__ void scale(const float* x, float* y, float a, int n) { y[n] = twice(x, n) * a; }

namespace ns {
template <int N> __global__ void k(float* x, int n) { x[n] = N; }
template <typename T, int V> __global__ void k2(T* x, const T* y) { x[V] = y[0]; }
template <bool B> __global__ void kb(uint* x) { if (B) x[0] = 1; }
template __global__ void k<128>(float*, int);
template __global__ void k2<float, 4>(float*, const float*);
template __global__ void kb<true>(uint*);
__global__ void ov(int* x) { x[0] = 1; }
__global__ void ov(float* x, S12 s) { x[0] = s.x; }
__global__ void tma(const __grid_constant__ CUtensorMap m, float const* __restrict__ p, uint n) {}
}
#ifndef __CUDACC_RTC__
template __global__ void ns::k<256>(float*, int);   // NVRTC gets it from a name expression
#endif
namespace { __global__ void anon(int x, float* p) { p[0] = x; } }

#define KERNEL(n) extern "C" __global__ void kern_##n(float* p) { p[0] = n; }
KERNEL(7)
#if 0
extern "C" __global__ void disabled(float* p) { p[0] = 1; }
#endif

__global__ void callback(int (*fp)(int), float* p) { p[0] = fp(1); }
struct Fn { int m; __device__ int operator()(int x) const { return x * m; } };
template <typename F> __global__ void apply(F f, int* p) { p[0] = f(p[1]); }
template __global__ void apply<Fn>(Fn, int*);
'''

# name -> (signature or None, param_types or None, cubin params on sm_90a)
EXPECTED = {
    "(anonymous namespace)::anon": ("(anonymous namespace)::anon(int, float*)", ("int", "float*"),
                                    ((0, 4), (8, 8))),
    "aligned": (None, None, ((0, 1), (16, 32), (48, 2), (112, 128), (240, 8))),
    "apply<Fn>": ("void apply<Fn>(Fn, int*)", ("Fn", "int*"), ((0, 4), (8, 8))),
    "callback": ("callback(int (*)(int), float*)", ("int (*)(int)", "float*"), ((0, 8), (8, 8))),
    "grid_const": (None, None, ((0, 128), (128, 4), (136, 8))),
    "huge": (None, None, ((0, 4), (4, 20000), (20008, 8))),
    "kern_7": (None, None, ((0, 8),)),
    "none": (None, None, ()),
    "ns::k2<float, 4>": ("void ns::k2<float, 4>(float*, float const*)", ("float*", "const float*"),
                         ((0, 8), (8, 8))),
    "ns::k<128>": ("void ns::k<128>(float*, int)", ("float*", "int"), ((0, 8), (8, 4))),
    "ns::k<256>": ("void ns::k<256>(float*, int)", ("float*", "int"), ((0, 8), (8, 4))),
    "ns::kb<true>": ("void ns::kb<true>(unsigned int*)", ("unsigned int*",), ((0, 8),)),
    "ns::ov": None,   # two overloads, below
    "ns::tma": ("ns::tma(CUtensorMap_st, float const*, unsigned int)",
                ("CUtensorMap_st", "const float*", "unsigned int"), ((112, 128), (240, 8), (248, 4))),
    "scale": (None, None, ((0, 8), (8, 8), (16, 4), (20, 4))),
    "shapes": (None, None, ((0, 1), (2, 2), (4, 4), (8, 8), (16, 4), (24, 8), (32, 8), (40, 3),
                            (44, 12), (64, 16), (80, 8), (88, 1), (92, 4), (96, 1))),
}
OVERLOADS = {
    "_ZN2ns2ovEPi": ("ns::ov(int*)", ("int*",), ((0, 8),)),
    "_ZN2ns2ovEPf3S12": ("ns::ov(float*, S12)", ("float*", "S12"), ((0, 8), (8, 12))),
}
# PTX lays parameters out from offset 0; ptxas aligns them to their address in the
# constant bank (base 0x210 on sm_90a), so only the over-aligned ones move.
PTX_DIFFERS = {
    "aligned": ((0, 1), (32, 32), (64, 2), (128, 128), (256, 8)),
    "ns::tma": ((0, 128), (128, 8), (136, 4)),
}


def _ptxas_entries(log):
    return set(re.findall(r"Compiling entry function '([^']+)'", log))


def _ptx_funcs(ptx):
    return set(re.findall(r"\.func\s+(?:\([^)]*\)\s*)?([\w$]+)\s*\(", ptx))


@pytest.fixture(scope="module")
def nvrtc_out():
    b = get_backend("nvrtc")
    return b.compile(SRC, arch=ARCH, target_format="cubin", flags=[],
                     ptxas=b.forward_ptxas(["-v"]), name_expressions=["ns::k<256>"])


@pytest.fixture(scope="module")
def nvcc_fatbins():
    """Two archs, nvcc's default compression, then everything compressed."""
    b = get_backend("nvcc")
    two = ["-gencode=arch=compute_80,code=sm_80"]
    try:
        plain = b.compile(SRC, arch=ARCH, target_format="fatbin", flags=two,
                          ptxas=b.forward_ptxas(["-v"]))
    except ToolNotFoundError as e:
        pytest.skip(str(e))
    packed = b.compile(SRC, arch=ARCH, target_format="fatbin", flags=[*two, "-Xfatbin=-compress-all"],
                       ptxas=[])
    return plain, packed


def _have_cuobjdump():
    try:
        return bool(_fatbin._find_cuobjdump())
    except Exception:
        return False


def _anon(found):
    """Anonymous namespaces mangle with a per-compile hash: compare them without it."""
    return [dataclasses.replace(e, symbol="<anon>") if "anonymous" in e.name else e for e in found]


def _by_name(found):
    return {e.name: e for e in found if e.name != "ns::ov"}


def _check_expected(found, params=True):
    names = [e.name for e in found]
    assert names == sorted(names)                        # stable order: by name, then symbol
    assert sorted(set(names)) == sorted(EXPECTED)
    for e in found:
        want = OVERLOADS[e.symbol] if e.name == "ns::ov" else EXPECTED[e.name]
        assert (e.signature, e.param_types) == want[:2], e
        if params:
            assert e.params == want[2], e
        if want[0] is None:
            assert e.symbol == e.name                     # extern "C": the symbol is the name
        else:
            assert e.symbol.startswith("_Z")


def test_cubin_entries_match_ptxas_and_ptx(nvrtc_out):
    found = entries(nvrtc_out.binary, "cubin")
    _check_expected(found)
    syms = {e.symbol for e in found}
    assert len(found) == len(syms) == len(EXPECTED) + 1  # the two overloads
    # exactly the entries ptxas compiled and the PTX declares
    assert syms == _ptxas_entries(nvrtc_out.log)
    ptx = entries(nvrtc_out.ptx, "ptx")
    assert [e.symbol for e in ptx] == [e.symbol for e in found]
    # a kernel behind #if 0 is absent, one named by a macro present
    assert "disabled" not in syms and "kern_7" in syms
    assert "_ZN2ns3tmaE14CUtensorMap_stPKfj" in syms      # CUtensorMap mangles as its struct tag
    # the __noinline__ device function exists as a function but is no entry
    assert "_Z5twicePKfi" in _ptx_funcs(nvrtc_out.ptx)
    assert "_Z5twicePKfi" in nvrtc_out.log and not any("twice" in s for s in syms)
    # cubin vs PTX of the same compile: same sizes; same offsets unless over-aligned
    for c, p in zip(found, ptx):
        assert (c.name, c.signature, c.param_types) == (p.name, p.signature, p.param_types)
        assert [s for _, s in c.params] == [s for _, s in p.params], c.name
        assert p.params == PTX_DIFFERS.get(c.name, c.params), c.name


def test_ptx_entries(nvrtc_out):
    found = entries(nvrtc_out.ptx.encode(), "ptx")
    assert found == entries(nvrtc_out.ptx, "ptx")        # bytes or text
    _check_expected(found, params=False)
    by = _by_name(found)
    assert by["shapes"].params == EXPECTED["shapes"][2]
    assert by["aligned"].params == PTX_DIFFERS["aligned"]
    assert by["none"].params == ()
    # .func, comments and .param inside bodies are not entries or parameters
    ptx = ".version 8.0\n.target sm_90\n// .entry fake(\n" \
          ".visible .func (.param .b32 r) f(.param .b32 a)\n{ ret; }\n" \
          ".weak .entry w(\n\t.param .u64 .ptr .global .align 16 w_param_0,\n" \
          "\t.param .align 8 .b8 w_param_1[24],\n\t.param .f16 w_param_2\n)\n" \
          "{ .param .b32 param0; ret; }\n.entry bare\n{ ret; }\n"
    assert [(e.symbol, e.params) for e in entries(ptx, "ptx")] == [
        ("bare", ()), ("w", ((0, 8), (8, 24), (32, 2)))]


def test_cubin_entry_mark_is_st_other_not_sections():
    """Under -rdc a device function gets its own .text and .nv.info sections; still no entry."""
    b = get_backend("nvrtc")
    out = b.compile(r'''
        __device__ __noinline__ float helper(float* x, int i) { return x[i] * x[i + 1]; }
        extern "C" __global__ void kk(float* x, int n) { x[n] = helper(x, n); }''',
        arch=ARCH, target_format="cubin", flags=["--relocatable-device-code=true"], ptxas=[])
    assert b"\0.nv.info._Z6helperPfi\0" in out.binary and b"\0.text._Z6helperPfi\0" in out.binary
    assert entries(out.binary, "cubin") == (B.Entry("kk", "kk", None, None, ((0, 8), (8, 4))),)


def test_nvcc_fatbin(nvrtc_out, nvcc_fatbins):
    plain, packed = nvcc_fatbins
    # nvcc 13 compresses the PTX images by default, not the SASS ones
    images = fatbin_images(plain.binary)
    assert {(i.arch, i.compressed) for i in images if i.kind == "elf"} == {("sm_90a", False),
                                                                           ("sm_80", False)}
    assert all(i.compressed for i in images if i.kind == "ptx")
    assert all(i.compressed for i in fatbin_images(packed.binary))
    found = entries(plain.binary, "fatbin", arch=ARCH)
    _check_expected(found)
    assert {e.symbol for e in found} == _ptxas_entries(plain.log)
    cubin = entries(nvrtc_out.binary, "cubin")
    assert _anon(found) == _anon(cubin)                  # nvcc and NVRTC: one ABI
    assert entries(plain.binary, "fatbin") == found       # highest arch wins the merge
    # sm_80 puts parameters at 0x160 in its constant bank: the over-aligned ones move
    sm80 = _by_name(entries(plain.binary, "fatbin", arch="sm_80"))
    assert sm80["aligned"].params == ((0, 1), (32, 32), (64, 2), (160, 128), (288, 8))
    assert sm80["shapes"].params == EXPECTED["shapes"][2]
    # compressed SASS images are read through cuobjdump; the answer is the same
    if _have_cuobjdump():
        assert _anon(entries(packed.binary, "fatbin", arch=ARCH)) == _anon(found)
        assert _anon(entries(packed.binary, "fatbin", arch="sm_80")) == \
            _anon(entries(plain.binary, "fatbin", arch="sm_80"))


def test_nvcc_fatbin_of_ptx_only():
    """A fatbin with no SASS (compressed PTX only): the PTX's entries, via cuobjdump."""
    if not _have_cuobjdump():
        pytest.skip("cuobjdump is not installed")
    b = get_backend("nvcc")
    try:
        out = b.compile('extern "C" __global__ void f(char c, double* d) { d[0] = c; }\n'
                        "__global__ void g(const __grid_constant__ int4 v) {}\n",
                        arch="compute_90a", target_format="fatbin", flags=[], ptxas=[])
    except ToolNotFoundError as e:
        pytest.skip(str(e))
    images = fatbin_images(out.binary)
    assert images and all(i.kind == "ptx" and i.compressed for i in images)
    assert [(e.symbol, e.name, e.param_types, e.params) for e in entries(out.binary, "fatbin")] == [
        ("f", "f", None, ((0, 1), (8, 8))), ("_Z1g4int4", "g", ("int4",), ((0, 16),))]


def test_demangle():
    syms = ["_ZN2ns1kILi256EEEvPfi", "_ZN2ns2k2IfLi4EEEvPT_PKS1_", "_ZN2ns2kbILb1EEEvPj",
            "_ZN2ns3tmaE14CUtensorMap_stPKfj", "_Z5applyIZ6launchPiEUliE_EvT_S0_",
            "_ZN12_GLOBAL__N_14anonEiPf", "_Z1kIN3foo3barIiLi3EEEEvPFvPiEPKf",
            "scale", "_Zbogus", "_Z"]
    got = demangle(syms)
    assert list(got) == syms
    assert got == {
        "_ZN2ns1kILi256EEEvPfi": "void ns::k<256>(float*, int)",
        "_ZN2ns2k2IfLi4EEEvPT_PKS1_": "void ns::k2<float, 4>(float*, float const*)",
        "_ZN2ns2kbILb1EEEvPj": "void ns::kb<true>(unsigned int*)",
        "_ZN2ns3tmaE14CUtensorMap_stPKfj": "ns::tma(CUtensorMap_st, float const*, unsigned int)",
        "_Z5applyIZ6launchPiEUliE_EvT_S0_":
            "void apply<launch(int*)::{lambda(int)#1}>(launch(int*)::{lambda(int)#1}, int*)",
        "_ZN12_GLOBAL__N_14anonEiPf": "(anonymous namespace)::anon(int, float*)",
        "_Z1kIN3foo3barIiLi3EEEEvPFvPiEPKf":
            "void k<foo::bar<int, 3> >(void (*)(int*), float const*)",
        "scale": "scale", "_Zbogus": "_Zbogus", "_Z": "_Z"}
    assert demangle(reversed(syms)) == got                # cached, same answers
    if sys.platform == "linux":     # in-process, found by soname (no ldconfig run), no tool
        assert _demangle._cxa_demangle() is not None
    # without libstdc++: GNU c++filt prints the same; cu++filt (EDG style) comes last
    tools = {path.rsplit("/", 1)[-1]: path for path in _demangle._filt_tools()}
    _demangle._CACHE.clear()
    real = _demangle._cxa_demangle
    try:
        _demangle._cxa_demangle = lambda: None
        assert demangle(syms) == (got if "c++filt" in tools else
                                  _demangle._demangle_tool(syms, tools.get("cu++filt")))
    finally:
        _demangle._cxa_demangle = real
        _demangle._CACHE.clear()
    if "cu++filt" in tools:
        edg = _demangle._demangle_tool(syms, tools["cu++filt"])
        assert edg["_ZN2ns1kILi256EEEvPfi"] == "void ns::k<(int)256>(float *, int)"
        assert split_signature(edg["_ZN2ns3tmaE14CUtensorMap_stPKfj"])[1] == \
            ("CUtensorMap_st", "const float *", "unsigned int")
    assert _demangle._demangle_tool(syms, "/nonexistent/c++filt") == {s: s for s in syms}


def test_split_signature_and_c_type():
    lam = demangle(["_Z5applyIZ6launchPiEUliE_EvT_S0_"])["_Z5applyIZ6launchPiEUliE_EvT_S0_"]
    cases = {
        "void ns::k<256>(float*, int)": ("ns::k<256>", ("float*", "int")),
        "ns::ov(float*, S12)": ("ns::ov", ("float*", "S12")),
        "(anonymous namespace)::anon(int, float*)": ("(anonymous namespace)::anon", ("int", "float*")),
        "void k<foo::bar<int, 3> >(void (*)(int*), float const*)":
            ("k<foo::bar<int, 3> >", ("void (*)(int*)", "float const*")),
        "void ns::m<float, 4, true>(ns::P<int, ns::Q<char, 2> >, int (*)(int, float))":
            ("ns::m<float, 4, true>", ("ns::P<int, ns::Q<char, 2> >", "int (*)(int, float)")),
        lam: ("apply<launch(int*)::{lambda(int)#1}>", ("launch(int*)::{lambda(int)#1}", "int*")),
        "void t<(anonymous namespace)::Lo>((anonymous namespace)::Lo, int*)":
            ("t<(anonymous namespace)::Lo>", ("(anonymous namespace)::Lo", "int*")),
        "none()": ("none", ()), "f(void)": ("f", ()), "scale": ("scale", ()),
    }
    for text, want in cases.items():
        assert split_signature(text) == want, text
    types = {
        "float const*": "const float*", "unsigned int const*": "const unsigned int*",
        "char const* const*": "const char* const*", "float* const": "float* const",
        "ns::P<int, ns::Q<char, 2> > const*": "const ns::P<int, ns::Q<char, 2>>*",
        "float volatile*": "volatile float*", "int const volatile*": "const volatile int*",
        "void (*)(int const*)": "void (*)(int const*)", "CUtensorMap_st": "CUtensorMap_st",
        "unsigned long long": "unsigned long long", "float const&": "const float&",
        "const float *": "const float*", "T1 *": "T1*",      # cu++filt's spacing
    }
    for text, want in types.items():
        assert c_type(text) == want, text


def test_entry_normalises_names(nvrtc_out):
    by = _by_name(entries(nvrtc_out.binary, "cubin"))
    assert by["ns::k2<float, 4>"].param_types[1] == "const float*"      # signature keeps the demangler's
    assert by["ns::k2<float, 4>"].signature.endswith("(float*, float const*)")


def test_bad_input(nvrtc_out):
    cubin = nvrtc_out.binary
    with pytest.raises(BinaryFormatError, match="expected a fatbin, got a cubin"):
        entries(cubin, "fatbin")
    with pytest.raises(BinaryFormatError, match="not an ELF"):
        entries(b"garbage!" * 8, "cubin")
    with pytest.raises(BinaryFormatError, match="malformed|truncated"):
        entries(cubin[:cubin.index(b".nv.info") // 2] + b"\0" * 64, "cubin")
    with pytest.raises(BinaryFormatError, match="truncated fatbin"):
        entries(struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 64) + bytes(64), "fatbin")
    with pytest.raises(BinaryFormatError, match="PTX"):
        entries(b"\x7fELF not ptx", "ptx")
    with pytest.raises(BinaryFormatError, match="bytes"):
        entries(nvrtc_out.ptx, "cubin")
    with pytest.raises(ValueError, match="fmt must be one of"):
        entries(cubin, "sass")


@pytest.mark.gpu
def test_params_match_the_driver():
    """cuFuncGetParamInfo (the driver's reading) agrees with the cubin; for PTX it JITs,
    sizes agree and offsets too unless a parameter is aligned beyond 16 bytes."""
    from cuda.bindings import driver as cu
    from cuda_magic import detect_arch
    b = get_backend("nvrtc")
    out = b.compile(SRC, arch=detect_arch(), target_format="cubin", flags=[], ptxas=[],
                    name_expressions=["ns::k<256>"])

    def check(ret):
        assert int(ret[0]) == 0, ret[0]
        return ret[1] if len(ret) > 1 else None

    check(cu.cuInit(0))
    dev = check(cu.cuDeviceGet(0))
    check(cu.cuCtxSetCurrent(check(cu.cuDevicePrimaryCtxRetain(dev))))
    try:
        for image, fmt in ((out.binary, "cubin"), (out.ptx.encode() + b"\0", "ptx")):
            err, mod = cu.cuModuleLoadData(image)
            if fmt == "ptx" and err == cu.CUresult.CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
                continue                                  # a driver older than this NVRTC
            assert int(err) == 0, err
            try:
                found = entries(out.binary, "cubin") if fmt == "cubin" else entries(out.ptx, "ptx")
                assert len(found) == len(EXPECTED) + 1
                for e in found:
                    fn = check(cu.cuModuleGetFunction(mod, e.symbol.encode()))
                    got = []
                    while int((ret := cu.cuFuncGetParamInfo(fn, len(got)))[0]) == 0:
                        got.append((int(ret[1]), int(ret[2])))
                    assert [s for _, s in got] == [s for _, s in e.params], (fmt, e.name)
                    if fmt == "cubin" or e.name not in PTX_DIFFERS:
                        assert tuple(got) == e.params, (fmt, e.name)
            finally:
                check(cu.cuModuleUnload(mod))
    finally:
        cu.cuDevicePrimaryCtxRelease(dev)


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_cubs_empty_kernel_is_never_an_entry(compiler):
    """CCCL 3.0's <cub/cub.cuh> instantiates cub::detail::EmptyKernel<void> (in CUB's versioned
    inline namespace) under nvcc; it is not the cell's kernel: not an entry, not bound.  A kernel
    of the same name elsewhere still is."""
    src = r"""
namespace cub { inline namespace CUB_300001_SM_900 { namespace detail {
template <class T> __global__ void EmptyKernel() {}
template __global__ void EmptyKernel<void>();
} } }
namespace mine { template <class T> __global__ void EmptyKernel() {}
template __global__ void EmptyKernel<void>(); }
extern "C" __global__ void k(float* x) { x[0] = 1.f; }
"""
    out = get_backend(compiler).compile(src, arch="sm_90", target_format="cubin", flags=["-std=c++17"],
                                        ptxas=[])
    symbols = {e.symbol for e in entries(out.binary, "cubin")}
    assert symbols == {"k", "_ZN4mine11EmptyKernelIvEEvv"}
    assert set(B.kernel_code(out.binary)) == symbols
