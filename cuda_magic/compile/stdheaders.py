"""C and C++ standard headers for device code under NVRTC, supplied in memory.

NVRTC has no standard library on its include path: ``#include <cstdio>`` stops
with "catastrophic error: cannot open source file".  :data:`HEADERS` maps
include names to header text that is handed to NVRTC as in-memory headers
(``nvrtcCreateProgram``'s ``headers``); nothing is written to disk and nothing
comes from glibc.  nvcc keeps the real toolkit and glibc headers.

The headers are built on two things NVRTC already has:

- its builtins: ``printf``, ``malloc``/``free``, ``memcpy``/``memset``,
  ``__assertfail`` (what nvcc's device ``assert`` calls), the CUDA math
  functions in the global namespace (``sqrtf``, ``sqrt(float)``, ``isnan``...),
  ``size_t``/``ptrdiff_t``/``NULL``, placement new, ``std::initializer_list``,
  ``std::move``/``std::forward`` and ``std::align_val_t``;
- libcu++ (``<cuda/std/...>`` from the CCCL headers) for the rest, except for
  :data:`THIN` (``<utility>``, ``<tuple>``, ``<array>``, ``<functional>``,
  ``<algorithm>``): cuda-magic's own code in ``thin/`` on libcu++'s
  ``<cuda/std/type_traits>`` alone, since libcu++'s own headers for them cost every
  compile 2-3 times a bare kernel's, even from a precompiled header.

Meaning is that of nvcc with g++ on x86-64 Linux (glibc, ``_GNU_SOURCE``); the
tests compile the same source with both compilers to pin it:

- ``int64_t`` is ``long`` (glibc), not ``long long`` as libcu++ has it under
  NVRTC.  ``cuda/std/cstdint`` is supplied too, replacing libcu++'s (same
  guard, same names, glibc's types), so CUB, CUTLASS and the cell agree
  whatever the include order -- when :data:`HEADERS` is passed whole.  Each
  header built on libcu++ also starts with that replacement, so a cell that
  includes one of them before any other libcu++ header gets glibc's types even
  if only the headers it names are passed (if CUB comes first, it is libcu++'s
  ``long long`` throughout: consistent, but not nvcc's).
- Limit macros have glibc's values *and* types (``LONG_MAX`` is a ``long``).
- ``std::`` names are per-name using-declarations, never ``using namespace``:
  C library names come from the global functions (``std::sqrt`` *is*
  ``::sqrt``, as in libstdc++), the rest from ``cuda::std`` (``std::is_same`` is
  ``cuda::std::is_same``) or the thin headers (``std::pair``, ``std::tuple``,
  ``std::array``, ``std::min``, ``std::hash`` are ``std``'s own, as under nvcc).
  So ``using namespace std; sqrt(x)`` is not ambiguous.
  ``std::tuple_size``/``std::tuple_element`` (libcu++'s own ``std`` templates),
  ``std::numeric_limits`` (derived from ``cuda::std``'s) and the thin headers'
  templates are real ``std`` templates, so code can specialise them; the other
  ``std`` templates are ``cuda::std``'s and cannot be specialised as ``std::`` ones.
- ``assert`` calls ``__assertfail`` like nvcc's device assert (expression,
  file, line, function) and follows ``NDEBUG`` at each inclusion, which is why
  the ``assert`` macro sits after ``<cassert>``'s include guard.
- ``NULL`` is ``0L`` (g++'s ``__null`` is a ``long``; NVRTC's own is ``0``),
  ``offsetof`` is ``__builtin_offsetof`` where NVRTC has it (13.5 does, 13.0
  not: there libcu++'s, which is no constant expression) and ``max_align_t``
  has g++'s 32-byte layout.
- No ``long double`` limits (``LDBL_*``): device code has no ``long double``.
- Macro-only headers (``<cstdint>``, ``<climits>``, ``<cfloat>``,
  ``<cinttypes>``, ``<cstdio>``, ``<cassert>``, ``<ctime>``, ``<cuda.h>``) also
  work below C++17; the rest need C++17, as libcu++ 3 does.

Every header is self-contained (no header here includes another one here), so
any subset of :data:`HEADERS` can be passed.  ``<stdint.h>`` and ``<cstdint>``
(and the other C/C++ pairs) share one text and one guard, and both put the
names in the global namespace and in ``std``.

:func:`missing_hint` says how to get an ``#include`` NVRTC could not find.
"""

from __future__ import annotations

import os
import re
from types import MappingProxyType
from typing import Iterable, Mapping

__all__ = ["HEADERS", "IMPLICIT", "implicit", "missing_hint", "log_hints", "with_glibc_int_types"]

_STD = "::cuda::std::"


def _w(text: str) -> list[str]:
    return text.split()


def _guard(name: str) -> str:
    return "_CUDA_MAGIC_" + "".join(c if c.isalnum() else "_" for c in name.upper()) + "_"


def _guarded(guard: str, body: str) -> str:
    return f"#ifndef {guard}\n#define {guard}\n{body.strip()}\n#endif // {guard}\n"


# Names libcu++ gained after CCCL 3.0 (CUDA 13.0's): declared only where the CCCL has them, so
# the supplied headers work with every CCCL a CUDA 13 toolkit ships (3.0 ... 3.5).
SINCE = dict.fromkeys("strlen strcpy strncpy strcmp strncmp strchr strrchr".split(),
                      "CCCL_VERSION >= 3001000")


def _using(names: Iterable[str], src: str = "::", into: str | None = "std") -> str:
    """``using <src>name;`` for each name, inside ``namespace <into>`` (None: global)."""
    lines = "\n".join(f"#if {SINCE[n]}\nusing {src}{n};\n#endif" if n in SINCE else
                      f"using {src}{n};" for n in names)
    return f"namespace {into} {{\n{lines}\n}}\n" if into else lines + "\n"


def _defines(table: str) -> str:
    """``#undef``/``#define`` for each ``NAME value`` line (the value may hold spaces)."""
    out = []
    for line in table.strip().splitlines():
        name, value = line.split(None, 1)
        out.append(f"#undef {name.split('(')[0]}\n#define {name} {value}")
    return "\n".join(out) + "\n"


# --- <cstdint>: glibc's x86-64 types and macros ---------------------------------

_INT_TYPES = [line.split(None, 1) for line in """
int8_t signed char
int16_t short
int32_t int
int64_t long
uint8_t unsigned char
uint16_t unsigned short
uint32_t unsigned int
uint64_t unsigned long
int_least8_t signed char
int_least16_t short
int_least32_t int
int_least64_t long
uint_least8_t unsigned char
uint_least16_t unsigned short
uint_least32_t unsigned int
uint_least64_t unsigned long
int_fast8_t signed char
int_fast16_t long
int_fast32_t long
int_fast64_t long
uint_fast8_t unsigned char
uint_fast16_t unsigned long
uint_fast32_t unsigned long
uint_fast64_t unsigned long
intptr_t long
uintptr_t unsigned long
intmax_t long
uintmax_t unsigned long
""".strip().splitlines()]
_INT_NAMES = [n for n, _ in _INT_TYPES]


def _int_limits() -> str:
    lmin, lmax, ulmax = "(-9223372036854775807L-1)", "(9223372036854775807L)", "(18446744073709551615UL)"
    mins = {8: "(-128)", 16: "(-32767-1)", 32: "(-2147483647-1)", 64: lmin}
    maxs = {8: "(127)", 16: "(32767)", 32: "(2147483647)", 64: lmax}
    umaxs = {8: "(255)", 16: "(65535)", 32: "(4294967295U)", 64: ulmax}
    rows = []
    for kind in ("", "LEAST", "FAST"):
        for bits in (8, 16, 32, 64):
            wide = 64 if kind == "FAST" and bits > 8 else bits  # glibc: fast16/32 are long
            tag = f"_{kind}" if kind else ""
            rows += [f"INT{tag}{bits}_MIN {mins[wide]}", f"INT{tag}{bits}_MAX {maxs[wide]}",
                     f"UINT{tag}{bits}_MAX {umaxs[wide]}"]
    rows += [f"INTPTR_MIN {lmin}", f"INTPTR_MAX {lmax}", f"UINTPTR_MAX {ulmax}",
             f"INTMAX_MIN {lmin}", f"INTMAX_MAX {lmax}", f"UINTMAX_MAX {ulmax}",
             f"PTRDIFF_MIN {lmin}", f"PTRDIFF_MAX {lmax}", f"SIZE_MAX {ulmax}",
             "SIG_ATOMIC_MIN (-2147483647-1)", "SIG_ATOMIC_MAX (2147483647)",
             "WCHAR_MIN (-0x7fffffff - 1)", "WCHAR_MAX 0x7fffffff",
             "WINT_MIN (0u)", "WINT_MAX (4294967295u)",
             "INT8_C(c) c", "INT16_C(c) c", "INT32_C(c) c", "INT64_C(c) c ## L",
             "UINT8_C(c) c", "UINT16_C(c) c", "UINT32_C(c) c ## U", "UINT64_C(c) c ## UL",
             "INTMAX_C(c) c ## L", "UINTMAX_C(c) c ## UL"]
    return _defines("\n".join(rows))


# libcu++'s <cuda/std/cstdint> declares the global int types itself (as long long
# under NVRTC); this replaces it: the same guard and names, glibc's types.
# Below C++17 (which libcu++ 3 needs) it declares the global names only.
_CUDA_STD_CSTDINT_BODY = (
    "#ifndef _CUDA_STD_CSTDINT\n#define _CUDA_STD_CSTDINT\n#if __cplusplus >= 201703L\n"
    "#include <cuda/std/detail/__config>\n#include <cuda/std/version>\n#include <cuda/std/climits>\n"
    "#endif\n"
    + "".join(f"typedef {t} {n};\n" for n, t in _INT_TYPES)
    + _int_limits()
    + "#if __cplusplus >= 201703L\nnamespace cuda { namespace std {\n"
    # in libcu++'s versioned namespace, where CCCL 3.0 looks (_CUDA_VSTD is cuda::std::__4)
    "#ifdef _LIBCUDACXX_ABI_NAMESPACE\ninline namespace _LIBCUDACXX_ABI_NAMESPACE {\n#endif\n"
    + _using(_INT_NAMES, into=None)
    + "#if defined(_CCCL_HAS_INT128)\n#if _CCCL_HAS_INT128()\n#define _CUDA_MAGIC_INTMAX128_\n#endif\n#endif\n"
      "#ifdef _CUDA_MAGIC_INTMAX128_\n"
      "using __cccl_intmax_t = __int128_t;\nusing __cccl_uintmax_t = __uint128_t;\n#else\n"
      "using __cccl_intmax_t = long long;\nusing __cccl_uintmax_t = unsigned long long;\n#endif\n"
      "#ifdef _LIBCUDACXX_ABI_NAMESPACE\n}\n#endif\n} }\n#endif\n#endif // _CUDA_STD_CSTDINT\n")
_LIBCU = _CUDA_STD_CSTDINT_BODY  # starts each header built on libcu++
_NULL = _defines("NULL 0L")  # g++'s __null is a long; NVRTC's own NULL is an int 0
# What every libstdc++ header declares (bits/c++config.h); starts every header here.
_BASICS = _guarded("_CUDA_MAGIC_STD_BASICS_", """
namespace std {
typedef ::size_t size_t;
typedef ::ptrdiff_t ptrdiff_t;
typedef decltype(nullptr) nullptr_t;
}
""")

# (built on, body, tail after the guard), by C++ name
_SPECS: dict[str, tuple[str, str, str]] = {}


def _block(name: str) -> str:
    """Header ``name``'s guarded body, to embed in another header."""
    return _guarded(_guard(name), _BASICS + _SPECS[name][1])


_SPECS["cstdint"] = ("libcu++ <cuda/std/cstdint> (glibc's types)",
                     _LIBCU + _using(_INT_NAMES), "")

# glibc's <inttypes.h> printf macros for x86-64 (64-bit and fast16/32/64 are long)
_PRI = "\n".join(
    f"PRI{c}{kind}{bits} \"{'l' if bits == 64 or (kind == 'FAST' and bits > 8) else ''}{c}\""
    for c in "diouxX" for kind in ("", "LEAST", "FAST") for bits in (8, 16, 32, 64)
) + "\n" + "\n".join(f"PRI{c}{k} \"l{c}\"" for c in "diouxX" for k in ("MAX", "PTR"))
_SPECS["cinttypes"] = ("<cstdint> (glibc's printf format macros)",
                       _block("cstdint") + _defines(_PRI), "")

# --- <cstddef>, <climits>, <cfloat> ---------------------------------------------

_SPECS["cstddef"] = ("NVRTC's size_t/ptrdiff_t/NULL and libcu++ <cuda/std/cstddef>", _LIBCU + """
#include <cuda/std/cstddef>
""" + _NULL + """#if defined(__has_builtin)
#if __has_builtin(__builtin_offsetof)
#undef offsetof
#define offsetof(TYPE, MEMBER) __builtin_offsetof(TYPE, MEMBER)
#endif
#endif
typedef decltype(nullptr) nullptr_t;
typedef struct {  // g++'s layout (libcu++'s is a plain long double: 16 bytes, not 32)
  alignas(alignof(long long)) long long __max_align_ll;
  alignas(alignof(long double)) long double __max_align_ld;
} max_align_t;
""" + _using(["max_align_t"]) + _using(["byte", "to_integer"], _STD), "")

# <climits> and <cfloat> are macros only; libcu++'s are included first (C++17 and up,
# as libcu++ 3 needs) so that they cannot redefine these later.
_SPECS["climits"] = ("glibc's values and types (over libcu++ <cuda/std/climits>)",
                     "#if __cplusplus >= 201703L\n#include <cuda/std/climits>\n#endif\n" + _defines("""
CHAR_BIT 8
MB_LEN_MAX 16
SCHAR_MIN (-SCHAR_MAX - 1)
SCHAR_MAX 0x7f
UCHAR_MAX (SCHAR_MAX * 2 + 1)
CHAR_MIN SCHAR_MIN
CHAR_MAX SCHAR_MAX
SHRT_MIN (-SHRT_MAX - 1)
SHRT_MAX 0x7fff
USHRT_MAX (SHRT_MAX * 2 + 1)
INT_MIN (-INT_MAX - 1)
INT_MAX 0x7fffffff
UINT_MAX (INT_MAX * 2U + 1U)
LONG_MIN (-LONG_MAX - 1L)
LONG_MAX 0x7fffffffffffffffL
ULONG_MAX (LONG_MAX * 2UL + 1UL)
LLONG_MIN (-LLONG_MAX - 1LL)
LLONG_MAX 0x7fffffffffffffffLL
ULLONG_MAX (LLONG_MAX * 2ULL + 1ULL)
LONG_LONG_MIN (-LONG_LONG_MAX - 1LL)
LONG_LONG_MAX 0x7fffffffffffffffLL
ULONG_LONG_MAX (LONG_LONG_MAX * 2ULL + 1ULL)
SSIZE_MAX LONG_MAX
CHAR_WIDTH 8
SCHAR_WIDTH 8
UCHAR_WIDTH 8
SHRT_WIDTH 16
USHRT_WIDTH 16
INT_WIDTH 32
UINT_WIDTH 32
LONG_WIDTH 64
ULONG_WIDTH 64
LLONG_WIDTH 64
ULLONG_WIDTH 64
"""), "")

_SPECS["cfloat"] = ("g++'s x86-64 values (over libcu++ <cuda/std/cfloat>)",
                    "#if __cplusplus >= 201703L\n#include <cuda/std/cfloat>\n#endif\n" + _defines("""
FLT_RADIX 2
FLT_MANT_DIG 24
DBL_MANT_DIG 53
FLT_DIG 6
DBL_DIG 15
FLT_MIN_EXP (-125)
DBL_MIN_EXP (-1021)
FLT_MIN_10_EXP (-37)
DBL_MIN_10_EXP (-307)
FLT_MAX_EXP 128
DBL_MAX_EXP 1024
FLT_MAX_10_EXP 38
DBL_MAX_10_EXP 308
FLT_MAX 3.40282346638528859811704183484516925e+38F
DBL_MAX 1.79769313486231570814527423731704357e+308
FLT_EPSILON 1.19209289550781250000000000000000000e-7F
DBL_EPSILON 2.22044604925031308084726333618164062e-16
FLT_MIN 1.17549435082228750796873653722224568e-38F
DBL_MIN 2.22507385850720138309023271733240406e-308
FLT_ROUNDS 1
FLT_EVAL_METHOD 0
DECIMAL_DIG 21
""") + "#if __cplusplus >= 201703L\n" + _defines("""
FLT_DECIMAL_DIG 9
DBL_DECIMAL_DIG 17
FLT_TRUE_MIN 1.40129846432481707092372958328991613e-45F
DBL_TRUE_MIN 4.94065645841246544176568792868221372e-324
FLT_HAS_SUBNORM 1
DBL_HAS_SUBNORM 1
""") + "#endif\n", "")

# --- <cmath> ----------------------------------------------------------------------

# C math names NVRTC declares in the global namespace (the CUDA math API); std::X
# is ::X for these, as libstdc++'s <cmath> has ``using ::X``.
_MATH_GLOBAL = _w("""
abs acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh erf erfc exp exp2
expm1 fabs fdim floor fma fmax fmin fmod frexp hypot ilogb ldexp lgamma llrint llround log
log10 log1p log2 logb lrint lround modf nan nearbyint nextafter pow remainder remquo rint
round scalbln scalbn sin sinh sqrt tan tanh tgamma trunc isfinite isinf isnan signbit
acosf asinf atanf atan2f cosf sinf tanf coshf sinhf tanhf expf exp2f expm1f logf log10f
log1pf log2f logbf powf sqrtf cbrtf hypotf erff erfcf lgammaf tgammaf ceilf floorf fmodf
truncf roundf lroundf llroundf rintf lrintf llrintf nearbyintf remainderf remquof copysignf
nanf nextafterf fdimf fmaxf fminf fmaf fabsf frexpf ldexpf modff scalbnf scalblnf ilogbf
acoshf asinhf atanhf
""")
# ... and the ones it lacks, from libcu++ (glibc's <math.h> has them globally too)
_MATH_CUDA_STD = _w("fpclassify isnormal isgreater isgreaterequal isless islessequal "
                    "islessgreater isunordered")

# glibc's M_* constants (with _GNU_SOURCE, also as float "f" and long double "l")
_M = [("E", "2.718281828459045235360287471352662498"),
      ("LOG2E", "1.442695040888963407359924681001892137"),
      ("LOG10E", "0.434294481903251827651128918916605082"),
      ("LN2", "0.693147180559945309417232121458176568"),
      ("LN10", "2.302585092994045684017991454684364208"),
      ("PI", "3.141592653589793238462643383279502884"),
      ("PI_2", "1.570796326794896619231321691639751442"),
      ("PI_4", "0.785398163397448309615660845819875721"),
      ("1_PI", "0.318309886183790671537767526745028724"),
      ("2_PI", "0.636619772367581343075535053490057448"),
      ("2_SQRTPI", "1.128379167095512573896158903121545172"),
      ("SQRT2", "1.414213562373095048801688724209698079"),
      ("SQRT1_2", "0.707106781186547524400844362104849039")]

# fpclassify & co.: NVRTC has no __builtin_fpclassify/__builtin_isgreater..., so they are written
# here on __builtin_bit_cast (constexpr), for float, double, integers (as double, as libstdc++)
# and mixed arguments (promoted as libstdc++'s __promote_2: float only if both are float).
_CLASSIFY = r"""
namespace __cuda_magic_math {
template <class _Tp> struct __int { static constexpr bool value = false; };
#define _CUDA_MAGIC_INT_(T) template <> struct __int<T> { static constexpr bool value = true; };
_CUDA_MAGIC_INT_(bool) _CUDA_MAGIC_INT_(char) _CUDA_MAGIC_INT_(signed char)
_CUDA_MAGIC_INT_(unsigned char) _CUDA_MAGIC_INT_(wchar_t) _CUDA_MAGIC_INT_(char16_t)
_CUDA_MAGIC_INT_(char32_t) _CUDA_MAGIC_INT_(short) _CUDA_MAGIC_INT_(unsigned short)
_CUDA_MAGIC_INT_(int) _CUDA_MAGIC_INT_(unsigned) _CUDA_MAGIC_INT_(long)
_CUDA_MAGIC_INT_(unsigned long) _CUDA_MAGIC_INT_(long long) _CUDA_MAGIC_INT_(unsigned long long)
#undef _CUDA_MAGIC_INT_
template <bool, class _Tp = void> struct __if {};
template <class _Tp> struct __if<true, _Tp> { typedef _Tp type; };
template <class _Tp> struct __arith { static constexpr bool value = __int<_Tp>::value; };
template <> struct __arith<float> { static constexpr bool value = true; };
template <> struct __arith<double> { static constexpr bool value = true; };
template <class _Ap, class _Bp> struct __promote { typedef double type; };
template <> struct __promote<float, float> { typedef float type; };
__host__ __device__ constexpr int __classify(unsigned long long __m, unsigned long long __min,
                                             unsigned long long __inf) {
  return __m == 0 ? FP_ZERO : __m < __min ? FP_SUBNORMAL : __m < __inf ? FP_NORMAL
       : __m == __inf ? FP_INFINITE : FP_NAN;
}
}
__host__ __device__ constexpr int fpclassify(float __x) {
  return __cuda_magic_math::__classify(__builtin_bit_cast(unsigned, __x) & 0x7fffffffu,
                                       0x00800000u, 0x7f800000u);
}
__host__ __device__ constexpr int fpclassify(double __x) {
  return __cuda_magic_math::__classify(__builtin_bit_cast(unsigned long long, __x)
                                       & 0x7fffffffffffffffull, 0x0010000000000000ull,
                                       0x7ff0000000000000ull);
}
template <class _Tp, class = typename __cuda_magic_math::__if<__cuda_magic_math::__int<_Tp>::value>::type>
__host__ __device__ constexpr int fpclassify(_Tp __x) { return fpclassify(static_cast<double>(__x)); }
__host__ __device__ constexpr bool isnormal(float __x) { return fpclassify(__x) == FP_NORMAL; }
__host__ __device__ constexpr bool isnormal(double __x) { return fpclassify(__x) == FP_NORMAL; }
template <class _Tp, class = typename __cuda_magic_math::__if<__cuda_magic_math::__int<_Tp>::value>::type>
__host__ __device__ constexpr bool isnormal(_Tp __x) { return __x != 0; }
#define _CUDA_MAGIC_CMP_(NAME, EXPR)                                                              \
  template <class _Ap, class _Bp, class = typename __cuda_magic_math::__if<                     \
      __cuda_magic_math::__arith<_Ap>::value && __cuda_magic_math::__arith<_Bp>::value>::type> \
  __host__ __device__ constexpr bool NAME(_Ap __a0, _Bp __b0) {                                 \
    typedef typename __cuda_magic_math::__promote<_Ap, _Bp>::type _Tp;                          \
    const _Tp __a = static_cast<_Tp>(__a0), __b = static_cast<_Tp>(__b0);                       \
    return fpclassify(__a) != FP_NAN && fpclassify(__b) != FP_NAN && (EXPR);                   \
  }
_CUDA_MAGIC_CMP_(isgreater, __a > __b)
_CUDA_MAGIC_CMP_(isgreaterequal, __a >= __b)
_CUDA_MAGIC_CMP_(isless, __a < __b)
_CUDA_MAGIC_CMP_(islessequal, __a <= __b)
_CUDA_MAGIC_CMP_(islessgreater, __a < __b || __a > __b)
#undef _CUDA_MAGIC_CMP_
template <class _Ap, class _Bp, class = typename __cuda_magic_math::__if<
    __cuda_magic_math::__arith<_Ap>::value && __cuda_magic_math::__arith<_Bp>::value>::type>
__host__ __device__ constexpr bool isunordered(_Ap __a0, _Bp __b0) {
  typedef typename __cuda_magic_math::__promote<_Ap, _Bp>::type _Tp;
  return fpclassify(static_cast<_Tp>(__a0)) == FP_NAN || fpclassify(static_cast<_Tp>(__b0)) == FP_NAN;
}
"""

# std::sqrt(2) & co.: libstdc++'s integer overloads (as double), which NVRTC's builtins lack
# (sqrt(float) and sqrt(double) make sqrt(2) ambiguous there).
_INT_AS_DOUBLE = _w("""
acos acosh asin asinh atan atanh cbrt ceil cos cosh erf erfc exp exp2 expm1 fabs floor lgamma
log log10 log1p log2 logb nearbyint rint round sin sinh sqrt tan tanh tgamma trunc""")
_INT_CLASSIFY = [("isnan", "false"), ("isinf", "false"), ("isfinite", "true"),
                 ("signbit", "__x < 0")]
_INT_OVERLOADS = ("namespace std {\n#define _CUDA_MAGIC_INT_ONLY_ class _Tp, class = typename "
                  "::__cuda_magic_math::__if<::__cuda_magic_math::__int<_Tp>::value>::type\n"
                  + "".join(f"template <_CUDA_MAGIC_INT_ONLY_> __host__ __device__ inline double "
                            f"{f}(_Tp __x) {{ return ::{f}(static_cast<double>(__x)); }}\n"
                            for f in _INT_AS_DOUBLE)
                  + "".join(f"template <_CUDA_MAGIC_INT_ONLY_> __host__ __device__ constexpr bool "
                            f"{f}(_Tp __x) {{ return {v}; }}\n" for f, v in _INT_CLASSIFY)
                  + "#undef _CUDA_MAGIC_INT_ONLY_\n}\n")

# Thin: NVRTC's builtins and the definitions above; no libcu++ (which would cost every edit
# ~0.3 s, or a 37 MiB PCH): C++20's std::lerp alone comes from <cuda/std/cmath>.
_SPECS["cmath"] = ("NVRTC's CUDA math functions (fpclassify & co. written here)", _defines("""
HUGE_VALF (__builtin_bit_cast(float, 0x7f800000u))
HUGE_VAL (__builtin_bit_cast(double, 0x7ff0000000000000ull))
HUGE_VALL ((long double)HUGE_VAL)
INFINITY (__builtin_bit_cast(float, 0x7f800000u))
NAN (__builtin_bit_cast(float, 0x7fc00000u))
FP_NAN 0
FP_INFINITE 1
FP_ZERO 2
FP_SUBNORMAL 3
FP_NORMAL 4
FP_ILOGB0 (-2147483647 - 1)
FP_ILOGBNAN (-2147483647 - 1)
MATH_ERRNO 1
MATH_ERREXCEPT 2
math_errhandling (MATH_ERRNO | MATH_ERREXCEPT)
""")
                   + _defines("\n".join(f"M_{n} {v}" for n, v in _M))
                   + _defines("\n".join(f"M_{n}f {v}f" for n, v in _M))
                   + _defines("\n".join(f"M_{n}l {v}L" for n, v in _M))
                   + "typedef float float_t;\ntypedef double double_t;\n"
                   + _CLASSIFY
                   + _using(_MATH_GLOBAL + _MATH_CUDA_STD + ["float_t", "double_t"])
                   + _INT_OVERLOADS
                   + "#if __cplusplus >= 202002L\n#include <cuda/std/cmath>\n"
                   + _using(["lerp"], _STD) + "#endif\n", "")

# --- <cstdlib>, <cstring>, <cstdio>, <cassert> ----------------------------------

_CSTDLIB_CUDA_STD = _w("div ldiv lldiv div_t ldiv_t lldiv_t")
# calloc and aligned_alloc as libcu++'s device versions are (malloc + memset with an overflow
# check; the device runtime's aligned malloc), written here: libcu++'s <cuda/std/cstdlib> (via
# its malloc.h) costs every compile ~0.2 s or a PCH; its div.h is light.
_ALLOC = r"""
extern "C" __device__ void* __cuda_syscall_aligned_malloc(size_t __nbytes, size_t __align);
__device__ inline void* calloc(size_t __n, size_t __size) noexcept {
  if (__size != 0 && __n > static_cast<size_t>(-1) / __size) return nullptr;
  void* __p = malloc(__n * __size);
  if (__p != nullptr) memset(__p, 0, __n * __size);
  return __p;
}
__device__ inline void* aligned_alloc(size_t __align, size_t __nbytes) noexcept {
  return __cuda_syscall_aligned_malloc(__nbytes, __align);
}
"""
_SPECS["cstdlib"] = ("NVRTC's malloc/free/abs and libcu++ <cuda/std/__cstdlib/div.h>", _LIBCU
                     + "#include <cuda/std/__cstdlib/div.h>\n" + _NULL
                     + _defines("EXIT_SUCCESS 0\nEXIT_FAILURE 1\nRAND_MAX 2147483647")
                     + _using(_CSTDLIB_CUDA_STD, _STD, into=None) + _ALLOC
                     + _using(_w("malloc free abs labs llabs calloc aligned_alloc")
                              + _CSTDLIB_CUDA_STD), "")

_CSTRING_CUDA_STD = _w("memmove memcmp memchr strlen strcpy strncpy strcmp strncmp strchr strrchr")
_SPECS["cstring"] = ("NVRTC's memcpy/memset and libcu++ <cuda/std/cstring>", _LIBCU
                     + "#include <cuda/std/cstring>\n" + _NULL
                     + _using(_CSTRING_CUDA_STD, _STD, into=None)
                     + _using(_w("memcpy memset") + _CSTRING_CUDA_STD), "")

_SPECS["cstdio"] = ("NVRTC's device printf",
                    _NULL + "#ifndef EOF\n#define EOF (-1)\n#endif\n" + _using(["printf"]), "")

# clock() is an NVRTC builtin returning clock_t (long, as glibc's); libcu++'s <cuda/std/ctime>
# is not used: its time_t is long long, glibc's is long.
_SPECS["ctime"] = ("NVRTC's device clock()", _NULL + _defines("CLOCKS_PER_SEC ((clock_t) 1000000)")
                   + _using(_w("clock_t clock")), "")

# After the guard: assert follows NDEBUG at each inclusion, as the standard says.
_SPECS["cassert"] = ("NVRTC's __assertfail (what nvcc's device assert calls)",
                     "// __assertfail(expr, file, line, function, sizeof(char)) is an NVRTC builtin.", """
#undef assert
#ifdef NDEBUG
#define assert(expr) (static_cast<void>(0))
#else
#define assert(expr) (static_cast<bool>(expr) ? void(0) : \\
    __assertfail(#expr, __FILE__, __LINE__, __PRETTY_FUNCTION__, sizeof(char)))
#endif
""")

# --- C++ headers: std::X is cuda::std::X ---------------------------------------------

_TT = _w("""
integral_constant bool_constant true_type false_type is_void is_null_pointer is_integral
is_floating_point is_array is_enum is_union is_class is_function is_pointer
is_lvalue_reference is_rvalue_reference is_member_object_pointer is_member_function_pointer
is_fundamental is_arithmetic is_scalar is_object is_compound is_reference is_member_pointer
is_const is_volatile is_trivial is_trivially_copyable is_standard_layout is_pod is_empty
is_polymorphic is_abstract is_final is_aggregate is_signed is_unsigned is_bounded_array
is_unbounded_array is_scoped_enum has_unique_object_representations is_constructible
is_trivially_constructible is_nothrow_constructible is_default_constructible
is_trivially_default_constructible is_nothrow_default_constructible is_copy_constructible
is_trivially_copy_constructible is_nothrow_copy_constructible is_move_constructible
is_trivially_move_constructible is_nothrow_move_constructible is_assignable
is_trivially_assignable is_nothrow_assignable is_copy_assignable is_trivially_copy_assignable
is_nothrow_copy_assignable is_move_assignable is_trivially_move_assignable
is_nothrow_move_assignable is_destructible is_trivially_destructible is_nothrow_destructible
has_virtual_destructor is_swappable_with is_swappable is_nothrow_swappable_with
is_nothrow_swappable alignment_of rank extent is_same is_base_of is_convertible
is_nothrow_convertible is_invocable is_invocable_r is_nothrow_invocable
is_nothrow_invocable_r remove_cv remove_const remove_volatile add_cv add_const add_volatile
remove_reference add_lvalue_reference add_rvalue_reference make_signed make_unsigned
remove_extent remove_all_extents remove_pointer add_pointer aligned_storage aligned_union
decay remove_cvref enable_if conditional common_type common_reference
basic_common_reference underlying_type invoke_result void_t type_identity conjunction
disjunction negation is_constant_evaluated reference_constructs_from_temporary
reference_converts_from_temporary
""")
_TT_T = _w("""
remove_cv remove_const remove_volatile add_cv add_const add_volatile remove_reference
add_lvalue_reference add_rvalue_reference make_signed make_unsigned remove_extent
remove_all_extents remove_pointer add_pointer aligned_storage aligned_union decay
remove_cvref enable_if conditional common_type common_reference underlying_type
invoke_result type_identity
""")
_TT_V = [n for n in _TT if n.startswith(("is_", "has_", "reference_")) and n != "is_constant_evaluated"]
_TT_V += _w("alignment_of rank extent conjunction disjunction negation")

# name -> (std names taken from cuda::std, extra text); for the THIN headers below, the names
# their own code declares (the tests check each one).  No sort/stable_sort/nth_element (libcu++
# has none either).
_CXX: dict[str, tuple[list[str], str]] = {
    "type_traits": (_TT + [n + "_t" for n in _TT_T] + [n + "_v" for n in _TT_V],
                    # result_of is gone from C++20 (libcu++ follows)
                    "#if __cplusplus < 202002L\n" + _using(["result_of", "result_of_t"], _STD)
                    + "#endif\n"),
    "utility": (_w("""
        swap exchange declval as_const move_if_noexcept pair make_pair integer_sequence
        index_sequence make_integer_sequence make_index_sequence index_sequence_for in_place
        in_place_t in_place_type in_place_type_t in_place_index in_place_index_t
        piecewise_construct piecewise_construct_t get cmp_equal cmp_not_equal cmp_less
        cmp_greater cmp_less_equal cmp_greater_equal in_range to_underlying unreachable
        forward_like tuple_size_v tuple_element_t"""), ""),
    # std::numeric_limits is a template of std's own, so that code can specialise it
    "limits": (_w("""
        float_round_style float_denorm_style round_indeterminate round_toward_zero
        round_to_nearest round_toward_infinity round_toward_neg_infinity denorm_indeterminate
        denorm_absent denorm_present"""),
               "namespace std {\ntemplate <class _Tp> struct numeric_limits : ::cuda::std::numeric_limits<_Tp> {};\n}\n"),
    "algorithm": (_w("""
        adjacent_find all_of any_of binary_search clamp copy copy_backward copy_if copy_n
        count count_if equal equal_range fill fill_n find find_end find_first_of find_if
        find_if_not for_each for_each_n generate generate_n includes is_heap is_heap_until
        is_partitioned is_permutation is_sorted is_sorted_until iter_swap
        lexicographical_compare lower_bound make_heap max max_element merge min min_element
        minmax minmax_element mismatch move_backward next_permutation none_of partial_sort
        partial_sort_copy partition partition_copy partition_point pop_heap prev_permutation
        push_heap remove remove_copy remove_copy_if remove_if replace replace_copy
        replace_copy_if replace_if reverse reverse_copy rotate rotate_copy sample search
        search_n set_difference set_intersection set_symmetric_difference set_union
        shift_left shift_right shuffle sort_heap swap swap_ranges transform unique
        unique_copy upper_bound"""), ""),
    "array": (_w("array get to_array swap"), ""),
    "tuple": (_w("""
        tuple make_tuple tie forward_as_tuple tuple_cat get ignore apply make_from_tuple
        swap"""), ""),
    "functional": (_w("""
        plus minus multiplies divides modulus negate equal_to not_equal_to greater less
        greater_equal less_equal logical_and logical_or logical_not bit_and bit_or bit_xor
        bit_not identity invoke invoke_r reference_wrapper ref cref not_fn mem_fn bind_front
        hash unwrap_reference unwrap_ref_decay"""), ""),
    "iterator": (_w("""
        iterator_traits input_iterator_tag output_iterator_tag forward_iterator_tag
        bidirectional_iterator_tag random_access_iterator_tag contiguous_iterator_tag
        reverse_iterator make_reverse_iterator move_iterator make_move_iterator advance
        distance next prev begin end cbegin cend rbegin rend size ssize empty data
        back_insert_iterator back_inserter"""), ""),
    "numeric": (_w("""
        accumulate reduce inner_product transform_reduce partial_sum inclusive_scan
        exclusive_scan transform_inclusive_scan transform_exclusive_scan adjacent_difference
        iota gcd lcm midpoint"""), ""),
    "bit": (_w("""
        bit_cast byteswap has_single_bit bit_ceil bit_floor bit_width rotl rotr countl_zero
        countl_one countr_zero countr_one popcount endian"""), ""),
    # C++20 (libstdc++'s <concepts> is empty below C++20: so is this one)
    "concepts": ([], "#if __cplusplus >= 202002L\n" + _using(_w("""
        same_as derived_from convertible_to common_reference_with common_with integral
        signed_integral unsigned_integral floating_point assignable_from swappable swappable_with
        destructible constructible_from default_initializable move_constructible
        copy_constructible equality_comparable equality_comparable_with totally_ordered
        totally_ordered_with movable copyable semiregular regular invocable regular_invocable
        predicate relation equivalence_relation strict_weak_order"""), _STD) + "#endif\n"),
    "span": (_w("span dynamic_extent as_bytes as_writable_bytes"), ""),
    "numbers": ([], "namespace std {\nnamespace numbers = ::cuda::std::numbers;\n}\n"),
}
# What libstdc++'s headers bring along (code leans on it: <utility> gives std::is_same).
_ALSO = {"utility": ["type_traits"], "tuple": ["type_traits", "utility"],
         "array": ["type_traits", "utility"], "algorithm": ["type_traits", "utility"],
         "functional": ["type_traits", "utility", "tuple", "array"]}


# Thin C++ headers: cuda-magic's own code (cuda_magic/compile/thin/NAME.h) on libcu++'s
# <cuda/std/type_traits> and what that brings anyway (declval, move, swap, integer_sequence,
# invoke, reference_wrapper, tuple_size/tuple_element).  libcu++'s own <cuda/std/utility>,
# <tuple>, <array>, <functional> and <algorithm> each cost a bare kernel's compile 2-3 times
# over even from a PCH (loading one costs ~1 ms per MiB, and theirs are 48-76 MiB; type_traits'
# is 25); these add a few hundred lines to type_traits' PCH.  std::pair, std::tuple and
# std::array are then std's own types, as under nvcc (not cuda::std's).
THIN = ("utility", "tuple", "array", "functional", "algorithm")
_THIN_DIR = os.path.join(os.path.dirname(__file__), "thin")


def _thin(name: str) -> str:
    """The body of thin header ``name``, in its own guard (a header may embed several)."""
    with open(os.path.join(_THIN_DIR, name + ".h"), encoding="utf-8") as f:
        return _guarded(f"_CUDA_MAGIC_THIN_{name.upper()}_", f.read())


for _name in _CXX:
    _parts = [_name, *_ALSO.get(_name, [])]
    if _name in THIN:
        _parts = ["type_traits", *(p for p in THIN if p in _parts)]
        _SPECS[_name] = (f"libcu++ <cuda/std/type_traits> and cuda-magic's own <{_name}> "
                         f"(cuda_magic/compile/thin/)", _LIBCU + "#include <cuda/std/type_traits>\n"
                         + _using(_CXX["type_traits"][0], _STD) + _CXX["type_traits"][1]
                         + "".join(_thin(p) for p in _parts[1:]), "")
        continue
    _SPECS[_name] = (f"libcu++ <cuda/std/{_name}>", _LIBCU
                     + "".join(f"#include <cuda/std/{p}>\n" for p in _parts)
                     + "".join(_using(_CXX[p][0], _STD) + _CXX[p][1] for p in _parts), "")

_SPECS["initializer_list"] = ("NVRTC's builtin std::initializer_list",
                              "#include <cuda/std/initializer_list>", "")
_SPECS["new"] = ("NVRTC's builtin placement new and std::align_val_t",
                 "// placement new, operator new/delete and std::align_val_t are NVRTC builtins.", "")

# The C names of the C++ headers: the same text and guard.
_C_NAMES = {"stdint.h": "cstdint", "inttypes.h": "cinttypes", "stddef.h": "cstddef",
            "limits.h": "climits", "float.h": "cfloat", "math.h": "cmath", "stdlib.h": "cstdlib",
            "string.h": "cstring", "stdio.h": "cstdio", "assert.h": "cassert", "time.h": "ctime"}


def _text(name: str, cxx: str) -> str:
    built_on, body, tail = _SPECS[cxx]
    what = f"<{name}>" + (f" (as <{cxx}>)" if name != cxx else "")
    return (f"// Supplied by cuda-magic for NVRTC: {what}, built on {built_on}.\n"
            + _guarded(_guard(cxx), _BASICS + body) + tail.lstrip("\n"))


# --- <cuda.h>: what device code takes from the driver API header -------------------
# The toolkit's cuda.h does not compile under NVRTC (host function declarations are
# rejected in JIT mode), so this is its device-side subset, laid out as there.
_CUDA_H = f"""// Supplied by cuda-magic for NVRTC: <cuda.h>'s device-side types, built on <stdint.h>.
#ifndef __cuda_cuda_h__
#define __cuda_cuda_h__
{_block("cstdint").strip()}
#define CUDA_VERSION (__CUDACC_VER_MAJOR__ * 1000 + __CUDACC_VER_MINOR__ * 10)
typedef uint32_t cuuint32_t;
typedef uint64_t cuuint64_t;
typedef unsigned long long CUdeviceptr_v2;
typedef CUdeviceptr_v2 CUdeviceptr;
typedef unsigned long long CUtexObject_v1;
typedef CUtexObject_v1 CUtexObject;
typedef unsigned long long CUsurfObject_v1;
typedef CUsurfObject_v1 CUsurfObject;
typedef cuuint64_t CUgraphConditionalHandle;
#define CU_TENSOR_MAP_NUM_QWORDS 16
typedef struct CUtensorMap_st {{
#if __CUDACC_VER_MAJOR__ >= 13
    alignas(128)
#else
    alignas(64)
#endif
    cuuint64_t opaque[CU_TENSOR_MAP_NUM_QWORDS];
}} CUtensorMap;
#endif // __cuda_cuda_h__
"""

# --- <cub/cub.cuh>: CCCL #errors under NVRTC -------------------------------------
# The umbrella header stops NVRTC ("not supported when compiling with NVRTC"): its device-wide
# algorithms (cub::Device*) launch kernels from the host.  This one includes the device-side
# groups (block, warp, thread, grid, iterators, utilities) that compile under NVRTC; each
# only if the installed CCCL has it.
_CUB_DEVICE_SIDE = _w("""
    block/block_adjacent_difference block/block_discontinuity block/block_exchange
    block/block_histogram block/block_load block/block_merge_sort block/block_radix_rank
    block/block_radix_sort block/block_reduce block/block_run_length_decode block/block_scan
    block/block_shuffle block/block_store grid/grid_even_share grid/grid_mapping grid/grid_queue
    thread/thread_load thread/thread_operators thread/thread_reduce thread/thread_scan
    thread/thread_store warp/warp_exchange warp/warp_load warp/warp_merge_sort warp/warp_reduce
    warp/warp_scan warp/warp_store iterator/arg_index_input_iterator
    iterator/cache_modified_input_iterator iterator/cache_modified_output_iterator
    iterator/tex_obj_input_iterator util_debug util_device util_ptx util_temporary_storage util_type
""")
_CUB = ("// Supplied by cuda-magic for NVRTC: <cub/cub.cuh>, built on CUB's device-side headers\n"
        "// (cub::Device* algorithms launch kernels from the host: use --compiler nvcc for those).\n"
        + _guarded("_CUDA_MAGIC_CUB_CUH_", "#include <cub/config.cuh>\n" + "".join(
            f"#if __has_include(<cub/{h}.cuh>)\n#include <cub/{h}.cuh>\n#endif\n"
            for h in _CUB_DEVICE_SIDE)))

HEADERS: Mapping[str, str] = MappingProxyType({
    "cuda/std/cstdint": ("// Supplied by cuda-magic for NVRTC: <cuda/std/cstdint> with glibc's "
                         "types (int64_t is long, as under nvcc), built on libcu++.\n"
                         + _CUDA_STD_CSTDINT_BODY),
    **{name: _text(name, name) for name in _SPECS},
    **{name: _text(name, cxx) for name, cxx in _C_NAMES.items()},
    "cuda.h": _CUDA_H,
    "cub/cub.cuh": _CUB,
})
"""Include name -> header text, for NVRTC's in-memory headers."""


# --- what nvcc declares without an #include -------------------------------------
# nvcc pre-includes cuda_runtime.h, which brings glibc's <stdlib.h> (and through it
# <sys/types.h>) and the device runtime API: code leans on that without knowing.  Each part
# below is supplied (as the pre-included IMPLICIT header, in the argv) only when the cell or
# its in-memory headers name one of its identifiers, so no other cell changes.

IMPLICIT = "cuda-magic/nvcc_implicit.h"
_GLIBC_TYPES = [("ushort", "unsigned short"), ("uint", "unsigned int"), ("ulong", "unsigned long"),
                ("u_char", "unsigned char"), ("u_short", "unsigned short"),
                ("u_int", "unsigned int"), ("u_long", "unsigned long"), ("quad_t", "long"),
                ("u_quad_t", "unsigned long"), ("u_int8_t", "unsigned char"),
                ("u_int16_t", "unsigned short"), ("u_int32_t", "unsigned int"),
                ("u_int64_t", "unsigned long")]
# (identifiers that call for it, text); glibc's <sys/types.h> has int8_t..int64_t (signed
# only), given here by the <cstdint> block, whose guard keeps libcu++'s 'long long' ones out.
_IMPLICIT_PARTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("__extension__",), "#ifndef __extension__\n#define __extension__\n#endif\n"),
    (("cudaGridDependencySynchronize", "cudaTriggerProgrammaticLaunchCompletion"), """
// Programmatic dependent launch (sm_90+), as cuda_device_runtime_api.h defines them.
static inline __device__ void cudaTriggerProgrammaticLaunchCompletion(void) {
  asm volatile("griddepcontrol.launch_dependents;" :::);
}
static inline __device__ void cudaGridDependencySynchronize(void) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}
"""),
    (("int8_t", "int16_t", "int32_t", "int64_t"), _guarded(_guard("cstdint"), _BASICS + _SPECS["cstdint"][1])),
    (tuple(n for n, _ in _GLIBC_TYPES), "".join(f"typedef {t} {n};\n" for n, t in _GLIBC_TYPES)),
    # <climits>'s macros and glibc's M_* constants (cheap; the rest of <cmath> is not)
    (tuple(line.split()[1] for line in _SPECS["climits"][1].splitlines()
           if line.startswith("#define ")), _block("climits")),
    (tuple(f"M_{n}" for n, _ in _M), _defines("\n".join(f"M_{n} {v}" for n, v in _M))),
)
_IDENT = re.compile(r"[A-Za-z_]\w*")


def implicit(texts: Iterable[str]) -> str | None:
    """The text of :data:`IMPLICIT` for a cell whose source and session headers are
    ``texts``: the parts whose identifiers they name, or None when they name none.

    >>> "typedef unsigned int uint;" in implicit(["__global__ void k(uint n) {}"])
    True
    """
    words: set[str] = set()
    for text in texts:
        words.update(_IDENT.findall(text))
    parts = [body.strip("\n") for names, body in _IMPLICIT_PARTS if words.intersection(names)]
    if not parts:
        return None
    return ("// Supplied by cuda-magic for NVRTC: what nvcc's implicit cuda_runtime.h (and glibc's\n"
            "// <sys/types.h> through it) declares and this cell uses.\n"
            + _guarded("_CUDA_MAGIC_NVCC_IMPLICIT_", "\n".join(parts)))


# --- toolkit headers with their own NVRTC int typedefs ------------------------------
# cuda_pipeline_helpers.h and cuda_awbarrier_helpers.h (under <cuda_pipeline.h>,
# <cuda_awbarrier.h>, cooperative groups' memcpy_async) typedef uint64_t as 'unsigned long
# long' under NVRTC and include <stdint.h> under nvcc.  With cuda-magic's <cstdint> in force
# ('unsigned long', nvcc's), the two clash in either order ("invalid redeclaration of type
# name").  Supplied in memory: the toolkit file itself with those typedef lines replaced by
# cuda-magic's <cuda/std/cstdint> -- what its nvcc branch does (line numbers kept).

TOOLKIT_INT_TYPEDEFS = ("cuda_pipeline_helpers.h", "cuda_awbarrier_helpers.h")
# (patterns as strings: re compiles them at first use, on these rare paths, not at import)
_TK_TYPEDEF = (r"^[ \t]*typedef[ \t]+(?:unsigned[ \t]+(?:short|int|long[ \t]+long)|uint64_t)"
               r"[ \t]+(?:uint16_t|uint32_t|uint64_t|uintptr_t)[ \t]*;[ \t]*$")


def with_glibc_int_types(name: str, text: str) -> str | None:
    """Toolkit header ``name`` (its ``text``) with its NVRTC int typedefs replaced by
    ``#include <cuda/std/cstdint>`` (cuda-magic's), or None when it has none to replace."""
    found = list(re.finditer(_TK_TYPEDEF, text, re.M))
    if not found:
        return None
    out, last = [], 0
    for i, m in enumerate(found):
        out.append(text[last:m.start()])
        out.append(f"#include <cuda/std/cstdint> // Supplied by cuda-magic for NVRTC: the toolkit's "
                   f"{name}, its NVRTC typedefs replaced by glibc's types, as with nvcc" if i == 0
                   else "// (cuda-magic: from <cuda/std/cstdint>, as with nvcc)")
        last = m.end()
    out.append(text[last:])
    return "".join(out)


# --- a hint for what nvcc lacks too ------------------------------------------------

_NEEDS = {**{n: "cstdint" for n in _INT_NAMES}, **dict.fromkeys(_w("""
    INT8_MIN INT16_MIN INT32_MIN INT64_MIN INT8_MAX INT16_MAX INT32_MAX INT64_MAX UINT8_MAX
    UINT16_MAX UINT32_MAX UINT64_MAX SIZE_MAX INTPTR_MAX UINTPTR_MAX INT64_C UINT64_C"""), "cstdint"),
          **dict.fromkeys(_w("""CHAR_BIT SCHAR_MIN SCHAR_MAX UCHAR_MAX SHRT_MIN SHRT_MAX USHRT_MAX
    INT_MIN INT_MAX UINT_MAX LONG_MIN LONG_MAX ULONG_MAX LLONG_MIN LLONG_MAX ULLONG_MAX"""), "climits"),
          **dict.fromkeys(_w("""FLT_MAX FLT_MIN FLT_EPSILON DBL_MAX DBL_MIN DBL_EPSILON FLT_MANT_DIG
    DBL_MANT_DIG FLT_TRUE_MIN DBL_TRUE_MIN"""), "cfloat"),
          **dict.fromkeys(_w("INFINITY NAN HUGE_VAL HUGE_VALF FP_NAN FP_INFINITE"), "cmath"),
          "assert": "cassert", "offsetof": "cstddef", "max_align_t": "cstddef", "nullptr_t": "cstddef"}
_NEEDS_STD = {**{n: "type_traits" for n in _CXX["type_traits"][0]},
              **{n: h for h in ("utility", "limits", "algorithm", "array", "tuple", "functional",
                                "iterator", "numeric", "bit", "span")
                 for n in _CXX[h][0] if n not in ("swap", "get")},
              "numeric_limits": "limits", "swap": "utility", "get": "utility"}
_UNDEFINED = (r'identifier "([A-Za-z_]\w*)" is undefined'
              r'|namespace "std" has no member "([A-Za-z_]\w*)"'
              r'|\bcub::(Device[A-Z]\w*)')


def log_hints(log: str, nvrtc: bool = True) -> list[str]:
    """One line per name the compiler did not know and a standard header declares:
    ``'uint64_t' is declared in <cstdint>: add #include <cstdint>``; under NVRTC, that
    ``cub::Device*`` needs nvcc; what a device-side launch needs (``-rdc=true``)."""
    out = []
    for m in re.finditer(_UNDEFINED, log):
        name, std, device = m.groups()
        if device and not nvrtc:
            continue
        header = _NEEDS.get(name) if name else _NEEDS_STD.get(std)
        line = (f"'{'std::' if std else ''}{name or std}' is declared in <{header}>: "
                f"add #include <{header}>") if header else None
        if device:
            line = (f"cub::{device} (device-wide, launched from the host) is not available "
                    "under NVRTC: compile the cell with --compiler nvcc")
        if line and line not in out:
            out.append(line)
    if re.search(_DEVICE_LAUNCH, log):
        out.append(DEVICE_LAUNCH)
    return out[:6]


# Dynamic parallelism: both compilers stop unless -rdc=true; with it, cuda-magic links the
# device runtime (compile/link.py).
_DEVICE_LAUNCH = (r"device-side kernel launch could not be processed|kernel launch from "
                  r"__device__ or __global__ functions requires separate compilation")
DEVICE_LAUNCH = ("a device-side launch (dynamic parallelism, kernel<<<...>>> in device code) needs "
                 "relocatable device code: add -rdc=true to the compiler's flags (e.g. %%cuda "
                 "--nvrtc+ \"-rdc=true\"); cuda-magic then links the CUDA device runtime "
                 "(libcudadevrt) in with nvJitLink")


# --- missing_hint ---------------------------------------------------------------

_NVCC = "host-only header: compile with --compiler nvcc"
# host-only here, but libcu++ has a device version under <cuda/std/...>
_LIBCU_HAS = _w("atomic bitset chrono complex expected mdspan optional ratio string_view variant "
                "ranges")
_CCCL = "pip install 'cuda-toolkit[cccl]'"
_CUTLASS = "pip install 'cuda-magic[cutlass]' (the nvidia-cutlass wheel)"
# (name, or prefix ending in "/" or "*", -> hint); the first match wins
_HINTS: tuple[tuple[str, str], ...] = (
    ("cute/", _CUTLASS), ("cutlass/", _CUTLASS),
    ("crt/", "pip install 'cuda-toolkit[crt]'"), ("mma.h", "pip install 'cuda-toolkit[crt]'"),
    ("curand*", "pip install 'cuda-toolkit[curand]'"),
    ("cub/", _CCCL), ("thrust/", _CCCL), ("cuda/", _CCCL), ("nv/", _CCCL),
    *((h, _NVCC) for h in _w("""
        iostream istream ostream sstream fstream iomanip ios streambuf string vector map
        unordered_map set unordered_set list deque queue stack forward_list memory thread
        mutex shared_mutex condition_variable future random regex filesystem exception
        stdexcept system_error locale valarray any cstdarg stdarg.h csignal signal.h cerrno
        errno.h unistd.h pthread.h omp.h mpi.h cuda_runtime.h cuda_runtime_api.h cublas_v2.h
        cublasLt.h cufft.h cusparse.h cusolverDn.h cudnn.h nccl.h nvml.h""")),
    *((h, f"host-only header: use <cuda/std/{h}> (cuda::std::) in device code, "
          "or compile with --compiler nvcc") for h in _LIBCU_HAS),
)


def missing_hint(include: str) -> str:
    """The likely fix for an ``#include`` NVRTC could not find, as one short sentence.

    >>> missing_hint("<curand_kernel.h>")
    "pip install 'cuda-toolkit[curand]'"
    """
    name = include.strip().strip('<>"').replace("\\", "/")
    for key, hint in _HINTS:
        if name == key or (key[-1] in "/*" and name.startswith(key.rstrip("*"))):
            return hint
    return ("add its directory with -I DIR (in the nvrtc list), define it with "
            "%%cuda_header NAME, or use --compiler nvcc")
