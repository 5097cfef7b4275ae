"""How an export is put at its path (cuda_magic/exports/writing.py), with no GPU: ``overwrite``
takes only a bool; a re-export never replaces a file the user changed or added; an export
killed half way is put right by the next one; file-system failures are ExportErrors naming the
path, the earlier export intact; exports to one path at once take turns."""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import pathlib
import subprocess
import sys
import threading
import warnings

import pytest

from conftest import ARCH, SAXPY
from cuda_magic import export
from cuda_magic.cell import build
from cuda_magic.errors import ExportError
from cuda_magic.exports import writing

RULES = dict(grid="cdiv(n, 256)", block=256, outputs={"y": "like x"})


@pytest.fixture(scope="module")
def saxpy():
    return build(SAXPY, {"arch": ARCH})


def tree(path) -> dict[str, bytes]:
    root = pathlib.Path(path)
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def listing(folder) -> list[str]:
    return sorted(os.listdir(folder))


def one_of(path, *exported) -> bool:
    """Whether ``path`` holds exactly the files of one of the ``exported``."""
    now = {p: sha(b) for p, b in tree(path).items()}
    return any(now == e.files for e in exported)


# --- 1. overwrite takes only a bool ----------------------------------------------------------------

@pytest.mark.parametrize("value", ["no", "False", "0", "", 1, 0, None, 1.0, [True]])
def test_overwrite_takes_only_a_bool(value, saxpy, tmp_path):
    d = tmp_path / "pkg"
    d.mkdir()
    (d / "notes.txt").write_text("mine")
    with pytest.raises(ExportError, match=r"^overwrite=.*: True or False$"):
        export(saxpy, "cubin", d, overwrite=value)
    assert tree(d) == {"notes.txt": b"mine"} and listing(tmp_path) == ["pkg"]


def test_the_magic_refuses_a_string_overwrite(shell, tmp_path):
    d = tmp_path / "pkg"
    d.mkdir()
    (d / "notes.txt").write_text("mine")
    shell.run_cell_magic("cuda", f"--arch {ARCH} --name m", SAXPY)
    with pytest.raises(ExportError, match=r"^overwrite='no': True or False$"):
        shell.run_line_magic("cuda_export", f'm cubin {d} overwrite="no"')
    assert tree(d) == {"notes.txt": b"mine"}
    e = shell.run_line_magic("cuda_export", f"m cubin {d} overwrite=True")
    assert set(tree(d)) == set(e.files)


# --- 2. a re-export keeps what the user changed or added -------------------------------------------

def refused(call, d, *names):
    """``call()`` is refused naming each of ``names``, and ``d`` is left as it was."""
    before, beside = tree(d), listing(d.parent)
    with pytest.raises(ExportError) as err:
        call()
    assert str(err.value).startswith(f"path '{d}' holds an earlier export")
    assert "overwrite=True" in str(err.value)
    for n in names:
        assert n in str(err.value)
    assert tree(d) == before and listing(d.parent) == beside
    return str(err.value)


@pytest.mark.parametrize("fmt, rel", [
    ("torch", "__init__.py"), ("torch", "_driver.py"), ("torch", f"binaries/scale.{ARCH}.cubin"),
    ("torch", "manifest.json"),
    ("cubin", "kernel.h"), ("cubin", "kernel.py"), ("cubin", f"scale.{ARCH}.cubin"),
    ("cubin", "manifest.json"),
    ("wheel", "pkg/__init__.py"), ("wheel", "pkg/manifest.json"), ("wheel", "pyproject.toml"),
    ("wheel", "dist/pkg-0.1.0-py3-none-any.whl"),
])
def test_a_file_changed_since_the_export_is_not_replaced(fmt, rel, saxpy, tmp_path):
    d = tmp_path / "pkg"
    opts = {} if fmt == "cubin" else RULES
    export(saxpy, fmt, d, **opts)
    f = d / rel
    f.write_bytes(f.read_bytes() + b"\n")          # an edit, however small
    message = refused(lambda: export(saxpy, fmt, d, **opts), d, rel)
    assert "files changed since it wrote them" in message
    e = export(saxpy, fmt, d, overwrite=True, **opts)
    assert {p: sha(b) for p, b in tree(d).items()} == e.files


def test_an_unchanged_earlier_export_is_replaced_in_every_format(saxpy, tmp_path):
    """The digests of what it wrote match, the wheel's pyproject.toml and wheel included, after
    it was imported (its __pycache__ goes) and when the new one differs (version, rules)."""
    for fmt, opts in (("torch", RULES), ("cubin", {}), ("wheel", RULES)):
        d = tmp_path / f"{fmt}_export"
        export(saxpy, fmt, d, name="pkg", **opts)
        cache = d / ("pkg" if fmt == "wheel" else "") / "__pycache__"
        cache.mkdir()
        (cache / "kernel.cpython-311.pyc").write_bytes(b"bytecode")
        e = export(saxpy, fmt, d, name="pkg", version="2.0", **opts)
        assert {p: sha(b) for p, b in tree(d).items()} == e.files
    assert listing(tmp_path) == ["cubin_export", "torch_export", "wheel_export"]


def test_a_deleted_file_of_the_export_is_no_loss(saxpy, tmp_path):
    d = tmp_path / "pkg"
    export(saxpy, "cubin", d)
    (d / "kernel.h").unlink()
    e = export(saxpy, "cubin", d)
    assert {p: sha(b) for p, b in tree(d).items()} == e.files


@pytest.mark.parametrize("rel", ["build/lib/pkg/__init__.py", "pkg.egg-info/PKG-INFO",
                                 "dist/pkg-0.1.0.tar.gz", ".eggs/x", "__pycache__/notes.txt",
                                 "__pycache__/sub/x.pyc", "notes.txt"])
def test_files_the_export_did_not_write_are_not_deleted(rel, saxpy, tmp_path):
    """``build/`` and the rest of what building the package leaves count as the user's: only
    a ``__pycache__`` holding nothing but ``.pyc`` files goes without overwrite=True."""
    d = tmp_path / "pkg"
    export(saxpy, "wheel", d, **RULES)
    (d / rel).parent.mkdir(parents=True, exist_ok=True)
    (d / rel).write_text("mine")
    message = refused(lambda: export(saxpy, "wheel", d, **RULES), d, rel)
    assert "files it did not write" in message


def test_a_link_in_place_of_a_file_counts_as_changed(saxpy, tmp_path):
    d = tmp_path / "pkg"
    export(saxpy, "cubin", d)
    (tmp_path / "mine.h").write_text("mine")
    (d / "kernel.h").unlink()
    (d / "kernel.h").symlink_to(tmp_path / "mine.h")
    (d / "linked").symlink_to(tmp_path, target_is_directory=True)
    refused(lambda: export(saxpy, "cubin", d), d, "kernel.h", "linked")
    assert (tmp_path / "mine.h").read_text() == "mine"


def test_an_earlier_export_of_another_name_is_refused(saxpy, tmp_path):
    d = tmp_path / "pkg"
    export(saxpy, "torch", d, name="first", **RULES)
    message = refused(lambda: export(saxpy, "torch", d, name="second", **RULES), d)
    assert message == (f"path '{d}' holds an earlier export named 'first', not 'second'; choose "
                       f"another directory, or pass overwrite=True to replace it")
    assert export(saxpy, "torch", d, name="second", overwrite=True, **RULES).name == "second"


def test_the_changed_files_named_are_capped(saxpy, tmp_path):
    d = tmp_path / "pkg"
    export(saxpy, "cubin", d)
    for i in range(40):
        (d / f"{'n' * 30}{i:02}.txt").write_text("mine")
    message = refused(lambda: export(saxpy, "cubin", d), d, "and 35 more")
    assert message.count(".txt'") == 5 and len(message) < 400 + len(str(d))


# --- 3. an interrupted export, a linked path ---------------------------------------------------

@pytest.fixture
def two_renames(monkeypatch):
    """The swap as two renames (as where renameat2 cannot exchange)."""
    monkeypatch.setattr(writing, "_exchange", lambda a, b: False)


@pytest.mark.parametrize("swap", ["exchange", "two renames"])
def test_a_re_export_replaces_in_one_step_or_two(swap, saxpy, tmp_path, monkeypatch):
    if swap == "two renames":
        monkeypatch.setattr(writing, "_exchange", lambda a, b: False)
    d = tmp_path / "pkg"
    export(saxpy, "torch", d, **RULES)
    seen = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (seen.append(os.path.lexists(d)), real(a, b)))
    e = export(saxpy, "torch", d, grid=4, block=64)
    assert {p: sha(b) for p, b in tree(d).items()} == e.files and listing(tmp_path) == ["pkg"]
    assert seen == ([] if swap == "exchange" else [True, False])     # path never missing


def test_exchange_swaps_two_directories(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x").write_text("a")
    (tmp_path / "b").mkdir()
    assert writing._exchange(tmp_path / "a", tmp_path / "b")
    assert os.listdir(tmp_path / "a") == [] and (tmp_path / "b" / "x").read_text() == "a"
    with pytest.raises(OSError) as err:
        writing._exchange(tmp_path / "a", tmp_path / "missing")
    assert err.value.errno == errno.ENOENT


def test_an_interrupt_between_the_renames_puts_the_earlier_export_back(saxpy, tmp_path,
                                                                       monkeypatch, two_renames):
    d = tmp_path / "pkg"
    first = export(saxpy, "torch", d, **RULES)
    real, calls = os.replace, []

    def replace(a, b):
        calls.append((a, b))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(a, b)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        export(saxpy, "torch", d, grid=4, block=64)
    monkeypatch.setattr(os, "replace", real)
    assert len(calls) == 3 and calls[2][1] == d                  # the third puts it back
    assert one_of(d, first) and listing(tmp_path) == ["pkg"]


KILLED = r'''
import os, pathlib, sys
from cuda_magic.exports import writing
path, name, where = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
files = {p.relative_to(path).as_posix(): p.read_bytes() for p in path.rglob("*") if p.is_file()}
files["kernel.h"] = b"/* the export that was killed */\n"
if where == "between the renames":
    writing._exchange = lambda a, b: False
    real, calls = os.replace, []
    def replace(a, b):
        calls.append(a)
        if len(calls) == 2:
            os._exit(3)
        real(a, b)
    os.replace = replace
else:                               # after the exchange, before the earlier export is removed
    writing.shutil.rmtree = lambda *a, **k: os._exit(3)
writing.write(path, files, False, name)
'''


def killed(d, where):
    """Export to ``d`` in another process, killed at ``where``: what it leaves beside ``d``."""
    r = subprocess.run([sys.executable, "-c", KILLED, str(d), d.name, where],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 3, r.stderr
    return [n for n in listing(d.parent) if n != d.name]


def test_an_export_killed_between_the_renames_is_put_right_by_the_next(saxpy, tmp_path):
    d = tmp_path / "pkg"
    first = export(saxpy, "cubin", d)
    left = killed(d, "between the renames")
    assert not d.exists() and len(left) == 2                 # the earlier export and the new one
    old = next(n for n in left if n.startswith(".pkg.old."))
    assert one_of(tmp_path / old, first)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        e = export(saxpy, "cubin", d, overwrite=False)
    assert [str(w.message) for w in caught] == [
        f"cuda-magic: an interrupted export had left the earlier export at '{d}' in {old}; "
        f"moved it back"]
    assert {p: sha(b) for p, b in tree(d).items()} == e.files and listing(tmp_path) == ["pkg"]


def test_the_moved_back_export_is_still_checked(saxpy, tmp_path):
    """Moved back, an earlier export with a file the user changed is refused as any other."""
    d = tmp_path / "pkg"
    export(saxpy, "cubin", d)
    (d / "kernel.py").write_text("mine")
    killed_files = killed(d, "between the renames")
    assert len(killed_files) == 2
    with pytest.warns(RuntimeWarning, match="moved it back"):
        with pytest.raises(ExportError, match="kernel.py"):
            export(saxpy, "cubin", d)
    assert (d / "kernel.py").read_text() == "mine" and listing(tmp_path) == ["pkg"]


def test_an_export_killed_after_the_swap_leaves_nothing_after_the_next(saxpy, tmp_path):
    d = tmp_path / "pkg"
    export(saxpy, "cubin", d)
    left = killed(d, "after the exchange")
    assert len(left) == 1 and left[0].startswith(".pkg.new.")
    assert tree(d)["kernel.h"] == b"/* the export that was killed */\n"
    (d / "kernel.h").write_bytes(tree(tmp_path / left[0])["kernel.h"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e = export(saxpy, "cubin", d)
    assert {p: sha(b) for p, b in tree(d).items()} == e.files and listing(tmp_path) == ["pkg"]


def test_a_leftover_beside_a_path_that_is_no_export_is_kept(saxpy, tmp_path):
    d = tmp_path / "pkg"
    first = export(saxpy, "cubin", d)
    killed(d, "between the renames")
    d.mkdir()
    (d / "notes.txt").write_text("mine")
    with pytest.warns(RuntimeWarning, match=r"\.pkg\.old\.\d+ beside .* left as they are"):
        with pytest.raises(ExportError, match="not an export"):
            export(saxpy, "cubin", d)
    old = [n for n in listing(tmp_path) if n.startswith(".pkg.old.")]
    assert len(old) == 1 and one_of(tmp_path / old[0], first)


def test_a_leftover_of_a_running_export_is_left_alone(saxpy, tmp_path):
    d = tmp_path / "pkg"
    export(saxpy, "cubin", d)
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / f".pkg.new.{alive.pid}.abcdefgh").mkdir()
        (tmp_path / f".pkg.old.{alive.pid}").mkdir()
        export(saxpy, "cubin", d)
        assert listing(tmp_path) == [f".pkg.new.{alive.pid}.abcdefgh", f".pkg.old.{alive.pid}",
                                     "pkg"]
    finally:
        alive.kill()
        alive.wait()
    export(saxpy, "cubin", d)
    assert listing(tmp_path) == ["pkg"]


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_linked_path_is_refused(overwrite, saxpy, tmp_path):
    real = tmp_path / "real"
    first = export(saxpy, "cubin", real)
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    with pytest.raises(ExportError, match=rf"^path '{tmp_path}/link' is a symbolic link \(to "
                                          rf"'{real}'\); give the directory itself$"):
        export(saxpy, "cubin", tmp_path / "link", name="real", overwrite=overwrite)
    assert (tmp_path / "link").is_symlink() and one_of(real, first)
    assert listing(tmp_path) == ["link", "real"]
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(ExportError, match="is a symbolic link"):
        export(saxpy, "cubin", tmp_path / "dangling", overwrite=overwrite)
    assert listing(tmp_path) == ["dangling", "link", "real"]


# --- 4. file-system failures ----------------------------------------------------------------------

def failing(errno_):
    def fail(*args, **kwargs):
        raise OSError(errno_, os.strerror(errno_))
    return fail


@pytest.mark.parametrize("where, errno_", [
    ("tempfile.mkdtemp", errno.EROFS), ("tempfile.mkdtemp", errno.EACCES),
    ("pathlib.Path.write_bytes", errno.ENOSPC), ("writing._exchange", errno.EROFS),
    ("os.replace", errno.EXDEV),
])
def test_a_file_system_failure_names_the_path_and_leaves_the_earlier_export(
        where, errno_, saxpy, tmp_path, monkeypatch):
    d = tmp_path / "pkg"
    first = export(saxpy, "torch", d, **RULES)
    if where == "os.replace":
        monkeypatch.setattr(writing, "_exchange", lambda a, b: False)
    owner, attr = where.rsplit(".", 1)
    target = {"tempfile": writing.tempfile, "pathlib.Path": pathlib.Path, "writing": writing,
              "os": os}[owner]
    monkeypatch.setattr(target, attr, failing(errno_))
    with pytest.raises(ExportError) as err:
        export(saxpy, "torch", d, grid=4, block=64)
    monkeypatch.undo()
    assert str(err.value) == f"path '{d}': {os.strerror(errno_)}; nothing there changed"
    assert one_of(d, first) and listing(tmp_path) == ["pkg"]


def test_a_read_only_folder(saxpy, tmp_path, monkeypatch):
    """A real read-only folder where chmod stops this user; as root (where it does not), the
    folder's writes fail as a read-only file system's do."""
    ro = tmp_path / "ro"
    first = export(saxpy, "cubin", ro / "pkg")
    if os.geteuid() == 0:
        monkeypatch.setattr(writing.tempfile, "mkdtemp", failing(errno.EROFS))
    os.chmod(ro, 0o555)
    try:
        for path in (ro / "pkg", ro / "new"):
            with pytest.raises(ExportError, match=rf"^path '{path}': (Read-only file system|"
                                                  rf"Permission denied); nothing there changed$"):
                export(saxpy, "cubin", path, name="pkg")
    finally:
        os.chmod(ro, 0o755)
    assert one_of(ro / "pkg", first) and listing(ro) == ["pkg"]


def test_a_nul_in_the_path(saxpy, tmp_path):
    for path in (f"{tmp_path}/a\0b/pkg", f"{tmp_path}/pk\0g"):
        with pytest.raises(ExportError, match=r"NUL character|not a Python identifier"):
            export(saxpy, "cubin", path, name="pkg")
    with pytest.raises(ExportError, match=r"^path '.*a\\x00b/pkg' holds a NUL character$"):
        export(saxpy, "cubin", f"{tmp_path}/a\0b/pkg")
    assert listing(tmp_path) == []


def test_a_path_no_file_system_can_hold(saxpy, tmp_path):
    with pytest.raises(ExportError, match=r"^path '.*/\\ud800/pkg': not a file name on this "
                                          r"system \(surrogates not allowed\)$"):
        export(saxpy, "cubin", f"{tmp_path}/\ud800/pkg")
    assert listing(tmp_path) == []


def test_a_name_over_255_bytes(saxpy, tmp_path):
    long = "k" * 300
    for path in (tmp_path / long, tmp_path / long / "pkg"):
        with pytest.raises(ExportError, match=r"^path '.*'\.\.\. \(\d+ characters\): File name "
                                              r"too long; nothing there changed$"):
            export(saxpy, "cubin", path, name="pkg")
    assert listing(tmp_path) == []


def test_a_long_name_within_255_bytes_is_exported_and_replaced(saxpy, tmp_path, monkeypatch):
    """Its hidden neighbours (.NAME.new.PID.XXXXXXXX) would be too long: they take a digest of
    the name."""
    d = tmp_path / ("k" * 250)
    export(saxpy, "cubin", d, name="pkg")
    monkeypatch.setattr(writing, "_exchange", lambda a, b: False)
    e = export(saxpy, "cubin", d, name="pkg", version="2.0")
    assert {p: sha(b) for p, b in tree(d).items()} == e.files and listing(tmp_path) == [d.name]


@pytest.mark.parametrize("swap", ["exchange", "two renames"])
def test_threads_exporting_to_one_path_take_turns(swap, saxpy, tmp_path, monkeypatch):
    if swap == "two renames":
        monkeypatch.setattr(writing, "_exchange", lambda a, b: False)
    d = tmp_path / "pkg"
    done, errors = [], []

    def work(block):
        for _ in range(8):
            try:
                done.append(export(saxpy, "torch", d, grid=1, block=block))
            except BaseException as err:            # noqa: BLE001 (the test reports it)
                errors.append(repr(err))

    threads = [threading.Thread(target=work, args=(b,)) for b in (32, 64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(done) == 16
    assert one_of(d, *done) and listing(tmp_path) == ["pkg"]


def test_an_export_waits_for_another_then_says_so(saxpy, tmp_path, monkeypatch):
    d = tmp_path / "pkg"
    first = export(saxpy, "cubin", d)
    monkeypatch.setattr(writing, "LOCK_WAIT", 0.2)
    fd = os.open(tmp_path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)               # another export into the folder, in progress
    try:
        with pytest.raises(ExportError, match=rf"^path '{d}': another export into its folder has "
                                              rf"not finished in 0 s; try again$"):
            export(saxpy, "cubin", d, version="2.0")
    finally:
        os.close(fd)
    assert one_of(d, first) and listing(tmp_path) == ["pkg"]


def test_a_folder_this_user_cannot_read(saxpy, tmp_path, monkeypatch):
    """Writing needs no read permission on the folder: such a folder is exported into (with no
    lock and no leftovers found), as before; the refusals in it (root reads any folder, hence
    the patched os.open and os.scandir)."""
    d = tmp_path / "pkg"
    first = export(saxpy, "cubin", d)
    real_open, real_scandir = os.open, os.scandir

    def deny(real):
        def call(p, *args, **kwargs):
            if isinstance(p, (str, os.PathLike)) and os.fspath(p) == str(tmp_path):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(p))
            return real(p, *args, **kwargs)
        return call

    monkeypatch.setattr(os, "open", deny(real_open))
    monkeypatch.setattr(os, "scandir", deny(real_scandir))
    e = export(saxpy, "cubin", d, version="2.0")
    assert {p: sha(b) for p, b in tree(d).items()} == e.files != first.files
    monkeypatch.undo()
    assert listing(tmp_path) == ["pkg"]
