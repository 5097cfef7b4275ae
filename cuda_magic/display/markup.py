"""HTML renderings: the static view and the widget's tab contents.

Every string that comes from a compiler, a source or a kernel name goes
through :func:`html.escape` (or pygments, which escapes).  Styles are inline so
the HTML survives nbconvert, widgets and sanitisers alike.
"""

from __future__ import annotations

import json
import re
import shlex
import threading
from collections import OrderedDict
from html import escape

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import CudaLexer, PtxLexer

from .content import (DRIVER_COLUMNS, OCCUPANCY_LEGEND, RESOURCE_COLUMNS, Content,
                      argv_short_words, argv_shortened, build_columns, names_lines,
                      occupancy_cell, occupancy_rows, resource_note, resource_rows,
                      short_paths, split_rows, supplied_note, families_note)
from .sass import SassLexer, SassStyle, annotate, heading as sass_heading

__all__ = ["header", "config", "argv_html", "resources", "log", "sass", "ptx", "source", "page",
           "error", "pre", "note"]

MONO = "font-family: var(--jp-code-font-family, monospace); font-size: 12px"
PRE = (f"{MONO}; line-height: 1.35; margin: 0; padding: 4px 6px; max-height: 36em; overflow: auto; "
       "white-space: pre; background: var(--jp-layout-color2, rgba(127,127,127,0.08))")
TABLE = f"border-collapse: collapse; {MONO}"
CELL = "padding: 1px 10px 1px 0; text-align: left; vertical-align: top"
WARN = "color: #d35400; font-weight: bold"
ERR = "color: #c0392b; font-weight: bold"
DIM = "opacity: 0.65"
LAYER_COLOURS = {"default": "#7f8c8d", "detected": "#16a085", "preset": "#2980b9",
                 "session": "#27ae60", "cell": "#d35400", "kernel": "#8e44ad", "variant": "#c0392b"}


def _span(text: str, style: str) -> str:
    return f'<span style="{style}">{escape(text)}</span>'


def note(text: str, style: str = DIM) -> str:
    return f'<div style="{MONO}; {style}; margin: 2px 0">{escape(text)}</div>'


WRAP = "white-space: pre-wrap; overflow-wrap: anywhere"


def pre(text: str, style: str = "") -> str:
    return f'<pre style="{PRE}; {style}">{escape(text)}</pre>'


def table(head: list[str], rows: list[list[str]]) -> str:
    """Cells are HTML already (escaped by the caller)."""
    th = "".join(f'<th style="{CELL}; border-bottom: 1px solid rgba(127,127,127,0.5)">{h}</th>'
                 for h in head)
    body = "".join("<tr>" + "".join(f'<td style="{CELL}">{c}</td>' for c in r) + "</tr>"
                   for r in rows)
    return f'<table style="{TABLE}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def _layer(layer: str | None) -> str:
    if layer is None:
        return ""
    colour = LAYER_COLOURS.get(layer.split(":", 1)[0], "#7f8c8d")
    return _span(layer, f"color: {colour}; font-weight: bold")


# Colours stop after this many lines or characters (pygments takes ~0.1 ms a line: a 4.5 MB cell
# took 30 s); the rest is shown as plain escaped text in the same box, with a note.
HIGHLIGHT_LINES = 1500
HIGHLIGHT_BYTES = 120_000


def _capped(code: str) -> tuple[str, list[str]]:
    """(the part to colour, the remaining lines) under HIGHLIGHT_LINES and HIGHLIGHT_BYTES."""
    if len(code) <= HIGHLIGHT_BYTES and code.count("\n") < HIGHLIGHT_LINES:
        return code, []
    parts = code.split("\n")        # by "\n" only, as pygments numbers lines (not splitlines)
    lines = [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
    n = size = 0
    for line in lines[:HIGHLIGHT_LINES]:
        if size + len(line) > HIGHLIGHT_BYTES:
            break
        size += len(line)
        n += 1
    return "".join(lines[:n]), lines[n:]


def _size(nbytes: int) -> str:
    return f"{nbytes / 1e6:.1f} MB" if nbytes >= 1e6 else f"{nbytes / 1e3:.0f} kB"


# What pygments made, by (text, lexer, options): every display of a build shows the same
# source and SASS again (the widget's tabs and the static HTML that travels with it), and
# colours them once.  At most MEMO_BYTES of text and HTML are kept, least recently used out.
MEMO_BYTES = 32 * 2 ** 20
_MEMO: OrderedDict = OrderedDict()
_MEMO_LOCK = threading.Lock()
_memo_size = 0


def _highlight(code: str, lexer, linenos: bool = False) -> str:
    global _memo_size
    key = (code, type(lexer).__name__, tuple(sorted(lexer.options.items())), linenos,
           HIGHLIGHT_LINES, HIGHLIGHT_BYTES)
    try:
        hash(key)
    except TypeError:                  # an option that is not hashable: no memo
        return _coloured(code, lexer, linenos)
    with _MEMO_LOCK:
        if key in _MEMO:
            _MEMO.move_to_end(key)
            return _MEMO[key]
    html = _coloured(code, lexer, linenos)
    size = len(code) + len(html)
    if size <= MEMO_BYTES // 4:
        with _MEMO_LOCK:
            if key not in _MEMO:
                _MEMO[key] = html
                _memo_size += size
            while _memo_size > MEMO_BYTES:
                old, value = _MEMO.popitem(last=False)
                _memo_size -= len(old[0]) + len(value)
    return html


def _coloured(code: str, lexer, linenos: bool) -> str:
    head, rest = _capped(code)
    fmt = HtmlFormatter(noclasses=True, nobackground=True, style=SassStyle if isinstance(
        lexer, SassLexer) else "friendly", linenos="inline" if linenos else False)
    body = highlight(head, lexer, fmt) if head else '<div class="highlight"><pre></pre></div>'
    # pygments wraps in <div class="highlight"><pre ...>; give the <pre> our scroll box
    body = body.replace("<pre>", f'<pre style="{PRE}">', 1).replace(
        '<pre style="line-height: 125%;">', f'<pre style="{PRE}">', 1)
    if not rest:
        return body
    first = head.count("\n") + 1
    width = len(str(first + len(rest) - 1))
    plain = "".join((f" {first + i:>{width}}  " if linenos else "") + escape(line)
                    for i, line in enumerate(rest))
    if not plain.endswith("\n"):
        plain += "\n"
    cut = body.rindex("</pre>")
    last = first + len(rest) - 1
    which = f"line {first} is" if first == last else f"lines {first}–{last} are"
    lead = note(f"{which} shown without colours: the text is "
                f"{_size(len(code.encode('utf-8', 'replace')))} in {last} line"
                f"{'s' if last != 1 else ''}, and colours stop after {HIGHLIGHT_LINES} lines or "
                f"{_size(HIGHLIGHT_BYTES)} so that the view stays quick")
    return lead + body[:cut] + plain + body[cut:]


# -- sections -----------------------------------------------------------------------------------

def header(c: Content) -> str:
    warn = "".join(" " + _span("⚠ " + w, WARN) for w in c.warnings())
    notes = "".join(note(n) for n in c.notes)
    return f'<div style="{MONO}; margin: 2px 0"><b>{escape(c.header())}</b>{warn}</div>{notes}'


def _value(text: str) -> str:
    """A config value; a flag list with each flag unbroken (a line breaks between flags, never
    inside ``--warn-on-spills``)."""
    try:
        items = json.loads(text) if text.startswith("[") else None
    except ValueError:
        items = None
    if not isinstance(items, list):
        return escape(text)
    return "[" + ", ".join(f'<span style="white-space: nowrap">{escape(json.dumps(t))}</span>'
                           for t in items) + "]"


def config(columns, argvs: list[tuple[str, tuple[str, ...]]] = (), lead: str = "",
           fold_unused: bool = False) -> str:
    """Each key's value and layer, one column pair per build; then the argv of each build.
    ``fold_unused``: the flags of a compiler no build used go under a fold."""
    rows, notes, folded, folded_notes = split_rows(columns, fold_unused)
    many = len(columns) > 1
    head = ["key"] + [h for label, _ in columns
                      for h in ((f"{escape(label)}", "layer") if many else ("value", "layer"))]

    def body(rows):
        out = []
        for key, cells in rows:
            differs = len({v for v, _ in cells}) > 1
            row = [escape(key)]
            for value, layer in cells:
                shown = _span("(not set)", DIM) if value is None else _value(value)
                row += [f"<b>{shown}</b>" if differs else shown, _layer(layer)]
            out.append(row)
        return out
    parts = [lead, table(head, body(rows))]
    if folded:
        names = ", ".join(k for k, _ in folded)
        parts.append(f'<details style="margin: 2px 0"><summary style="{MONO}; {DIM}; cursor: '
                     f'pointer">{escape(names)} flags: not used (compiled with '
                     f'{escape(_compilers(columns))})</summary>{table(head, body(folded))}'
                     + "".join(flags_note(n) for n in folded_notes) + '</details>')
    parts += [flags_note(n) for n in notes]
    for label, argv in argvs:
        who = f" ({escape(label)})" if many else ""
        parts.append(f'<div style="{MONO}; margin-top: 6px"><b>argv{who}</b></div>' + argv_html(argv))
    parts.append(names_block([argv for _, argv in argvs]))
    return "".join(parts)


_NAME = re.compile(r"<[\w-]+>")


def named_note(text: str) -> str:
    """:func:`note` for a line that uses the names of long directories: each ``<name>`` stays
    on one line (a browser breaks ``<cutlass-headers>`` at its hyphen)."""
    return _note_kept_whole(text, _NAME)


def names_block(argvs) -> str:
    """Each name the argvs and logs use for a long directory, defined once (``""``: none)."""
    defs = names_lines(argvs)
    return (f'<div class="cuda-magic-names" style="{MONO}; {DIM}; {WRAP}; line-height: 1.35; '
            f'margin: 2px 0">'
            + "\n".join(escape(d) for d in defs) + "</div>") if defs else ""


# a word of an argv or a flag of a list: the line breaks between words, inside one only when it
# is wider than the whole line (a long path)
WORD = "display: inline-block; max-width: 100%; overflow-wrap: anywhere; white-space: pre-wrap"


def words(items) -> str:
    """A ``<pre>`` of shell words that wraps between them, never inside ``--warn-on-spills``."""
    return (f'<pre style="{PRE}; white-space: normal">'
            + " ".join(f'<span style="{WORD}">{escape(w)}</span>' for w in items) + "</pre>")


def argv_html(argv) -> str:
    """The argv with long paths named (``-I<cuda-headers>``), and the exact argv under a
    "exact argv" toggle when they differ; lines break between words."""
    shown = words(argv_short_words(argv))
    if not argv_shortened(argv):
        return shown
    exact = words(shlex.quote(a) for a in argv)
    return (shown + f'<details style="margin: 2px 0"><summary style="{MONO}; {DIM}; cursor: '
            f'pointer">exact argv</summary>{exact}</details>')


_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')


def flags_note(text: str) -> str:
    """:func:`note` for a line that quotes flags (``nvrtc: default ["--use_fast_math"] + cell
    [...]``): each quoted flag stays on one line."""
    return _note_kept_whole(text, _QUOTED)


def _note_kept_whole(text: str, pattern: re.Pattern) -> str:
    """:func:`note` with what ``pattern`` matches never broken across lines."""
    out, at = [], 0
    for m in pattern.finditer(text):
        out += [escape(text[at:m.start()]),
                f'<span style="white-space: nowrap">{escape(m.group())}</span>']
        at = m.end()
    out.append(escape(text[at:]))
    return f'<div style="{MONO}; {DIM}; margin: 2px 0">{"".join(out)}</div>'



def _compilers(columns) -> str:
    return " and ".join(dict.fromkeys(r["compiler"] for _, r in columns if "compiler" in r))


def config_of(c: Content) -> str:
    return config(build_columns(c), [(b.label, b.result.argv) for b in c.builds], fold_unused=True)


def resources(c: Content) -> str:
    if not c.entries:
        return note("no kernels in this cell")
    loaded, rows = resource_rows(c.entries)
    head = ["kernel"] + [h for _, h in RESOURCE_COLUMNS] + \
        ([f"driver: {h}" for _, h in DRIVER_COLUMNS] if loaded else [])
    body, notes = [], []
    for b, e, res, attrs in rows:
        row = [escape(e.name)]
        if res is None:
            row += [_span("—", DIM)] * len(RESOURCE_COLUMNS)
        else:
            for field, _ in RESOURCE_COLUMNS:
                v = getattr(res, field)
                bad = v and field in ("spill_stores", "spill_loads", "local")
                row.append(_span(str(v), WARN) if bad else escape(str(v)))
            notes += [note(f"{e.name}: {w}", WARN) for w in res.warnings]
        if loaded:
            row += [escape(str((attrs or {}).get(f, "—"))) for f, _ in DRIVER_COLUMNS]
        body.append(row)
    missing = [note(n) for b in c.builds if (n := resource_note(b))]
    return table(head, body) + "".join(notes + missing) + occupancy(c.entries)


def occupancy(entries) -> str:
    """Blocks per SM · occupancy · limiter per block size and kernel (the limiter spelled out in
    each cell's tooltip); the driver's blocks per SM in a row below when loaded."""
    found = occupancy_rows(entries)
    if not found:
        return ""
    archs = ", ".join(dict.fromkeys(b.result.arch for b, _, _ in found))
    head = ["kernel"] + [f"{o.block} threads" for o in found[0][2]]
    body = []
    for _, e, occ in found:
        cells = []
        for o in occ:
            tip = escape(f"{o}; warps/SM {o.warps}/{o.max_warps}", quote=True)
            style = WARN if o.occupancy < 0.5 else ""
            cells.append(f'<span title="{tip}" style="{style}">{escape(occupancy_cell(o))}</span>')
        body.append([escape(e.name)] + cells)
        if any(o.driver is not None for o in occ):
            body.append([_span("driver", DIM)] + [
                escape(str(o.driver)) if o.driver == o.blocks else _span(f"{o.driver} (differs)", ERR)
                for o in occ])
    return (f'<div style="{MONO}; margin-top: 8px"><b>Occupancy</b> ({escape(archs)}; blocks/SM · '
            f'occupancy · limiter: {escape(OCCUPANCY_LEGEND)})</div>' + table(head, body))


def log(c: Content) -> str:
    parts = []
    for b in c.builds:
        if len(c.builds) > 1:
            parts.append(f'<div style="{MONO}; margin-top: 6px"><b>{escape(b.label)}</b></div>')
        if b.result.supplied_headers:
            parts.append(note(supplied_note(b.result.supplied_headers)))
        if families := families_note(b.result.compiler):
            parts.append(named_note(families))
        text, left_out = c.log(b)
        if left_out:
            parts.append(note(left_out))
        text = short_paths(text, b.result.argv).strip("\n")
        if not text:
            parts.append(note("(the compiler printed nothing)"))
            continue
        lines = []
        for line in text.splitlines():
            low = line.lower()
            if "error" in low and "0 error" not in low:
                lines.append(_span(line, ERR))
            elif "warning" in low:
                lines.append(_span(line, WARN))
            else:
                lines.append(escape(line))
        parts.append(f'<pre style="{PRE}; {WRAP}">' + "\n".join(lines) + "</pre>")
    return "".join(parts)


def sass(text: str, source: str = "", inputs=None, name: str | None = None) -> str:
    """Coloured SASS, tidied, with -lineinfo markers attributed to their files and quoting the
    lines of the cell and of the headers in ``inputs`` (see :func:`.sass.annotate`), the NOPs
    after the function's end folded.  With ``name`` (the kernel's C++ name, as the selector
    shows it), headed by it in bold, its symbol in the binary (mangled for C++) in a smaller
    note beside it, in place of the listing's own ``SYMBOL:`` labels."""
    body = annotate(text, source, inputs)
    if name is None:
        return _highlight(body, SassLexer())
    head, body = _sass_heading(name, body)
    return head + _highlight(body, SassLexer())


def _sass_heading(name: str, body: str) -> tuple[str, str]:
    """(the heading of a kernel's listing: its C++ ``name`` in bold, its symbol in the binary
    in a small note beside it where that differs; the listing without its own labels)."""
    symbol, body = sass_heading(body)
    mangled = (f' <span style="{DIM}; font-size: 11px" title="the symbol in the binary">'
               f'{escape(symbol)}</span>' if symbol and symbol != name else "")
    return f'<div style="{MONO}; margin: 2px 0"><b>{escape(name)}</b>{mangled}</div>', body.lstrip("\n")


def ptx(text: str) -> str:
    return _highlight(text, PtxLexer())


def source(text: str) -> str:
    # stripnl=False: pygments would drop leading blank lines and number the cell's lines wrong
    return _highlight(text, CudaLexer(stripnl=False), linenos=True)


def section(title: str, body: str) -> str:
    return (f'<details open style="margin: 4px 0"><summary style="{MONO}; font-weight: bold; '
            f'cursor: pointer">{escape(title)}</summary>{body}</details>')


def page(c: Content, sass_of=None, sass_lines: int = 40, lines_html: str = "") -> str:
    """The whole view as static HTML: header, config, resources, log, start of each SASS, source.

    ``sass_of(build, entry)`` returns a kernel's SASS text, or None to leave it out;
    ``lines_html`` (the hottest lines, when computed) goes after the resources.
    """
    parts = [header(c), section("Config", config_of(c)), section("Resources", resources(c)),
             *([section("Hottest lines", lines_html)] if lines_html else []),
             section("Log", log(c))]
    if sass_of is not None and c.entries:
        blocks = []
        for b, e in c.entries:
            try:
                text = sass_of(b, e)
            except Exception as exc:   # a missing nvdisasm must not hide the rest
                blocks.append(note(f"{e.name}: {exc}", ERR))
                continue
            if text is None:
                continue
            head, body = _sass_heading(e.name, annotate(text, c.source, b.result.inputs))
            lines = body.splitlines()
            more = len(lines) - sass_lines
            blocks.append(head + _highlight("\n".join(lines[:sass_lines]) + "\n", SassLexer()))
            if more > 0:
                blocks.append(note(f"… {more} more lines: cuda_magic.show(m, 'sass', "
                                   f"kernel={e.name!r})"))
        if blocks:
            parts.append(section("SASS (start)", "".join(blocks)))
    parts.append(section("Source", source(c.source)))
    return f'<div class="cuda-magic">{"".join(parts)}</div>'


def error(exc) -> str:
    """A CompileError in the view's style: what ran, the errors with their cell lines, the log."""
    src = exc.source.splitlines()
    errors = exc.error_lines()
    items = []
    for lineno, text in errors:
        items.append(_span(text, ERR))
        if lineno is not None and 0 < lineno <= len(src):
            items.append(_span(f"  {lineno:>4} | {src[lineno - 1]}", "font-weight: bold"))
    count = f" · {len(errors)} error" + ("s" if len(errors) != 1 else "") if errors else ""
    head = f'<div style="{MONO}; margin: 2px 0"><b>{escape(exc.what)}</b>{count}</div>'
    body = f'<pre style="{PRE}; {WRAP}">' + "\n".join(items) + "</pre>" if items else ""
    leads = "".join(note(n, f"{WARN}; {WRAP}") for n in exc.notes[:exc.leading])  # the cause,
    notes = "".join(note(n, WRAP) for n in exc.notes[exc.leading:])  # the fix (cuda-magic's)
    return (f'<div class="cuda-magic">{head}{leads}{body}{notes}'
            f'<div style="{MONO}; margin-top: 6px"><b>argv</b></div>{argv_html(exc.argv)}'
            + names_block([exc.argv])
            + section("Log", pre(short_paths(exc.log, exc.argv).strip("\n")
                                 or "(the compiler printed nothing)", WRAP))
            + "</div>")
