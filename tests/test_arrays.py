"""Arrays of any library (cuda_magic/arrays.py): which library, the one bits form and the values
form of the dtypes NumPy lacks, fresh arrays like an array, and bitwise equality."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from cuda_magic import arrays
from cuda_magic.correctness.formats import from_bits, to_bits
from cuda_magic.errors import ArgumentError


class _Cai:
    __cuda_array_interface__ = {"data": (0, False), "shape": (0,), "typestr": "<f4", "version": 3}


def test_library_names_each_kind_and_nothing_else():
    assert arrays.library(np.zeros(2)) == "numpy"
    assert arrays.library(_Cai()) == "cai"
    for other in (None, 3, [1.0], b"xx", "s"):
        assert arrays.library(other) is None and not arrays.is_array(other)
    torch = pytest.importorskip("torch")
    assert arrays.library(torch.zeros(2)) == "torch" and arrays.is_array(torch.zeros(2))


def test_host_of_numpy_is_the_array_and_asks_a_form():
    a = np.arange(4.0)
    assert arrays.host(a) is a and arrays.host(a, "values") is a
    with pytest.raises(ArgumentError, match="'bits' or 'values'"):
        arrays.host(a, "ints")
    with pytest.raises(ArgumentError, match="_Cai has no host copy"):
        arrays.host(_Cai())


@pytest.mark.parametrize("dtype, fmt, bits", [("bfloat16", "bfloat16", np.uint16),
                                              ("float8_e4m3fn", "e4m3", np.uint8),
                                              ("float8_e5m2", "e5m2", np.uint8)])
def test_torch_dtypes_numpy_lacks_come_as_bits_or_float32_values(dtype, fmt, bits):
    torch = pytest.importorskip("torch")
    x = np.array([1.0, -2.0, 0.5, 3.0])
    t = torch.tensor(x, dtype=torch.float32).to(getattr(torch, dtype))
    h = arrays.host(t)
    assert h.dtype == bits and h.tolist() == to_bits(x, fmt).tolist()
    v = arrays.host(t, "values")
    assert v.dtype == np.float32 and v.tolist() == from_bits(h, fmt).tolist()
    back = arrays.like(h, t)                              # bits in, the tensor's dtype out
    assert back.dtype == t.dtype and arrays.bits_equal(back, t)
    again = arrays.like(v, t, as_="values")               # values in: rounded to its dtype
    assert again.dtype == t.dtype and arrays.bits_equal(again, t)
    assert arrays.like(h, t, "cpu").device.type == "cpu"


def test_like_copy_size_shape():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    b = arrays.like(np.ones((2, 3)), a)
    assert b.dtype == np.int32 and arrays.shape(b) == (2, 3) and arrays.size(b) == 6
    c = arrays.copy(a)
    assert c is not a and np.array_equal(c, a)
    assert arrays.size([1, 2, 3]) == 3
    with pytest.raises(ArgumentError, match="cannot copy a int"):
        arrays.copy(3)
    torch = pytest.importorskip("torch")
    t = torch.arange(6).reshape(2, 3)
    assert arrays.size(t) == 6 and arrays.shape(t) == (2, 3)
    assert arrays.copy(t).data_ptr() != t.data_ptr()


def test_bits_equal_sees_the_sign_of_zero_and_nan_payloads():
    z, m = np.array([0.0], np.float32), np.array([-0.0], np.float32)
    assert arrays.bits_equal(z, z.copy()) and not arrays.bits_equal(z, m)
    assert not arrays.bits_equal(z, np.zeros(2, np.float32))


def test_the_ground_floor_loads_no_array_library():
    code = ("import sys, cuda_magic.arrays, cuda_magic.elements; "
            "print(sorted(m for m in ('numpy', 'torch', 'cupy', 'ml_dtypes') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr
