"""Hostile cells: duplicate ``//|`` keys, a ``//| tune:``
header under ``%%cuda``, ``%%cuda_header`` names nvcc cannot write, a 1500-deep include chain,
big cells in the parse caches, and the widgets of re-run cells.  CPU only (NVRTC and nvcc)."""

from __future__ import annotations

import gc
import io
import tracemalloc
from contextlib import redirect_stderr

import pytest

from conftest import ARCH, SAXPY, cfg
from cuda_magic.cell import CellError, parse_cell
from cuda_magic.compile import header_store, include_scan
from cuda_magic.compile.compiler import compile_source
from cuda_magic.config import ConfigError
from cuda_magic.errors import Error


@pytest.fixture
def session_headers():
    """The session headers as they were before the test, whatever it defines."""
    with header_store._LOCK:
        saved = dict(header_store._SESSION)
    yield
    with header_store._LOCK:
        header_store._SESSION.clear()
        header_store._SESSION.update(saved)


# ---- 11: duplicate keys in a //| header; a //| tune: header under %%cuda -------------------------

def test_a_key_given_twice_in_a_header_is_an_error_at_its_line():
    cell = "//| arch: sm_80\n//| tune: {BM: [1, 2], BM: [3]}\n" + SAXPY
    with pytest.raises(CellError) as e:
        parse_cell(cell)
    assert "'BM'" in str(e.value) and "twice" in str(e.value) and e.value.line == 2

    cell = "//| arch: sm_80\n//| compiler: nvrtc\n//| arch: sm_90a\n" + SAXPY
    with pytest.raises(CellError) as e:
        parse_cell(cell)
    assert "'arch'" in str(e.value) and e.value.line == 3

    kernel = SAXPY.replace("extern", "//| ptxas: [-v]\n//| ptxas: []\nextern", 1)
    with pytest.raises(CellError) as e:
        parse_cell(kernel)
    assert "'ptxas'" in str(e.value) and e.value.line == kernel.split("\n").index("//| ptxas: []") + 1


def test_cuda_says_once_that_it_builds_a_tune_header_as_written(shell):
    cell = ("//| tune: {BM: [64, 128]}\n#ifndef BM\n#define BM 32\n#endif\n"
            'extern "C" __global__ void k(float* x) { x[threadIdx.x] = BM; }\n')
    err = io.StringIO()
    with redirect_stderr(err):
        shell.run_cell_magic("cuda", f"--arch {ARCH} --compile-only", cell)
        shell.run_cell_magic("cuda", f"--arch {ARCH} --compile-only", cell)
    said = [ln for ln in err.getvalue().splitlines() if "tune" in ln]
    assert len(said) == 1, err.getvalue()
    assert "%%cuda_tune" in said[0] and "as written" in said[0]


# ---- 13: %%cuda_header names -----------------------------------------------------------------------

@pytest.mark.parametrize("name", [".", "lib/./x.cuh", "a" * 300 + ".cuh", "cell.cu"])
def test_header_names_no_compiler_can_keep_are_refused(session_headers, name):
    with pytest.raises(ConfigError) as e:
        header_store.define_header(name, "#pragma once\n")
    assert len(str(e.value)) < 400 and name not in header_store.session_headers()


def test_a_header_name_cannot_be_a_file_and_a_directory(session_headers):
    header_store.define_header("util", "#pragma once\n")
    with pytest.raises(ConfigError, match="'util'"):
        header_store.define_header("util/x.cuh", "#pragma once\n")
    header_store.remove_header("util")
    header_store.define_header("util/x.cuh", "#pragma once\n")
    with pytest.raises(ConfigError, match="'util'"):
        header_store.define_header("util", "#pragma once\n")
    assert set(header_store.session_headers()) >= {"util/x.cuh"} and "util" not in header_store.session_headers()
    # what is accepted, nvcc writes and builds: a subdirectory, names beside nvcc's own files
    header_store.define_header("util/x.cuh", "#pragma once\nconstexpr float U = 3.0f;\n")
    header_store.define_header("out.cuh", '#pragma once\n#include "util/x.cuh"\n')
    header_store.define_header("cell.h", '#pragma once\n#include "out.cuh"\n')
    cell = '#include "cell.h"\n' + SAXPY.replace("x[i] * a", "x[i] * a * U")
    r = compile_source(cell, cfg(compiler="nvcc", target_format="cubin"))
    assert "scale" in r.resources


def test_a_deep_include_chain_of_session_headers_compiles_or_is_the_compilers_error(session_headers):
    # The scan of what a compile reads follows a chain of any depth (a RecursionError at ~1000
    # before); NVRTC compiles 1500 deep, nvcc's preprocessor stops at 200 and says so.
    for i in range(1500):
        header_store.define_header(f"d{i}.cuh", f'#include "d{i + 1}.cuh"\n')
    header_store.define_header("d1500.cuh", "#define DEEP 2.0f\n")
    cell = '#include "d0.cuh"\n' + SAXPY.replace("x[i] * a", "x[i] * DEEP")
    r = compile_source(cell, cfg(compiler="nvrtc"))
    assert "scale" in r.resources and len(r.inputs.session) == 1501
    with pytest.raises(Error) as e:
        compile_source(cell, cfg(compiler="nvcc"))
    assert "nested depth 200" in str(e.value) and len(str(e.value)) < 1000


# ---- 15: the parse caches are bounded by bytes ---------------------------------------------------

def _big_cell(edit: int, megabytes: float = 4.5) -> str:
    row = "// " + "x" * 76 + "\n"
    return f"// edit {edit}\n" + row * int(megabytes * 2**20 / len(row)) + SAXPY


def test_editing_a_big_cell_keeps_no_copy_per_edit(monkeypatch):
    import cuda_magic.cell as cell_package
    # What is measured is what the parse caches keep, not the kernel scan (about 3 s per MB on
    # this machine, 5x that under tracemalloc): it finds the kernels of the cell's last lines.
    real = cell_package.find_kernels
    monkeypatch.setattr(cell_package, "find_kernels", lambda text: real(text[-2000:]))
    parse_cell.cache_clear()
    include_scan._parse.cache_clear()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        size = 0
        for edit in range(20):
            text = _big_cell(edit)
            size = len(text)
            assert parse_cell(text).kernels[0].name == "scale"
            include_scan.scan(text, [])
            assert parse_cell(text) is parse_cell(text)       # an unchanged re-run parses nothing
            del text
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert size > 4 * 2**20
    # 20 copies before (+ a second per edit in the include scan's memo): now the budget of each
    assert kept < 6 * size, f"{kept / 2**20:.1f} MiB kept for 20 edits of a {size / 2**20:.1f} MiB cell"


# ---- 15b: the widgets of a re-run cell are closed --------------------------------------------------

def _live_widgets() -> int:
    from ipywidgets.widgets.widget import _instances
    return len(_instances)


@pytest.fixture
def notebook(shell, monkeypatch):
    """The shell as a notebook's kernel has it: results shown as widgets."""
    pytest.importorskip("ipywidgets")
    from cuda_magic.display import frontend
    monkeypatch.setattr(frontend, "in_kernel", lambda: True)
    return shell


def test_a_re_run_cell_keeps_one_view_of_widgets(notebook):
    cell = f"%%cuda --arch {ARCH} --compile-only\n{SAXPY}"
    gc.collect()
    start = _live_widgets()
    notebook.run_cell(cell, cell_id="cell-1")
    one = _live_widgets() - start
    assert 0 < one <= 20                    # one view: the panes are made when a tab is opened
    for _ in range(8):
        notebook.run_cell(cell, cell_id="cell-1")
    assert _live_widgets() - start <= one + 2
    # another cell's view stays; re-running it closes its own
    notebook.run_cell(cell, cell_id="cell-2")
    assert _live_widgets() - start <= 2 * one + 2
    notebook.run_cell(cell, cell_id="cell-2")
    assert _live_widgets() - start <= 2 * one + 2


def test_a_re_run_comparison_cell_keeps_one_view_of_widgets(notebook):
    cell = f"%%cuda_compare --arch {ARCH}\n{SAXPY}"
    gc.collect()
    start = _live_widgets()
    notebook.run_cell(cell, cell_id="cmp-1")
    one = _live_widgets() - start
    assert one > 0
    for _ in range(4):
        notebook.run_cell(cell, cell_id="cmp-1")
    assert _live_widgets() - start <= one + 2


def test_a_re_run_cell_without_a_cell_id_closes_the_view_of_its_name(notebook):
    cell = f"%%cuda --arch {ARCH} --compile-only --name m\n{SAXPY}"
    notebook.run_cell(cell)
    gc.collect()
    start = _live_widgets()
    for _ in range(6):
        notebook.run_cell(cell)
    assert _live_widgets() - start <= 2


def test_an_opened_tab_builds_its_pane_then():
    pytest.importorskip("ipywidgets")
    from cuda_magic.cell import build
    from cuda_magic.display import view
    from cuda_magic.display.frontend import close
    w = view(build(SAXPY, {"arch": ARCH})).widget()
    start = _live_widgets()
    w.tab.selected_index = 4                 # PTX
    assert ".entry" in w.ptx.pane.value and _live_widgets() > start
    close(w)
    assert _live_widgets() < start
