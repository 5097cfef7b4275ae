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

This module holds the table (:data:`HEADERS`) and the C++ headers' text; the C headers'
text and the helpers they are all written with are in :mod:`.cheaders`.  What NVRTC gets
besides them to read a cell as nvcc does (the pre-included nvcc-implicit names, toolkit
headers with their int typedefs fixed) is :mod:`.prelude`; what a failed compile's log means
(the header that declares an unknown name, how to get a missing ``#include``) is :mod:`.hints`.
"""

from __future__ import annotations

import os
from types import MappingProxyType
from typing import Mapping

from .cheaders import (BASICS, CUDA_STD_CSTDINT, LIBCU, SPECS as _C_SPECS, STD, block, guard,
                       guarded, using, words)

__all__ = ["HEADERS", "THIN"]

# (built on, body, tail after the guard), by C++ name: the C headers', then the C++ ones'
_SPECS: dict[str, tuple[str, str, str]] = dict(_C_SPECS)

# --- C++ headers: std::X is cuda::std::X ---------------------------------------------

_TT = words("""
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
_TT_T = words("""
remove_cv remove_const remove_volatile add_cv add_const add_volatile remove_reference
add_lvalue_reference add_rvalue_reference make_signed make_unsigned remove_extent
remove_all_extents remove_pointer add_pointer aligned_storage aligned_union decay
remove_cvref enable_if conditional common_type common_reference underlying_type
invoke_result type_identity
""")
_TT_V = [n for n in _TT if n.startswith(("is_", "has_", "reference_")) and n != "is_constant_evaluated"]
_TT_V += words("alignment_of rank extent conjunction disjunction negation")

# name -> (std names taken from cuda::std, extra text); for the THIN headers below, the names
# their own code declares (the tests check each one).  No sort/stable_sort/nth_element (libcu++
# has none either).
_CXX: dict[str, tuple[list[str], str]] = {
    "type_traits": (_TT + [n + "_t" for n in _TT_T] + [n + "_v" for n in _TT_V],
                    # result_of is gone from C++20 (libcu++ follows)
                    "#if __cplusplus < 202002L\n" + using(["result_of", "result_of_t"], STD)
                    + "#endif\n"),
    "utility": (words("""
        swap exchange declval as_const move_if_noexcept pair make_pair integer_sequence
        index_sequence make_integer_sequence make_index_sequence index_sequence_for in_place
        in_place_t in_place_type in_place_type_t in_place_index in_place_index_t
        piecewise_construct piecewise_construct_t get cmp_equal cmp_not_equal cmp_less
        cmp_greater cmp_less_equal cmp_greater_equal in_range to_underlying unreachable
        forward_like tuple_size_v tuple_element_t"""), ""),
    # std::numeric_limits is a template of std's own, so that code can specialise it
    "limits": (words("""
        float_round_style float_denorm_style round_indeterminate round_toward_zero
        round_to_nearest round_toward_infinity round_toward_neg_infinity denorm_indeterminate
        denorm_absent denorm_present"""),
               "namespace std {\ntemplate <class _Tp> struct numeric_limits : ::cuda::std::numeric_limits<_Tp> {};\n}\n"),
    "algorithm": (words("""
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
    "array": (words("array get to_array swap"), ""),
    "tuple": (words("""
        tuple make_tuple tie forward_as_tuple tuple_cat get ignore apply make_from_tuple
        swap"""), ""),
    "functional": (words("""
        plus minus multiplies divides modulus negate equal_to not_equal_to greater less
        greater_equal less_equal logical_and logical_or logical_not bit_and bit_or bit_xor
        bit_not identity invoke invoke_r reference_wrapper ref cref not_fn mem_fn bind_front
        hash unwrap_reference unwrap_ref_decay"""), ""),
    "iterator": (words("""
        iterator_traits input_iterator_tag output_iterator_tag forward_iterator_tag
        bidirectional_iterator_tag random_access_iterator_tag contiguous_iterator_tag
        reverse_iterator make_reverse_iterator move_iterator make_move_iterator advance
        distance next prev begin end cbegin cend rbegin rend size ssize empty data
        back_insert_iterator back_inserter"""), ""),
    "numeric": (words("""
        accumulate reduce inner_product transform_reduce partial_sum inclusive_scan
        exclusive_scan transform_inclusive_scan transform_exclusive_scan adjacent_difference
        iota gcd lcm midpoint"""), ""),
    "bit": (words("""
        bit_cast byteswap has_single_bit bit_ceil bit_floor bit_width rotl rotr countl_zero
        countl_one countr_zero countr_one popcount endian"""), ""),
    # C++20 (libstdc++'s <concepts> is empty below C++20: so is this one)
    "concepts": ([], "#if __cplusplus >= 202002L\n" + using(words("""
        same_as derived_from convertible_to common_reference_with common_with integral
        signed_integral unsigned_integral floating_point assignable_from swappable swappable_with
        destructible constructible_from default_initializable move_constructible
        copy_constructible equality_comparable equality_comparable_with totally_ordered
        totally_ordered_with movable copyable semiregular regular invocable regular_invocable
        predicate relation equivalence_relation strict_weak_order"""), STD) + "#endif\n"),
    "span": (words("span dynamic_extent as_bytes as_writable_bytes"), ""),
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
        return guarded(f"_CUDA_MAGIC_THIN_{name.upper()}_", f.read())


for _name in _CXX:
    _parts = [_name, *_ALSO.get(_name, [])]
    if _name in THIN:
        _parts = ["type_traits", *(p for p in THIN if p in _parts)]
        _SPECS[_name] = (f"libcu++ <cuda/std/type_traits> and cuda-magic's own <{_name}> "
                         f"(cuda_magic/compile/thin/)", LIBCU + "#include <cuda/std/type_traits>\n"
                         + using(_CXX["type_traits"][0], STD) + _CXX["type_traits"][1]
                         + "".join(_thin(p) for p in _parts[1:]), "")
        continue
    _SPECS[_name] = (f"libcu++ <cuda/std/{_name}>", LIBCU
                     + "".join(f"#include <cuda/std/{p}>\n" for p in _parts)
                     + "".join(using(_CXX[p][0], STD) + _CXX[p][1] for p in _parts), "")

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
            + guarded(guard(cxx), BASICS + body) + tail.lstrip("\n"))


# --- <cuda.h>: what device code takes from the driver API header -------------------
# The toolkit's cuda.h does not compile under NVRTC (host function declarations are
# rejected in JIT mode), so this is its device-side subset, laid out as there.
_CUDA_H = f"""// Supplied by cuda-magic for NVRTC: <cuda.h>'s device-side types, built on <stdint.h>.
#ifndef __cuda_cuda_h__
#define __cuda_cuda_h__
{block("cstdint").strip()}
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
_CUB_DEVICE_SIDE = words("""
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
        + guarded("_CUDA_MAGIC_CUB_CUH_", "#include <cub/config.cuh>\n" + "".join(
            f"#if __has_include(<cub/{h}.cuh>)\n#include <cub/{h}.cuh>\n#endif\n"
            for h in _CUB_DEVICE_SIDE)))

HEADERS: Mapping[str, str] = MappingProxyType({
    "cuda/std/cstdint": ("// Supplied by cuda-magic for NVRTC: <cuda/std/cstdint> with glibc's "
                         "types (int64_t is long, as under nvcc), built on libcu++.\n"
                         + CUDA_STD_CSTDINT),
    **{name: _text(name, name) for name in _SPECS},
    **{name: _text(name, cxx) for name, cxx in _C_NAMES.items()},
    "cuda.h": _CUDA_H,
    "cub/cub.cuh": _CUB,
})
"""Include name -> header text, for NVRTC's in-memory headers."""
