"""``<cuda_magic/timeline.h>`` with both compilers, on the CPU: found with no flag, its marks
compiled to nothing in an ordinary build (the SASS of a marked kernel is the unmarked kernel's),
recording in the instrumented build (``-DCUDA_MAGIC_TIMELINE`` in the argv), names hashed the
same way on both sides, the header's text in the cache key, and the marks the host reads back
from the source."""

from __future__ import annotations

import re

import pytest

import cuda_magic
from cuda_magic import compile_source
from cuda_magic.compile import compiler, packaged
from cuda_magic.compile.include_scan import scan
from cuda_magic.display.content import header_notes
from cuda_magic.errors import ArgumentError, CompileError
from cuda_magic.runtime.measure.timeline import name_id
from cuda_magic.runtime.measure.timeline.build import DEFINE, instrumented, marks, names_in

from corpus import KERNELS, missing, CASES

COMPILERS = ["nvrtc", "nvcc"]
PIPELINE = (KERNELS / "timeline_pipeline.cu").read_text()
WS = (KERNELS / "warp_specialized.cu").read_text()            # marked too
SMALL = """#include <cuda_magic/timeline.h>
extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
    CM_RANGE_BEGIN("load");
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * a;
    CM_RANGE_END("load");
    CM_MARK("done");
}
"""


def _build(src, comp, *flags, arch="sm_90a"):
    case = next(c for c in CASES if c.file == "timeline_pipeline.cu")
    why = missing(case, comp)
    if why:
        pytest.skip(why)
    return compile_source(src, {"cuda": {"arch": arch, "compiler": comp,
                                         comp: ["--use_fast_math", *flags]}})


def _unmarked(src: str) -> str:
    """``src`` with its include and marks blanked (the line count kept)."""
    src = src.replace("#include <cuda_magic/timeline.h>", "")
    out = re.sub(r'^\s*CM_(RANGE_BEGIN|RANGE_END|MARK)\("[^"]*"\);\s*$', "", src, flags=re.M)
    assert "CM_" not in out
    return out


def _code(r, kernel: str) -> list[str]:
    """The kernel's SASS instructions (addresses and encodings dropped)."""
    return [m.group(1).strip() for m in re.finditer(r"/\*[0-9a-f]{4}\*/\s+([^;]*;)",
                                                    cuda_magic.sass(r, kernel))]


@pytest.mark.parametrize("comp", COMPILERS)
@pytest.mark.parametrize("include", ["<cuda_magic/timeline.h>", '"cuda_magic/timeline.h"'])
def test_the_header_is_found_by_both_compilers_and_listed_as_supplied(comp, include):
    r = _build(SMALL.replace("<cuda_magic/timeline.h>", include), comp)
    assert r.supplied_headers == ("cuda_magic/timeline.h",)
    assert r.kernels == ["scale"]
    assert any("cuda-magic's headers supplied: cuda_magic/timeline.h" in n
               for n in header_notes([r]))
    if comp == "nvcc":      # written beside the cell; its directory on the include path
        assert any(a.startswith("-I/") and "cuda-magic-" in a for a in r.argv)
        plain = _build(SMALL.replace("#include <cuda_magic/timeline.h>", "").replace(
            'CM_RANGE_BEGIN("load");', "").replace('CM_RANGE_END("load");', "").replace(
            'CM_MARK("done");', ""), comp)
        assert not any("cuda-magic-" in a for a in plain.argv if a.startswith("-I"))


@pytest.mark.parametrize("comp", COMPILERS)
@pytest.mark.parametrize("src, kernel", [(SMALL, "scale"), (PIPELINE, "staged_scale"),
                                         (WS, "ws_scale"), (WS, "ws_scale_regs")])
def test_marks_compile_to_nothing_in_an_ordinary_build(comp, src, kernel):
    marked, plain = _build(src, comp), _build(_unmarked(src), comp)
    assert "cuda_magic/timeline.h" in marked.supplied_headers
    assert "cuda_magic/timeline.h" not in plain.supplied_headers
    assert _code(marked, kernel) == _code(plain, kernel)
    assert len(_code(marked, kernel)) > 5
    assert marked.resources[kernel].registers == plain.resources[kernel].registers
    assert marked.resources[kernel].shared == plain.resources[kernel].shared


@pytest.mark.parametrize("comp", COMPILERS)
def test_the_instrumented_build_records_and_says_so_in_its_argv(comp):
    plain = _build(PIPELINE, comp)
    built = instrumented(plain, "staged_scale")
    assert DEFINE in built.argv and DEFINE not in plain.argv
    assert built.config.provenance[comp] == "cell + timeline"
    assert built.config[comp] == [*plain.config[comp], DEFINE]
    assert built.kernels == ["staged_scale"] and built.symbols == ["staged_scale"]
    assert "cm_timeline_probe" in cuda_magic.sass(built), "the probe is there, never bound"
    code = _code(built, "staged_scale")
    assert code != _code(plain, "staged_scale")
    assert any("GLOBALTIMER" in c for c in code) and any("SMID" in c for c in code)
    assert not any(c.startswith(("ATOMG", "RED.")) for c in code), "no global atomics"
    assert any(c.startswith("ATOMS") for c in code)     # the per-warp counter in shared memory
    assert built.resources["staged_scale"].shared == plain.resources["staged_scale"].shared + 384
    again = instrumented(plain, "staged_scale")
    assert again.cache_hit and again.key == built.key


@pytest.mark.parametrize("comp", COMPILERS)
def test_the_device_hashes_a_name_as_the_host_does(comp):
    built = instrumented(_build(SMALL, comp), "scale")
    ptx = cuda_magic.ptx(built)
    for name in ("load", "done"):
        ident = name_id(name)
        signed = ident - 2**32 if ident >= 2**31 else ident
        assert re.search(rf"(?<![\w-]){signed}(?!\d)|0x{ident:08x}", ptx, re.I), name


@pytest.mark.parametrize("comp", COMPILERS)
def test_a_name_must_be_a_string_literal_in_both_builds(comp):
    src = SMALL.replace('CM_MARK("done");', 'const char* name = "done"; CM_MARK(name);')
    for flags in ((), (DEFINE,)):
        with pytest.raises(CompileError):
            _build(src, comp, *flags)


def test_the_cache_key_covers_the_headers_text(monkeypatch):
    before = _build(SMALL, "nvrtc")
    text = packaged.headers()["cuda_magic/timeline.h"] + "\n// another version\n"
    monkeypatch.setattr(compiler, "_std", lambda standard: {"cuda_magic/timeline.h": text})
    after = _build(SMALL, "nvrtc")
    assert after.key != before.key and not after.cache_hit
    a = scan(SMALL, [], std={"cuda_magic/timeline.h": "x"})
    b = scan(SMALL, [], std={"cuda_magic/timeline.h": "y"})
    assert a.digest != b.digest and a.supplied == ("cuda_magic/timeline.h",)


def test_the_header_alone_brings_no_other_supplied_header():
    # cuda-magic's <cstdint> replacement comes with the standard headers only
    inputs = scan(SMALL, [], std=compiler._std(True))
    assert inputs.supplied == ("cuda_magic/timeline.h",)


def test_marks_are_read_outside_comments_with_adjacent_literals_and_escapes():
    text = r'''
    CM_RANGE_BEGIN("producer/load");   // CM_MARK("commented")
    /* CM_MARK("block comment") */
    CM_RANGE_END ( "producer" "/load" );
    CM_MARK("tab\there"); CM_MARK("quote\"d");
    const char* s = "CM_MARK(\"in a string\")";
    '''
    assert marks(text) == [("RANGE_BEGIN", "producer/load"), ("RANGE_END", "producer/load"),
                           ("MARK", "tab\there"), ("MARK", 'quote"d')]


def test_names_come_from_the_cell_and_its_session_headers():
    cuda_magic.define_header("tl_marks.cuh", '#include <cuda_magic/timeline.h>\n'
                             '__device__ void helper() { CM_MARK("from/header"); }\n')
    try:
        src = '#include "tl_marks.cuh"\nextern "C" __global__ void k() { helper(); CM_MARK("cell"); }\n'
        r = _build(src, "nvrtc")
        assert names_in(r) == {name_id("from/header"): "from/header", name_id("cell"): "cell"}
    finally:
        cuda_magic.remove_header("tl_marks.cuh")


def test_a_cell_with_no_marks_is_a_clear_error():
    r = _build(SMALL.replace('CM_RANGE_BEGIN("load");', "").replace('CM_RANGE_END("load");', "")
               .replace('CM_MARK("done");', "// CM_MARK(\"done\")"), "nvrtc")
    with pytest.raises(ArgumentError, match=r"scale\.timeline: the cell has no marks to record; "
                                            r"#include <cuda_magic/timeline.h> and mark"):
        instrumented(r, "scale")


def test_the_header_ships_in_the_package():
    import pathlib
    import tomllib
    root = pathlib.Path(cuda_magic.__file__).parent
    assert (root / "include" / "cuda_magic" / "timeline.h").is_file()
    assert packaged.INCLUDE == str(root / "include")
    data = tomllib.loads((root.parent / "pyproject.toml").read_text())
    patterns = data["tool"]["setuptools"]["package-data"]["cuda_magic"]
    assert any(pathlib.PurePath("include/cuda_magic/timeline.h").match(p) for p in patterns)
