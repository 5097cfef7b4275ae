"""How compiled cells, configs and compile errors look: a widget, HTML, or plain text.

``view(obj)`` wraps a ``%%cuda`` :class:`~cuda_magic.Module`, a
:class:`~cuda_magic.CompilationResult` or a :class:`~cuda_magic.CompileError`
(and a Comparison, a Tuning, a Timing... in their own views);
each frontend gets the richest form it can show (``_repr_mimebundle_``):
JupyterLab the tabbed widget, nbconvert the HTML, terminal IPython the text.
``show(obj, what)`` prints one part as text (the view's ``part()``).
Which view shows which result type is one table, :data:`.registry.VIEWS`.
"""

from __future__ import annotations

import sys

from .. import inspect
from ..compile.backends import CompileError
from ..cell import session_config
from ..errors import ShowError, ViewError, clip, printable, quote
from . import frontend, markup, registry, text
from .frontend import Reprs
from .content import Build, Content, Entry, argv_text, content as content_of

# what cuda_magic exports from here (the view classes: import them from here)
__all__ = ["view", "show", "lines"]

WHAT = ("summary", "config", "argv", "resources", "log", "sass", "ptx", "source", "lines",
        "archs", "pipeline")


class CellView(Reprs):
    """The view of a compiled cell: header, Config, Resources, Log, SASS, PTX, Source.

    ``static_sass=True`` also puts the start of each kernel's SASS into the
    HTML that travels with the widget (for nbconvert); it costs an nvdisasm run.
    """

    def __init__(self, obj, *, static_sass: bool = False):
        self.obj = obj
        self.content: Content = content_of(obj)
        self.static_sass = static_sass

    # -- the lazy parts ------------------------------------------------------------------------
    @staticmethod
    def sass_of(build: Build, entry: Entry) -> str:
        return inspect.sass(build.result, entry.key)

    @staticmethod
    def ptx_of(build: Build) -> str:
        return inspect.ptx(build.result)

    @staticmethod
    def lines_of(build: Build, entry: Entry):
        """The kernel's per-line cost (:mod:`cuda_magic.inspect.lines`; one nvdisasm run)."""
        from ..inspect.lines import lines
        return lines(build.result, entry.key)

    # -- renderings ----------------------------------------------------------------------------
    def text(self) -> str:
        from .archs import text as archs_text      # an arch list: the archs side by side
        return "\n".join([text.summary(self.content), *archs_text(self.obj)])

    def html(self, sass: bool = True) -> str:
        """Static HTML; ``sass=False`` includes SASS (and the hottest lines) only where they
        were already computed."""
        from .line_cost import hottest_html, unavailable

        def sass_of(b, e):
            return self.sass_of(b, e) if sass or inspect.has_sass(b.result) else None
        hot = []
        for b, e in self.content.entries:
            if sass or "lines" in b.result.derived:
                try:
                    hot.append(hottest_html(e.name, self.lines_of(b, e)))
                except Exception as exc:       # no nvdisasm: the rest of the page still shows
                    hot.append(unavailable(exc, e.name))
        from .archs import html_section           # an arch list: the archs side by side
        return markup.page(self.content, sass_of, lines_html="".join(hot)) + \
            html_section(self.obj, sass)

    def part(self, what: str = "summary", kernel: str | None = None, *, raw: bool = False,
             block: int = 256) -> str:
        """What ``show(m, what, kernel)`` prints (:func:`show` says what each part is)."""
        if what == "numbers":
            raise ShowError("what='numbers' is for a %%cuda_compare Comparison; this is a compiled "
                            "cell")
        if what == "archs":
            from .archs import several, text as archs_text
            if not several(self.obj):
                raise ShowError("what='archs' is for a cell built for several archs: %%cuda --arch "
                                "sm_80,sm_90a (or //| arch: [sm_80, sm_90a])")
            if kernel is not None:
                kernel = _entry(self.content, kernel)[1].kernel.name
            return "\n".join(archs_text(self.obj, block, raw, kernel))
        c = self.content
        if what == "pipeline":
            from . import pipeline as pipeline_view
            if kernel is not None:            # that kernel, in each build of it
                def same(e, want=_entry(c, kernel)[1]):
                    return (e.kernel or e).name == (want.kernel or want).name
                c = Content(c.source, tuple(Build(b.result, tuple(filter(same, b.entries)))
                                            for b in c.builds), c.templates, c.notes)
            return pipeline_view.text(pipeline_view.of_content(c))
        picked = [_entry(c, kernel)] if kernel is not None else c.entries
        builds = list({id(b): b for b, _ in picked}.values()) if kernel is not None else list(c.builds)
        narrowed = Content(c.source, tuple(Build(b.result, tuple(e for bb, e in picked if bb is b))
                                           for b in builds), c.templates, c.notes)
        if what == "summary":
            body = text.summary(narrowed)
        elif what == "config":
            body = text.config_of(narrowed)
        elif what == "argv":        # exactly as it ran (the views name long paths: -I<cccl>)
            body = text.exact_argv([(b.label, b.result.argv) for b in narrowed.builds])
        elif what == "resources":
            body = text.resources(narrowed)
        elif what == "log":
            body = text.log(narrowed)
        elif what == "source":
            body = text.numbered(c.source)
        elif what == "lines":
            from .line_cost import hottest_text, text_table_of
            body = "\n\n".join("\n".join([text_table_of(e.name, kl), *hottest_text(e.name, kl)])
                               for b, e in picked for kl in [self.lines_of(b, e)])
        elif what == "sass":
            from .sass import annotate
            body = "\n".join(annotate(self.sass_of(b, e), c.source, b.result.inputs, name=e.name)
                             for b, e in picked)
        else:
            body = "\n".join(self.ptx_of(b) for b in builds)
        return body.rstrip("\n")

    def widget(self):
        """The ipywidgets view (a VBox: header, then the tabs)."""
        from .widget import cell_widget
        return cell_widget(self)

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        if not frontend.in_kernel():       # terminal IPython: _repr_pretty_ gives the text
            return {}
        if not frontend.widgets_available():
            return {"text/html": self.html()}
        bundle = self.widget()._repr_mimebundle_()
        bundle.pop("text/plain", None)
        bundle["text/html"] = self.html(sass=self.static_sass)
        from .widget import prefetch_tabs    # the SASS and Source tabs' nvdisasm run, started now
        prefetch_tabs(self)
        return bundle


class ErrorView(Reprs):
    """A :class:`CompileError` in the view's style: the errors with their cell lines, argv, log."""

    def __init__(self, error: CompileError):
        self.error = error

    def text(self) -> str:
        return f"{self.error}\nargv: {argv_text(self.error.argv)}"

    def part(self, what: str = "summary", kernel: str | None = None, **_) -> str:
        """What ``show(e, what)`` prints: the log, the argv, or the error with its argv."""
        return self.error.log if what == "log" else argv_text(self.error.argv) if what == "argv" \
            else self.text()

    def html(self) -> str:
        return markup.error(self.error)


class HeaderView(Reprs):
    """A ``%%cuda_header``: its name, size, and the cells that include it."""

    def __init__(self, name: str, text: str, changed: bool, users: list[str]):
        self.name, self.size, self.lines = name, len(text.encode()), text.count("\n") + 1
        self.changed, self.users = changed, list(users)

    def text(self) -> str:
        state = "replaced" if self.changed and self.users else "defined" if self.changed else "unchanged"
        head = f"%%cuda_header {self.name} · {self.size} bytes · {self.lines} lines · {state}"
        if not self.users:
            return f'{head}\nno cell includes it yet: #include "{self.name}"'
        after = " (they recompile on their next run)" if self.changed else ""
        return f"{head}\nincluded by: {', '.join(self.users)}{after}"

    def html(self) -> str:
        head, rest = self.text().split("\n", 1)
        return f'<div class="cuda-magic">{markup.note(head, "font-weight: bold")}{markup.note(rest)}</div>'


class ConfigView(Reprs):
    """The session's config (``%cuda_config``): defaults, preset, each key's value and layer."""

    def __init__(self, session: dict | None = None, preset: str | None = None):
        self.session, self.preset = dict(session or {}), preset
        self.resolved = session_config(self.session, preset)

    def _lead(self) -> str:
        defaults = ", ".join(f"{k}={v!r}" for k, v in sorted(self.session.items())) or "none"
        return f"session defaults: {defaults}" + (f"; preset: {self.preset}" if self.preset else "")

    def _missing(self) -> list[str]:
        if "arch" in self.resolved:
            return []
        return ["arch is not set and there is no GPU to detect one: %cuda_config --arch sm_90a"]

    def text(self) -> str:
        return "\n".join([self._lead(), text.config([("resolved", self.resolved)]), *self._missing()])

    def html(self) -> str:
        body = markup.config([("resolved", self.resolved)], lead=markup.note(self._lead(), ""))
        return f'<div class="cuda-magic">{body}{"".join(markup.note(m, markup.WARN) for m in self._missing())}</div>'


def view(obj, **options):
    """The view of a result (a Module, CompilationResult, CompileError, Comparison, Tuning,
    Timeline, Timing, History, Profile or Check: :data:`.registry.VIEWS`); a view is returned
    as is.  ``options`` are the view's own keywords (a cell's ``static_sass=True``; a
    Timeline's ``rows=``, ``blocks=``, ``window=``, ``max_rects=``); one the view does not
    take is a ViewError that names it."""
    if registry.is_view(obj):
        if options:
            raise ViewError(f"{next(iter(options))}=: {type(obj).__name__} is already a view; "
                            f"pass the result it shows to view() with options")
        return obj
    entry = registry.lookup(obj)
    if entry is None:
        from ..runtime import Kernel
        hint = " (for a Kernel k, its build: show(k.result, 'sass'))" if isinstance(obj, Kernel) else ""
        labels = [v.label for v in registry.VIEWS]
        raise ViewError(f"cannot show {type(obj).__name__} {quote(obj, 60)}: pass "
                        f"{', '.join(labels[:-1])} or {labels[-1]}{hint}")
    cls = registry.view_class(entry)
    takes = registry.keywords(cls)
    for name in options:
        if name not in takes:
            said = f"takes {', '.join(f'{t}=' for t in takes)}" if takes else "takes no options"
            raise ViewError(f"{name}=: the view of {entry.label} {said}")
    return cls(obj, **options)


def _entry(c: Content, kernel: str):
    for b, e in sorted(c.entries, key=lambda be: not be[1].bound):   # an arch list: the bound first
        if kernel in (e.name, e.symbol) or (e.kernel is not None and kernel == e.kernel.name):
            return b, e
    names = ", ".join(e.name for _, e in c.entries) or "none"
    raise ShowError(f"kernel={quote(kernel, 80)}: no such kernel here; the kernels are {names}")


def show(obj, what: str = "summary", kernel: str | None = None, file=None, *, raw: bool = False,
         block: int = 256) -> None:
    """Print one part of a compiled cell as plain text.

    ``what`` is one of summary, config, argv (exactly as it ran), resources (with occupancy),
    log, sass, ptx, source, lines (the cost of each source line: live registers, spills,
    instructions; runs nvdisasm) (and numbers, for a comparison);
    ``kernel`` narrows sass, ptx, config, log and resources to one kernel
    (its C++ name or its name in the binary).  ``obj`` is a ``%%cuda``
    Module, a CompilationResult, a CompileError or a ``%%cuda_compare``
    Comparison (config: the variants and their argv; sass and ptx: the diffs;
    summary: everything) or a ``%%cuda_tune`` Tuning (summary only: the header, the
    winner, the table of candidates, the cell that reproduces the winner).  ``archs``: a
    cell built for several archs (``--arch sm_80,sm_90a``), its kernels' figures side by
    side per arch (occupancy at ``block`` threads) and the SASS diff of the first two archs.
    ``pipeline``: each kernel's async pipeline from its SASS (TMA, wgmma, tcgen05, mbarrier,
    cluster and setmaxnreg counts, a column per arch) with its warnings.
    SASS diffs normalise register numbering; ``raw=True`` compares the raw text.

    Examples::

        cuda_magic.show(m, "sass", kernel="scale")
        cuda_magic.show(m.result, "log")
        cuda_magic.show(c, "sass")            # a comparison's SASS diffs
        cuda_magic.show(c, "sass", raw=True)  # ... with register numbers as they are
        cuda_magic.show(m, "archs")           # an arch list side by side
        cuda_magic.show(m, "pipeline")        # TMA / wgmma / mbarrier / setmaxnreg per kernel
    """
    if not isinstance(what, str) or what not in (*WHAT, "numbers"):
        raise ShowError(f"what={quote(what, 80)}: choose one of {', '.join(WHAT)} (numbers: a "
                        f"comparison's)")
    if file is not None:
        _writable(file)
    out = view(obj).part(what, kernel, raw=raw, block=block)
    if file is None:
        print(out, file=sys.stdout)
        return
    encoding = getattr(file, "encoding", None)
    try:
        print(printable(out, encoding) if isinstance(encoding, str) else out, file=file)
    except (TypeError, ValueError, OSError, AttributeError) as exc:
        import io
        why = "it is not open for writing" if isinstance(exc, io.UnsupportedOperation) else \
            f"writing to it failed ({type(exc).__name__}: {clip(str(exc), 120)})"
        raise ShowError(f"file={quote(file, 80)}: {why}; pass a text stream open for writing, "
                        f"such as sys.stdout, open(path, 'w') or io.StringIO()") from None


def _writable(file) -> None:
    """Raise the ShowError naming ``file`` unless it looks like a text stream open for writing:
    a ``write`` method, not a binary stream, not closed (whether it is open for writing, the
    write says: ``writable()`` is False on text streams that only define ``write``)."""
    import io
    why = None
    if not callable(getattr(file, "write", None)):
        why = "it has no write()"
    else:
        try:
            mode, closed = str(getattr(file, "mode", "")), getattr(file, "closed", False)
        except Exception:
            mode, closed = "", False
        if isinstance(file, (io.RawIOBase, io.BufferedIOBase)) or "b" in mode:
            why = "it is a binary stream (show writes text)"
        elif closed is True:
            why = "it is closed"
    if why:
        raise ShowError(f"file={quote(file, 80)}: {why}; pass a text stream open for writing, "
                        f"such as sys.stdout, open(path, 'w') or io.StringIO()")


def lines(obj, kernel: str | None = None):
    """The cost of each source line of ``kernel`` as data: live registers (peak over the
    line's instructions), spill stores/loads, local bytes, ``.FTZ`` and the instruction mix,
    one row per line — a pandas DataFrame when pandas is installed, else a list of dicts.
    ``obj`` is a ``%%cuda`` Module or a CompilationResult; ``kernel`` may be left out when it
    has one kernel.  ``show(obj, "lines")`` prints the same as a table.

    Example::

        cuda_magic.lines(m, "heavy")        # which lines need the registers and spill
    """
    from .line_cost import rows
    v = view(obj)
    if not isinstance(v, CellView):
        raise ViewError(f"lines() takes a %%cuda Module or a CompilationResult, not "
                        f"{type(obj).__name__}")
    c = v.content
    if kernel is None:
        if len(c.entries) != 1:
            names = ", ".join(e.name for _, e in c.entries) or "none"
            raise ShowError(f"kernel=...: this cell has {len(c.entries)} kernels ({names}); "
                            f"name one")
        b, e = c.entries[0]
    else:
        b, e = _entry(c, kernel)
    return rows(v.lines_of(b, e))
