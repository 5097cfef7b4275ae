"""How an :class:`~cuda_magic.exports.exporting.Exported` (``cuda_magic.export``, ``%cuda_export``)
looks: where it went, each op's schema (torch, wheel), each build (arch, compiler, sha256,
registers and spills per kernel), the files with their sizes, and the lines that use it.
Plain text (terminal, ``show``) and static HTML (notebooks, nbconvert); everything quoted is
escaped.
"""

from __future__ import annotations

from html import escape

from .frontend import Reprs
from .text import table as text_table

__all__ = ["ExportView", "text", "html", "usage"]

_TABLE = "border-collapse: collapse; font-size: 12px; margin: 4px 0"
_CELL = ("padding: 1px 8px; text-align: left; white-space: nowrap; "
         "border-bottom: 1px solid rgba(128,128,128,0.3)")
_MONO = "font-family: var(--jp-code-font-family, monospace)"


def usage(e) -> list[str]:
    """The lines that use the export."""
    parent, _, directory = e.path.rpartition("/")
    first = e.manifest["kernels"][0]
    attr = first.get("python", first["name"])        # the name the generated file gives it
    if e.format == "cubin":
        args = ", ".join(p["name"] for p in first["params"])
        c_args = ", ".join(first.get("c_params", [p["name"] for p in first["params"]]))
        return [f"C: #include \"{e.path}/kernel.h\"  (cc prog.c -I<cuda>/include -lcuda)",
                f"   {e.name}_t m; {e.name}_load(&m); {e.name}_{first.get('c', first['name'])}(&m, "
                f"grid..., block..., 0, stream, {c_args});",
                f"Python: sys.path.insert(0, {e.path!r}); import kernel; "
                f"kernel.{attr}[grid, block]({args})"]
    outputs = first.get("op", {}).get("outputs", {})
    names = ", ".join(p["name"] for p in first["params"] if p["name"] not in outputs)
    install = [f"pip install {e.wheel}"] if e.wheel else \
        [f"sys.path.insert(0, {parent or '.'!r})  (or copy {directory}/ next to your code)"]
    module = e.name if e.wheel else directory      # a torch package is imported by its folder
    imports = f"import {module}; {module}" if module.isidentifier() else \
        f"import importlib; {e.name} = importlib.import_module({module!r}); {e.name}"
    return install + [f"{imports}.{attr}({names})   # torch.ops.{e.name}.{attr}"]


def _builds(e) -> tuple[list[str], list[list[str]]]:
    head = ["build", "arch", "compiler", "sha256", "kernels: registers, spills (stores/loads B)"]
    rows = []
    for b in e.manifest["builds"]:
        ks = []
        for k, r in b["kernels"].items():
            ks.append(f"{k}: {r['registers']} reg, {r['spill_stores']}/{r['spill_loads']}"
                      if r else f"{k}: -")
        rows.append([b["file"], b["arch"], f"{b['compiler']} {b['compiler_version']}",
                     b["sha256"][:16], "; ".join(ks)])
    return head, rows


def _files(e) -> tuple[list[str], list[list[str]]]:
    return ["file", "bytes", "sha256"], [[f, f"{e.sizes[f]:,}", s[:16]] for f, s in e.files.items()]


def _title(e) -> str:
    total = sum(e.sizes.values())
    kernels = ", ".join(k["name"] for k in e.manifest["kernels"])
    return (f"exported {kernels} as {e.format} {e.name!r} to {e.path}: {len(e.files)} files, "
            f"{total:,} bytes")


def text(e) -> str:
    lines = [_title(e)]
    if e.ops:
        lines += ["", "ops:"] + [f"  {s}" for s in e.ops.values()]
    lines += [""] + text_table(*_builds(e))
    lines += [""] + text_table(*_files(e))
    lines += ["", "use:"] + [f"  {u}" for u in usage(e)]
    return "\n".join(lines)


def _html_table(head, rows, mono=(0, 3)) -> str:
    th = "".join(f'<th style="{_CELL}">{escape(h)}</th>' for h in head)
    body = "".join("<tr>" + "".join(
        f'<td style="{_CELL}{"; " + _MONO if i in mono else ""}">{escape(c)}</td>'
        for i, c in enumerate(r)) + "</tr>" for r in rows)
    return (f'<div class="cm-scroll" style="overflow-x: auto"><table style="{_TABLE}"><tr>{th}</tr>'
            f'{body}</table></div>')


def html(e) -> str:
    parts = [f'<div class="cuda-magic-export"><div style="font-weight: bold">'
             f'{escape(_title(e))}</div>']
    if e.ops:
        ops = "".join(f'<div style="white-space: pre; {_MONO}">{escape(s)}</div>'
                      for s in e.ops.values())
        parts.append(f'<div class="cm-scroll" style="margin: 4px 0; overflow-x: auto">{ops}</div>')
    parts.append(_html_table(*_builds(e)))
    parts.append(_html_table(*_files(e), mono=(0, 2)))
    use = "\n".join(usage(e))
    parts.append(f'<pre class="cm-scroll" style="margin: 4px 0; overflow-x: auto; {_MONO}">'
                 f'{escape(use)}</pre></div>')
    return "".join(parts)


class ExportView(Reprs):
    """The view of an :class:`~cuda_magic.exports.exporting.Exported`: ``text()`` and
    ``html()``."""

    def __init__(self, exported):
        self.exported = exported

    def text(self) -> str:
        return text(self.exported)

    def html(self) -> str:
        return html(self.exported)
