"""Hostile precompiled headers: the PCH store is a cache, so it trusts nothing it did not write,
and a fault in it (a full disk, a planted file, an untrusted directory) degrades to compiling
without a PCH, said once.  Real NVRTC, no GPU needed."""

import os
import re
import shutil
import subprocess
import sys
import threading
import warnings

import pytest

import cuda_magic
from cuda_magic import ConfigError, compile_source, settings
from cuda_magic.compile import header_store, pch
from cuda_magic.compile.backends import nvrtc as nvrtc_backend

from conftest import cfg

KERNEL = 'extern "C" __global__ void k(int* y) {{ y[threadIdx.x] = VALUE + {}; }}\n'
HEAVY = "#include <cuda/std/type_traits>\n#define VALUE 1234567\n"      # PCH ~25 MiB


def cell(edit: int = 0, head: str = HEAVY) -> str:
    return head + KERNEL.format(edit)


def value(result) -> int:
    """The constant the kernel stores."""
    return stored(cuda_magic.ptx(result))


def stored(ptx: str) -> int:
    """The constant the kernel's PTX stores."""
    found = re.findall(r"(?:mov|st\.global)\.u32\s+(?:%r\d+|\[%rd\d+\]),\s*(\d+);", ptx)
    assert found
    return int(found[-1])


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A PCH directory of this test's own; PCH on; what was said about PCH forgotten."""
    d = tmp_path / "pch"
    monkeypatch.setenv("CUDA_MAGIC_PCH_DIR", str(d))
    monkeypatch.setenv("CUDA_MAGIC_PCH", "1")
    monkeypatch.delenv("CUDA_MAGIC_PCH_LIMIT", raising=False)
    pch.forget()
    yield d
    pch.forget()


def said(record, *words) -> list[str]:
    """The cuda-magic warnings recorded that contain every one of ``words``."""
    msgs = [str(w.message) for w in record if issubclass(w.category, RuntimeWarning)]
    return [m for m in msgs if "precompiled header" in m and all(w in m for w in words)]


def pch_files(d) -> list[str]:
    return sorted(n for n in os.listdir(d) if n.endswith(".pch")) if os.path.isdir(d) else []


# -- 1: a full disk ------------------------------------------------------------------------------

ENOSPC = ('cell.cu(1): catastrophic error: error while writing PCH file: No space left on device\n'
          '\n1 catastrophic error detected in the compilation of "cell.cu".\n'
          'Compilation terminated.\n')


def test_a_full_disk_compiles_without_a_pch_and_says_so_once(store, monkeypatch, fresh_cache):
    """NVRTC writes the PCH itself: where it is told to (--create-pch=), the disk is full."""
    real = nvrtc_backend._run
    attempts = []

    def full_disk(nvrtc, source, argv, *rest):
        create = [a for a in argv if a.startswith("--create-pch=")]
        if not create:
            return real(nvrtc, source, argv, *rest)
        attempts.append(create[0])
        with open(create[0].split("=", 1)[1], "wb") as f:      # a part written, then ENOSPC
            f.write(b"\0" * 4096)
        return (nvrtc.nvrtcResult.NVRTC_ERROR_COMPILATION, ENOSPC, None,
                nvrtc.nvrtcResult.NVRTC_ERROR_PCH_CREATE, None)
    monkeypatch.setattr(nvrtc_backend, "_run", full_disk)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        first = compile_source(cell(1), cfg(), force=True)
        other = compile_source(cell(2, "#include <utility>\n#define VALUE 7\n"), cfg(), force=True)
    assert value(first) == 1234568 and value(other) == 9         # both cells compiled ...
    for r in (first, other):                                      # ... without a PCH, as argv says
        assert r.pch == "" and not any("pch=" in a for a in r.argv)
    notes = said(record, "No space left on device")
    assert len(notes) == 1, [str(w.message) for w in record]      # said once
    assert str(store) in notes[0] and "without" in notes[0]
    assert len(attempts) == 1                 # no new PCH tried in that directory afterwards
    assert pch_files(store) == [] and os.listdir(store) == []     # no partial file left


def test_headers_that_do_not_compile_are_no_fault_of_the_pch_directory(store, fresh_cache):
    """NVRTC's "could not create PCH file because there were compilation errors" is the cell's
    error, not a full disk: no warning, and the next heavy cell still gets its PCH."""
    cuda_magic.define_header("t_broken_pch.cuh", "int broken = ;\n")
    try:
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            with pytest.raises(cuda_magic.CompileError, match="expected an expression"):
                compile_source(cell(3, HEAVY + '#include "t_broken_pch.cuh"\n'), cfg(), force=True)
            good = compile_source(cell(4), cfg(), force=True)
    finally:
        cuda_magic.remove_header("t_broken_pch.cuh")
    assert said(record) == [], [str(w.message) for w in record]
    assert good.pch == "created" and value(good) == 1234571


FILE_SIZE_LIMIT = r"""
import json, resource, signal, warnings
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)        # a write past the limit fails (EFBIG)
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
from cuda_magic import compile_source, ptx
from cuda_magic.compile.backends import nvrtc
tried, run = [], nvrtc._run         # the PCH flags of each NVRTC run (not the heap's placing)
nvrtc._run = lambda n, s, argv, *r: tried.extend(a.split("=")[0] for a in argv if "-pch=" in a
                                                 and "cuda-magic-heap" not in s) or run(n, s, argv, *r)
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as record:
    rs = [compile_source(CELL.format(i), {"cuda": {"arch": ARCH}}, force=True) for i in (1, 2)]
print(json.dumps({"pch": [r.pch for r in rs], "tried": tried,
                  "argv": [a for r in rs for a in r.argv if "pch" in a],
                  "ptx": [ptx(r) for r in rs], "said": [str(w.message) for w in record]}))
"""


@pytest.mark.parametrize("made", [False, True])
def test_a_file_size_limit_compiles_without_a_pch_and_says_so_once(made, store, tmp_path):
    """NVRTC backs a PCH's memory with a temporary file it grows: under a 1 MiB file-size limit
    (RLIMIT_FSIZE) it fails with "unable to obtain mapped memory", whether it makes the PCH or
    uses one made before.  Both cells compile without one, said once; a PCH there is kept."""
    import json
    env = {**os.environ, "CUDA_MAGIC_PCH_DIR": str(store), "CUDA_MAGIC_PCH": "1",
           "CUDA_MAGIC_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("CUDA_MAGIC_PCH_LIMIT", None)
    if made:                                        # a good PCH for this include set, first
        assert compile_source(cell(30), cfg(), force=True).pch == "created"
    code = f"CELL = {HEAVY + KERNEL!r}\nARCH = {cfg()['cuda']['arch']!r}\n" + FILE_SIZE_LIMIT
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.splitlines()[-1])
    assert got["pch"] == ["", ""]
    assert got["argv"] == []                        # both compiled without one, as argv says
    assert got["tried"] == []       # placing NVRTC's PCH heap failed: no PCH tried at all
    assert [stored(p) for p in got["ptx"]] == [1234568, 1234569]
    notes = [m for m in got["said"] if "precompiled header" in m]
    assert len(notes) == 1 and "ulimit -f" in notes[0] and "without" in notes[0], got["said"]
    assert len(pch_files(store)) == int(made)       # kept (not NVRTC's fault), none made


# -- 2: a planted or stale PCH under the right name ---------------------------------------------------

def test_a_pch_copied_over_the_right_name_is_not_used(store, fresh_cache):
    """A ``%%cuda_header`` before a heavy include: the PCH named for the new header text holds the
    old text after a copy; it must not be used (nor its binary cached)."""
    src = '#include "val.cuh"\n#include <cuda/std/type_traits>\n' + KERNEL.format(0)
    try:
        header_store.define_header("val.cuh", "#define VALUE 1234567\n")
        old = compile_source(src, cfg(), force=True)
        assert old.pch == "created" and value(old) == 1234567
        old_file = pch_files(store)[0]
        header_store.define_header("val.cuh", "#define VALUE 7654321\n")
        new = compile_source(src, cfg(), force=True)
        assert new.pch == "created" and value(new) == 7654321
        new_file = [n for n in pch_files(store) if n != old_file][0]
        shutil.copyfile(store / old_file, store / new_file)        # stale content, right name
        again = compile_source(src.replace("+ 0", "+ 1"), cfg())
        assert again.pch != "used" and value(again) == 7654322
        renamed = compile_source(src.replace("+ 0", "+ 2"), cfg())
        assert renamed.pch == "used" and value(renamed) == 7654323    # the one written for it
        os.replace(store / old_file, store / new_file)             # moved, not copied: the same
        moved = compile_source(src.replace("+ 0", "+ 3"), cfg())
        assert moved.pch != "used" and value(moved) == 7654324
    finally:
        header_store.remove_header("val.cuh")


# -- 3: bad CUDA_MAGIC_PCH_LIMIT and set_limit values ---------------------------------------------------

@pytest.mark.parametrize("text", ["1.5e9", "abc", "", "-5"])
def test_a_bad_pch_limit_variable_never_breaks_the_import(text):
    env = {**os.environ, "CUDA_MAGIC_PCH_LIMIT": text}
    code = "import cuda_magic; print(cuda_magic.settings.describe().count('pch_limit'))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "1", out.stderr[-800:]


def test_a_bad_pch_limit_is_one_short_config_error_before_any_pch(store, monkeypatch, fresh_cache):
    for bad in ("x", None, 1.5, -1, True, "1e9"):
        with pytest.raises(ConfigError, match=r"^nbytes must be (a whole number )?>= 0, not "):
            pch.set_limit(bad)
    assert settings.source("pch_limit") == "default"
    for text in ("1.5e9", "abc"):
        monkeypatch.setenv("CUDA_MAGIC_PCH_LIMIT", text)
        with pytest.raises(ConfigError) as e:
            compile_source(cell(3), cfg(), force=True)
        assert str(e.value) == f"CUDA_MAGIC_PCH_LIMIT must be a whole number >= 0, not {text!r}"
        assert pch_files(store) == []              # said before a PCH was made, not after
        assert "invalid" in settings.describe()    # the table still prints
    monkeypatch.setenv("CUDA_MAGIC_PCH_LIMIT", "")  # empty: the default
    assert compile_source(cell(3), cfg(), force=True).pch == "created"


# -- 4: what is at the PCH paths ------------------------------------------------------------------------

def test_a_directory_planted_at_a_pch_path_degrades_with_one_note(store, fresh_cache):
    assert compile_source(cell(4), cfg(), force=True).pch == "created"
    name = pch_files(store)[0]
    for n in os.listdir(store):
        os.unlink(store / n)
    os.mkdir(store / name)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for edit in (5, 6):
            r = compile_source(cell(edit), cfg(), force=True)
            assert r.pch == "" and value(r) == 1234567 + edit
    assert len(said(record, name, "not a regular file")) == 1, [str(w.message) for w in record]
    assert os.path.isdir(store / name)             # not ours: left as it is


@pytest.mark.parametrize("bad", ["others_can_write", "foreign", "symlink_to_others"])
def test_an_untrusted_pch_directory_warns_once_like_the_cache(bad, store, tmp_path, monkeypatch,
                                                               fresh_cache):
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    if bad == "others_can_write":
        os.chmod(target, 0o777)
        why = "writable by other users"
    elif bad == "foreign":
        os.chown(target, 12345, 12345)
        why = "belongs to uid 12345"
    else:
        os.chmod(target, 0o1777)
        why = "writable by other users"
        link = tmp_path / "link"
        link.symlink_to(target)
        target = link
    monkeypatch.setenv("CUDA_MAGIC_PCH_DIR", str(target))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for edit in (7, 8):
            r = compile_source(cell(edit), cfg(), force=True)
            assert r.pch == "" and value(r) == 1234567 + edit
    assert len(said(record, why)) == 1, [str(w.message) for w in record]
    assert os.listdir(target) == []


def test_a_symlink_to_a_good_pch_directory_is_used_like_the_cache(store, tmp_path, monkeypatch,
                                                                   fresh_cache):
    target = tmp_path / "mine"
    target.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(target)
    monkeypatch.setenv("CUDA_MAGIC_PCH_DIR", str(tmp_path / "link"))
    assert compile_source(cell(9), cfg(), force=True).pch == "created"
    assert len(pch_files(target)) == 1


def test_a_pch_directory_opened_to_others_after_first_use_is_no_longer_used(store, fresh_cache):
    assert compile_source(cell(10), cfg(), force=True).pch == "created"
    assert compile_source(cell(11), cfg(), force=True).pch == "used"
    os.chmod(store, 0o777)
    try:
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            r = compile_source(cell(12), cfg(), force=True)
            compile_source(cell(13), cfg(), force=True)
        assert r.pch == "" and value(r) == 1234567 + 12
        assert len(said(record, "writable by other users")) == 1
    finally:
        os.chmod(store, 0o700)
    assert compile_source(cell(14), cfg(), force=True).pch == "used"     # trusted again


# -- 5: a corrupt PCH is replaced; one PCH made for many threads ------------------------------------

def test_a_corrupt_pch_is_replaced(store, fresh_cache):
    assert compile_source(cell(15), cfg(), force=True).pch == "created"
    name = pch_files(store)[0]
    (store / name).write_bytes(b"garbage" * 100)
    seen = [compile_source(cell(edit), cfg(), force=True) for edit in (16, 17)]
    assert [value(r) for r in seen] == [1234567 + 16, 1234567 + 17]
    assert [r.pch for r in seen] == ["created", "used"]
    assert (store / name).stat().st_size > 1 << 20


def test_a_pch_nvrtc_refuses_is_replaced_even_when_it_passes_our_check(store, monkeypatch,
                                                                        fresh_cache):
    """Written by us, refused by NVRTC (warning #626: invalid): kept (another process may be
    reading it) but made again over it by the next compile, instead of compiling without it from
    then on; the new file is renamed into place (a new inode), so a reader keeps the old whole."""
    assert compile_source(cell(18), cfg(), force=True).pch == "created"
    name = pch_files(store)[0]
    (store / name).write_bytes(b"garbage" * 100)
    pch.sign(str(store / name))                    # as if we had written it so
    bad = (store / name).stat().st_ino
    refused = compile_source(cell(19), cfg(), force=True)
    assert refused.pch == "" and value(refused) == 1234567 + 19
    assert pch_files(store) == [name] and (store / name).stat().st_ino == bad     # not removed
    assert compile_source(cell(20), cfg(), force=True).pch == "created"
    assert pch_files(store) == [name] and (store / name).stat().st_ino != bad
    assert compile_source(cell(21), cfg(), force=True).pch == "used"


def test_eight_threads_compiling_one_heavy_cell_make_one_pch(store, monkeypatch, fresh_cache):
    made = []
    real = pch.created

    def spy(*a, **kw):
        made.append(a)
        return real(*a, **kw)
    monkeypatch.setattr(pch, "created", spy)
    results, errors = [None] * 8, []
    start = threading.Barrier(8)

    def work(i):
        try:
            start.wait()
            results[i] = compile_source(cell(22), cfg(), force=True)
        except BaseException as exc:        # reported below
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    assert sorted(r.pch for r in results) == ["created"] + ["used"] * 7
    assert len(made) == 1 and len(pch_files(store)) == 1
    assert {value(r) for r in results} == {1234567 + 22}
