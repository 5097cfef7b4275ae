"""Small truths: help reads %%cuda, the header names the compilers that ran, a fatbin's SASS reads
as a cubin's, argv names long paths (and the exact argv is one step away).  Real NVRTC/nvcc."""

import importlib
import os
import re

import pytest
from IPython.core.error import UsageError

import cuda_magic
import cuda_magic.compile.backends.nvcc as nvcc_backend
import cuda_magic.inspect.disasm as inspect_mod
from conftest import ARCH, SAXPY, cfg
from cuda_magic import compile_source, sass, view
from cuda_magic.inspect import diff
from cuda_magic.compile.toolkit_headers import cutlass_dir, toolkit_dirs
from cuda_magic.display import markup as html
from cuda_magic.display.compare import CompareView
from cuda_magic.display.sass import annotate

C = importlib.import_module("cuda_magic.display.content")   # (display.content is also a function)
A = f"--arch {ARCH}"
OLD_NVCC = "/usr/local/cuda/bin/nvcc"       # another toolkit's nvcc, when the machine has one

BRANCHY = r'''
extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * a;
}
__global__ void loop(float* y, int n) { for (int i = 0; i < n; ++i) y[i] += 1.0f / (i + 1); }
'''


def words(text: str) -> str:
    return " ".join(text.split())


# -- 1. help -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,kind", [("cuda", "cell"), ("cuda_compare", "cell"),
                                       ("cuda_header", "cell"), ("cuda_config", "line")])
def test_help_usage_line_has_the_magics_own_prefix(shell, name, kind):
    prefix = "%%" if kind == "cell" else "%"
    magic = shell.find_magic(name, kind)
    usage = magic.__doc__.split("::", 1)[1].strip().splitlines()[0]
    assert usage.startswith(f"{prefix}{name} ") and not usage.startswith(f"{prefix}%")
    # the usage line of a UsageError reads the same
    with pytest.raises(UsageError) as err:
        if kind == "cell":
            shell.run_cell_magic(name, "--no-such-option", "x")
        else:
            shell.run_line_magic(name, "--no-such-option")
    assert str(err.value).split("usage: ", 1)[1].splitlines()[0] == usage


def test_question_mark_shows_the_cell_magic_usage(shell, capsys):
    shell.run_cell("%%cuda?")
    out = capsys.readouterr().out
    assert re.search(r"^\s*%%cuda \[--arch ARCH\]", out, re.M), out[:500]
    assert not re.search(r"^\s*%cuda \[", out, re.M)


def test_target_format_help_says_what_each_compiler_makes(shell):
    for name, kind in (("cuda", "cell"), ("cuda_compare", "cell"), ("cuda_config", "line")):
        doc = words(shell.find_magic(name, kind).__doc__)
        assert ("--target-format FORMAT what the compiler makes: NVRTC cubin (default) or ptx; "
                "nvcc fatbin (default), cubin or ptx") in doc


# -- 3. compiler versions ------------------------------------------------------------------------

def test_header_names_each_compiler_and_version_that_ran(shell):
    m = shell.run_cell_magic("cuda", A + " --compile-only", SAXPY)
    v = m.result.compiler_version
    assert f" · nvrtc {v} · " in view(m).content.header() and re.fullmatch(r"\d+\.\d+", v)
    m = shell.run_cell_magic("cuda", A + " --compile-only --compiler nvcc", SAXPY)
    assert f" · nvcc {m.result.compiler_version} · " in view(m).content.header()
    both = SAXPY + "//| compiler: nvcc\n__global__ void twice(float* y) { y[0] *= 2.0f; }\n"
    m = shell.run_cell_magic("cuda", A + " --compile-only", both)
    (a, b) = m.results
    head = view(m).content.header()
    assert f" · nvrtc {a.compiler_version} / nvcc {b.compiler_version} · " in head
    assert html.escape(head) in view(m).html() and head in unwrapped(view(m).text())


class _R:
    def __init__(self, compiler, version):
        self.compiler, self.compiler_version = compiler, version


def test_version_note_compares_releases():
    assert C.version_note([_R("nvrtc", "13.5"), _R("nvcc", "13.5.37")]) is None
    assert C.version_note([_R("nvrtc", "13.5"), _R("nvrtc", "13.5")]) is None
    assert C.version_note([_R("nvrtc", "13.5"), _R("nvcc", "13.0.88")]) == (
        "nvrtc 13.5 and nvcc 13.0.88 differ in version: differences may come from the "
        "compilers, not the flags")
    assert C.compilers([_R("nvrtc", "13.5"), _R("nvcc", "13.0.88"), _R("nvrtc", "13.5")]) == \
        "nvrtc 13.5 / nvcc 13.0.88"


def unwrapped(text: str) -> str:
    """A terminal view with its lines past 100 columns joined again (they wrap between words)."""
    return re.sub(r"\n {4,}", " ", text)


VARIANTS = '--variant "a: {\\"compiler\\": \\"nvrtc\\"}" --variant "b: {\\"compiler\\": \\"nvcc\\"}"'


def _compare(shell, extra=""):
    return shell.run_cell_magic("cuda_compare", f"{A} {VARIANTS} --force", SAXPY + extra)


def test_compare_across_compilers_of_one_release_has_no_note(shell):
    c = _compare(shell)
    versions = [c.modules[n].result.compiler_version for n in c.names]
    text = CompareView(c).text()
    assert f"nvrtc {versions[0]} / nvcc {versions[1]}" in text.splitlines()[0]
    if versions[0].split(".")[:2] == versions[1].split(".")[:2]:
        assert "differ in version" not in text


@pytest.mark.skipif(not os.access(OLD_NVCC, os.X_OK), reason=f"no {OLD_NVCC} here")
def test_compare_says_when_nvrtc_and_nvcc_differ_in_version(shell, monkeypatch):
    real = cuda_magic.tools.find
    monkeypatch.setattr(cuda_magic.tools, "find", lambda name, **kw: OLD_NVCC if name == "nvcc" else real(name, **kw))
    old = nvcc_backend.version()
    c = _compare(shell, "// old nvcc\n")
    nvrtc_v = c.modules["a"].result.compiler_version
    assert c.modules["b"].result.compiler_version == old
    if old.split(".")[:2] == nvrtc_v.split(".")[:2]:
        pytest.skip(f"{OLD_NVCC} is of NVRTC's release ({old})")
    note = (f"nvrtc {nvrtc_v} and nvcc {old} differ in version: differences may come from the "
            f"compilers, not the flags")
    v = CompareView(c)
    lines = v.text().splitlines()
    assert f"nvrtc {nvrtc_v} / nvcc {old}" in lines[0] and lines[1] == f"! {note}"
    assert html.escape(note) in v.html()
    w = v.widget()
    assert html.escape(note) in w.children[0].value
    assert c.modules["b"].result.argv[0] == OLD_NVCC           # exact
    assert "nvcc -gencode=arch=" in v.text() and OLD_NVCC not in v.text()


# -- 4. a fatbin's SASS reads as a cubin's -------------------------------------------------------

def _views(r, source):
    return {k: annotate(text, source, r.inputs) for k, text in sass(r).items()}


def test_fatbin_sass_looks_like_the_cubins():
    src = BRANCHY
    fat = compile_source(src, cfg(compiler="nvcc", target_format="fatbin", nvcc=["-lineinfo"]))
    cub = compile_source(src, cfg(compiler="nvcc", target_format="cubin", nvcc=["-lineinfo"]))
    a, b = _views(fat, src), _views(cub, src)
    assert set(a) == set(b) == {"scale", "_Z4loopPfi"}
    for k in a:
        assert diff.instructions(a[k]) == diff.instructions(b[k])    # the same instruction lines
        assert a[k] == b[k]                                          # and the same view
        for junk in ("Fatbin", "code for sm_", "Function :", ".headerflags", "/* 0x", "......"):
            assert junk not in a[k]
    assert "//## line 3 | int i = blockIdx.x" in a["scale"]
    assert re.search(r"^  /\*0000\*/ +\S", a["scale"], re.M)
    assert "`(.L_x_" in a["_Z4loopPfi"]
    # the view colours it the same way
    assert html.sass(sass(fat, "scale"), src) == html.sass(sass(cub, "scale"), src)


def test_fatbin_sass_without_nvdisasm_comes_from_cuobjdump_in_the_same_layout(monkeypatch):
    src = BRANCHY + "// no nvdisasm\n"
    cub = compile_source(src, cfg(compiler="nvcc", target_format="cubin"))
    expected = {k: diff.instructions(v) for k, v in _views(cub, src).items()}
    real = inspect_mod._run

    def no_nvdisasm(tool, *args):
        if tool == "nvdisasm":
            raise cuda_magic.ToolNotFoundError("nvdisasm was not found")
        return real(tool, *args)
    monkeypatch.setattr(inspect_mod, "_run", no_nvdisasm)
    fat = compile_source(src, cfg(compiler="nvcc", target_format="fatbin"), force=True)
    got = _views(fat, src)
    assert set(got) == set(expected)

    def plain(lines):   # label names are nvdisasm's own numbering; compare the instructions
        return [line for line in lines if not line.startswith(".L_")]
    for k, text in got.items():
        assert plain(diff.instructions(text)) == plain(expected[k])
        for junk in ("Fatbin", "code for sm_", "Function :", ".headerflags", "/* 0x", "......",
                     "arch = "):
            assert junk not in text
        assert text.splitlines()[0] == f"{k}:"
    assert "`(.L_x_" in got["_Z4loopPfi"] and re.search(r"^\.L_x_\d+:$", got["_Z4loopPfi"], re.M)


# -- 5. argv with long paths named ---------------------------------------------------------------

def defined_once(text: str, dirs) -> None:
    """Each directory of ``dirs`` is written once in a view's text, as its name's definition
    (``<name> = directory``), and nowhere else (the argv and the Log use the name)."""
    lines = unwrapped(text).splitlines()
    defs = [line for line in lines if re.fullmatch(r"\s*<[\w-]+> = \S+", line)]
    for d in dirs:
        assert sum(line.endswith(f" = {C.home_short(d)}") for line in defs) == 1, (d, defs)
    rest = "\n".join(line for line in lines if line not in defs)
    assert not any(C.home_short(d) in rest or d in rest for d in dirs), rest


def html_defined_once(page: str, dirs) -> None:
    """The same for a page: outside the "exact argv" folds, each directory only in the names."""
    visible = re.sub(r"<details.*?</details>", "", page, flags=re.S)
    names = re.findall(r'class="cuda-magic-names"[^>]*>(.*?)</div>', visible, flags=re.S)
    assert len(names) == 1, names
    defs = names[0].split("\n")
    for d in dirs:
        assert sum(x.endswith(f" = {html.escape(C.home_short(d))}") for x in defs) == 1, (d, defs)
    rest = visible.replace(names[0], "")
    assert not any(html.escape(d) in rest for d in dirs)


def test_nvrtc_argv_is_shown_short_and_exact_one_step_away(shell, capsys):
    m = shell.run_cell_magic("cuda", A + " --compile-only --name m", SAXPY)
    argv = m.result.argv
    dirs = toolkit_dirs()
    assert all(f"-I{d}" in argv for d in dirs)                # the result keeps the exact argv
    short = C.argv_short_text(argv)
    assert "-I<cuda-headers>" in short and "-I<cccl-headers>" in short
    assert ("-I<cutlass-headers>" in short) == (cutlass_dir() is not None)
    assert not any(d in short for d in dirs)
    text = view(m).text()
    assert f"argv: {short}" in unwrapped(text) and 'cuda_magic.show(m, "argv")' in text
    defined_once(text, dirs)
    def words(page):           # the argv's words are spans (the line breaks between them)
        return re.sub(r"<[^>]+>", "", page)
    page = view(m).html()
    assert html.escape(short) in words(page) and "exact argv</summary>" in page
    assert html.escape(C.argv_text(argv)) in words(page.split("exact argv</summary>", 1)[1])
    config_tab = view(m).widget().tab.children[0].value
    assert html.escape(short) in words(config_tab) and "exact argv</summary>" in config_tab
    html_defined_once(config_tab, dirs)
    log_tab = view(m).widget().tab.children[2].value      # names, defined in the Config tab
    assert "toolkit headers: " in log_tab and "&lt;cccl-headers&gt;" in log_tab
    assert 'nowrap">&lt;cutlass-util-headers&gt;</span>' in log_tab or "cutlass-util" not in log_tab
    assert 'nowrap">&lt;cccl-headers&gt;</span>' in log_tab      # never broken at its hyphen
    assert not any(html.escape(d) in log_tab for d in dirs)
    cuda_magic.show(m, "argv")
    assert capsys.readouterr().out.strip() == C.argv_text(argv)


def test_nvcc_argv_names_its_temporary_directory(shell, capsys):
    m = shell.run_cell_magic("cuda", A + " --compile-only --compiler nvcc", SAXPY)
    argv = m.result.argv
    tmp = os.path.dirname(argv[-1])
    short = C.argv_short_text(argv)
    assert short.startswith("nvcc -gencode=arch=compute_90a,code=sm_90a "
                            "-gencode=arch=compute_90a,code=compute_90a --fatbin ")
    assert short.endswith("-o <tmp-dir>/out.fatbin <tmp-dir>/cell.cu") and tmp not in short
    assert os.path.isabs(argv[0]) and argv[-1] == os.path.join(tmp, "cell.cu")
    cuda_magic.show(m, "argv")
    assert capsys.readouterr().out.strip() == C.argv_text(argv)


def test_pch_argv_names_the_pch_directory(tmp_path, monkeypatch, fresh_cache):
    pch_dir = tmp_path / "pch"
    monkeypatch.setenv("CUDA_MAGIC_PCH_DIR", str(pch_dir))
    src = '#include <cuda/std/cstdint>\nextern "C" __global__ void k(cuda::std::int32_t* y) { *y = 1; }\n'
    for flag in ("--create-pch=", "--use-pch="):
        r = compile_source(src, cfg(), force=True)
        (pch,) = [a for a in r.argv if a.startswith(("--create-pch=", "--use-pch="))]
        assert pch.startswith(flag + str(pch_dir) + os.sep)
        short = C.short_argv(r.argv)
        assert f"{flag}<pch-dir>/{os.path.basename(pch[len(flag):])}" in short
        defined_once(view(r).text(), [str(pch_dir)])
        if flag == "--create-pch=":      # NVRTC's "creating precompiled header file" line
            log = view(r).part("log")
            assert '"<pch-dir>/' in log and str(pch_dir) not in log, log


def test_a_log_names_the_header_directories_as_the_config_defines_them():
    src = ("#include <cub/warp/warp_reduce.cuh>\n__global__ void k(float* x) {\n"
           "    cub::WarpReduce<float, 33>::TempStorage t;\n"
           "    x[0] = cub::WarpReduce<float, 33>(t).Sum(x[1]);\n}\n")
    with pytest.raises(cuda_magic.CompileError) as info:
        compile_source(src, cfg())
    err = info.value
    (cccl,) = [d for d in toolkit_dirs() if d.endswith("cccl")]
    assert f"{cccl}/cub/" in err.log                      # the exception keeps the log exact
    page = view(err).html()
    above, log = page.split(">Log</summary>", 1)
    assert "&lt;cccl-headers&gt;/cub/" in log and html.escape(cccl) not in log
    assert f"&lt;cccl-headers&gt; = {html.escape(cccl)}" in above      # under the argv


def test_compare_views_show_argv_short_and_show_prints_it_exact(shell, capsys):
    c = _compare(shell, "// argv\n")
    v = CompareView(c)
    text = v.text()
    assert "-I<cuda-headers>" in text and "<tmp-dir>/cell.cu" in text
    assert 'cuda_magic.show(c, "argv")' in text
    assert not any(d in text for d in toolkit_dirs())
    assert "exact argv</summary>" in v.html()
    cuda_magic.show(c, "argv")
    out = capsys.readouterr().out
    for name in c.names:
        assert f"{name}: {C.argv_text(c.modules[name].result.argv)}" in out


def test_user_flags_and_relative_paths_stay_as_written():
    argv = ("--gpu-architecture=sm_90a", "-I.", "-Iinclude", "-DX=<y>", "--use_fast_math")
    assert C.short_argv(argv) == argv and not C.argv_shortened(argv)
    inside = f"-I{toolkit_dirs()[0]}/cuda" if toolkit_dirs() else "-I/x"
    assert C.short_argv(("a", inside))[1] in ("-I<cuda-headers>/cuda", "-I/x")
