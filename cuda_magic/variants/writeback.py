"""The ``%%cuda`` cell that reproduces a sweep's winner: the magic line, the cell header
without ``tune:`` and with the winner's flags where the cell sets its list, kernel blocks that
set the list given their tuned list whole, and a comment with the launch parameters."""

from __future__ import annotations

import json
import re
import shlex
from typing import Any, Mapping, Sequence

from .. import cell
from ..config import LIST_KEYS, Resolved
from .space import TuneError, c_text, load_value

__all__ = ["write_back"]


_PLAIN = re.compile(r"[A-Za-z0-9_./=+\-][A-Za-z0-9_./=+\-<>*]*")


def _yaml_item(flag: str) -> str:
    if _PLAIN.fullmatch(flag) and not flag.startswith("- "):
        try:
            loaded = load_value("flags", f"[{flag}]")
        except TuneError:
            loaded = None
        if loaded == [flag]:
            return flag
    return json.dumps(flag)


def _yaml_list(flags: Sequence[str]) -> str:
    return "[" + ", ".join(_yaml_item(f) for f in flags) + "]"


def _magic_line(options: Mapping, preset: str | None, instances: Sequence[str]) -> str:
    parts = ["%%cuda"]
    for key in ("arch", "compiler", "target_format"):
        if key in options:
            v = options[key]
            parts.append(f"--{key.replace('_', '-')} {','.join(v) if isinstance(v, list) else v}")
    for key in (*LIST_KEYS, *(k + "+" for k in LIST_KEYS)):
        if key in options:
            parts.append(f"--{key} {shlex.quote(shlex.join(options[key]))}")
    if preset:
        parts.append(f"--preset {preset}")
    for spelling in instances:
        parts.append(f"--instantiate {shlex.quote(spelling)}")
    return " ".join(parts)


def _key_span(rows: Mapping[str, int], key: str, end: int) -> range:
    """The cell lines (1-based) of ``key``'s entry in a header block that ends at line ``end``."""
    start = rows[key]
    later = [line for k, line in rows.items() if line > start]
    return range(start, (min(later) if later else end + 1))


def write_back(source: str, options: Mapping, preset: str | None, winner,
               launch: Mapping[str, Any]) -> str:
    """The cell reproducing ``winner`` (see :attr:`Tuning.cell`)."""
    parsed = cell.parse_cell(source)
    module = winner.module
    key = module.cell_config["compiler"]
    final = module.cell_config.get(key, [])       # the cell's list, tuned
    edits: dict[int, list[str]] = {}               # cell line -> replacement lines
    options = dict(options)
    header_rows = {k: v for k, v in parsed.header_lines.items()}
    if "tune" in header_rows:
        for line in _key_span(header_rows, "tune", parsed.header_end):
            edits[line] = []
    recipe = winner.recipe
    if recipe.flags or recipe.toggles:
        # a toggle sets the list whole; flags alone are appended where the cell sets the list
        header = parsed.header
        if recipe.toggles or key in header:
            form, value = key, list(final)
        else:
            form, value = key + "+", [*header.get(key + "+", []), *recipe.flags]
        here = [k for k in (key, key + "+") if k in header_rows]
        if here:
            span = _key_span(header_rows, here[0], parsed.header_end)
            for i in span:
                edits[i] = []
            edits[span.start] = [f"//| {form}: {_yaml_list(value)}"]
        elif key in options or key + "+" in options:
            if recipe.toggles or key in options:
                options.pop(key + "+", None)
                options[key] = list(final)
            else:
                options[key + "+"] = [*options[key + "+"], *recipe.flags]
        else:
            line = f"//| {form}: {_yaml_list(value)}"
            end = parsed.header_end
            if end:
                edits[end] = edits.get(end, [_line(source, end)]) + [line]
            else:
                edits[0] = [line]
    # kernel blocks that set the list get their kernel's tuned list whole
    for decl in parsed.kernels:
        layer, rows = parsed.kernel_headers.get(decl.line, ({}, {}))
        here = [k for k in (key, key + "+") if k in layer]
        if not here or not (recipe.flags or recipe.toggles):
            continue
        try:
            flags = _kernel_config(module, decl).get(key, [])
        except Exception:
            continue
        span = _key_span(rows, here[0], decl.line - 1)
        for i in span:
            edits[i] = []
        edits[span.start] = [f"//| {key}: {_yaml_list(flags)}"]
    lines = source.split("\n")
    out = []
    if 0 in edits:
        out.extend(edits[0])
    launch_note = ", ".join(f"{k}={_note_value(v)}" for k, v in launch.items())
    after = parsed.header_end
    for i, text in enumerate(lines, start=1):
        out.extend(edits.get(i, [text]))
        if i == after and launch_note:
            out.append(f"// tuned launch: {launch_note}")
    if not after and launch_note:
        out.insert(len(edits.get(0, [])), f"// tuned launch: {launch_note}")
    return _magic_line(options, preset, recipe.instances) + "\n" + "\n".join(out)


def _note_value(v) -> str:
    """A launch value in the ``// tuned launch:`` comment; one with a backslash is quoted, so a
    value ending in one cannot splice the next line of the cell into the comment."""
    if v is None:
        return "none"
    text = c_text(v)
    return json.dumps(text) if "\\" in text else text


def _line(source: str, n: int) -> str:
    return source.split("\n")[n - 1]


def _kernel_config(module, decl) -> Resolved:
    for name in module.kernels:
        d = module.decl_of(name)
        if d is not None and d.line == decl.line:
            return module.config_of(name)
    raise KeyError(decl.name)
