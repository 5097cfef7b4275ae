"""Putting an export's files at a path safely: ``path`` is written whole or not at all (made
in a temporary directory beside it and moved in), and an existing ``path`` is replaced only when
it is an earlier export (or ``overwrite=True``)."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import tempfile

from ..errors import ExportError, quote
from . import manifest as _manifest, wheel

__all__ = ["write"]


def _manifest_at(f: pathlib.Path) -> dict | None:
    try:
        m = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return m if isinstance(m, dict) and m.get("format") == _manifest.FORMAT else None


def _written(m: dict, prefix: str = "") -> set[str]:
    """The files an export with manifest ``m`` wrote (relative to its directory)."""
    binaries = "binaries/" if m.get("export") in ("torch", "wheel") else ""
    files = {"manifest.json", *m.get("files", {})} | {
        binaries + b["file"] for b in m.get("builds", ()) if isinstance(b, dict) and "file" in b}
    return {prefix + f for f in files}


def _earlier(path: pathlib.Path) -> set[str] | None:
    """The files of the earlier export ``path`` holds (its manifest says which), or None when it
    holds none: a torch or cubin export's ``manifest.json``, or a wheel export's
    ``pyproject.toml`` beside ``<name>/manifest.json``."""
    m = _manifest_at(path / "manifest.json")
    if m is not None:
        return _written(m)
    for f in sorted(path.glob("*/manifest.json")):
        m = _manifest_at(f)
        if m is not None and m.get("export") == "wheel" and (path / "pyproject.toml").is_file():
            return _written(m, f.parent.name + "/") | {
                "pyproject.toml", f"dist/{wheel.wheel_name(m.get('name'), m.get('version'))}"}
    return None


_DERIVED = ("__pycache__", "build", ".eggs")      # what importing or building a package leaves


def _foreign(path: pathlib.Path, written: set[str]) -> list[str]:
    """The files under ``path`` an earlier export did not write (derived ones aside)."""
    out = []
    for f in sorted(path.rglob("*")):
        rel = f.relative_to(path)
        if any(part in _DERIVED or part.endswith(".egg-info") for part in rel.parts):
            continue
        if (f.is_file() or f.is_symlink()) and rel.as_posix() not in written:
            out.append(rel.as_posix())
    return out


def write(path: pathlib.Path, files: dict[str, bytes], overwrite: bool) -> None:
    if path.exists() and not path.is_dir():
        raise ExportError(f"path {quote(str(path), 80)} is a file; an export writes a directory")
    if path.is_dir() and any(path.iterdir()) and not overwrite:
        written = _earlier(path)
        if written is None:
            raise ExportError(f"path {quote(str(path), 80)} holds files that are not an export; "
                              f"choose an empty or new directory, or pass overwrite=True")
        extra = _foreign(path, written)
        if extra:
            raise ExportError(f"path {quote(str(path), 80)} holds an earlier export and files it "
                              f"did not write ({quote(', '.join(extra), 120)}); move them, or "
                              f"pass overwrite=True to replace the directory, them included")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        for rel, data in sorted(files.items()):
            f = tmp / rel
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_bytes(data)
            os.chmod(f, 0o644)
        os.chmod(tmp, 0o755)
        old = None
        if path.exists():
            old = path.with_name(f".{path.name}.old.{os.getpid()}")
            os.replace(path, old)
        os.replace(tmp, path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
