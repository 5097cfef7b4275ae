"""The compile cache: in memory always, on disk when given a directory.

Disk entries are JSON files written atomically (temp file + rename) in a
0700 directory; an entry that does not parse, or whose binary does not match
its digest, is ignored and rebuilt.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import tempfile
import threading
import warnings
from collections import OrderedDict
from typing import Any

__all__ = ["Cache"]


class Cache:
    """A thread-safe LRU of compiled entries keyed by a hex digest."""

    def __init__(self, directory: str | os.PathLike | None = None, max_entries: int = 256):
        self.directory = os.fspath(directory) if directory else None
        self.max_entries = max_entries
        self._mem: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()
        if self.directory:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            os.chmod(self.directory, 0o700)

    def get(self, key: str) -> Any | None:
        with self._lock:
            if key in self._mem:
                self._mem.move_to_end(key)
                return self._mem[key]
        return None

    def put(self, key: str, value: Any) -> None:
        with self._lock:
            self._mem[key] = value
            self._mem.move_to_end(key)
            while len(self._mem) > self.max_entries:
                self._mem.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._mem.clear()

    def __len__(self) -> int:
        return len(self._mem)

    # ---- disk ----
    def _path(self, key: str) -> str:
        return os.path.join(self.directory, key + ".json")  # type: ignore[arg-type]

    def load(self, key: str) -> dict | None:
        """The disk record for ``key``, or ``None`` if absent or corrupt."""
        if not self.directory:
            return None
        try:
            with open(self._path(key), encoding="utf-8") as f:
                record = json.load(f)
            binary = base64.b64decode(record["binary"], validate=True)
            if record["key"] != key or hashlib.sha256(binary).hexdigest() != record["sha256"]:
                return None
            record["binary"] = binary
            return record
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def store(self, key: str, record: dict) -> None:
        """Write ``record`` (whose ``binary`` is bytes) atomically.

        The disk is a best effort: a failed write warns and loses nothing else.
        """
        if not self.directory:
            return
        binary = record["binary"]
        data = dict(record, key=key, binary=base64.b64encode(binary).decode(),
                    sha256=hashlib.sha256(binary).hexdigest())
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f)
            os.replace(tmp, self._path(key))
        except OSError as e:
            warnings.warn(f"cuda-magic: could not write the disk cache entry in "
                          f"{self.directory}: {e}", RuntimeWarning, stacklevel=3)
            if tmp and os.path.exists(tmp):
                os.unlink(tmp)
