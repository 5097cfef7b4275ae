"""The element rows and the tables that are views of them."""

from __future__ import annotations

import numpy as np

from cuda_magic import elements
from cuda_magic.compile.cpptypes import canonical_type
from cuda_magic.correctness.formats import FORMAT_TYPES, FORMATS, format_of
from cuda_magic.runtime.launch.params import SCALARS
from cuda_magic.runtime.tensormap import DATA_TYPES
from cuda_magic.runtime.verify.buffers import TORCH_CODES


def test_each_spelling_is_canonical_and_each_alias_reduces_to_it():
    for e in elements.ELEMENTS:
        for s in e.cpp:
            assert canonical_type(s) == s
        for a in e.aliases:
            assert canonical_type(a) in e.cpp, a


def test_each_row_agrees_with_its_format_and_numpy():
    for e in elements.ELEMENTS:
        assert np.dtype(e.bits).kind == "u" and np.dtype(e.bits).itemsize == e.size
        if e.format:
            f = format_of(dtype=e.format)
            assert np.dtype(f.container).name == e.bits
            assert e.format in FORMATS or e.format == "e2m1x2"
        if e.native:
            assert np.dtype(e.numpy).itemsize == e.size
        if e.code:
            import struct
            assert struct.calcsize(e.code) == e.size


def test_the_tables_are_views_of_the_rows():
    assert SCALARS["__nv_bfloat16"].code == "H" and SCALARS["long"].size == 8
    assert "__nv_fp8_e4m3" not in SCALARS                 # not packed by value
    assert FORMAT_TYPES["__nv_bfloat16"] == "bfloat16" and "float" not in FORMAT_TYPES
    assert TORCH_CODES["bfloat16"] == ("bfloat16", "int16", np.uint16)
    assert DATA_TYPES["float8_e4m3fn"] == ("UINT8", 1) and DATA_TYPES["bfloat16"] == ("BFLOAT16", 2)
    from cuda_magic.exports.spec import TORCH_DTYPES
    assert TORCH_DTYPES["float4"] == ("float32", 16) and TORCH_DTYPES["__half"] == ("float16", 0)


def test_lookups():
    assert elements.by_cpp("__nv_fp8_e5m2").torch == "float8_e5m2"
    assert elements.by_dtype("torch.bfloat16").cpp == ("__nv_bfloat16",)
    assert elements.format_of_cpp("__nv_bfloat16") == "bfloat16"
    assert elements.format_of_cpp("int") is None and elements.format_of_cpp("MyStruct") is None
