"""%%cuda and %cuda_config driven through an InteractiveShell, as a user types them (CPU)."""

import re
import subprocess
import sys

import pytest
from IPython.core.error import UsageError

from conftest import ARCH, SAXPY
from cuda_magic import CompileError, ConfigError, detect_arch
from cuda_magic.cell import CellError, Module, build
from cuda_magic.runtime import Kernel, NoGPUError

A = f"--arch {ARCH}"

TWO = r'''//| nvrtc: [--use_fast_math, --ftz=false]
//| ptxas: [-v]
extern "C" __global__ void keep(const float* x, float* y) { y[threadIdx.x] = x[threadIdx.x] * 0.5f; }

//| nvrtc: [--use_fast_math, --ftz=true]
extern "C" __global__ void flush(const float* x, float* y) { y[threadIdx.x] = x[threadIdx.x] * 0.5f; }

extern "C" __global__ void same(const float* x, float* y) { y[threadIdx.x] = x[threadIdx.x] + 1.0f; }
'''


def test_load_ext_does_not_touch_cuda():
    code = ("import sys; from IPython.core.interactiveshell import InteractiveShell;"
            "ip = InteractiveShell.instance(); ip.run_line_magic('load_ext', 'cuda_magic');"
            "assert ip.find_cell_magic('cuda') and ip.find_line_magic('cuda_config');"
            "print(sorted(m for m in sys.modules if m.startswith('cuda.bindings.') and "
            "m.split('.')[-1] in ('driver', 'nvrtc', 'runtime')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def shown(shell, obj) -> str:
    """The text IPython shows for ``obj`` (terminal IPython, or text/plain in a notebook)."""
    return shell.display_formatter.format(obj)[0]["text/plain"]


def test_cell_compiles_binds_and_shows(shell):
    m = shell.run_cell_magic("cuda", A, SAXPY)
    assert isinstance(m, Module) and isinstance(shell.user_ns["scale"], Kernel)
    k = shell.user_ns["scale"]
    assert [str(p) for p in k.params] == ["const float* x", "float* y", "float a", "int n"]
    assert m.result.arch == ARCH and m.result.config.provenance["arch"] == "cell"
    assert m.result.resources["scale"].registers > 0
    text = shown(shell, m)
    assert re.search(r"^  scale\s+\d+\s+0\s+0", text, re.M) and "registers" in text
    assert "argv: --gpu-architecture=sm_90a" in text
    if detect_arch() is None:
        assert "no NVIDIA GPU and driver here, so compiled only (launching needs them)" in text


def test_headers_and_per_kernel_modules(shell):
    m = shell.run_cell_magic("cuda", A + " --name two", TWO)
    assert shell.user_ns["two"] is m
    assert len(m.results) == 2
    assert m.result_of("keep") is m.result_of("same") is not m.result_of("flush")
    assert m.config_of("keep")["nvrtc"] == ["--use_fast_math", "--ftz=false"]
    assert m.config_of("keep").provenance["nvrtc"] == "cell"
    assert m.config_of("flush").provenance == {**m.config_of("keep").provenance,
                                               "nvrtc": "kernel:flush"}
    assert m.config_of("keep")["ptxas"] == ["-v"]
    assert "--ftz=true" in m.result_of("flush").argv and "--ftz=false" in m.result_of("keep").argv
    from cuda_magic import sass
    assert "FMUL.FTZ" in sass(m.result_of("flush"), "flush")
    assert "FMUL.FTZ" not in sass(m.result_of("keep"), "keep")
    assert m.source == TWO   # the header lines are compiled as comments


def test_compile_errors_use_cell_line_numbers(shell, capsys):
    cell = "//| nvrtc: [--use_fast_math]\n\nextern \"C\" __global__ void k(int* p) {\n    p[0] = nope;\n}\n"
    with pytest.raises(CompileError) as info:
        shell.run_cell_magic("cuda", A, cell)
    assert "cell.cu(4)" in str(info.value) and "p[0] = nope;" in str(info.value)
    # As a user meets it: the cell fails with one short error and no traceback from inside.
    result = shell.run_cell(f"%%cuda {A}\n{cell}")
    assert isinstance(result.error_in_exec, CompileError)
    shown = capsys.readouterr()
    text = shown.out + shown.err
    assert "cell.cu(4)" in text and "4 |     p[0] = nope;" in text
    assert "cuda_magic/" not in text and "Traceback" not in text


def test_nvcc_cell_and_line_options(shell):
    m = shell.run_cell_magic("cuda", A + ' --compiler nvcc --nvcc "-O3 --use_fast_math" '
                             '--ptxas "-v --warn-on-spills"', SAXPY)
    r = m.result
    assert r.compiler == "nvcc" and r.format == "fatbin"
    assert r.config["nvcc"] == ["-O3", "--use_fast_math"] and "--ptxas-options=-v,--warn-on-spills" in r.argv
    m = shell.run_cell_magic("cuda", A + ' --nvrtc ""', SAXPY)
    assert m.result.config["nvrtc"] == [] and "--use_fast_math" not in m.result.argv
    m = shell.run_cell_magic("cuda", A + ' --nvrtc "--ftz=true"', SAXPY)   # one flag, quoted
    assert m.result.config["nvrtc"] == ["--ftz=true"]
    m = shell.run_cell_magic("cuda", "--backend-config '{\"cuda\": {\"arch\": \"sm_80\", "
                             "\"target_format\": \"ptx\"}}'", SAXPY)
    assert m.result.arch == "sm_80" and m.result.format == "ptx"
    m = shell.run_cell_magic("cuda", "--preset ampere", SAXPY)
    assert m.result.arch == "sm_80" and m.result.provenance["arch"] == "preset:ampere"


def test_rerun_is_a_cache_hit_and_rebinds(shell):
    shell.run_cell_magic("cuda", A, SAXPY)
    first = shell.user_ns["scale"]
    m = shell.run_cell_magic("cuda", A, SAXPY)
    assert m.result.cache_hit and shell.user_ns["scale"] is not first
    assert not shell.run_cell_magic("cuda", A + " --force", SAXPY).result.cache_hit


def test_compile_only_quiet_and_name(shell):
    shell.user_ns.pop("scale", None)
    m = shell.run_cell_magic("cuda", A + " --compile-only --name only", SAXPY)
    assert "scale" not in shell.user_ns and shell.user_ns["only"] is m
    assert shell.run_cell_magic("cuda", A + " --quiet", SAXPY) is None
    assert "scale" in shell.user_ns


def test_the_view_says_why_nothing_was_loaded(shell, monkeypatch):
    from cuda_magic import view
    m = shell.run_cell_magic("cuda", A + " --compile-only", SAXPY)
    assert "not loaded: --compile-only (compiled and shown; no kernels bound or loaded)" in \
        view(m).text()
    import cuda_magic.magics.commands as commands
    monkeypatch.setattr(commands, "detect_arch_soon", lambda: (lambda: None))   # no GPU
    m = shell.run_cell_magic("cuda", A + " --force", SAXPY)
    text = view(m).text()
    assert "not loaded: no NVIDIA GPU and driver here, so compiled only" in text
    assert "--compile-only" not in text and "not loaded" in view(m).html()
    assert "not loaded: each kernel loads at its first launch" in \
        view(build(SAXPY, {"arch": ARCH})).text()


def test_templates_are_instantiated_and_reachable_both_ways(shell):
    cell = "template <typename T> __global__ void axpy(T a, const T* x, T* y) { y[threadIdx.x] += a * x[threadIdx.x]; }\n"
    m = shell.run_cell_magic("cuda", A + ' --instantiate "axpy<float>" --instantiate "axpy<double>"', cell)
    k = shell.user_ns["axpy_float"]
    assert m["axpy<float>"] is k and m.axpy_float is k and m["axpy< float >"] is k
    assert [p.type for p in shell.user_ns["axpy_double"].params] == ["double"] * 3
    assert k.symbol == m.result.lowered_names["axpy<float>"] and k.symbol.startswith("_Z4axpyIfE")
    assert m.result.symbol("axpy<float>") in m.result.resources
    m = shell.run_cell_magic("cuda", A, cell)
    assert len(m) == 0 and m.templates == ("axpy<float>",) and "--instantiate" in shown(shell, m)
    with pytest.raises(CompileError, match="--instantiate 'nope<int>': the compiler cannot"):
        shell.run_cell_magic("cuda", A + ' --instantiate "nope<int>"', cell)


def test_cpp_kernels_are_found_by_their_mangled_names(shell):
    m = shell.run_cell_magic("cuda", A, SAXPY.replace('extern "C" ', ""))
    assert shell.user_ns["scale"].symbol == "_Z5scalePKfPffi"
    assert m.result.resources["_Z5scalePKfPffi"].registers > 0


def test_printf_kernels_are_marked_for_capture(shell):
    shell.run_cell_magic("cuda", A, 'extern "C" __global__ void hi() { printf("hi\\n"); }\n' + SAXPY)
    assert shell.user_ns["hi"].printf and shell.user_ns["scale"].printf
    shell.run_cell_magic("cuda", A, SAXPY)
    assert not shell.user_ns["scale"].printf


@pytest.mark.skipif(detect_arch() is not None, reason="needs a machine without a GPU")
def test_without_a_gpu(shell):
    with pytest.raises(ConfigError, match="no 'arch' is set and no GPU.*--arch sm_90a"):
        shell.run_cell_magic("cuda", "", SAXPY)
    shell.run_cell_magic("cuda", A, SAXPY)
    import numpy as np
    x = np.zeros(4, np.float32)
    with pytest.raises(NoGPUError, match="needs an NVIDIA GPU and driver"):
        shell.user_ns["scale"][1, 4](x, x, 1.0, 4)


# --- bad input: each a clear error -------------------------------------------------------

def test_unknown_option_shows_usage(shell):
    with pytest.raises(UsageError, match=r"(?s)unrecognized arguments: --bogus\nusage: %%cuda \[--arch ARCH\]"):
        shell.run_cell_magic("cuda", A + " --bogus", SAXPY)


def test_reserved_flag_on_the_line(shell):
    with pytest.raises(ConfigError, match="'-arch=sm_80' is reserved.*'arch' key") as info:
        shell.run_cell_magic("cuda", A + ' --nvrtc "-arch=sm_80"', SAXPY)
    assert info.value.key == "nvrtc"


def test_key_on_line_and_header(shell):
    with pytest.raises(CellError, match="cell line 2: 'nvrtc' is set both on the %%cuda line and "
                                        "in the //| header") as info:
        shell.run_cell_magic("cuda", A + ' --nvrtc "--ftz=true"', "//| ptxas: [-v]\n//| nvrtc: []\n" + SAXPY)
    assert info.value.key == "nvrtc" and info.value.line == 2


@pytest.mark.parametrize("header, line, match", [
    ("//| arch: sm_90a\n//| nvrtc: [--a, --b\n", 2, "not valid YAML"),
    ("//| - sm_90a\n", 1, "'key: value' lines"),
    ("//| arch: sm_90a\n//| archh: sm_90a\n", 2, "unknown config key 'archh'"),
    ("//| nvrtc: --use_fast_math --ftz=false\n", 1,
     r"YAML list, e.g. '//\| nvrtc: \[--use_fast_math, --ftz=false\]'"),
    ("//| ptxas: [-v]\n//| arch: 90\n", 2, "'arch' must be a string"),
])
def test_bad_headers_name_the_line(shell, header, line, match):
    with pytest.raises(CellError, match=match) as info:
        shell.run_cell_magic("cuda", A, header + SAXPY)
    assert info.value.line == line and f"cell line {line}:" in str(info.value)


def test_kernel_header_with_no_kernel(shell):
    cell = SAXPY + "\n//| nvrtc: [--ftz=true]\n\n__device__ float f(float x) { return x; }\n"
    with pytest.raises(CellError, match="neither the cell header.*nor directly above a __global__") as info:
        shell.run_cell_magic("cuda", A, cell)
    assert info.value.line == cell.splitlines().index("//| nvrtc: [--ftz=true]") + 1


def test_bad_kernel_header_names_its_line(shell):
    cell = SAXPY + "//| nvrtc: [-o, x.cubin]\n" + SAXPY.replace("scale", "scale2").lstrip()
    with pytest.raises(CellError, match="reserved") as info:
        shell.run_cell_magic("cuda", A, cell)
    assert info.value.line == len(SAXPY.splitlines()) + 1 and info.value.key == "nvrtc"


def test_same_name_twice_binds_each_and_says_which(shell):
    twice = SAXPY.replace('extern "C" ', "") + SAXPY.replace('extern "C" ', "").replace("float", "double")
    m = shell.run_cell_magic("cuda", A, twice)
    assert m.bindings == {"scale_const_float_ptr_float_ptr_float_int": "scale(const float*, float*, float, int)",
                          "scale_const_double_ptr_double_ptr_double_int":
                              "scale(const double*, double*, double, int)"}
    k = shell.user_ns["scale_const_double_ptr_double_ptr_double_int"]
    assert [p.type for p in k.params] == ["double"] * 3 + ["int"] and k.params[0].const
    assert m["scale(const double*, double*, double, int)"] is k
    assert "bound as: scale_const_float_ptr_float_ptr_float_int = scale(" in shown(shell, m)
    with pytest.raises(KeyError, match="several match"):
        m["scale"]


def test_a_bad_declaration_names_its_line(shell):
    with pytest.raises(CellError, match="cell line 2"):
        shell.run_cell_magic("cuda", A, "\n__global__ void k(int* p {\n}\n")


# --- %cuda_config ------------------------------------------------------------------------

def test_cuda_config_sets_shows_and_resets(shell, capsys, presets_restored):
    shell.run_line_magic("cuda_config", '--arch sm_80 --nvrtc "--use_fast_math --ftz=false"')
    capsys.readouterr()
    shell.run_line_magic("cuda_config", "")
    out = capsys.readouterr().out
    assert "arch='sm_80'" in out and re.search(r"arch\s+sm_80\s+\[session\]", out)
    assert "[default]" in out
    m = shell.run_cell_magic("cuda", "", SAXPY)
    assert m.result.arch == "sm_80" and m.result.provenance["nvrtc"] == "session"
    shell.run_line_magic("cuda_config", "--unset nvrtc")
    assert shell.run_cell_magic("cuda", "", SAXPY).result.provenance["nvrtc"] == "default"
    shell.run_line_magic("cuda_config", "--preset hopper --unset arch")
    capsys.readouterr()
    shell.run_line_magic("cuda_config", "--json")
    import json
    assert json.loads(capsys.readouterr().out)["cuda"]["arch"] == "sm_90a"
    assert shell.run_cell_magic("cuda", "", SAXPY).result.provenance["arch"] == "preset:hopper"
    shell.run_line_magic("cuda_config", "--register-preset lean '{\"cuda\": {\"ptxas\": []}}'")
    assert "registered preset 'lean'" in capsys.readouterr().out
    m = shell.run_cell_magic("cuda", A + " --preset lean", SAXPY)
    assert m.result.config["ptxas"] == [] and m.result.provenance["ptxas"] == "preset:lean"
    shell.run_line_magic("cuda_config", "--reset")
    magics = shell.magics_manager.registry["CudaMagics"]
    assert magics.defaults == {} and magics.preset is None


def test_cuda_config_bad_input(shell):
    with pytest.raises(UsageError, match="--unset 'archh': unknown key"):
        shell.run_line_magic("cuda_config", "--unset archh")
    with pytest.raises(ConfigError, match="unknown preset 'nope'"):
        shell.run_line_magic("cuda_config", "--preset nope")
    with pytest.raises(ConfigError, match="'target_format' must be one of"):
        shell.run_line_magic("cuda_config", "--target-format elf")
    assert shell.magics_manager.registry["CudaMagics"].defaults == {}


def test_settings_are_traitlets(shell):
    from traitlets import TraitError
    magics = shell.magics_manager.registry["CudaMagics"]
    shell.run_line_magic("config", "CudaMagics.defaults = {'arch': 'sm_89'}")
    assert shell.run_cell_magic("cuda", "", SAXPY).result.arch == "sm_89"
    with pytest.raises(TraitError, match="unknown config key"):
        magics.defaults = {"archh": "sm_89"}


def test_help_is_the_docstring(shell):
    doc = shell.find_cell_magic("cuda").__doc__
    assert "Examples" in doc and "--instantiate" in doc and "--compile-only" in doc
    assert "%cuda_config --preset hopper" in shell.find_line_magic("cuda_config").__doc__


def test_load_ext_leaves_numpy_and_cuda_alone():
    """%load_ext imports neither NumPy (comparisons load it when first used) nor a CUDA driver."""
    import subprocess
    import sys
    code = ("import sys\nfrom IPython.core.interactiveshell import InteractiveShell\n"
            "InteractiveShell.instance().run_line_magic('load_ext', 'cuda_magic')\n"
            "import cuda_magic\n"
            "print('numpy' in sys.modules, 'cuda.bindings.driver' in sys.modules)\n"
            "cuda_magic.denormals(4)\nprint('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False", "True"]
