"""The views of real compile results, built on the CPU: widget, HTML fallback, terminal text, show()."""

import re
import threading

import pytest

import cuda_magic
from conftest import ARCH, HEAVY, SAXPY
from cuda_magic import CompileError, build, compile_source, show, view
from cuda_magic import display
from cuda_magic.inspect import disasm as inspect
from cuda_magic.display import CellView, ConfigView, ErrorView
from cuda_magic.display.sass import FTZ, Opcode, SassLexer, annotate, opcode_class

TWO = r'''//| nvrtc: [--use_fast_math, --ftz=false]
extern "C" __global__ void keep(const float* x, float* y) { y[threadIdx.x] = x[threadIdx.x] * 0.5f; }

//| nvrtc: [--use_fast_math, --ftz=true]
extern "C" __global__ void flush(const float* x, float* y) { y[threadIdx.x] = x[threadIdx.x] * 0.5f; }
'''

EVIL = r'''// <script>alert("source")</script>
#warning <script>alert("log")</script>
struct script {};
template <typename T> __global__ void k(T* p, float* y) { y[threadIdx.x] *= 2.0f; }
__global__ void u(int n, int* p) { int unused = (n < 3); p[0] = n; }  // <b>echo</b>
'''


@pytest.fixture
def tools(monkeypatch):
    """Count the disassembler runs (nvdisasm / cuobjdump)."""
    calls = []
    real = inspect._run

    def counting(tool, *args, **kw):
        calls.append(tool)
        return real(tool, *args, **kw)
    monkeypatch.setattr(inspect, "_run", counting)
    return calls


def opts(**kw):
    return {"arch": ARCH, **kw}


def test_widget_tabs_config_resources_and_lazy_sass(tools):
    m = build(SAXPY + HEAVY, opts(nvrtc=["--use_fast_math", "--maxrregcount=24"]),
              session={"compiler": "nvrtc"}, force=True)
    heavy = m.result.resources["heavy"]
    w = view(m).widget()
    tab = w.tab
    assert tab.titles == ("Config", "Resources", "Log", "SASS", "PTX", "Source")
    header = w.children[0].value
    assert "scale, heavy" in header and ARCH in header and "nvrtc" in header and "cubin" in header
    assert "cache miss" in header and "1 module" in header
    assert f"heavy spills: {heavy.spill_stores} B stored, {heavy.spill_loads} B loaded" in header

    config = tab.children[0].value
    rows = {key: (value, layer) for key, value, layer in re.findall(
        r"<tr><td[^>]*>(\w+)</td><td[^>]*>(.*?)</td><td[^>]*>(.*?)</td></tr>", config)}
    assert rows["arch"][0] == ARCH and ">cell<" in rows["arch"][1]
    assert "--maxrregcount=24" in rows["nvrtc"][0] and ">cell<" in rows["nvrtc"][1]
    assert ">session<" in rows["compiler"][1] and ">default<" in rows["ptxas"][1]
    assert "--gpu-architecture=sm_90a" in config and "--maxrregcount=24" in config   # argv

    resources = tab.children[1].children[0].value
    for name in ("scale", "heavy"):
        res = m.result.resources[name]
        row = re.search(rf"<tr><td[^>]*>{name}</td>(.*?)</tr>", resources).group(1)
        figures = [int(x) for x in re.findall(r">(\d+)<", row)]
        assert figures[:6] == [res.registers, res.spill_stores, res.spill_loads, res.stack_frame,
                               res.shared, res.barriers]
    assert heavy.spill_stores > 0 and f'{html_warn()}">{heavy.spill_stores}</span>' in resources
    assert "Local memory used for function &#x27;heavy&#x27;" in resources   # warning highlighted
    assert "ptxas warning" in tab.children[2].value and html_warn() in tab.children[2].value

    # SASS and PTX: nothing disassembled until their tab is opened, "working" meanwhile.
    assert tools == [] and not inspect.has_sass(m.result)
    assert "FMUL" not in w.sass.pane.value
    real = inspect._run
    seen = []
    inspect._run = lambda *a, **k: (seen.append(w.sass.pane.value), real(*a, **k))[1]
    try:
        tab.selected_index = 3
    finally:
        inspect._run = real
    assert "running nvdisasm" in seen[0]
    assert tools == ["nvdisasm"]
    assert "FMUL" in w.sass.pane.value and "heavy" not in w.sass.pane.value   # the first kernel
    w.sass.dropdown.value = 1                                                  # heavy
    assert "STL" in w.sass.pane.value and tools == ["nvdisasm"]               # one run per module
    tab.selected_index = 4
    assert ".visible .entry" in re.sub(r"<[^>]+>", "", w.ptx.pane.value)
    tab.selected_index = 5                      # the Source tab: the heat map, made when opened
    source = w.heat.pane.value
    assert "blockIdx" in source and "live registers" in source and "<details>" in source
    assert tools == ["nvdisasm"]                # the SASS's run gives the life ranges too


def html_warn():
    return cuda_magic.display.markup.WARN


def test_sass_colours_opcodes_keeps_ftz_and_marks_source_lines():
    r = compile_source(SAXPY, {"cuda": opts(nvrtc=["--use_fast_math", "-lineinfo"])})
    text = cuda_magic.sass(r, "scale")
    tokens = [(t, v) for t, v in SassLexer().get_tokens(text) if v.strip()]
    assert (Opcode.Float, "FMUL") in tokens and (FTZ, "FTZ") in tokens
    assert (Opcode.Memory, "LDG") in tokens and (Opcode.Control, "EXIT") in tokens
    assert [opcode_class(o) for o in ("STG", "IMAD", "HGMMA", "BAR", "MUFU")] == \
        ["memory", "integer", "tensor", "control", "float"]
    shown = annotate(text, SAXPY)
    assert '  //## line 4 | if (i < n) y[i] = x[i] * a;' in shown
    assert re.search(r"^  /\*00[0-9a-f]0\*/\s+FMUL\.FTZ R\d+", shown, re.M)
    assert ".section" not in shown and "FMUL.FTZ" in shown
    page = view(r).widget()
    page.tab.selected_index = 3
    html = page.sass.pane.value
    assert "FTZ</span>" in html and "if (i &lt; n) y[i] = x[i] * a;" in html


def test_several_builds_side_by_side_and_sass_per_kernel():
    m = build(TWO, opts())
    w = view(m).widget()
    config = w.tab.children[0].value
    assert "keep</th>" in config and "flush</th>" in config and ">kernel:flush<" in config
    nw = '<span style="white-space: nowrap">'          # each flag unbroken
    assert (f"<b>[{nw}&quot;--use_fast_math&quot;</span>, {nw}&quot;--ftz=true&quot;</span>]</b>"
            in config)                                                      # differs: bold
    assert config.count("<b>argv (") == 2
    assert "2 modules" in w.children[0].value
    w.tab.selected_index = 3
    assert w.sass.dropdown.options == (("keep", 0), ("flush", 1))
    assert "FMUL.FTZ" not in _plain(w.sass.pane.value)
    w.sass.dropdown.value = 1
    assert "FMUL.FTZ" in _plain(w.sass.pane.value)
    w.tab.selected_index = 4
    assert w.ptx.dropdown.options == (("keep", 0), ("flush", 1))
    w.ptx.dropdown.value = 1
    assert "mul.ftz.f32" in _plain(w.ptx.pane.value)


def _plain(html: str) -> str:
    import html as h
    return h.unescape(re.sub(r"<[^>]+>", "", html))


def test_everything_from_compilers_sources_and_names_is_escaped(tools):
    m = build(EVIL, opts(), instantiate=["k<script>"])
    assert "<script>" in m.source and "<script>" in m.result.log and "k<script>" in m.kernels
    v = view(m)
    w = v.widget()
    w.tab.selected_index = 3
    w.tab.selected_index = 4
    parts = [v.html(), w.children[0].value, w.sass.pane.value, w.ptx.pane.value,
             *(c.value for c in w.tab.children if hasattr(c, "value"))]
    echo = "int unused = (n < 3); p[0] = n; }  // <b>echo</b>"
    assert any(line.strip().endswith(echo) and "warning" not in line
               for line in m.result.log.splitlines())     # NVRTC echoes the line, plainly
    for part in parts:
        assert "<script" not in part.lower() and "<b>echo" not in part
        assert not re.findall(r"<(?![a-zA-Z/!])", part)   # every '<' opens a tag
    text = _plain(v.html())                   # shown as text, not run as markup
    assert '// <script>alert("source")</script>' in text                  # source
    assert re.search(r'warning.*<script>alert\("log"\)</script>', text)    # log
    log = text[text.index("Log"):]
    assert echo in log[:log.index("SASS")]                                 # the log's plain lines
    assert "k<script>" in _plain(w.children[0].value)                      # kernel name
    with pytest.raises(CompileError) as info:
        build('#error <script>alert(1)</script>\n', opts())
    err = ErrorView(info.value)._repr_html_()
    assert "<script" not in err.lower() and "&lt;script&gt;alert(1)&lt;/script&gt;" in err


def test_html_fallback_has_config_resources_and_the_start_of_the_sass():
    m = build(SAXPY + HEAVY, opts(nvrtc=["--use_fast_math", "--maxrregcount=24"]))
    page = view(m)._repr_html_()
    for title in ("Config", "Resources", "Log", "SASS (start)", "Source"):
        assert f">{title}</summary>" in page
    assert "FMUL" in page and "LDG" in page
    assert re.search(r"… \d+ more lines: cuda_magic.show\(m, &#x27;sass&#x27;, kernel=&#x27;heavy&#x27;\)",
                     page)


def test_mimebundle_per_frontend(tools, monkeypatch):
    m = build(SAXPY, opts(), force=True)
    v = view(m)
    assert v._repr_mimebundle_() == {}          # terminal IPython: _repr_pretty_ gives the text
    monkeypatch.setattr(display.frontend, "in_kernel", lambda: True)
    bundle = v._repr_mimebundle_()
    assert set(bundle) == {"application/vnd.jupyter.widget-view+json", "text/html"}
    assert ">Config</summary>" in bundle["text/html"] and "SASS" not in bundle["text/html"]
    # the static HTML was made before the SASS tab's nvdisasm run started in the background
    for t in [t for t in threading.enumerate() if t.name == "cuda-magic prefetch"]:
        t.join(120)
    assert tools == ["nvdisasm"]                 # one run: the SASS and the life ranges
    bundle = view(m, static_sass=True)._repr_mimebundle_()
    assert "SASS (start)" in bundle["text/html"] and "Hottest lines" in bundle["text/html"]
    assert tools == ["nvdisasm"]
    monkeypatch.setattr(display.frontend, "widgets_available", lambda: False)
    assert set(v._repr_mimebundle_()) == {"text/html"}


def test_terminal_text_is_readable(shell):
    m = shell.run_cell_magic("cuda", f'--arch {ARCH} --nvrtc "--use_fast_math --maxrregcount=24"',
                             SAXPY + HEAVY)
    text = shell.display_formatter.format(m)[0]["text/plain"]
    lines = text.splitlines()
    assert lines[0].startswith("scale, heavy · sm_90a · nvrtc ") and "cubin" in lines[0]
    assert "! heavy spills: 1272 B stored, 1316 B loaded" in text
    assert re.search(r"^  nvrtc\s+\[\"--use_fast_math\", \"--maxrregcount=24\"\]\s+\[cell\]$", text, re.M)
    assert re.search(r"^  heavy\s+24\s+1272\s+1316\s+", text, re.M)
    assert "<" not in text.replace("<", "", 0) or not re.search(r"<[a-z]+[ >]", text)  # no HTML
    assert max(len(line) for line in lines) <= 100


ARCHS = "sm_80,sm_86,sm_89,sm_90a,sm_100a,sm_120"


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_terminal_text_of_a_list_of_archs_fits_100_columns(shell, compiler):
    """Six archs used to print a config table and argv lines ~300 columns wide: the builds that
    differ only in their arch are one block and one argv line; the exact argvs stay one
    show(m, "argv") away."""
    m = shell.run_cell_magic("cuda", f"--arch {ARCHS} --compiler {compiler}", SAXPY)
    text = shell.display_formatter.format(m)[0]["text/plain"]
    assert max(len(line) for line in text.splitlines()) <= 100, text
    assert text.count("(6 builds, one per arch):") == 1
    assert re.search(r"^    arch\s+sm_80, sm_86, sm_89, sm_90a, sm_100a, sm_120\s+\[cell\]$",
                     text, re.M)
    argv_lines = [ln for ln in text.splitlines() if ln.startswith("argv")]
    if compiler == "nvrtc":
        assert len(argv_lines) == 1
        assert "sm_80, sm_86, sm_89, sm_90a, sm_100a, sm_120" in argv_lines[0]
    else:       # nvcc spells the "a" archs -gencode=arch=compute_90a,code=sm_90a: two shapes
        assert len(argv_lines) == 2 and "sm_90a, sm_100a" in argv_lines[1]
    assert "=<arch>" in text
    exact = cuda_magic.display.text.exact_argv([(b.label, b.result.argv)
                                                for b in cuda_magic.display.content.content(m).builds])
    assert len(exact.splitlines()) == 6 and "<arch>" not in exact


def test_terminal_resources_with_the_driver_figures_fit_100_columns(shell, monkeypatch):
    """ptxas's eight columns and the driver's four were one table ~140 columns wide, so the
    fit to 100 columns broke its header between words: the driver's figures go in a table of
    their own below, each heading whole."""
    attrs = {"max_threads_per_block": 1024, "max_dynamic_shared": 49152, "binary_version": 90,
             "ptx_version": 90}
    monkeypatch.setattr(cuda_magic.display.content, "driver_attributes", lambda e: attrs)
    m = shell.run_cell_magic("cuda", f"--arch {ARCH}", SAXPY)
    text = shell.display_formatter.format(m)[0]["text/plain"]
    assert max(len(line) for line in text.splitlines()) <= 100, text
    assert re.search(r"^    kernel\s+max threads\s+max dyn smem B\s+SASS ver\s+PTX ver$", text, re.M)
    assert re.search(r"^    scale\s+1024\s+49152\s+90\s+90$", text, re.M), text
    assert re.search(r"^  kernel\s+registers\s+spill stores B.*const B$", text, re.M)
    assert re.search(r"^  driver:$", text, re.M)


def test_show_prints_each_part(capsys):
    m = build(TWO, opts())
    show(m, "sass", kernel="flush")
    out = capsys.readouterr().out
    assert "FMUL.FTZ" in out and "keep" not in out
    show(m, "config", kernel="keep")
    out = capsys.readouterr().out
    assert "--ftz=false" in out and "--ftz=true" not in out and "[cell]" in out
    show(m, "resources")
    assert re.search(r"^  flush\s+\d+", capsys.readouterr().out, re.M)
    show(m.result_of("flush"), "ptx")
    assert "mul.ftz.f32" in capsys.readouterr().out
    show(m, "log", kernel="keep")
    assert "Compiling entry function" in capsys.readouterr().out
    show(m, "source")
    assert re.search(r"^2 \| extern", capsys.readouterr().out, re.M)
    show(m)
    assert capsys.readouterr().out.startswith("keep, flush · ")
    with pytest.raises(ValueError, match=r"what='asm': choose one of summary, config"):
        show(m, "asm")
    with pytest.raises(ValueError, match=r"kernel='nope': .* the kernels are keep, flush"):
        show(m, "sass", kernel="nope")


def test_compile_error_renders_in_the_view_style(shell, capsys):
    cell = "//| nvrtc: [--use_fast_math]\n\nextern \"C\" __global__ void k(int* p) {\n    p[0] = nope;\n}\n"
    result = shell.run_cell(f"%%cuda --arch {ARCH}\n{cell}")
    err = result.error_in_exec
    assert isinstance(err, CompileError) and err.shown
    out = capsys.readouterr()
    text = out.out + out.err
    assert "cell.cu(4)" in text and "   4 |     p[0] = nope;" in text   # the view
    assert "argv: --gpu-architecture=sm_90a" in text
    assert text.rstrip().endswith("CompileError: nvrtc failed to compile cell.cu (1 error, shown above)")
    assert text.count("p[0] = nope;") == 1 and "Traceback" not in text
    html = ErrorView(err)._repr_html_()
    assert "nvrtc failed to compile cell.cu</b> · 1 error" in html
    assert "   4 |     p[0] = nope;" in html and ">Log</summary>" in html


def test_cuda_config_uses_the_config_view(shell, capsys):
    shell.run_line_magic("cuda_config", '--arch sm_80 --nvrtc "--use_fast_math --ftz=false"')
    out = capsys.readouterr().out
    assert re.search(r"^  arch\s+sm_80\s+\[session\]$", out, re.M)
    assert re.search(r"^  compiler\s+nvrtc\s+\[default\]$", out, re.M)
    html = ConfigView({"nvrtc": []}, "hopper")._repr_html_()
    assert "session defaults: nvrtc=[]; preset: hopper" in html
    assert ">session<" in html and ">preset:hopper<" in html
    assert display.text.config([("resolved", ConfigView({"arch": "sm_80"}).resolved)]) in \
        ConfigView({"arch": "sm_80"}).text()


def test_compilation_result_and_nvcc_fatbin_views(tools):
    r = compile_source(SAXPY, {"cuda": opts(compiler="nvcc", target_format="fatbin",
                                            nvcc=["--use_fast_math"])})
    v = view(r)
    assert isinstance(v, CellView) and "nvcc" in v.text() and "fatbin" in v.text()
    w = v.widget()
    w.tab.selected_index = 3
    assert tools == ["nvdisasm"] and "FMUL" in w.sass.pane.value   # on the fatbin's ELF image
    ptx_only = compile_source(SAXPY, {"cuda": opts(target_format="ptx")})
    assert "no ptxas figures: the target is PTX" in view(ptx_only).widget().tab.children[1].children[0].value


def test_a_cell_without_kernels(tools):
    m = build("template <typename T> __global__ void t(T* p) { p[0] = T(1); }\n", opts())
    w = view(m).widget()
    assert "no kernels" in w.children[0].value and "templates not instantiated: t" in w.children[0].value
    w.tab.selected_index = 3
    assert "no kernels in this cell" in w.sass.pane.value and tools == []
    assert "no kernels in this cell" in w.tab.children[1].children[0].value


def test_a_failing_tool_shows_in_its_tab(monkeypatch):
    r = compile_source(SAXPY, {"cuda": opts(nvrtc=["-DNOPE=1"])}, force=True)

    def missing(*a, **k):
        raise cuda_magic.ToolNotFoundError("nvdisasm was not found; install it with pip install x")
    monkeypatch.setattr(inspect, "_run", missing)
    w = view(r).widget()
    w.tab.selected_index = 3
    assert "ToolNotFoundError: nvdisasm was not found" in w.sass.pane.value


def test_static_sass_setting_puts_sass_into_the_saved_html(shell, monkeypatch):
    monkeypatch.setattr(display.frontend, "in_kernel", lambda: True)
    m = shell.run_cell_magic("cuda", f"--arch {ARCH} --force", SAXPY)
    data = shell.display_formatter.format(m)[0]
    assert "application/vnd.jupyter.widget-view+json" in data and "SASS (start)" not in data["text/html"]
    shell.run_line_magic("config", "CudaMagics.static_sass = True")
    try:
        data = shell.display_formatter.format(m)[0]
    finally:
        shell.run_line_magic("config", "CudaMagics.static_sass = False")
    assert "SASS (start)" in data["text/html"] and "FMUL" in data["text/html"]


def test_static_sass_from_the_environment(monkeypatch):
    """CUDA_MAGIC_STATIC_SASS=1 (what notebooks/run.py sets for its kernel) is the trait's
    default; setting the trait (%config) sets the setting, which then wins over the variable."""
    from cuda_magic import settings
    from cuda_magic.magics.commands import CudaMagics
    monkeypatch.setenv("CUDA_MAGIC_STATIC_SASS", "1")
    settings.reset("static_sass")           # an earlier %config set it: that wins over the variable
    try:
        magics = CudaMagics(shell=None)     # not the test shell's: its %config set the trait
        assert magics.static_sass is True and settings.source("static_sass") == "CUDA_MAGIC_STATIC_SASS"
        magics.static_sass = False
        assert settings.static_sass is False and settings.source("static_sass") == "set"
        assert CudaMagics(shell=None).static_sass is False
    finally:
        settings.reset("static_sass")


PER_KERNEL = '''//| ptxas: [-v]

extern "C" __global__ void plain(float* x) { x[threadIdx.x] = 1.f; }

//| ptxas: [-v, --maxrregcount=32]
extern "C" __global__ void capped(float* x) { x[threadIdx.x] = sinf(x[threadIdx.x]) * 3.f; }
'''


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_each_builds_log_shows_only_the_kernels_it_is_for(compiler):
    """Per-kernel configs: each build compiles the other kernels as empty bodies; its Log (text
    and HTML) leaves out ptxas's lines about those, says so, and agrees with the Resources."""
    from cuda_magic.display import content, markup, text
    m = build(PER_KERNEL, {"arch": ARCH, "compiler": compiler})
    c = content.content(m)
    assert [b.label for b in c.builds] == ["plain", "capped"]
    logs = text.log(c).split("-- capped --")
    for mine, other, log in (("plain", "capped", logs[0]), ("capped", "plain", logs[1])):
        entries = re.findall(r"Compiling entry function '([^']+)'", log)
        assert len(entries) == 1 and mine in entries[0], log
        assert f"ptxas's lines about {other} are left out" in log
    html = markup.log(c)
    assert html.count("Compiling entry function") == 2 and "are left out" in html
    for b in c.builds:                                 # the Resources table's figure is the log's
        (e,) = b.entries
        used = re.search(rf"Function properties for {re.escape(e.key)}.*?Used (\d+) registers",
                         c.log(b)[0], re.S)
        assert int(used.group(1)) == b.resources(e).registers
