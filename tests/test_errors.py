"""Every user error renders short: one message, no frames from cuda-magic or IPython, no echo
of the cell.  In an InteractiveShell (fast) and in a real Jupyter kernel (one nbclient run)."""

import os
import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import cuda_magic
from conftest import ARCH
from cuda_magic import CompileError, ConfigError, compile_source, detect_arch
from cuda_magic.compile.backends import InputTypeError
from cuda_magic.compile.compiler import NoKernelError
from cuda_magic.display import ShowError, ViewError
from cuda_magic.variants.numbers import DtypeError, NumbersError

ROOT = Path(__file__).resolve().parent.parent
GPU = detect_arch() is not None
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

BODY = '''extern "C" __global__ void scale(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}
'''
BAD = '''extern "C" __global__ void broken(float* x) {
    x[threadIdx.x] = ;
}
'''
TEMPLATE = '''template <typename T>
__global__ void axpy(T a, const T* x, T* y) { y[threadIdx.x] += a * x[threadIdx.x]; }
'''
PAD = "x" * 1000

SETUP = [
    "%load_ext cuda_magic\nimport numpy as np\nimport cuda_magic\nx = np.zeros(4, np.float32)",
    f"%%cuda --arch {ARCH} --name m --quiet\n{BODY}",
    f"def build(src):\n    return cuda_magic.compile_source(src, {{'cuda': {{'arch': '{ARCH}'}}}})",
]


def launch(gpu_ok: bool, gpu_message: str = ""):
    """What a launch cell gives: NoGPUError here without a GPU; on one, success or ArgumentError."""
    if not GPU:
        return ("NoGPUError", "launching kernels needs an NVIDIA GPU")
    return None if gpu_ok else ("ArgumentError", gpu_message)


# (id, cell source, (ename, evalue regex) or None where the cell runs clean)
CASES = [
    ("config", f'%%cuda --arch {ARCH} --nvrtc "-arch=sm_80"\n{BODY}',
     ("ConfigError", r"flag '-arch=sm_80' is reserved")),
    ("cell", f"%%cuda --arch {ARCH}\n//| nvrtc: 3\n{BODY}",
     ("CellError", r"cell line 1: 'nvrtc' must be a list")),
    ("cell-twice", f"%%cuda --arch {ARCH}\n//| arch: sm_80\n{BODY}", ("CellError", r"'arch'")),
    ("usage", f"%%cuda --arch {ARCH} --bogus\n{BODY}",
     ("UsageError", r"unrecognized arguments: --bogus")),
    ("compile", f"%%cuda --arch {ARCH}\n{BAD}",
     ("CompileError", r"nvrtc failed to compile cell.cu \(1 error, shown above\)")),
    ("nvcc-instantiate", f'%%cuda --arch {ARCH} --compiler nvcc --instantiate "axpy<float, 3>"\n{TEMPLATE}',
     ("CompileError", r"nvcc failed to compile cell.cu \(1 error, shown above\)")),
    ("show-kernel", "cuda_magic.show(m, 'sass', kernel='nope')",
     ("ShowError", r"kernel='nope': no such kernel here; the kernels are scale")),
    ("show-what", "cuda_magic.show(m, 'asm')", ("ShowError", r"what='asm': choose one of")),
    ("show-type", "cuda_magic.show(1, 'sass')", ("ViewError", r"cannot show int 1")),
    ("view-type", "cuda_magic.view(3)", ("ViewError", r"cannot show int 3")),
    ("module-key", "m['nope']", ("NoKernelError", r"no kernel 'nope' in this cell; it has scale")),
    ("sass-key", "cuda_magic.sass(m.results[0], 'nope')",
     ("NoKernelError", r"no function 'nope' in the SASS")),
    ("compile-type", f"cuda_magic.compile_source(3, {{'cuda': {{'arch': '{ARCH}'}}}})",
     ("InputTypeError", r"source must be a str")),
    ("config-arch", "%cuda_config --arch foo", ("ConfigError", r"'arch' must look like sm_90")),
    ("config-fatbin", "%cuda_config --target-format fatbin",
     ("ConfigError", r"NVRTC cannot produce 'fatbin'.*\(nothing was changed\)")),
    ("config-unset", "%cuda_config --unset foo", ("UsageError", r"--unset 'foo': unknown key")),
    ("config-preset", "%cuda_config --preset nope", ("ConfigError", r"--preset 'nope': unknown preset")),
    ("compare-variant", f"%%cuda_compare --arch {ARCH} --variant 'bad'\n{BODY}",
     ("ConfigError", r"--variant 'bad': write it as 'NAME: JSON'")),
    ("compare-run", f"%%cuda_compare --arch {ARCH} --run 'scale[1, 32](x'\n{BODY}",
     ("RunError", r"--run 'scale\[1, 32\]\(x': not Python")),
    ("compare-compile", f"%%cuda_compare --arch {ARCH}\n{BAD}",
     ("CompileError", r"for variant 'ftz=false' \(1 error, shown above\)")),
    ("header-name", "%%cuda_header ../x.cuh\n#pragma once\nconstexpr float FACTOR = 2.0f;\n",
     ("ConfigError", r"header name '../x.cuh'")),
    ("header-usage", "%%cuda_header\n#pragma once\nconstexpr float FACTOR = 2.0f;\n",
     ("UsageError", r"required: name")),
    ("launch", "scale[1, 32](x, 4)", launch(True)),
    ("launch-count", "scale[1, 32](x)", launch(False, r"takes 2 arguments")),
    ("launch-type", "scale[1, 32]('a', 4)", launch(False, r"parameter 'x'")),
    ("bench", "scale.bench(1, 32, x)", launch(False, r"takes 2 arguments")),
    ("bench-repeat", "scale.bench(1, 32, x, 4, repeat=0)", ("BenchError", r"repeat=0")),
    # the user's own frames stay (and only they): the call in this cell and the function's line
    ("user-function", "build('__global__ void k() { oops }')",
     ("CompileError", r"nvrtc failed to compile cell.cu")),
    # only the offending line of a longer cell; a long line is capped
    ("python-lines", "first_line_of_cell = 1\nsecond_line_of_cell = 2\ncuda_magic.view(3)\n"
                     "last_line_of_cell = 4", ("ViewError", r"cannot show int 3")),
    ("long-line", f"cuda_magic.show(m, 'asm'); pad = '{PAD}'", ("ShowError", r"what='asm'")),
]


def body_lines(source: str) -> list[str]:
    """The cell's lines worth recognising in an echo (not the %%magic line)."""
    lines = source.split("\n")
    if lines[0].startswith("%%"):
        lines = lines[1:]
    return [ln.strip() for ln in lines if len(ln.strip()) >= 8]


def check_short(source: str, text: str, ename: str, evalue: str) -> None:
    """``text`` (what the user sees for the error) is one clear message, not a library traceback."""
    text = ANSI.sub("", text)
    assert f"{ename}: " in text, text
    assert re.search(evalue, text, re.S), text
    for bad in ("cuda_magic/", "cuda_magic" + os.sep, "site-packages", "IPython/", "run_cell_magic",
                "run_line_magic", "Traceback (most recent call last)", "-" * 20):
        assert bad not in text, (bad, text)
    assert len(text.strip().split("\n")) <= 15, text
    echoed = [ln for ln in body_lines(source) if ln in text]
    assert len(echoed) <= 1, (echoed, text)
    for line in text.split("\n"):
        if line.startswith("    "):                 # a user's source line: capped
            assert len(line) <= 240, line


# ---- in an InteractiveShell ----------------------------------------------------------------

@pytest.fixture
def ready(shell):
    for cell in SETUP:
        result = shell.run_cell(cell)
        assert result.success, result.error_in_exec
    yield shell
    for name in ("m", "scale", "x", "build", "pad"):
        shell.user_ns.pop(name, None)


FAST = {"config", "cell", "usage", "nvcc-instantiate", "show-kernel", "show-type", "view-type",
        "module-key", "config-fatbin", "config-unset", "compare-variant", "header-name", "launch",
        "user-function", "python-lines", "long-line", "bench-repeat"}


@pytest.mark.parametrize("case", [c for c in CASES if c[0] in FAST], ids=lambda c: c[0])
def test_shell_renders_short(ready, capsys, case):
    name, source, expect = case
    capsys.readouterr()
    result = ready.run_cell(source)
    out = capsys.readouterr()
    if expect is None:
        assert result.success, out
        return
    ename, evalue = expect
    assert type(result.error_in_exec).__name__ == ename
    shown = out.err if ename == "UsageError" else out.out
    if ename == "CompileError" and name != "user-function":  # the error view, then one line
        shown = shown.strip().split("\n")[-1]
        assert "shown above" in shown
    check_short(source, shown, ename, evalue)
    if name == "user-function":
        assert re.search(r"Cell In\[\d+\], line 1\n    build\(", shown), shown
        assert ", in build\n    return cuda_magic.compile_source(src" in shown, shown
    if name == "long-line":
        assert "... (10" in shown and PAD not in shown


def test_builtin_bases_kept():
    assert issubclass(ShowError, ValueError) and issubclass(ViewError, TypeError)
    assert issubclass(NoKernelError, KeyError) and issubclass(NoKernelError, AttributeError)
    assert issubclass(InputTypeError, TypeError) and issubclass(DtypeError, TypeError)
    assert issubclass(NumbersError, ValueError)
    for cls in (ShowError, ViewError, NoKernelError, InputTypeError, DtypeError, NumbersError):
        assert issubclass(cls, cuda_magic.Error)
    # a KeyError's message reads as written, not as its repr
    assert str(NoKernelError("no kernel 'x'")) == "no kernel 'x'"


def test_api_errors_are_cuda_magic_errors():
    with pytest.raises(CompileError, match="--instantiate 'nope<float>': the compiler cannot"):
        compile_source(TEMPLATE, {"cuda": {"arch": ARCH, "compiler": "nvcc"}},
                       name_expressions=["nope<float>"])
    with pytest.raises(ViewError, match="cannot show list"):
        cuda_magic.view([1, 2])
    with pytest.raises(DtypeError, match="dtype=int32"):
        cuda_magic.denormals(dtype="int32")
    with pytest.raises(DtypeError, match="not a NumPy dtype"):
        cuda_magic.denormals(dtype="flaot32")
    with pytest.raises(NumbersError, match="n=-1"):
        cuda_magic.denormals(-1)
    with pytest.raises(InputTypeError, match="header text must be a str"):
        cuda_magic.define_header("t_errors.cuh", 3)
    with pytest.raises(ConfigError, match="nbytes must be >= 0"):
        cuda_magic.set_cache_limit(-1)
    r = compile_source(BODY, {"cuda": {"arch": ARCH}})
    with pytest.raises(NoKernelError, match="no function 'nope'"):
        cuda_magic.sass(r, "nope")


def test_magic_call_frames_dropped_user_frames_kept(tmp_path):
    """A user's file calling a magic through IPython's API: the call line goes (it would echo the
    cell), the function's other frames stay; a long line is capped."""
    src = tmp_path / "userlib.py"
    src.write_text("def outer(f):\n    return inner(f)\n\n\ndef inner(f):\n"
                   f"    f(); ip.run_cell_magic('cuda', '', '{PAD}')\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import userlib

        def fail():
            raise ConfigError("bad")
        with pytest.raises(ConfigError) as err:
            userlib.outer(fail)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("userlib", None)
    lines = err.value._render_traceback_()
    text = "\n".join(lines)
    assert "in outer\n    return inner(f)" in text
    assert "in inner" not in text and PAD not in text     # the magic call line is dropped
    assert "test_errors.py" in text and lines[-1] == "ConfigError: bad"


# ---- in a Jupyter kernel ---------------------------------------------------------------------

def outputs_text(outputs) -> tuple[list[dict], str]:
    """The error outputs, and what else the cell printed (stderr and displayed text)."""
    errors = [o for o in outputs if o["output_type"] == "error"]
    rest = "\n".join(o.get("text", "") if o["output_type"] == "stream" else
                     o.get("data", {}).get("text/plain", "") for o in outputs
                     if o["output_type"] != "error")
    return errors, rest


def test_notebook_errors_render_short(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), *sys.path]))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in SETUP]
    nb.cells += [nbformat.v4.new_code_cell(source) for _, source, _ in CASES]
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    for cell in nb.cells[:len(SETUP)]:
        errors, _ = outputs_text(cell.outputs)
        assert not errors, errors
    for (name, source, expect), cell in zip(CASES, nb.cells[len(SETUP):]):
        errors, rest = outputs_text(cell.outputs)
        if expect is None:
            assert not errors, (name, errors)
            continue
        ename, evalue = expect
        if ename == "UsageError":      # IPython prints it on stderr: "UsageError: ..."
            assert not errors, (name, errors)
            check_short(source, rest, ename, evalue)
            continue
        assert len(errors) == 1, (name, cell.outputs)
        err = errors[0]
        assert err["ename"] == ename, (name, err)
        check_short(source, "\n".join(err["traceback"]), ename, evalue)
        assert err["evalue"].split("\n")[0] in ANSI.sub("", "\n".join(err["traceback"])), (name, err)
        if ename == "CompileError" and name != "user-function":
            assert len(err["traceback"]) == 1 and "shown above" in err["traceback"][0], err
            said = {"nvcc-instantiate": "--instantiate 'axpy<float, 3>': the compiler cannot"}
            assert said.get(name, "error: expected an expression") in rest  # the view, above
        if name == "user-function":
            tb = ANSI.sub("", "\n".join(err["traceback"]))
            assert re.search(r"Cell In\[\d+\], line 1\n    build\(", tb), tb
            assert ", in build\n    return cuda_magic.compile_source(src" in tb, tb
        if name == "python-lines":
            tb = ANSI.sub("", "\n".join(err["traceback"]))
            assert "cuda_magic.view(3)" in tb and "line_of_cell" not in tb, tb


def test_every_error_class_is_defined_in_errors_py():
    """One place for every error: a class deriving from an exception anywhere else in the package
    is a second place (modules import their errors from cuda_magic/errors.py)."""
    import ast
    from cuda_magic import errors
    from cuda_magic.exports.torch_package import TEMPLATES
    import builtins
    exceptions = {n for n, v in vars(builtins).items()
                  if isinstance(v, type) and issubclass(v, BaseException)} | {"Error"}
    exceptions |= {n for n in dir(errors) if isinstance(getattr(errors, n), type)
                   and issubclass(getattr(errors, n), BaseException)}
    elsewhere = []
    for path in sorted((ROOT / "cuda_magic").rglob("*.py")):
        if path.name == "errors.py" and path.parent.name == "cuda_magic" or "thin" in path.parts:
            continue
        if path.parent.name == "exports" and path.name in TEMPLATES:
            continue           # copied into every export, which runs with no cuda-magic
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
                if bases & exceptions:
                    elsewhere.append(f"{path.relative_to(ROOT)}: {node.name}")
    assert elsewhere == []


def test_text_helpers_are_imported_from_errors_only():
    """``quote``, ``clip``, ``printable`` and ``bad_char`` live in cuda_magic/errors.py, and every
    module (and test, and benchmark) imports them from there: no second home re-exports them."""
    import ast
    helpers = {"quote", "clip", "printable", "bad_char"}
    elsewhere = []
    for folder in ("cuda_magic", "tests", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and {a.name for a in node.names} & helpers:
                    if node.module not in ("errors", "cuda_magic.errors"):
                        elsewhere.append(f"{path.relative_to(ROOT)}:{node.lineno} from "
                                         f"{'.' * node.level}{node.module}")
    assert elsewhere == []


def test_a_long_compiler_error_line_is_kept_whole():
    """CuTe's first error line runs past 300 characters; the message keeps it whole (and the
    quoted source line under it), as the HTML view does, so it is never cut mid-word."""
    import cuda_magic
    from cuda_magic.errors import CompileError
    words = " ".join(f"layout_{i}" for i in range(60))          # ~540 characters
    src = f'static_assert(sizeof(int) == 3, "{words}");\n__global__ void k() {{}}\n'
    with pytest.raises(CompileError) as info:
        cuda_magic.compile_source(src, {"cuda": {"arch": "sm_90a"}}, force=True)
    line = next(ln for ln in str(info.value).splitlines() if "static assertion failed" in ln)
    assert words in line and len(line) > 540 and "characters)" not in line
