"""Bad input to verify(), to_bits() and from_bits(): one short error naming the parameter, what
it quotes capped -- never a raw OverflowError, ValueError, TypeError or NotImplementedError from
NumPy, torch or the int->str digit limit."""

import re

import numpy as np
import pytest
import torch

from cuda_magic.correctness.verifier import verify
from cuda_magic.correctness.formats import from_bits, to_bits, ulp_distance
from cuda_magic.errors import DtypeError, VerifyError

X = np.ones(3, np.float32)
HUGE = 10 ** 5000            # past Python's 4,300-digit int->str limit: repr() raises


@pytest.mark.parametrize("kw, message", [
    (dict(ulp=10 ** 400), "ulp=1000000"),
    (dict(ulp=HUGE), "ulp=<int>: give a finite number >= 0"),
    (dict(rtol=10 ** 400), "rtol=1000000"),
    (dict(atol=HUGE), "atol=<int>"),
    (dict(reduction=10 ** 400), "reduction=1000000"),
    (dict(reduction=HUGE), "reduction=<int>: give the number of terms"),
    (dict(reduction=2 ** 64 + 1), "an int from 1 to 2**64"),
    (dict(name=HUGE), "name=<int>: an output's name is a string"),
    (dict(name=5), "name=5: an output's name is a string"),
    (dict(tile=10 ** 400), "tile=1000000"),
    (dict(tile=(HUGE,)), "tile=(<int>,): give the tile shape"),
    (dict(tile=1.5), "tile=1.5: give the tile shape"),
    (dict(chunk=0.5), "chunk=0.5: give the elements to compare at a time"),
    (dict(inputs=[X]), "inputs=[array("),
    (dict(inputs="abc"), "inputs='abc': give the kernel's inputs as a dict {name: array}"),
    (dict(inputs={5: X}), "inputs: a key 5: an output's name is a string"),
    (dict(inputs={"x": [[1], [2, 3]]}), "inputs['x']=[[1], [2, 3]]: a ragged list"),
    (dict(initial=[[1], [2, 3]]), "initial=[[1], [2, 3]]: a ragged list"),
])
def test_verify_keywords(kw, message):
    with pytest.raises(VerifyError, match=re.escape(message)) as e:
        verify(X, X, **kw)
    assert len(str(e.value)) < 300


def test_big_numbers_that_fit_are_taken():
    assert verify(X, X, reduction=2 ** 64) and verify(X, X, tile=2 ** 62) and verify(X, X, chunk=HUGE)


@pytest.mark.parametrize("out, ref, message", [
    ([[1, 2], [3]], X, "out=[[1, 2], [3]]: a ragged list; give an array of numbers"),
    (X, [[1, 2], [3]], "ref=[[1, 2], [3]]: a ragged list"),
    ("abc", X, "out='abc': a str; give an array of numbers"),
    (X, None, "ref=None: a NoneType; give an array of numbers"),
    ([HUGE], X[:1], "out=[<int>]: a list"),
    (np.array(["a", "b", "c"]), X, "out=array(['a', 'b', 'c']"),
    ({"y": [[1], [2, 3]]}, {"y": X}, "out['y']=[[1], [2, 3]]: a ragged list"),
    ({HUGE: X}, {HUGE: X}, "a key <int>: an output's name is a string"),
    (torch.empty(3, device="meta"), X, "out is a torch tensor on the meta device, which holds no data"),
    (X, torch.empty(3, device="meta"), "ref is a torch tensor on the meta device"),
])
def test_arrays_that_hold_no_numbers(out, ref, message):
    with pytest.raises(VerifyError, match=re.escape(message)) as e:
        verify(out, ref)
    assert len(str(e.value)) < 300


def test_a_long_dtype_string_is_cut():
    with pytest.raises(DtypeError, match=r"dtype='zzz+'\.\.\. \(10000 characters\): not a number "
                                         r"format") as e:
        verify(X.view(np.uint32), X, dtype="z" * 10000)
    assert len(str(e.value)) < 400
    with pytest.raises(DtypeError, match=r"\(10000 characters\)"):
        to_bits(X, "z" * 10000)


@pytest.mark.parametrize("values, message", [
    (10 ** 400, "values=1000000"),
    (HUGE, "values=<int>: give numbers"),
    ([1, 10 ** 400], "values=[1, 1000000"),
    ("abc", "values='abc': give numbers (an array, a list of one shape, a number) within float64's range"),
    ([[1], [2, 3]], "values=[[1], [2, 3]]"),
], ids=["1e400", "5000 digits", "a list", "text", "ragged"])
def test_to_bits_of_what_is_not_numbers(values, message):
    with pytest.raises(DtypeError, match=re.escape(message)) as e:
        to_bits(values, "e4m3")
    assert len(str(e.value)) < 300


def test_meta_tensors_hold_no_data():
    meta = torch.empty(3, device="meta")
    for call in (lambda: to_bits(meta, "e4m3"), lambda: ulp_distance(meta, meta),
                 lambda: from_bits(torch.empty(3, dtype=torch.uint8, device="meta"), "e4m3")):
        with pytest.raises(DtypeError, match="a torch tensor on the meta device holds no data"):
            call()


def test_from_bits_of_a_ragged_list():
    with pytest.raises(DtypeError, match=re.escape("codes_=[[1], [2, 3]]: give bit patterns")):
        from_bits([[1], [2, 3]], "e4m3")
    assert from_bits(torch.tensor([0x38], dtype=torch.uint8), "e4m3").tolist() == [1.0]


def test_torch_values_go_through_their_format():
    t = torch.tensor([1.0, 2.0, 0.3], dtype=torch.bfloat16)
    assert to_bits(t, "e4m3").tolist() == to_bits(t.float().numpy(), "e4m3").tolist()
    assert to_bits([1.5, "2"], "e4m3").tolist() == to_bits([1.5, 2.0], "e4m3").tolist()
