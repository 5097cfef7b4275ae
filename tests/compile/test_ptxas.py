"""parse_ptxas on the formats ptxas prints (real logs run in test_compile.py)."""

from hypothesis import given, strategies as st

from cuda_magic import parse_ptxas

# Shape of a CUDA 12 nvcc log: cmem per bank, no barrier count, a spill warning.
OLDER_NVCC = """\
ptxas info    : 0 bytes gmem, 72 bytes cmem[3]
ptxas info    : Function properties for _Z6helperv
    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function '_Z6kernelPf' for 'sm_80'
ptxas info    : Function properties for _Z6kernelPf
    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 32 registers, 16 bytes cumulative stack size, 1024 bytes smem, 368 bytes cmem[0], 4 bytes cmem[2]
ptxas warning : Registers are spilled to local memory in function '_Z6kernelPf', 8 bytes spill stores, 12 bytes spill loads
"""

# NVRTC 13 prints continuation lines as "ptxas         ." and reports barriers.
NVRTC = """\
ptxas warning : Local memory used for function 'scale', size of stack frame: 128 bytes
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'scale' for 'sm_90a'
ptxas info    : Function properties for scale
ptxas         .     128 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 31 registers, used 1 barriers, 128 bytes cumulative stack size, 256 bytes smem
ptxas info    : Compile time = 6.542 ms
ptxas info    : Function properties for _Z6helperPfi
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
"""


def test_older_nvcc_format():
    funcs = parse_ptxas(OLDER_NVCC)
    k = funcs["_Z6kernelPf"]
    assert (k.entry, k.arch, k.registers, k.barriers) == (True, "sm_80", 32, 0)
    assert (k.stack_frame, k.spill_stores, k.spill_loads) == (16, 8, 12) and k.spills
    assert (k.cumulative_stack, k.shared, k.constant) == (16, 1024, 372)
    assert len(k.warnings) == 1 and "spilled" in k.warnings[0]
    helper = funcs["_Z6helperv"]
    assert not helper.entry and helper.stack_frame == 8 and helper.registers == 0


def test_nvrtc_format():
    funcs = parse_ptxas(NVRTC)
    assert list(funcs) == ["scale", "_Z6helperPfi"]
    s = funcs["scale"]
    assert (s.registers, s.barriers, s.shared, s.stack_frame, s.cumulative_stack) == (31, 1, 256, 128, 128)
    assert s.compile_time_ms == 6.542 and not s.spills
    assert s.warnings == ("ptxas warning : Local memory used for function 'scale', size of stack frame: 128 bytes",)
    assert not funcs["_Z6helperPfi"].entry


def test_nothing_to_parse():
    assert parse_ptxas("") == {}
    assert parse_ptxas("nvrtc: warning: something unrelated\n") == {}


_fragments = st.sampled_from(OLDER_NVCC.splitlines() + NVRTC.splitlines() + [
    "ptxas info    : Used x registers", "Function properties for", "ptxas warning : function ''"])


@given(st.lists(st.one_of(_fragments, st.text(max_size=80)), max_size=30))
def test_parser_never_raises(lines):
    for name, res in parse_ptxas("\n".join(lines)).items():
        assert res.name == name and res.registers >= 0


def test_without_drops_one_kernels_lines_in_either_format():
    from cuda_magic.compile.ptxas import without
    for log in (OLDER_NVCC, NVRTC):
        kernel = next(n for n, r in parse_ptxas(log).items() if r.entry)
        left = without(log, {kernel})
        assert kernel not in parse_ptxas(left) and kernel not in left
        assert "_Z6helper" in left and "0 bytes gmem" in left       # what is not the kernel's
        assert without(log, {"other"}) == log and without(log, ()) == log


def test_without_keeps_the_other_kernels_block_whole():
    from cuda_magic.compile.ptxas import without
    two = NVRTC + NVRTC.replace("'scale'", "'other'").replace("for scale", "for other") \
        .replace("31 registers", "7 registers")
    left = parse_ptxas(without(two, {"scale"}))
    assert "scale" not in left and left["other"].registers == 7 and left["other"].stack_frame == 128
