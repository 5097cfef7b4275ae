"""Device printf and assert messages (runtime/launch/device_print.py) on the CPU: what the C library
and the process's file descriptors 1 and 2 receive during a launch reaches the cell's
sys.stdout / sys.stderr, and a failed device assert names its condition and cell line."""

import ctypes
import os

import pytest

from cuda_magic.runtime import CudaError
from cuda_magic.runtime.launch.device_print import assert_message, captured

SOURCE = "__global__ void k(int n) {\n    assert(n > 0);\n}\n"
ASSERTED = ("/tmp/x/cell.cu:2: void k(int): block: [1,0,0], thread: [3,0,0] "
            "Assertion `n > 0` failed.\n")


def test_what_the_launch_prints_reaches_the_cells_streams(capsys):
    libc = ctypes.CDLL(None)

    def run():
        libc.printf(b"from C stdio %d\n", 7)       # as the driver writes device printf
        os.write(1, b"from fd 1\n")
        os.write(2, b"from fd 2\n")
    captured(run)
    out, err = capsys.readouterr()
    assert out == "from C stdio 7\nfrom fd 1\n" and err == "from fd 2\n"


def test_a_failed_device_assert_names_its_condition_and_line(capsys):
    def run():
        os.write(2, ASSERTED.encode())
        raise CudaError("running k: device-side assert triggered", "CUDA_ERROR_ASSERT", 710)
    with pytest.raises(CudaError) as info:
        captured(run, SOURCE)
    assert info.value.name == "CUDA_ERROR_ASSERT" and info.value.code == 710
    assert str(info.value).endswith("device assert failed at cell line 2: `n > 0` in void k(int), "
                                    "block (1,0,0), thread (3,0,0)\n     2 |     assert(n > 0);")
    assert capsys.readouterr().err == ASSERTED


def test_other_errors_pass_through_and_unknown_text_gives_no_note():
    def run():
        raise CudaError("running k: an illegal memory access", "CUDA_ERROR_ILLEGAL_ADDRESS", 700)
    with pytest.raises(CudaError, match=r"^running k: an illegal memory access$"):
        captured(run, SOURCE)
    assert assert_message("no assert here", SOURCE) is None
