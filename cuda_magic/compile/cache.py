"""The compile cache: in memory always, on disk when given a directory.

Memory: an LRU bounded by bytes (:data:`DEFAULT_MAX_BYTES`; the source, binary,
log, PTX and lazily derived text of each result count).

Disk (``set_cache_dir``/``CUDA_MAGIC_CACHE_DIR``): one file per key, written
atomically (temp file + rename).  The disk cache trusts nothing it did not write
(docs/cache.md):

- the directory must be ours and writable by nobody else; one we create is made
  0700, one that exists is never chmodded.  Otherwise: a warning, memory only;
- an entry is opened without following symlinks and without blocking (a FIFO
  cannot hang), and must be a regular file of ours, not group/other-writable, at
  most :data:`DEFAULT_MAX_ENTRY_BYTES`;
- an entry carries an HMAC-SHA256 over its key and its bytes under a per-user
  secret (:func:`secret_path`); it is checked before the entry is parsed, so an
  entry copied from another key, edited, or written by anyone without the secret
  is a miss.  The parsed record's shape is then validated field by field;
- anything else that is wrong with an entry is a silent miss (the compile
  rebuilds it).
"""

from __future__ import annotations

import base64
import errno
import hashlib
import hmac
import json
import math
import os
import stat
import sys
import tempfile
import threading
import time
import warnings
from collections import OrderedDict
from typing import Any, Mapping

from .. import settings
from .backends.base import InputTypeError
from ..errors import Untrusted

__all__ = ["Cache", "DEFAULT_MAX_BYTES", "DEFAULT_MAX_ENTRY_BYTES", "secret_path"]

DEFAULT_MAX_BYTES = settings.TABLE["cache_limit"].default   # memory cache budget: 256 MiB
DEFAULT_MAX_ENTRY_BYTES = 256 * 2**20  # largest disk entry written or read
ENTRY_OVERHEAD = 1024                  # bytes counted per memory entry besides its text

_VERSION = 1
_SECRET_BYTES = 32
_SECRET_NAME = "cache-secret"          # in the per-user directory
_FALLBACK_SECRET = ".cache-secret"     # in the cache directory, when the per-user one can't be used
_TMP_PREFIX, _TMP_SUFFIX = ".tmp-", ".json"
_HEAD, _MID, _TAIL = b'{"mac":"', b'","entry":', b"}"
_PAYLOAD_AT = len(_HEAD) + 64 + len(_MID)

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)


def _euid() -> int | None:
    return os.geteuid() if hasattr(os, "geteuid") else None


def _check_owned(st: os.stat_result, what: str, path: str, *, private: bool = False) -> None:
    uid = _euid()
    if uid is not None and st.st_uid != uid:
        raise Untrusted(f"{what} {path} belongs to uid {st.st_uid}, not to this user (uid {uid})")
    if st.st_mode & (0o077 if private else 0o022):
        raise Untrusted(f"{what} {path} has mode {stat.S_IMODE(st.st_mode):o}: "
                         f"{'readable or writable' if private else 'writable'} by other users")


def read_checked(path: str, limit: int, *, private: bool = False) -> bytes:
    """The bytes of ``path``: never through a symlink, never blocking (FIFOs), a regular
    file of ours that nobody else can write, at most ``limit`` bytes.  Raises OSError or
    Untrusted."""
    fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC | _O_BINARY)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Untrusted(f"{path} is not a regular file")
        _check_owned(st, "file", path, private=private)
        if st.st_size > limit:
            raise Untrusted(f"{path} is larger than {limit} bytes")
        chunks, left = [], st.st_size + 1     # one more, to see a file that grew
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 22))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > st.st_size or len(data) > limit:
            raise Untrusted(f"{path} changed while it was read")
        return data
    finally:
        os.close(fd)


def check_dir(path: str, what: str) -> None:
    st = os.stat(path)      # a symlink to a directory is fine; the directory itself is checked
    if not stat.S_ISDIR(st.st_mode):
        raise Untrusted(f"{what} {path} is not a directory")
    _check_owned(st, what, path)


def make_dir(path: str) -> None:
    """Create ``path`` 0700 if it does not exist (its missing parents get the default
    mode); an existing directory is left exactly as it is."""
    if os.path.lexists(path):
        return
    parent = os.path.dirname(path)
    if parent and not os.path.isdir(parent):
        os.makedirs(parent, exist_ok=True)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass


def secret_path() -> str:
    """Where the per-user HMAC secret lives: ``$XDG_CACHE_HOME/cuda-magic/cache-secret``
    (``~/.cache/cuda-magic/cache-secret`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(os.path.abspath(base), "cuda-magic", _SECRET_NAME)


def secret_at(path: str) -> bytes:
    """The secret in ``path``, created (0600, exclusively) if absent.  Raises OSError or
    Untrusted when it cannot be used."""
    for _ in range(100):
        try:
            data = read_checked(path, _SECRET_BYTES, private=True)
        except FileNotFoundError:
            _create_secret(path)
            continue
        if len(data) == _SECRET_BYTES:
            return data
        time.sleep(0.01)    # another process is between creating and filling it
    raise Untrusted(f"the cache secret {path} is not {_SECRET_BYTES} bytes")


def _create_secret(path: str) -> None:
    """Publish a fresh secret at ``path`` atomically: written to an exclusive temp file,
    then hard-linked into place (never replacing one that exists); without hard links,
    created in place with O_EXCL."""
    secret = os.urandom(_SECRET_BYTES)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC | _O_BINARY
    tmp = f"{path}.tmp-{os.urandom(8).hex()}"
    fd = os.open(tmp, flags, 0o600)
    try:
        try:
            os.write(fd, secret)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return
        except OSError as e:
            if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV,
                               errno.EMLINK, errno.ENOSYS):
                raise
            try:
                fd = os.open(path, flags, 0o600)
            except FileExistsError:
                return
            try:
                os.write(fd, secret)
            finally:
                os.close(fd)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def user_secret() -> bytes:
    path = secret_path()
    make_dir(os.path.dirname(path))
    check_dir(os.path.dirname(path), "the secret's directory")
    return secret_at(path)


def _mac(secret: bytes, key: str, payload: bytes) -> str:
    msg = b"cuda-magic cache v%d\0%s\0" % (_VERSION, key.encode("ascii")) + payload
    return hmac.new(secret, msg, hashlib.sha256).hexdigest()


def _is_str(v) -> bool:
    return isinstance(v, str)


def _is_time(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


def _is_pairs(v) -> bool:
    return isinstance(v, list) and all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(s, str) and s for s in p) for p in v)


# Every field of a disk record, and what its value must be.  Nothing else is allowed.
_FIELDS = {
    "v": lambda v: v == _VERSION and not isinstance(v, bool),
    "key": _is_str,
    "compiler": _is_str,
    "version": _is_str,
    "format": lambda v: isinstance(v, str) and bool(v),
    "argv": lambda v: isinstance(v, list) and all(isinstance(a, str) for a in v),
    "log": _is_str,
    "lowered_names": _is_pairs,
    "ptx": lambda v: v is None or isinstance(v, str),
    "compile_time": _is_time,
    "binary": lambda v: isinstance(v, str) and bool(v),
}


def _valid(record) -> bool:
    return (isinstance(record, dict) and record.keys() == _FIELDS.keys()
            and all(check(record[name]) for name, check in _FIELDS.items()))


def _nbytes(value) -> int:
    """Bytes a memory entry holds: its source, binary, log, PTX and derived text."""
    if isinstance(value, (str, bytes, bytearray)):
        return sys.getsizeof(value)
    n, found = ENTRY_OVERHEAD, False
    for name in ("source", "binary", "log", "ptx_text"):
        v = getattr(value, name, None)
        if isinstance(v, (str, bytes, bytearray)):
            n, found = n + sys.getsizeof(v), True
    derived = getattr(value, "derived", None)
    if isinstance(derived, dict):
        for v in list(derived.values()):
            if isinstance(v, (str, bytes)):
                n += sys.getsizeof(v)
            elif isinstance(v, dict):
                n += sum(sys.getsizeof(x) for x in list(v.values()) if isinstance(x, (str, bytes)))
    return n if found else max(n, sys.getsizeof(value))


def _limit(value, name: str) -> int:
    """A number of bytes: :func:`cuda_magic.settings.count`, an ``InputTypeError`` for a non-int."""
    return settings.count(value, name, InputTypeError)


class Cache:
    """A thread-safe LRU of compiled entries keyed by a hex digest, bounded by
    ``max_bytes`` (and by ``max_entries`` if given); on disk too when ``directory``
    is given and can be trusted (see the module docstring)."""

    def __init__(self, directory: str | os.PathLike | None = None, max_entries: int | None = None,
                 *, max_bytes: int = DEFAULT_MAX_BYTES,
                 max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES):
        self.max_entries = max_entries
        self.max_bytes = _limit(max_bytes, "max_bytes")
        self.max_entry_bytes = _limit(max_entry_bytes, "max_entry_bytes")
        self._mem: OrderedDict[str, Any] = OrderedDict()
        self._sizes: dict[str, int] = {}
        self._lock = threading.Lock()
        self._warned_write = False
        self._secret: bytes | None = None
        self.requested = os.fspath(directory) if directory is not None else None
        self.directory: str | None = None        # absolute; None: memory only
        self.problem = ""                         # why the requested directory is not used
        if self.requested:
            try:
                self._open(os.path.abspath(os.path.expanduser(self.requested)))
            except (OSError, Untrusted, ValueError) as e:
                self.directory, self._secret = None, None
                self.problem = str(e)
                warnings.warn(f"cuda-magic: not using {self.requested!r} as the compile cache "
                              f"directory ({e}); the cache is in memory only. Use a directory of "
                              f"your own that only you can write (docs/cache.md).",
                              RuntimeWarning, stacklevel=3)

    # ---- memory ----
    def get(self, key: str) -> Any | None:
        with self._lock:
            if key in self._mem:
                self._mem.move_to_end(key)
                return self._mem[key]
        return None

    def put(self, key: str, value: Any) -> None:
        """Keep ``value``; the least recently used go while over the limits.  A value
        larger than ``max_bytes`` on its own is not kept (and evicts nothing)."""
        with self._lock:
            if _nbytes(value) > self.max_bytes:
                self._mem.pop(key, None)
                self._sizes.pop(key, None)
                return
            self._mem[key] = value
            self._mem.move_to_end(key)
            self._evict()

    def set_max_bytes(self, nbytes: int) -> None:
        """Bound the memory cache at ``nbytes`` (0: keep nothing); evicts at once."""
        nbytes = _limit(nbytes, "nbytes")
        with self._lock:
            self.max_bytes = nbytes
            self._evict()

    def _evict(self) -> None:
        # re-measured each time: lazily derived text (SASS) grows entries after they are put
        self._sizes = {k: _nbytes(v) for k, v in self._mem.items()}
        total = sum(self._sizes.values())
        while self._mem and (total > self.max_bytes or
                             (self.max_entries is not None and len(self._mem) > self.max_entries)):
            k, _ = self._mem.popitem(last=False)
            total -= self._sizes.pop(k)

    @property
    def nbytes(self) -> int:
        """Bytes the memory entries hold (as counted for ``max_bytes``)."""
        with self._lock:
            return sum(_nbytes(v) for v in self._mem.values())

    def clear(self) -> None:
        with self._lock:
            self._mem.clear()
            self._sizes.clear()

    def __len__(self) -> int:
        return len(self._mem)

    # ---- disk ----
    def _open(self, path: str) -> None:
        make_dir(path)
        check_dir(path, "the cache directory")
        try:
            self._secret = user_secret()
        except (OSError, Untrusted):   # no usable per-user secret: keep one in the directory
            self._secret = secret_at(os.path.join(path, _FALLBACK_SECRET))
        self.directory = path
        self._remove_stale_tmp()

    def _remove_stale_tmp(self) -> None:
        """Remove our own ``.tmp-*`` files left by interrupted writes (older than
        ``settings.stale_tmp_seconds``: no writer can still be busy with them)."""
        now, uid, age = time.time(), _euid(), settings.stale_tmp_seconds
        try:
            with os.scandir(self.directory) as it:
                for entry in it:
                    if not (entry.name.startswith(_TMP_PREFIX) and entry.name.endswith(_TMP_SUFFIX)):
                        continue
                    try:
                        st = entry.stat(follow_symlinks=False)
                        if (stat.S_ISREG(st.st_mode) and (uid is None or st.st_uid == uid)
                                and now - st.st_mtime > age):
                            os.unlink(entry.path)
                    except OSError:
                        pass
        except OSError:
            pass

    def _path(self, key: str) -> str:
        return os.path.join(self.directory, key + ".json")  # type: ignore[arg-type]

    @staticmethod
    def _key_ok(key) -> bool:
        return isinstance(key, str) and 0 < len(key) <= 128 and all(
            c in "0123456789abcdef" for c in key)

    def load(self, key: str, expect: Mapping[str, Any] | None = None) -> dict | None:
        """The disk record for ``key`` (``binary`` as bytes, ``lowered_names`` as pairs),
        or ``None`` if absent, untrusted, corrupt, or unlike ``expect`` (field: value)."""
        if not self.directory or self._secret is None or not self._key_ok(key):
            return None
        try:
            data = read_checked(self._path(key), self.max_entry_bytes)
        except (OSError, Untrusted):
            return None
        if not (data.startswith(_HEAD) and data[_PAYLOAD_AT - len(_MID):_PAYLOAD_AT] == _MID
                and data.endswith(_TAIL) and len(data) > _PAYLOAD_AT + len(_TAIL)):
            return None
        payload = data[_PAYLOAD_AT:-len(_TAIL)]
        mac = data[len(_HEAD):len(_HEAD) + 64]
        if not hmac.compare_digest(mac, _mac(self._secret, key, payload).encode()):
            return None
        try:
            record = json.loads(payload)
            if not _valid(record) or record["key"] != key:
                return None
            if expect and any(record.get(k) != v for k, v in expect.items()):
                return None
            record["binary"] = base64.b64decode(record["binary"], validate=True)
        except (ValueError, TypeError, RecursionError):
            return None
        record["lowered_names"] = tuple((a, b) for a, b in record["lowered_names"])
        return record

    def store(self, key: str, record: Mapping[str, Any]) -> None:
        """Write ``record`` (whose ``binary`` is bytes) atomically.

        The disk is a best effort: a failed or refused write warns (once per cache) and
        loses nothing else.
        """
        if not self.directory or self._secret is None or not self._key_ok(key):
            return
        tmp = None
        try:
            binary = record.get("binary")
            if not isinstance(binary, (bytes, bytearray)):
                raise TypeError(f"binary is {type(binary).__name__}, not bytes")
            data = {name: record.get(name) for name in _FIELDS}
            data.update(v=_VERSION, key=key, binary=base64.b64encode(binary).decode("ascii"),
                        compiler=record.get("compiler", ""), version=record.get("version", ""))
            data["lowered_names"] = [list(p) for p in record.get("lowered_names") or ()]
            data["argv"] = list(record.get("argv") or ())
            if not _valid(data):
                raise TypeError("the record has a field of the wrong type")
            payload = json.dumps(data, separators=(",", ":"), ensure_ascii=True).encode("ascii")
            blob = b"".join((_HEAD, _mac(self._secret, key, payload).encode(), _MID, payload, _TAIL))
            if len(blob) > self.max_entry_bytes:
                raise ValueError(f"the entry is {len(blob)} bytes, over the {self.max_entry_bytes}"
                                 f"-byte limit")
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=_TMP_PREFIX, suffix=_TMP_SUFFIX)
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            os.replace(tmp, self._path(key))
            tmp = None
        except (OSError, TypeError, ValueError) as e:
            if not self._warned_write:
                self._warned_write = True
                warnings.warn(f"cuda-magic: could not write the disk cache entry in "
                              f"{self.directory}: {e}", RuntimeWarning, stacklevel=3)
        finally:
            if tmp is not None:         # failed or interrupted (KeyboardInterrupt too)
                try:
                    os.unlink(tmp)
                except OSError:
                    pass

    def clear_disk(self) -> int:
        """Remove this cache's entries from its directory (and stale temp files); returns
        how many entries were removed.  Only regular files of ours named like entries
        (``<sha256 hex>.json``) go; the secret and anything else stay."""
        if not self.directory:
            return 0
        self._remove_stale_tmp()
        removed, uid = 0, _euid()
        try:
            it = os.scandir(self.directory)
        except FileNotFoundError:
            return 0
        with it:
            for entry in it:
                name = entry.name
                if not (name.endswith(".json") and self._key_ok(name[:-5])):
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                    if stat.S_ISREG(st.st_mode) and (uid is None or st.st_uid == uid):
                        os.unlink(entry.path)
                        removed += 1
                except OSError:
                    pass
        return removed
