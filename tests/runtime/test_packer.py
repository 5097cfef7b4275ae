"""Argument marshalling by the parsed signature (runtime/launch/packer.py and its parts values.py,
arrays.py, staging.py), on the CPU (no driver needed to pack)."""

import struct

import numpy as np
import pytest

from cuda_magic.runtime import ArgumentError, ArgumentRangeError, Param
from cuda_magic.runtime.launch.packer import Packer, natural_layout
from cuda_magic.cell.signature import find_kernels


def packer(decl: str, layout=None) -> Packer:
    (k,) = find_kernels(decl + ";")
    return Packer(k.name, k.params, layout or natural_layout(k.params))


def packed(p: Packer, *args) -> bytes:
    p.pack(args, [])
    return p.buffer.raw[:p.struct.size]


class FakeDevice:
    """An object with __cuda_array_interface__, as Numba and others give."""

    def __init__(self, ptr, typestr="<f4", shape=(8,), strides=None):
        self.__cuda_array_interface__ = {"data": (ptr, False), "typestr": typestr,
                                         "shape": shape, "strides": strides, "version": 3}


def test_scalars_are_packed_at_the_declared_type():
    p = packer('__global__ void k(char c, short s, unsigned u, long long q, float f, double d, '
               'size_t z, bool b)')
    assert [x[0] for x in natural_layout(p.params)] == [0, 2, 4, 8, 16, 24, 32, 40]
    raw = packed(p, 65, -2, 2**32 - 1, -2**63, 1.5, 0.1, 2**64 - 1, True)
    assert raw == struct.pack("=bxhIqfxxxxdQ?", 65, -2, 2**32 - 1, -2**63, 1.5, 0.1, 2**64 - 1, True)


def test_half_and_bfloat16():
    p = packer('__global__ void k(__half h, __nv_bfloat16 b, half h2, nv_bfloat16 b2)')
    raw = packed(p, 0.5, 1.0, 65504.0, 3.140625)
    assert raw == struct.pack("=eHeH", 0.5, 0x3F80, 65504.0, 0x4049)
    assert packed(p, 0, 1.00390625, 0, 0)[2:4] == struct.pack("=H", 0x3F80)  # ties to even
    with pytest.raises(ArgumentRangeError, match="parameter 'h'.*out of range"):
        packed(p, 1e6, 0, 0, 0)


def test_pointer_arguments():
    p = packer('__global__ void k(const float* x, float* y, void* any, int** pp)')
    raw = packed(p, FakeDevice(0x1000), FakeDevice(0x2000), FakeDevice(0x3000, "<i8"), None)
    assert struct.unpack("=4Q", raw) == (0x1000, 0x2000, 0x3000, 0)
    with pytest.raises(ArgumentError, match=r"parameter 'x' \(const float\* x\).*float64"):
        packed(p, FakeDevice(0x1000, "<f8"), None, None, None)
    with pytest.raises(ArgumentError, match="parameter 'y'.*not C-contiguous"):
        packed(p, None, FakeDevice(0x1000, strides=(8,)), None, None)
    with pytest.raises(ArgumentError, match="parameter 'x'.*is a pointer.*not float"):
        packed(p, 1.5, None, None, None)
    with pytest.raises(ArgumentError, match="parameter 'x'.*is a pointer.*not list"):
        packed(p, [1.0, 2.0], None, None, None)


def test_integer_pointers_accept_either_signedness_of_the_same_size():
    p = packer('__global__ void k(int* a, unsigned char* b)')
    packed(p, FakeDevice(8, "<u4"), FakeDevice(16, "|i1"))
    with pytest.raises(ArgumentError, match="parameter 'a'.*float32"):
        packed(p, FakeDevice(8, "<f4"), None)
    with pytest.raises(ArgumentError, match="parameter 'a'.*int64"):
        packed(p, FakeDevice(8, "<i8"), None)


def test_numpy_arrays_are_checked_before_anything_is_copied():
    p = packer('__global__ void k(const float* x, float* y, int n)')
    x = np.zeros(8, np.float32)
    with pytest.raises(ArgumentError, match="parameter 'x'.*float64"):
        packed(p, np.zeros(8), x, 8)
    with pytest.raises(ArgumentError, match="parameter 'y'.*not C-contiguous.*ascontiguousarray"):
        packed(p, x, np.zeros((8, 2), np.float32)[:, 0], 8)
    ro = np.zeros(8, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ArgumentError, match="parameter 'y'.*read-only"):
        packed(p, x, ro, 8)
    with pytest.raises(ArgumentError, match="parameter 'x'.*>f4"):
        packed(p, x.astype(">f4"), x, 8)


def test_count_type_and_range_errors_name_the_parameter():
    p = packer('extern "C" __global__ void scale(const float* x, float* y, float a, int n)')
    d = FakeDevice(64)
    with pytest.raises(ArgumentError, match=r"scale\(\) takes 4 arguments \(const float\* x, "
                                            r"float\* y, float a, int n\), got 3"):
        packed(p, d, d, 1.0)
    with pytest.raises(ArgumentError, match="parameter 'n'.*expected an integer, got float 4.0"):
        packed(p, d, d, 1.0, 4.0)
    with pytest.raises(ArgumentRangeError, match="parameter 'n'.*2147483648 is out of range for int"):
        packed(p, d, d, 1.0, 2**31)
    with pytest.raises(ArgumentRangeError, match="parameter 'a'.*out of range for float"):
        packed(p, d, d, 1e300, 1)
    with pytest.raises(ArgumentError, match="parameter 'a'.*expected a float, got str"):
        packed(p, d, d, "2", 1)
    assert isinstance(ArgumentError("x"), TypeError) and isinstance(ArgumentRangeError("x"), OverflowError)


def test_bool_is_strict_and_numpy_scalars_work():
    p = packer('__global__ void k(bool flag, int n, float a)')
    assert packed(p, np.bool_(True), np.int64(7), np.float32(0.25)) == struct.pack("=?xxxif", True, 7, 0.25)
    with pytest.raises(ArgumentError, match="parameter 'flag'.*expected a bool"):
        packed(p, "yes", 1, 1.0)
    with pytest.raises(ArgumentRangeError, match="parameter 'n'"):
        packed(p, True, np.int64(2**40), 1.0)


def test_structs_by_value_take_bytes_or_a_structured_scalar():
    (k,) = find_kernels('struct P { float a; int b; }; __global__ void k(P p, int n);')
    p = Packer(k.name, k.params, [(0, 8), (8, 4)])   # as the driver reports it
    s = np.zeros((), dtype=[("a", "<f4"), ("b", "<i4")])
    s["a"], s["b"] = 2.0, 3
    assert packed(p, s[()], 5) == struct.pack("=fii", 2.0, 3, 5)
    assert packed(p, struct.pack("=fi", 1.0, 2), 5) == struct.pack("=fii", 1.0, 2, 5)
    with pytest.raises(ArgumentError, match="parameter 'p'.*8 bytes; got 4"):
        packed(p, b"abcd", 5)
    with pytest.raises(ArgumentError, match="parameter 'p'.*struct passed by value"):
        packed(p, 1.0, 5)
    with pytest.raises(TypeError, match="size of struct parameter 'p'"):
        natural_layout(k.params)


def test_layout_must_match_the_compiled_kernel():
    params = [Param("n", "int"), Param("x", "float", 1)]
    with pytest.raises(ArgumentError, match="declares 2 parameters but the compiled kernel takes 1"):
        Packer("k", params, [(0, 4)])
    with pytest.raises(ArgumentError, match="parameter 'n'.*4 bytes as parsed.*takes 8 bytes"):
        Packer("k", params, [(0, 8), (8, 8)])


# -- real code: aliases, references, function pointers, unreadable declarations ----------------

def test_scalar_aliases_pack_at_their_scalar_width():
    p = packer('typedef unsigned int uint;\nusing idx_t = long long;\n#define real float\n'
               'enum class Mode : unsigned char { A, B };\n'
               '__global__ void k(real* x, uint n, idx_t i, real a, Mode m)')
    assert natural_layout(p.params) == [(0, 8), (8, 4), (16, 8), (24, 4), (28, 1)]
    assert packed(p, None, 2**32 - 1, -1, 0.5, 1) == struct.pack("=QIxxxxqfB", 0, 2**32 - 1, -1, 0.5, 1)
    with pytest.raises(ArgumentRangeError, match=r"parameter 'n' \(uint n\).*out of range for unsigned int"):
        packed(p, None, -1, 0, 0.5, 0)
    with pytest.raises(ArgumentError, match=r"parameter 'x' \(real\* x\).*float64"):
        packed(p, FakeDevice(8, "<f8"), 1, 0, 0.5, 0)


def test_references_take_device_arrays_not_numbers():
    p = packer('__global__ void k(const int& n, float& out, int m)')
    assert natural_layout(p.params) == [(0, 8), (8, 8), (16, 4)]
    assert packed(p, FakeDevice(0x10, "<i4"), FakeDevice(0x20), 3) == struct.pack("=QQi", 0x10, 0x20, 3)
    for number in (5, 5.0, np.int32(5), True):
        with pytest.raises(ArgumentError, match=r"k\(\): parameter 'n' \(const int& n\) is a reference: "
                                                r"the kernel reads it through a pointer; pass a device "
                                                r"array holding the value, or take it by value"):
            packed(p, number, FakeDevice(0x20), 3)
    with pytest.raises(ArgumentError, match="parameter 'n'.*cannot be null"):
        packed(p, None, FakeDevice(0x20), 3)
    with pytest.raises(ArgumentError, match=r"parameter 'out' \(float& out\) refers to float.*int32"):
        packed(p, FakeDevice(0x10, "<i4"), FakeDevice(0x20, "<i4"), 3)
    with pytest.raises(ArgumentError, match="parameter 'out'.*is a reference.*not list"):
        packed(p, FakeDevice(0x10, "<i4"), [1.0], 3)
    # another parameter's error is not blamed on the reference (its packed value is an address)
    with pytest.raises(ArgumentRangeError, match="parameter 'm'"):
        packed(p, FakeDevice(2**40, "<i4"), FakeDevice(0x20), 2**40)


def test_function_pointers_take_device_addresses():
    p = packer('typedef float (*unary)(float);\n__global__ void k(float (*f)(float), unary u, int n)')
    assert natural_layout(p.params) == [(0, 8), (8, 8), (16, 4)]
    assert packed(p, 0x7F00, None, 1) == struct.pack("=QQi", 0x7F00, 0, 1)
    assert packed(p, np.uint64(0x10), 0, 1)[:8] == struct.pack("=Q", 0x10)
    for bad in (1.5, True, FakeDevice(8)):
        with pytest.raises(ArgumentError, match=r"parameter 'f' \(float \(\*f\)\(float\)\) is a function "
                                                r"pointer: pass the function's device address as an int"):
            packed(p, bad, 0, 1)
    with pytest.raises(ArgumentRangeError, match="parameter 'u'.*no device address"):
        packed(p, 0, -1, 1)


def test_unreadable_parameters_take_only_raw_bytes():
    (k,) = find_kernels('__global__ void k(UNDEFINED(float) w, int n);')
    assert k.params[0].unknown
    with pytest.raises(TypeError, match="size of unparsed parameter 'w'"):
        natural_layout(k.params)
    p = Packer(k.name, k.params, [(0, 8), (8, 4)])    # as the driver reports it
    assert packed(p, struct.pack("=Q", 42), 1) == struct.pack("=Qi", 42, 1)
    with pytest.raises(ArgumentError, match=r"parameter 'w' \(UNDEFINED\(float\) w\): this declaration "
                                            r"could not be read.*pass its 8 bytes"):
        packed(p, 42, 1)
    with pytest.raises(ArgumentError, match="parameter 'w'.*8 bytes; got 4"):
        packed(p, b"abcd", 1)


def test_struct_errors_name_the_parameter_and_declaration():
    (k,) = find_kernels('typedef struct { float a, b; } Pair;\n'
                        '__global__ void k(const __grid_constant__ Pair pair, int n);')
    p = Packer(k.name, k.params, [(0, 8), (8, 4)])
    with pytest.raises(ArgumentError, match=r"k\(\): parameter 'pair' \(const __grid_constant__ Pair "
                                            r"pair\) is a struct passed by value"):
        packed(p, 1.0, 1)


def test_reference_and_function_sizes_are_checked_against_the_driver():
    (k,) = find_kernels('__global__ void k(const int& n, void (*f)(int));')
    with pytest.raises(ArgumentError, match=r"parameter 'n' \(const int& n\) is 8 bytes as parsed.*4 bytes"):
        Packer(k.name, k.params, [(0, 4), (8, 8)])
