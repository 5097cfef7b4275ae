"""Precompiled headers across processes: one made by yesterday's notebook serves today's first
heavy cell; one that does not fit a process is skipped there, never removed.  Each "session" is a
fresh Python process (its own address-space randomisation).  Real NVRTC, no GPU needed."""

import json
import os
import resource
import subprocess
import sys

import pytest

from conftest import cfg

CELL = ("#include <cuda/std/type_traits>\n#include <cooperative_groups.h>\n"
        'extern "C" __global__ void k(int* y) {{ y[threadIdx.x] = 1234567 + {}; }}\n')

SESSION = r"""
import json, sys, warnings
from cuda_magic import compile_source, ptx
from cuda_magic.compile import pch_heap
from cuda_magic.compile.backends import nvrtc
tried, run = [], nvrtc._run          # the PCH flags of the cell's NVRTC runs
nvrtc._run = lambda n, s, argv, *r: tried.extend(a.split("=")[0] for a in argv if "-pch=" in a
                                                 and "cuda-magic-heap" not in s) or run(n, s, argv, *r)
exec(PATCH)
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as record:
    rs = [compile_source(CELL.format(e), {"cuda": {"arch": ARCH}}, force=True) for e in EDITS]
print(json.dumps({"pch": [r.pch for r in rs], "tried": tried, "token": pch_heap.token(),
                  "ptx": [ptx(r) for r in rs], "said": [str(w.message) for w in record]}))
"""

# a process whose heap cannot be placed (its address taken, a ulimit -v): NVRTC maps it anywhere
UNPLACED = "pch_heap._steer = lambda address, size: None\n"
# ... and that names it as if it were placed: what NVRTC does with a PCH made for another heap
MISNAMED = UNPLACED + """
place = pch_heap.place
pch_heap.place = lambda size, resize, allocate: (place(size, resize, allocate),
                                         f"{pch_heap.ADDRESS:x}+{size >> 20}M")[1]
"""


def unlimited_stack():
    """Linux's legacy bottom-up address-space layout: what a process started after a PCH compile
    gets (NVRTC lifts the stack limit)."""
    resource.setrlimit(resource.RLIMIT_STACK, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def session(store, tmp_path, *edits, patch="", legacy=False):
    """A fresh process compiling the cell with each edit: what it said and did."""
    env = {**os.environ, "CUDA_MAGIC_PCH_DIR": str(store), "CUDA_MAGIC_PCH": "1",
           "CUDA_MAGIC_CACHE_DIR": str(tmp_path / f"cache{edits[0]}")}
    env.pop("CUDA_MAGIC_PCH_LIMIT", None)
    code = (f"CELL = {CELL!r}\nARCH = {cfg()['cuda']['arch']!r}\nEDITS = {edits!r}\n"
            f"PATCH = {patch!r}\n" + SESSION)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300, cwd=os.path.dirname(os.path.dirname(__file__)),
                         preexec_fn=unlimited_stack if legacy else None)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.splitlines()[-1])
    assert [p.count(str(1234567 + e)) for p, e in zip(got["ptx"], edits)] == [1] * len(edits)
    return got


def files(store) -> dict[str, int]:
    """PCH file name -> inode."""
    return {n: os.stat(store / n).st_ino for n in os.listdir(store) if n.endswith(".pch")}


@pytest.fixture
def store(tmp_path):
    return tmp_path / "pch"


@pytest.mark.parametrize("first_legacy,later_legacy", [(False, False), (True, False), (False, True)])
def test_a_pch_made_in_one_session_is_used_by_the_next_ones_first_heavy_cell(
        store, tmp_path, first_legacy, later_legacy):
    """Top-down and legacy bottom-up address-space layouts alike."""
    first = session(store, tmp_path, 1, legacy=first_legacy)
    assert first["pch"] == ["created"] and first["token"].startswith("600000000000+")
    made = files(store)
    later = session(store, tmp_path, 2, 3, legacy=later_legacy)
    assert later["pch"] == ["used", "used"] and later["tried"] == ["--use-pch", "--use-pch"]
    assert later["token"] == first["token"] and files(store) == made
    assert not [m for m in later["said"] if "precompiled" in m]


def test_a_session_whose_heap_cannot_be_placed_keeps_its_pchs_to_itself(store, tmp_path):
    shared = session(store, tmp_path, 1)
    assert shared["pch"] == ["created"]
    made = files(store)
    alone = session(store, tmp_path, 2, 3, patch=UNPLACED)
    assert alone["token"].startswith("process ")
    notes = [m for m in alone["said"] if "precompiled" in m]
    assert len(notes) == 1 and "this session only" in notes[0]
    assert alone["pch"] == ["created", "used"]           # its own PCH, under its own name
    now = files(store)
    assert len(now) == 2 and all(now[n] == ino for n, ino in made.items())     # shared one kept
    assert session(store, tmp_path, 4)["pch"] == ["used"]                    # and still served


def test_a_pch_made_for_a_heap_elsewhere_is_skipped_said_once_and_kept(store, tmp_path):
    """NVRTC's warning #20282 (the heap is at another address than when the PCH was made): the
    cells compile without it, the second without trying it again, and it stays for the
    sessions it fits."""
    assert session(store, tmp_path, 1)["pch"] == ["created"]
    made = files(store)
    misfit = session(store, tmp_path, 2, 3, patch=MISNAMED)
    assert misfit["pch"] == ["", ""] and misfit["tried"] == ["--use-pch"]
    notes = [m for m in misfit["said"] if "precompiled header" in m]
    assert len(notes) == 1 and "another address" in notes[0] and "kept" in notes[0]
    assert files(store) == made
    assert session(store, tmp_path, 4)["pch"] == ["used"]


# a session that has run a kernel before its first heavy cell (CUDA's own mappings are there)
LAUNCHED = """
import numpy as np, cuda_magic
one = cuda_magic.build('extern "C" __global__ void one(int* y) { y[0] = 1; }', {"arch": ARCH})
y = np.zeros(1, np.int32)
one.kernels["one"][(1,), (1,)](y)
assert y[0] == 1
"""


@pytest.mark.gpu
def test_a_session_that_ran_kernels_shares_pchs_too(store, tmp_path):
    first = session(store, tmp_path, 1, patch=LAUNCHED)
    assert first["pch"] == ["created"] and first["token"].startswith("600000000000+")
    later = session(store, tmp_path, 2, patch=LAUNCHED)
    assert later["pch"] == ["used"] and later["token"] == first["token"]


def test_a_heap_split_into_mappings_or_merged_with_one_counts_as_placed(monkeypatch):
    """NVRTC maps files over parts of its heap, and the kernel merges like neighbours: the
    check is for [address, address + size) mapped without a gap, not one exact mapping."""
    from cuda_magic.compile import pch_heap
    spans = [(0x1000, 0x2000), (0x10000, 0x18000), (0x18000, 0x30000), (0x40000, 0x50000)]
    monkeypatch.setattr(pch_heap, "_mapped", lambda: spans)
    assert pch_heap._covered(0x10000, 0x30000)            # two mappings, end to end
    assert pch_heap._covered(0x12000, 0x30000)            # merged with one below
    assert not pch_heap._covered(0x10000, 0x31000)        # short of the end
    assert not pch_heap._covered(0x30000, 0x40000)        # nothing there
