"""The kernel corpus (tests/kernels/, expectations in corpus.py), compiled with no GPU.

Each case x compiler: the cell binds exactly the expected kernels, under the expected
Python names, with the expected parameter counts, each to the expected binary entry, and
every parameter's size agrees with the binary.  Cases skip only when a pip extra they
need (nvcc, the CUTLASS, cuRAND or crt headers) is not installed.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile

import pytest
import yaml

import cuda_magic
from conftest import ARCH
from corpus import BUILDS, CASES, KERNELS, LAUNCHED, NOT_BOUND, build_case, include_dir, missing

# every corpus kernel with both compilers: left out of the quick check (-m "not slow")
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("case, compiler", BUILDS)
def test_binds_exactly_the_expected_kernels(case, compiler):
    m = build_case(case, compiler)
    names = m.python_names()
    assert set(names) == set(case.kernels)
    for name, count in case.kernels.items():
        k = names[name]
        assert len(k.params) == count, (name, [str(p) for p in k.params])
        assert m[name] is k
        assert k.symbol == case.symbols[name], name
    for spelling, name in case.aliases.items():
        assert m[spelling] is names[name], spelling
    for name in NOT_BOUND.get(case.file, ()):
        with pytest.raises(KeyError):
            m[name]


@pytest.mark.parametrize("case, compiler", BUILDS)
def test_parameter_sizes_match_the_binary(case, compiler):
    from cuda_magic.compile.binary import entries
    m = build_case(case, compiler)
    names = m.python_names()
    in_binaries = set()
    for name, k in names.items():
        r = m.result_of(name)
        table = {e.symbol: e for e in entries(r.binary, r.format)}
        in_binaries |= set(table)
        e = table[k.symbol]
        assert len(e.params) == len(k.params), name
        for p, (offset, size) in zip(k.params, e.params):
            if p.pointer:
                want = 8
            elif p.scalar is not None:            # typedefs, aliases and macros resolved
                want = p.scalar.size
            else:
                assert p.type in case.structs, f"{name}: parameter {p} did not resolve to a scalar"
                want = case.structs[p.type]
            assert size == want, f"{name}: parameter {p} is {size} bytes in the binary, {want} parsed"
    # Every kernel entry in the binaries is bound, and nothing else.
    assert {k.symbol for k in names.values()} == in_binaries == set(case.symbols.values())


# --- the corpus itself, with the real nvcc (runs before the binding layer does) -------------

def _header(text: str) -> dict:
    lines = []
    for line in text.splitlines():
        if not line.startswith("//|"):
            break
        lines.append(line[3:])
    return yaml.safe_load("\n".join(lines)) or {}


def _entry_symbols(cubin: str) -> set[str]:
    from cuda.pathfinder import find_nvidia_binary_utility
    tool = find_nvidia_binary_utility("cuobjdump") or "cuobjdump"
    out = subprocess.run([tool, "-symbols", cubin], capture_output=True, text=True, check=True).stdout
    return {f[-1] for f in (line.split() for line in out.splitlines())
            if any("ENTRY" in t for t in f[:-1])}     # ENTRY, or STO_ENTRY in other versions


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES if "nvcc" in c.compilers])
def test_nvcc_emits_exactly_the_expected_entries(case):
    reason = missing(case, "nvcc")
    if reason:
        pytest.skip(reason)
    from cuda_magic.tools import find
    header = _header(case.text)
    flags = [*header.get("nvcc", ["--use_fast_math"]), *header.get("nvcc+", []), *case.flags]
    if case.requires == "cutlass":
        flags.append(f"-I{include_dir('cutlass')}")
    from cuda_magic.compile.packaged import INCLUDE
    flags.append(f"-I{INCLUDE}")         # <cuda_magic/timeline.h>, as a build outside cuda-magic finds it
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "out.cubin")
        argv = [find("nvcc"), f"-arch={case.arch or ARCH}", "--cubin", "-std=c++17", *flags, "-o", cubin,
                str(KERNELS / case.file)]
        done = subprocess.run(argv, capture_output=True, text=True)
        assert done.returncode == 0, f"{shlex.join(argv)}\n{done.stderr[-3000:]}"
        # less the kernels that are never the cell's (CUB's empty kernel, with CUDA 13.0's CCCL)
        from cuda_magic.compile.binary import NOT_THE_CELLS
        assert {s for s in _entry_symbols(cubin) if not NOT_THE_CELLS.search(s)} == set(case.symbols.values())


def test_every_file_is_a_case():
    files = sorted(p.name for p in KERNELS.glob("*.cu"))
    assert files == sorted(c.file for c in CASES)
    for case in CASES:
        n = len(case.text.splitlines())
        # a cell's length (a Hopper/Blackwell GEMM's inline PTX, its 32 accumulators, needs ~100)
        assert 20 <= n <= 110, f"{case.file}: {n} lines"


def test_cute_under_nvrtc_says_why_it_fails_and_what_to_do():
    """nvidia-cutlass 4.2 (the newest wheel) and CCCL 3 clash under NVRTC (std::tuple_size): the
    error must say so and point at nvcc, which builds the same cell (the cute_copy case)."""
    (case,) = [c for c in CASES if c.file == "cute_copy.cu"]
    if include_dir("cutlass") is None:
        pytest.skip("the nvidia-cutlass wheel is not installed (pip install -e '.[cutlass]')")
    try:
        m = cuda_magic.build(case.text, cuda_magic.line_config(arch=ARCH), load=False, force=True)
    except cuda_magic.CompileError as exc:
        assert "CuTe under NVRTC" in str(exc) and "--compiler nvcc" in str(exc)
        assert "-default-device" in exc.argv        # the cell's own //| header asks for it
    else:       # a CUTLASS that fixed the clash: then the case should list nvrtc again
        assert set(m.python_names()) == set(case.kernels)


@pytest.mark.gpu
@pytest.mark.parametrize("case, compiler", [
    pytest.param(case, compiler, id=f"{case.id}-{compiler}")
    for case in LAUNCHED if case.run is not None for compiler in case.compilers])
def test_runs_and_matches_numpy(case, compiler):
    reason = missing(case, compiler)
    if reason:
        pytest.skip(reason)
    m = cuda_magic.build(case.text, cuda_magic.line_config(compiler=compiler), load=True)
    if m.load_error is not None:
        raise m.load_error
    assert set(m.python_names()) == set(case.kernels)
    case.run(m)
