"""The C library headers supplied to NVRTC in memory (``<cstdint>``, ``<cinttypes>``,
``<cstddef>``, ``<climits>``, ``<cfloat>``, ``<cmath>``, ``<cstdlib>``, ``<cstring>``,
``<cstdio>``, ``<ctime>``, ``<cassert>``) and the text helpers every supplied header is
written with (:func:`guarded`, :func:`using`, :func:`defines`, :func:`block`).

Their meaning is glibc's and g++'s on x86-64 Linux (:mod:`.stdheaders` says how, and composes
the table of supplied headers).  :data:`SPECS` maps each C++ name to ``(built on, body, tail
after the guard)``.
"""

from __future__ import annotations

from typing import Iterable

__all__ = ["SPECS", "SINCE", "STD", "LIBCU", "BASICS", "NULL", "CUDA_STD_CSTDINT", "INT_NAMES",
           "M_CONSTANTS", "words", "guard", "guarded", "using", "defines", "block"]

STD = "::cuda::std::"


def words(text: str) -> list[str]:
    return text.split()


def guard(name: str) -> str:
    return "_CUDA_MAGIC_" + "".join(c if c.isalnum() else "_" for c in name.upper()) + "_"


def guarded(guard: str, body: str) -> str:
    return f"#ifndef {guard}\n#define {guard}\n{body.strip()}\n#endif // {guard}\n"


# Names libcu++ gained after CCCL 3.0 (CUDA 13.0's): declared only where the CCCL has them, so
# the supplied headers work with every CCCL a CUDA 13 toolkit ships (3.0 ... 3.5).
SINCE = dict.fromkeys("strlen strcpy strncpy strcmp strncmp strchr strrchr".split(),
                      "CCCL_VERSION >= 3001000")


def using(names: Iterable[str], src: str = "::", into: str | None = "std") -> str:
    """``using <src>name;`` for each name, inside ``namespace <into>`` (None: global)."""
    lines = "\n".join(f"#if {SINCE[n]}\nusing {src}{n};\n#endif" if n in SINCE else
                      f"using {src}{n};" for n in names)
    return f"namespace {into} {{\n{lines}\n}}\n" if into else lines + "\n"


def defines(table: str) -> str:
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
INT_NAMES = [n for n, _ in _INT_TYPES]


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
    return defines("\n".join(rows))


# libcu++'s <cuda/std/cstdint> declares the global int types itself (as long long
# under NVRTC); this replaces it: the same guard and names, glibc's types.
# Below C++17 (which libcu++ 3 needs) it declares the global names only.
CUDA_STD_CSTDINT = (
    "#ifndef _CUDA_STD_CSTDINT\n#define _CUDA_STD_CSTDINT\n#if __cplusplus >= 201703L\n"
    "#include <cuda/std/detail/__config>\n#include <cuda/std/version>\n#include <cuda/std/climits>\n"
    "#endif\n"
    + "".join(f"typedef {t} {n};\n" for n, t in _INT_TYPES)
    + _int_limits()
    + "#if __cplusplus >= 201703L\nnamespace cuda { namespace std {\n"
    # in libcu++'s versioned namespace, where CCCL 3.0 looks (_CUDA_VSTD is cuda::std::__4)
    "#ifdef _LIBCUDACXX_ABI_NAMESPACE\ninline namespace _LIBCUDACXX_ABI_NAMESPACE {\n#endif\n"
    + using(INT_NAMES, into=None)
    + "#if defined(_CCCL_HAS_INT128)\n#if _CCCL_HAS_INT128()\n#define _CUDA_MAGIC_INTMAX128_\n#endif\n#endif\n"
      "#ifdef _CUDA_MAGIC_INTMAX128_\n"
      "using __cccl_intmax_t = __int128_t;\nusing __cccl_uintmax_t = __uint128_t;\n#else\n"
      "using __cccl_intmax_t = long long;\nusing __cccl_uintmax_t = unsigned long long;\n#endif\n"
      "#ifdef _LIBCUDACXX_ABI_NAMESPACE\n}\n#endif\n} }\n#endif\n#endif // _CUDA_STD_CSTDINT\n")
LIBCU = CUDA_STD_CSTDINT  # starts each header built on libcu++
NULL = defines("NULL 0L")  # g++'s __null is a long; NVRTC's own NULL is an int 0
# What every libstdc++ header declares (bits/c++config.h); starts every header here.
BASICS = guarded("_CUDA_MAGIC_STD_BASICS_", """
namespace std {
typedef ::size_t size_t;
typedef ::ptrdiff_t ptrdiff_t;
typedef decltype(nullptr) nullptr_t;
}
""")

# (built on, body, tail after the guard), by C++ name
SPECS: dict[str, tuple[str, str, str]] = {}


def block(name: str) -> str:
    """Header ``name``'s guarded body, to embed in another header."""
    return guarded(guard(name), BASICS + SPECS[name][1])


SPECS["cstdint"] = ("libcu++ <cuda/std/cstdint> (glibc's types)",
                     LIBCU + using(INT_NAMES), "")

# glibc's <inttypes.h> printf macros for x86-64 (64-bit and fast16/32/64 are long)
_PRI = "\n".join(
    f"PRI{c}{kind}{bits} \"{'l' if bits == 64 or (kind == 'FAST' and bits > 8) else ''}{c}\""
    for c in "diouxX" for kind in ("", "LEAST", "FAST") for bits in (8, 16, 32, 64)
) + "\n" + "\n".join(f"PRI{c}{k} \"l{c}\"" for c in "diouxX" for k in ("MAX", "PTR"))
SPECS["cinttypes"] = ("<cstdint> (glibc's printf format macros)",
                       block("cstdint") + defines(_PRI), "")

# --- <cstddef>, <climits>, <cfloat> ---------------------------------------------

SPECS["cstddef"] = ("NVRTC's size_t/ptrdiff_t/NULL and libcu++ <cuda/std/cstddef>", LIBCU + """
#include <cuda/std/cstddef>
""" + NULL + """#if defined(__has_builtin)
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
""" + using(["max_align_t"]) + using(["byte", "to_integer"], STD), "")

# <climits> and <cfloat> are macros only; libcu++'s are included first (C++17 and up,
# as libcu++ 3 needs) so that they cannot redefine these later.
SPECS["climits"] = ("glibc's values and types (over libcu++ <cuda/std/climits>)",
                     "#if __cplusplus >= 201703L\n#include <cuda/std/climits>\n#endif\n" + defines("""
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

SPECS["cfloat"] = ("g++'s x86-64 values (over libcu++ <cuda/std/cfloat>)",
                    "#if __cplusplus >= 201703L\n#include <cuda/std/cfloat>\n#endif\n" + defines("""
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
""") + "#if __cplusplus >= 201703L\n" + defines("""
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
_MATH_GLOBAL = words("""
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
_MATH_CUDA_STD = words("fpclassify isnormal isgreater isgreaterequal isless islessequal "
                    "islessgreater isunordered")

# glibc's M_* constants (with _GNU_SOURCE, also as float "f" and long double "l")
M_CONSTANTS = [("E", "2.718281828459045235360287471352662498"),
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
_INT_AS_DOUBLE = words("""
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
SPECS["cmath"] = ("NVRTC's CUDA math functions (fpclassify & co. written here)", defines("""
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
                   + defines("\n".join(f"M_{n} {v}" for n, v in M_CONSTANTS))
                   + defines("\n".join(f"M_{n}f {v}f" for n, v in M_CONSTANTS))
                   + defines("\n".join(f"M_{n}l {v}L" for n, v in M_CONSTANTS))
                   + "typedef float float_t;\ntypedef double double_t;\n"
                   + _CLASSIFY
                   + using(_MATH_GLOBAL + _MATH_CUDA_STD + ["float_t", "double_t"])
                   + _INT_OVERLOADS
                   + "#if __cplusplus >= 202002L\n#include <cuda/std/cmath>\n"
                   + using(["lerp"], STD) + "#endif\n", "")

# --- <cstdlib>, <cstring>, <cstdio>, <cassert> ----------------------------------

_CSTDLIB_CUDA_STD = words("div ldiv lldiv div_t ldiv_t lldiv_t")
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
SPECS["cstdlib"] = ("NVRTC's malloc/free/abs and libcu++ <cuda/std/__cstdlib/div.h>", LIBCU
                     + "#include <cuda/std/__cstdlib/div.h>\n" + NULL
                     + defines("EXIT_SUCCESS 0\nEXIT_FAILURE 1\nRAND_MAX 2147483647")
                     + using(_CSTDLIB_CUDA_STD, STD, into=None) + _ALLOC
                     + using(words("malloc free abs labs llabs calloc aligned_alloc")
                              + _CSTDLIB_CUDA_STD), "")

_CSTRING_CUDA_STD = words("memmove memcmp memchr strlen strcpy strncpy strcmp strncmp strchr strrchr")
SPECS["cstring"] = ("NVRTC's memcpy/memset and libcu++ <cuda/std/cstring>", LIBCU
                     + "#include <cuda/std/cstring>\n" + NULL
                     + using(_CSTRING_CUDA_STD, STD, into=None)
                     + using(words("memcpy memset") + _CSTRING_CUDA_STD), "")

SPECS["cstdio"] = ("NVRTC's device printf",
                    NULL + "#ifndef EOF\n#define EOF (-1)\n#endif\n" + using(["printf"]), "")

# clock() is an NVRTC builtin returning clock_t (long, as glibc's); libcu++'s <cuda/std/ctime>
# is not used: its time_t is long long, glibc's is long.
SPECS["ctime"] = ("NVRTC's device clock()", NULL + defines("CLOCKS_PER_SEC ((clock_t) 1000000)")
                   + using(words("clock_t clock")), "")

# After the guard: assert follows NDEBUG at each inclusion, as the standard says.
SPECS["cassert"] = ("NVRTC's __assertfail (what nvcc's device assert calls)",
                     "// __assertfail(expr, file, line, function, sizeof(char)) is an NVRTC builtin.", """
#undef assert
#ifdef NDEBUG
#define assert(expr) (static_cast<void>(0))
#else
#define assert(expr) (static_cast<bool>(expr) ? void(0) : \\
    __assertfail(#expr, __FILE__, __LINE__, __PRETTY_FUNCTION__, sizeof(char)))
#endif
""")
