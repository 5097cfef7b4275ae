"""The ``wheel`` export: the torch package with a ``pyproject.toml`` around it, and the wheel
built from them, byte for byte the same each time.

The wheel is written here (a zip in the layout of the wheel spec, PEP 427: the package, then
``<name>-<version>.dist-info/`` with METADATA, WHEEL and RECORD), entries sorted, every time
stamp 1980-01-01 and every mode 0644, so exporting the same module twice gives the same file.
``pip install`` takes it with no build step and no network; the ``pyproject.toml`` beside it
(setuptools) builds the same files again from the sources, for a user who edits them.
The tag is ``py3-none-any``: the package is Python over the driver, and the GPU code inside is
for the archs it names, on any host.
"""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile

from .names import header_value, toml_string

__all__ = ["pyproject", "wheel_bytes", "wheel_name", "REQUIRES"]

REQUIRES = "torch>=2.4"          # torch.library.custom_op and register_fake
_DATE = (1980, 1, 1, 0, 0, 0)


def pyproject(name: str, version: str, summary: str) -> str:
    """``pyproject.toml``: every value a TOML string (:func:`~.names.toml_string`)."""
    t = toml_string
    return f'''[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = {t(name)}
version = {t(version)}
description = {t(header_value(summary))}
requires-python = ">=3.9"
dependencies = [{t(REQUIRES)}]

[tool.setuptools]
packages = [{t(name)}]

[tool.setuptools.package-data]
{t(name)} = ["manifest.json", "binaries/*"]
'''


def wheel_name(name: str, version: str) -> str:
    return f"{name}-{version}-py3-none-any.whl"


def _metadata(name: str, version: str, summary: str) -> bytes:
    return (f"Metadata-Version: 2.1\nName: {header_value(name)}\nVersion: {header_value(version)}\n"
            f"Summary: {header_value(summary)}\nRequires-Python: >=3.9\n"
            f"Requires-Dist: {REQUIRES}\n").encode()


def _wheel_file(cuda_magic_version: str) -> bytes:
    return (f"Wheel-Version: 1.0\nGenerator: cuda-magic {cuda_magic_version}\n"
            f"Root-Is-Purelib: true\nTag: py3-none-any\n").encode()


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def wheel_bytes(name: str, version: str, summary: str, files: dict[str, bytes],
                cuda_magic_version: str) -> bytes:
    """The wheel of package ``name`` whose files (path inside the package -> bytes) are
    ``files``."""
    info = f"{name}-{version}.dist-info"
    entries = {f"{name}/{path}": data for path, data in files.items()}
    entries[f"{info}/METADATA"] = _metadata(name, version, summary)
    entries[f"{info}/WHEEL"] = _wheel_file(cuda_magic_version)
    entries[f"{info}/top_level.txt"] = f"{name}\n".encode()
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in sorted(entries.items()))
    entries[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        # the package first, then dist-info with RECORD last, as installers expect
        for path in sorted(entries, key=lambda p: (p.startswith(info), p.endswith("/RECORD"), p)):
            zi = zipfile.ZipInfo(path, _DATE)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, entries[path], compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    return out.getvalue()
