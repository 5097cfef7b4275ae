"""The compile cache against hostile and broken directories and entries (docs/cache.md).

Each test compiles for real (NVRTC, sm_90a) and checks what a user would see: a
rebuild instead of a wrong or crashing hit, a warning and a memory-only cache
instead of a chmodded directory or a failing import.  Hostile files that would hang
or exhaust memory in a cache that trusted them are tried in subprocesses with a
timeout and an address-space limit.
"""

import json
import os
import stat
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import pytest

import cuda_magic
import cuda_magic.compile.cache as cache_mod
from cuda_magic.compile.cache import Cache
from cuda_magic.compile.compiler import cache
from conftest import ARCH, SAXPY, cfg

ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
NOBODY = 65534


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """A per-test secret home; the process-wide cache back to memory-only afterwards."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    cuda_magic.clear_cache()
    yield tmp_path
    cuda_magic.set_cache_dir(None)
    cuda_magic.clear_cache()


def fresh_compile(src, config=None):
    cuda_magic.clear_cache()
    return cuda_magic.compile_source(src, config or cfg())


def entry_doc(path):
    """(document, the dict holding the record's fields) of a disk entry, whatever its layout."""
    doc = json.loads(path.read_text())
    return doc, doc.get("entry", doc)


def run_py(code, *, env=None, timeout=60, cwd=None):
    return subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})}, cwd=cwd)


# ---- 1. the directory: never chmodded, refused if shared, absolute ----

def test_shared_sticky_directory_is_left_alone_and_not_used(isolated):
    shared = isolated / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)          # mkdir -m 1777 shared
    with pytest.warns(RuntimeWarning, match="not using .*shared.* writable by other users"):
        cuda_magic.set_cache_dir(shared)
    assert mode(shared) == 0o1777 and cache().directory is None
    assert not fresh_compile(SAXPY + "// shared\n").cache_hit
    assert list(shared.iterdir()) == []


def test_symlinked_directory_target_is_never_chmodded(isolated):
    shared = isolated / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    (isolated / "to-shared").symlink_to(shared)
    with pytest.warns(RuntimeWarning, match="writable by other users"):
        cuda_magic.set_cache_dir(isolated / "to-shared")
    assert mode(shared) == 0o1777 and cache().directory is None

    mine = isolated / "mine"
    mine.mkdir()
    os.chmod(mine, 0o750)             # ours, nobody else can write: used as it is
    (isolated / "to-mine").symlink_to(mine)
    cuda_magic.set_cache_dir(isolated / "to-mine")
    r = fresh_compile(SAXPY + "// symlinked dir\n")
    assert mode(mine) == 0o750 and (mine / f"{r.key}.json").is_file()
    assert fresh_compile(SAXPY + "// symlinked dir\n").cache_hit


def test_group_writable_own_directory_is_refused_unchanged(isolated):
    d = isolated / "group"
    d.mkdir()
    os.chmod(d, 0o2770)
    with pytest.warns(RuntimeWarning, match="mode 2770: writable by other users"):
        cuda_magic.set_cache_dir(d)
    assert mode(d) == 0o2770 and cache().directory is None


def test_another_users_directory_is_refused(isolated, monkeypatch):
    d = isolated / "theirs"
    d.mkdir(mode=0o700)
    monkeypatch.setattr(cache_mod, "_euid", lambda: os.stat(d).st_uid + 1)
    with pytest.warns(RuntimeWarning, match="belongs to uid .*not to this user"):
        cuda_magic.set_cache_dir(d)
    assert cache().directory is None and mode(d) == 0o700


@pytest.mark.skipif(not ROOT, reason="needs root to give a directory to another user")
def test_another_users_directory_is_refused_even_for_root(isolated):
    d = isolated / "nobodys"
    d.mkdir(mode=0o755)
    os.chown(d, NOBODY, NOBODY)
    with pytest.warns(RuntimeWarning, match=f"belongs to uid {NOBODY}"):
        cuda_magic.set_cache_dir(d)
    assert cache().directory is None and mode(d) == 0o755
    fresh_compile(SAXPY + "// nobody's\n")
    assert list(d.iterdir()) == []


def test_created_directory_is_0700_and_warnings_are_not_repeated(isolated):
    d = isolated / "a" / "b" / "cache"
    cuda_magic.set_cache_dir(d)
    assert mode(d) == 0o700 and cache().directory == str(d)
    shared = isolated / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.warns(RuntimeWarning):
        cuda_magic.set_cache_dir(shared)
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # compiles after the refusal stay quiet
        fresh_compile(SAXPY + "// quiet 1\n")
        fresh_compile(SAXPY + "// quiet 2\n")


def test_relative_directory_survives_cd(isolated, monkeypatch):
    monkeypatch.chdir(isolated)
    cuda_magic.set_cache_dir("rel-cache")
    assert cache().directory == str(isolated / "rel-cache")
    (isolated / "elsewhere").mkdir()
    monkeypatch.chdir(isolated / "elsewhere")          # %cd
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = fresh_compile(SAXPY + "// relative\n")
    assert (isolated / "rel-cache" / f"{r.key}.json").is_file()
    assert fresh_compile(SAXPY + "// relative\n").cache_hit


# ---- 2. entries: verified against their key, regular files of ours, capped ----

def test_entry_with_another_configs_binary_is_rebuilt(isolated):
    d = isolated / "cache"
    cuda_magic.set_cache_dir(d)
    src = SAXPY + "// ftz swap\n"
    off = cfg(nvrtc=["--use_fast_math", "--ftz=false"])
    on = cfg(nvrtc=["--use_fast_math", "--ftz=true"])
    r_off, r_on = fresh_compile(src, off), fresh_compile(src, on)
    assert "FMUL.FTZ" in cuda_magic.sass(r_on, "scale")
    forged = (d / f"{r_on.key}.json").read_bytes().replace(r_on.key.encode(), r_off.key.encode())
    (d / f"{r_off.key}.json").write_bytes(forged)
    r = fresh_compile(src, off)
    assert not r.cache_hit
    text = cuda_magic.sass(r, "scale")
    assert "FMUL" in text and "FMUL.FTZ" not in text
    assert fresh_compile(src, off).binary == r_off.binary     # the entry was rewritten


def test_entry_from_another_secret_is_not_trusted(isolated, monkeypatch):
    d = isolated / "cache"
    cuda_magic.set_cache_dir(d)
    src = SAXPY + "// secret\n"
    fresh_compile(src)
    monkeypatch.setenv("XDG_CACHE_HOME", str(isolated / "other-user"))
    cuda_magic.set_cache_dir(d)
    assert not fresh_compile(src).cache_hit
    assert fresh_compile(src).cache_hit


def test_secret_is_private_and_created_once(isolated):
    cuda_magic.set_cache_dir(isolated / "cache")
    secret = isolated / "xdg" / "cuda-magic" / "cache-secret"
    assert secret.is_file() and mode(secret) == 0o600 and secret.stat().st_size == 32
    assert cache_mod.secret_path() == str(secret)
    path = str(isolated / "race-secret")
    got = []
    threads = [threading.Thread(target=lambda: got.append(cache_mod.secret_at(path)))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and len(set(got)) == 1 and mode(path) == 0o600
    assert sorted(os.listdir(isolated)) == sorted(["cache", "race-secret", "xdg"])   # no temps


def test_unusable_user_secret_falls_back_to_the_cache_directory(isolated, monkeypatch):
    xdg = isolated / "xdg-file"
    xdg.write_text("not a directory\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    d = isolated / "cache"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cuda_magic.set_cache_dir(d)
    assert cache().directory == str(d) and mode(d / ".cache-secret") == 0o600
    fresh_compile(SAXPY + "// fallback secret\n")
    assert fresh_compile(SAXPY + "// fallback secret\n").cache_hit
    # a per-user secret others can read is not used either
    monkeypatch.setenv("XDG_CACHE_HOME", str(isolated / "xdg"))
    cuda_magic.set_cache_dir(isolated / "c2")
    secret = isolated / "xdg" / "cuda-magic" / "cache-secret"
    os.chmod(secret, 0o644)
    cuda_magic.set_cache_dir(isolated / "c3")
    assert (isolated / "c3" / ".cache-secret").is_file()


@pytest.mark.parametrize("kind", ["devzero", "fifo", "directory", "symlink-to-entry"])
def test_hostile_entry_files_are_rebuilt_without_hanging(isolated, kind):
    script = textwrap.dedent(f'''
        import os, resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        import cuda_magic
        d = {str(isolated / "cache")!r}
        cuda_magic.set_cache_dir(d)
        src = {SAXPY!r} + "// {kind}\\n"
        cfg = {{"cuda": {{"arch": "{ARCH}"}}}}
        other = cuda_magic.compile_source(src + "// other", cfg)
        r = cuda_magic.compile_source(src, cfg)
        entry = os.path.join(d, r.key + ".json")
        os.unlink(entry)
        kind = {kind!r}
        if kind == "devzero":
            os.symlink("/dev/zero", entry)
        elif kind == "fifo":
            os.mkfifo(entry, 0o600)
        elif kind == "directory":
            os.mkdir(entry, 0o700)
        else:
            os.symlink(os.path.join(d, other.key + ".json"), entry)
        cuda_magic.clear_cache()
        again = cuda_magic.compile_source(src, cfg)
        print(again.cache_hit, again.binary == r.binary)
    ''')
    out = run_py(script, env={"XDG_CACHE_HOME": str(isolated / "xdg")}, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True"], out.stdout + out.stderr


def test_group_writable_entry_is_not_trusted(isolated):
    cuda_magic.set_cache_dir(isolated / "cache")
    r = fresh_compile(SAXPY + "// writable entry\n")
    entry = isolated / "cache" / f"{r.key}.json"
    os.chmod(entry, 0o666)
    assert not fresh_compile(SAXPY + "// writable entry\n").cache_hit
    assert mode(entry) == 0o600          # rewritten by us


@pytest.mark.skipif(not ROOT, reason="needs root to give a file to another user")
def test_another_users_entry_is_not_trusted(isolated):
    cuda_magic.set_cache_dir(isolated / "cache")
    r = fresh_compile(SAXPY + "// nobody's entry\n")
    entry = isolated / "cache" / f"{r.key}.json"
    os.chown(entry, NOBODY, NOBODY)
    assert not fresh_compile(SAXPY + "// nobody's entry\n").cache_hit
    assert entry.stat().st_uid == 0


def test_entry_size_cap(isolated):
    d = isolated / "cache"
    big = Cache(d, max_entry_bytes=1 << 20)
    small = Cache(d, max_entry_bytes=4096)
    key = "ab" * 32
    record = dict(binary=b"\x7fELF" + bytes(8000), format="cubin", argv=["nvrtc"], log="",
                  lowered_names=[], ptx=None, compile_time=0.5, compiler="nvrtc", version="13")
    big.store(key, record)
    assert big.load(key)["binary"] == record["binary"]
    assert small.load(key) is None                     # too large to read
    with pytest.warns(RuntimeWarning, match="over the 4096-byte limit"):
        small.store("cd" * 32, record)                 # too large to write
    assert not (d / f"{'cd' * 32}.json").exists()
    assert cache_mod.DEFAULT_MAX_ENTRY_BYTES == 256 * 2**20


# ---- 3. corrupt but parseable entries, and a bad CUDA_MAGIC_CACHE_DIR ----

CORRUPTIONS = {
    "log": 5, "ptx": 5, "lowered_names": [["a"]], "argv": "nvrtc", "format": None,
    "compile_time": "fast", "binary": 5,
}


def test_corrupt_parseable_entries_are_rebuilt_silently(isolated):
    d = isolated / "cache"
    cuda_magic.set_cache_dir(d)
    src = SAXPY + "// corrupt\n"
    r = fresh_compile(src)
    entry = d / f"{r.key}.json"
    for field, bad in CORRUPTIONS.items():
        doc, rec = entry_doc(entry)
        rec[field] = bad
        entry.write_text(json.dumps(doc))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            again = fresh_compile(src)
        assert not again.cache_hit and again.binary == r.binary, field
        assert isinstance(again.log, str) and isinstance(again.ptx_text, (str, type(None)))
    assert fresh_compile(src).cache_hit


def test_record_shape_is_validated_even_with_a_valid_mac(isolated):
    d = isolated / "cache"
    cuda_magic.set_cache_dir(d)
    c = cache()
    src = SAXPY + "// resealed\n"
    r = fresh_compile(src)
    entry = d / f"{r.key}.json"
    good = json.loads(entry.read_bytes()[cache_mod._PAYLOAD_AT:-1])

    def reseal(record):
        payload = json.dumps(record, separators=(",", ":")).encode()
        entry.write_bytes(cache_mod._HEAD + cache_mod._mac(c._secret, r.key, payload).encode()
                          + cache_mod._MID + payload + cache_mod._TAIL)

    reseal(good)
    assert c.load(r.key) is not None and fresh_compile(src).cache_hit
    bad_records = [dict(good, **{k: v}) for k, v in CORRUPTIONS.items()] + [
        dict(good, key="00" * 32), dict(good, extra=1), {k: v for k, v in good.items() if k != "log"},
        dict(good, compile_time=float("inf")), dict(good, lowered_names=[["a", 5]]),
        dict(good, binary="not base64!"), dict(good, v=2), [good],
    ]
    for bad in bad_records:
        reseal(bad)
        assert c.load(r.key) is None, bad
    reseal(dict(good, version="0.0"))     # another compiler version: a miss, then rebuilt
    assert c.load(r.key) is not None and c.load(r.key, expect={"version": "0.0"}) is not None
    assert not fresh_compile(src).cache_hit and fresh_compile(src).cache_hit


@pytest.mark.parametrize("case", ["file", "uncreatable", "shared", "theirs"])
def test_bad_cache_dir_env_does_not_break_import(tmp_path, case):
    if case == "file":
        target = tmp_path / "a-file"
        target.write_text("x")
    elif case == "uncreatable":
        (tmp_path / "a-file").write_text("x")
        target = tmp_path / "a-file" / "cache"
    elif case == "shared":
        target = tmp_path / "shared"
        target.mkdir()
        os.chmod(target, 0o1777)
    else:
        if not ROOT:
            pytest.skip("needs root to give a directory to another user")
        target = tmp_path / "theirs"
        target.mkdir(mode=0o700)
        os.chown(target, NOBODY, NOBODY)
    before = os.stat(target).st_mode if target.exists() else None
    code = ("import cuda_magic; from cuda_magic.compile.compiler import cache; "
            f"r = cuda_magic.compile_source({SAXPY!r}, {{'cuda': {{'arch': '{ARCH}'}}}}); "
            "print(cache().directory, r.binary[:4] == b'\\x7fELF')")
    out = run_py(code, env={"CUDA_MAGIC_CACHE_DIR": str(target),
                            "XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["None", "True"], out.stdout + out.stderr
    assert "RuntimeWarning" in out.stderr and "not using" in out.stderr
    if before is not None:
        assert os.stat(target).st_mode == before


# ---- 4. the memory cache is bounded by bytes ----

class Fake:
    def __init__(self, n, tag=""):
        self.source, self.binary, self.log, self.ptx_text = tag, bytes(n), "", None
        self.derived = {}


def test_memory_cache_bounded_by_bytes():
    c = Cache(max_bytes=15_000)         # each Fake(3000) counts about 4.2 kB
    for k in "abcd":
        c.put(k, Fake(3000, k))
    assert c.get("a") is None and all(c.get(k) for k in "bcd") and c.nbytes <= 15_000
    c.get("b")
    c.put("e", Fake(3000))
    assert c.get("c") is None and c.get("b") is not None
    c.put("huge", Fake(20_000))               # larger than the whole budget: not kept
    assert c.get("huge") is None and len(c) == 3
    c.get("d").derived["sass"] = "x" * 6000   # lazily derived text counts too
    c.put("f", Fake(100))
    assert c.nbytes <= 15_000 and len(c) < 4 and c.get("b") is None
    c.set_max_bytes(0)
    assert len(c) == 0 and c.nbytes == 0
    assert Cache().max_bytes == cache_mod.DEFAULT_MAX_BYTES == 256 * 2**20


def test_set_cache_limit_with_real_big_cells(isolated):
    from cuda_magic.compile.compiler import set_cache_limit
    assert cache().max_bytes == 256 * 2**20
    body = "// " + "x" * 4_500_000 + "\n"
    try:
        set_cache_limit(10 * 2**20)
        results = [cuda_magic.compile_source(SAXPY + f"// v{i}\n" + body, cfg()) for i in range(4)]
        assert cache().nbytes <= 10 * 2**20 and len(cache()) == 2
        assert cuda_magic.compile_source(SAXPY + "// v3\n" + body, cfg()).cache_hit
        assert not cuda_magic.compile_source(SAXPY + "// v0\n" + body, cfg()).cache_hit
        cuda_magic.set_cache_dir(isolated / "cache")        # the limit is kept
        assert cache().max_bytes == 10 * 2**20
        with pytest.raises(TypeError):
            set_cache_limit("1GB")
        with pytest.raises(ValueError):
            set_cache_limit(-1)
        del results
    finally:
        set_cache_limit(256 * 2**20)


# ---- 5. interrupted writes leave nothing behind ----

def test_stale_temp_files_are_removed_on_open(isolated):
    d = isolated / "cache"
    d.mkdir(mode=0o700)
    old, new = d / ".tmp-abc123.json", d / ".tmp-def456.json"
    for p in (old, new, d / "notes.txt"):
        p.write_text("{")
    hour_ago = time.time() - 3600
    os.utime(old, (hour_ago, hour_ago))
    cuda_magic.set_cache_dir(d)
    assert sorted(p.name for p in d.iterdir()) == [new.name, "notes.txt"]


def test_interrupted_write_leaves_no_temp_file(isolated, monkeypatch):
    d = isolated / "cache"
    cuda_magic.set_cache_dir(d)
    real = os.replace

    def interrupted(src, dst, *a, **k):
        if os.path.basename(src).startswith(".tmp-"):
            raise KeyboardInterrupt
        return real(src, dst, *a, **k)
    monkeypatch.setattr(cache_mod.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        fresh_compile(SAXPY + "// interrupted\n")
    monkeypatch.setattr(cache_mod.os, "replace", real)
    assert list(d.iterdir()) == []


def test_clear_cache_disk_removes_only_our_entries(isolated):
    d = isolated / "cache"
    cuda_magic.set_cache_dir(d)
    r = fresh_compile(SAXPY + "// clear\n")
    (d / "notes.json").write_text("{}")
    cuda_magic.clear_cache(disk=True)
    assert sorted(p.name for p in d.iterdir()) == ["notes.json"]
    assert not (d / f"{r.key}.json").exists() and len(cache()) == 0
    assert not cuda_magic.compile_source(SAXPY + "// clear\n", cfg()).cache_hit
