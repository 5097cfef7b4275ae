"""The view registry (cuda_magic.display.registry) against the package: every result type the
package returns has an entry, every entry resolves to a view that has what the entry says, the
formatters ``%load_ext cuda_magic`` registers are the registry's, and the display modules'
names collide with nothing (the stdlib, the package's functions)."""

import importlib
import inspect
import pkgutil
import sys

import pytest
from IPython.core.formatters import DisplayFormatter

import cuda_magic
import cuda_magic.display as display
from conftest import ARCH, SAXPY
from cuda_magic import CompileError, compile_source, view
from cuda_magic.display import registry

# The result types the package returns, by the public path users reach them by.
RESULTS = {
    "cuda_magic.Module": "build(), %%cuda",
    "cuda_magic.CompilationResult": "compile_source(), m.result",
    "cuda_magic.CompileError": "a cell that does not compile",
    "cuda_magic.CompileTimeoutError": "a compile over its time limit",
    "cuda_magic.Comparison": "compare(), %%cuda_compare",
    "cuda_magic.Verdict": "verify(), k.verify",
    "cuda_magic.Tuning": "tune(), %%cuda_tune",
    "cuda_magic.Exported": "export(), %cuda_export",
    "cuda_magic.Timing": "k.bench()",
    "cuda_magic.AB": "cuda_magic.ab(), k.bench(against=)",
    "cuda_magic.History": "cuda_magic.history()",
    "cuda_magic.runtime.nsight.reports.Profile": "k.profile()",
    "cuda_magic.runtime.nsight.reports.Check": "k.check()",
    "cuda_magic.runtime.Timeline": "k.timeline[grid, block](*args)",
}

# Public classes that are no result to show, and why.  A new public class goes in RESULTS (with
# a registry entry) or here.
NOT_SHOWN = {
    "Kernel": "shown through its build: show(k.result, 'sass')",
    "Backend": "a compiler's spec (register_backend)",
    "BackendConfig": "a dict type: the config users write",
    "Resolved": "a config with its layers: the Config tab of its result's view",
    "Resources": "one kernel's row of the Resources tab",
    "OutputCheck": "one output's row of its Verdict's view",
    "TensorMap": "a kernel argument (128 bytes); its repr says what it maps",
}


def resolve(path: str):
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("path", sorted(RESULTS))
def test_every_result_type_has_an_entry(path):
    cls = resolve(path)
    entry = registry.for_type(cls)
    assert entry is not None, f"{path} ({RESULTS[path]}) has no entry in display.registry.VIEWS"
    assert issubclass(registry.view_class(entry), object)


def test_every_public_class_is_shown_or_says_why_not():
    unclassified = []
    for name in cuda_magic.__all__:
        obj = getattr(cuda_magic, name)
        if not inspect.isclass(obj) or name in NOT_SHOWN:
            continue
        if issubclass(obj, Exception) and not issubclass(obj, CompileError):
            continue                          # errors raise; a failed compile has its view
        if registry.for_type(obj) is None:
            unclassified.append(name)
    assert not unclassified, (f"{unclassified}: give each an entry in display.registry.VIEWS (and "
                              f"RESULTS here), or say in NOT_SHOWN why it has no view")


@pytest.mark.parametrize("entry", registry.VIEWS, ids=lambda e: e.name)
def test_every_entry_resolves_to_a_view_with_what_it_says(entry):
    cls = getattr(importlib.import_module(entry.module), entry.name)
    assert (cls.__module__, cls.__qualname__) == entry.key, \
        f"{entry.name} is defined in {cls.__module__} now: its entry says {entry.module}"
    v = registry.view_class(entry)
    assert callable(getattr(v, "text", None)) and callable(getattr(v, "part", None))
    assert entry.rich in registry.RICH
    rich = "_repr_mimebundle_" if entry.rich == "mimebundle" else "_repr_html_"
    assert callable(getattr(v, rich, None)), f"{v.__name__} has no {rich} ({entry.rich})"
    params = inspect.signature(v).parameters
    assert set(entry.options) <= set(params), f"{v.__name__} takes no {entry.options}"
    assert registry.is_view(object.__new__(v))
    assert entry.label.endswith(entry.name)


SPECS = sorted({e.view for e in registry.VIEWS} | set(registry.SESSION_VIEWS))


@pytest.mark.parametrize("spec", SPECS)
def test_every_view_takes_its_ipython_methods_from_reprs(spec):
    from cuda_magic.display.frontend import Reprs
    module, _, name = spec.partition(":")
    v = getattr(importlib.import_module(module), name)
    assert issubclass(v, Reprs), f"{spec}: derive it from display.frontend.Reprs"
    assert callable(getattr(v, "html", None)), f"{spec}: Reprs shows its html()"
    for cls in v.__mro__[:v.__mro__.index(Reprs)]:
        again = {"_repr_pretty_", "_repr_html_", "__repr__"} & set(vars(cls))
        assert not again, f"{cls.__qualname__} writes {sorted(again)} again: Reprs has them"


def test_reprs_gives_the_text_escaped_and_the_html():
    from cuda_magic.display.frontend import Reprs, WidgetReprs

    class Shown(Reprs):
        def text(self):
            return "caf\u00e9 \ud800"

        def html(self):
            return "<b>x</b>"

    class Printer:
        def text(self, t):
            self.out = t
    p, v = Printer(), Shown()
    v._repr_pretty_(p, False)
    assert p.out == "caf\u00e9 \\ud800"           # what no encoding can write, escaped
    assert v._repr_html_() == "<b>x</b>" and repr(v) == v.text() == v.part("sass")

    class Widget(WidgetReprs, Shown):
        def widget(self):
            raise AssertionError("no kernel here: no widget")
    assert Widget()._repr_mimebundle_() == {}         # terminal IPython: _repr_pretty_ shows it


def test_one_entry_per_type():
    keys = [e.key for e in registry.VIEWS]
    assert len(keys) == len(set(keys))


def declared():
    """(format, module, name) of every formatter the registry asks for."""
    return {(fmt, module, name) for fmt, module, name, _ in registry.formatters()}


def ours(formatter, fmt: str) -> set:
    """The (format, module, name) of the printers of cuda_magic in one IPython formatter,
    whether still deferred (by name) or already resolved to a type."""
    found = {(fmt, *key) for key, f in formatter.deferred_printers.items()
             if f.__module__.startswith("cuda_magic")}
    found |= {(fmt, t.__module__, t.__qualname__) for t, f in formatter.type_printers.items()
              if getattr(f, "__module__", "").startswith("cuda_magic")}
    return found


def registered(display_formatter) -> set:
    out = ours(display_formatter.mimebundle_formatter, "mimebundle")
    for fmt, formatter in display_formatter.formatters.items():
        out |= ours(formatter, fmt)
    return out


def test_the_formatters_are_the_registry():
    assert declared() == {(f, e.module, e.name) for e in registry.VIEWS
                          for f in ("text/plain", e.rich)}
    fmt = DisplayFormatter()
    registry.register_formatters(fmt)
    assert registered(fmt) == declared()


def test_load_ext_registers_the_registry(shell):
    assert registered(shell.display_formatter) == declared()


def test_a_shell_shows_results_through_their_views(shell, monkeypatch):
    r = compile_source(SAXPY, {"cuda": {"arch": ARCH}})
    assert shell.display_formatter.format(r)[0]["text/plain"] == view(r).text()
    try:
        compile_source("__global__ void k() { undefined_thing; }", {"cuda": {"arch": ARCH}})
    except CompileError as exc:
        error = exc
    data = shell.display_formatter.format(error)[0]
    assert data["text/plain"] == view(error).text() and "argv:" in data["text/plain"]
    assert "undefined_thing" in data["text/html"] and data["text/html"] == view(error)._repr_html_()
    # in a notebook the cell's widget bundle; the magics' static_sass reaches the view
    monkeypatch.setattr(display.frontend, "in_kernel", lambda: True)
    monkeypatch.setattr(display.frontend, "widgets_available", lambda: False)
    magics = shell.magics_manager.registry["CudaMagics"]
    monkeypatch.setattr(magics, "static_sass", True)
    made = []
    real = display.CellView.__init__

    def spy(self, obj, **options):
        made.append(options)
        real(self, obj, **options)
    monkeypatch.setattr(display.CellView, "__init__", spy)
    data = shell.display_formatter.format(r)[0]
    assert "text/html" in data and {"static_sass": True} in made


def test_view_and_show_refuse_what_has_no_entry():
    with pytest.raises(display.ViewError, match="cannot show int 3: pass a %%cuda Module, "):
        view(3)
    with pytest.raises(display.ViewError, match="a Check$"):
        cuda_magic.show([1], "sass")


def test_view_names_an_option_the_view_does_not_take():
    err = CompileError("nvrtc", "cell.cu(1): error: oops", ("--gpu-architecture=sm_90",), "x", "cell.cu")
    with pytest.raises(display.ViewError, match=r"^static_sass=: the view of a CompileError takes "
                                                r"no options$"):
        view(err, static_sass=True)


def test_display_module_names_collide_with_nothing():
    """``display.lines`` stays the function whatever is imported; no module shadows the
    stdlib (``html``)."""
    for info in pkgutil.iter_modules(display.__path__):
        module = importlib.import_module(f"cuda_magic.display.{info.name}")
        assert info.name not in sys.stdlib_module_names, f"display/{info.name}.py shadows the stdlib"
        assert getattr(display, info.name) is module, \
            f"cuda_magic.display.{info.name} is not the module display/{info.name}.py"
    assert callable(cuda_magic.lines) and cuda_magic.lines is display.lines
