"""Hostile settings and names, driven through an InteractiveShell as a user types them (CPU).

%cuda_config takes a line whole or not at all; presets are not silently redefined; --name and
kernel names never take over IPython's own names.
"""

import json

import numpy as np
import pytest
from IPython.core.error import UsageError

import cuda_magic.config as cfgmod
from conftest import ARCH, SAXPY
from cuda_magic import ConfigError
from cuda_magic.config import get_preset, list_presets, register_preset
from cuda_magic.cell import CellError, Module
from cuda_magic.runtime import Kernel

A = f"--arch {ARCH}"


def magics(shell):
    return shell.magics_manager.registry["CudaMagics"]


def session(shell):
    m = magics(shell)
    return dict(m.defaults), m.preset


def config(shell, line):
    return shell.run_line_magic("cuda_config", line)


# --- a failing %cuda_config line changes nothing ---------------------------------

def test_fatbin_under_nvrtc_is_refused_and_cells_still_work(shell):
    config(shell, '--arch sm_80 --nvrtc "--use_fast_math --ftz=false"')
    before = session(shell)
    with pytest.raises(ConfigError, match="NVRTC cannot produce 'fatbin'.*nothing was changed") as info:
        config(shell, "--target-format fatbin")
    assert info.value.key == "target_format"
    assert session(shell) == before
    m = shell.run_cell_magic("cuda", "", SAXPY)     # the session still compiles
    assert m.result.arch == "sm_80" and m.result.format == "cubin"


@pytest.mark.parametrize("first, line, key", [
    ("--compiler nvcc --target-format fatbin", "--compiler nvrtc", "target_format"),
    ("--compiler nvcc --target-format fatbin", "--unset compiler", "target_format"),
    ("--preset nvcc --target-format fatbin", "--preset hopper", "target_format"),
    ("--preset nvcc --target-format fatbin", '--backend-config \'{"cuda": {"compiler": "nvrtc"}}\'',
     "target_format"),
    ("--arch sm_80", "--compiler nosuch", "compiler"),
])
def test_a_line_that_breaks_the_session_is_refused_whole(shell, first, line, key):
    config(shell, first)
    before = session(shell)
    with pytest.raises(ConfigError, match="nothing was changed") as info:
        config(shell, line + " --unset ptxas")
    assert info.value.key == key and session(shell) == before


def test_no_arch_without_a_gpu_is_not_an_error(shell):
    config(shell, "--compiler nvcc --target-format ptx")
    assert session(shell) == ({"compiler": "nvcc", "target_format": "ptx"}, None)


def test_failed_line_registers_no_preset(shell, presets_restored):
    with pytest.raises(ConfigError, match="--preset 'nope': unknown preset 'nope'"):
        config(shell, "--register-preset mine '{\"arch\": \"sm_80\"}' --preset nope")
    with pytest.raises(ConfigError, match="NVRTC cannot produce 'fatbin'"):
        config(shell, "--register-preset mine '{\"arch\": \"sm_80\"}' --target-format fatbin")
    assert "mine" not in list_presets() and session(shell) == ({}, None)


def test_preset_registered_and_used_in_one_line(shell, presets_restored, capsys):
    config(shell, "--register-preset mine '{\"compiler\": \"nvcc\"}' --preset mine --target-format fatbin")
    assert session(shell) == ({"target_format": "fatbin"}, "mine")
    assert "registered preset 'mine'" in capsys.readouterr().out


def test_redefining_needs_override_and_says_what_changed(shell, presets_restored, capsys):
    config(shell, "--register-preset mine '{\"arch\": \"sm_80\"}'")
    config(shell, "--register-preset mine '{\"cuda\": {\"arch\": \"sm_80\"}}'")   # identical: fine
    capsys.readouterr()
    with pytest.raises(ConfigError) as info:
        config(shell, "--register-preset mine '{\"arch\": \"sm_89\", \"ptxas\": [\"-v\"]}'")
    msg = str(info.value)
    assert msg.startswith("--register-preset 'mine': ") and "\n" not in msg
    assert '{"arch":"sm_80"}' in msg and '{"arch":"sm_89","ptxas":["-v"]}' in msg
    assert "add --override" in msg and "override=True" not in msg
    assert get_preset("mine") == {"arch": "sm_80"}

    config(shell, "--register-preset mine '{\"arch\": \"sm_89\", \"ptxas\": [\"-v\"]}' --override")
    out = capsys.readouterr().out
    assert "preset 'mine' overridden: arch 'sm_80' -> 'sm_89', ptxas (unset) -> ['-v']" in out
    assert get_preset("mine") == {"arch": "sm_89", "ptxas": ["-v"]}
    m = shell.run_cell_magic("cuda", "--preset mine", SAXPY)
    assert m.result.arch == "sm_89" and m.result.provenance["arch"] == "preset:mine"


def test_override_of_the_session_preset_is_checked_too(shell, presets_restored):
    config(shell, "--register-preset mine '{\"compiler\": \"nvcc\"}' --preset mine --target-format fatbin")
    with pytest.raises(ConfigError, match="NVRTC cannot produce 'fatbin'.*nothing was changed"):
        config(shell, "--register-preset mine '{\"arch\": \"sm_80\"}' --override")
    assert get_preset("mine") == {"compiler": "nvcc"}
    assert session(shell) == ({"target_format": "fatbin"}, "mine")


def test_builtin_presets_cannot_be_redefined(shell, presets_restored):
    for line in ("--register-preset hopper '{\"arch\": \"sm_80\"}'",
                 "--register-preset hopper '{\"arch\": \"sm_80\"}' --override"):
        with pytest.raises(ConfigError, match="preset 'hopper' is built in.*another name"):
            config(shell, line)
    with pytest.raises(ConfigError, match="built in"):
        register_preset("hopper", {"arch": "sm_80"}, override=True)
    assert get_preset("hopper") == {"arch": "sm_90a"}
    config(shell, "--register-preset hopper '{\"arch\": \"sm_90a\"}'")   # identical: fine


def test_override_alone_is_a_usage_error(shell):
    with pytest.raises(UsageError, match="--override.*--register-preset"):
        config(shell, "--override --arch sm_80")
    assert session(shell) == ({}, None)


def test_bad_register_preset_names_the_option(shell, presets_restored):
    with pytest.raises(ConfigError, match="--register-preset 'mine': config is not valid JSON"):
        config(shell, "--register-preset mine '{arch'")
    with pytest.raises(ConfigError, match="--register-preset 'a b': preset name must be a plain name"):
        config(shell, "--register-preset 'a b' '{}'")
    assert "mine" not in list_presets()


def test_json_output_stays_json_when_registering(shell, presets_restored, capsys):
    config(shell, "--register-preset mine '{\"arch\": \"sm_80\"}' --preset mine --json")
    out, err = capsys.readouterr()
    assert json.loads(out)["cuda"]["arch"] == "sm_80" and "registered preset 'mine'" in err


def test_register_preset_api(presets_restored):
    check_preset = cfgmod.check_preset
    assert check_preset("t_api", {"arch": "sm_80"}) == (None, {"arch": "sm_80"})
    assert "t_api" not in list_presets()                      # checking registers nothing
    assert register_preset("t_api", {"arch": "sm_80"}) is None
    assert register_preset("t_api", {"arch": "sm_80"}) is None
    assert check_preset("t_api", {"arch": "sm_89"}, override=True) == ({"arch": "sm_80"}, {"arch": "sm_89"})
    assert get_preset("t_api") == {"arch": "sm_80"}
    assert register_preset("t_api", {"arch": "sm_89"}, override=True) == {"arch": "sm_80"}


def test_errors_show_one_line_without_library_frames(shell):
    result = shell.run_cell("%cuda_config --target-format fatbin")
    assert isinstance(result.error_in_exec, ConfigError)
    lines = result.error_in_exec._render_traceback_()     # what IPython shows
    assert lines[-1].endswith(f"ConfigError: {result.error_in_exec}")
    assert not any("cuda_magic/" in ln or "IPython/" in ln for ln in lines)   # the user's frame only


# --- names in the user namespace -------------------------------------------------

HOSTILE = ["__builtins__", "__name__", "get_ipython", "In", "Out", "exit", "quit", "_", "__", "___",
           "_i", "_ii", "_iii", "_i7", "_7", "_oh", "_ih", "_dh", "open", "a b", "1x", "class", "None",
           "", "x-y", "ｓｃａｌｅ"]


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("magic", ["cuda", "cuda_compare"])
def test_name_must_be_a_plain_python_name_not_the_shells(shell, magic, name):
    shell.run_cell_magic("cuda", A, SAXPY)
    before = {k: shell.user_ns.get(k) for k in ("scale", "get_ipython", "In", "Out", "exit", "_")}
    with pytest.raises(UsageError, match=r"^--name '") as info:
        shell.run_cell_magic(magic, f"{A} --name '{name}'", SAXPY)
    assert "\n" not in str(info.value)
    assert {k: shell.user_ns.get(k) for k in before} == before
    assert "__builtins__" not in shell.user_ns or not isinstance(shell.user_ns["__builtins__"], Module)


def test_names_the_user_hid_are_refused(shell):
    shell.push({"helper": 1}, interactive=False)      # hidden from %who, like the shell's own
    try:
        with pytest.raises(UsageError, match="--name 'helper': that name belongs to IPython"):
            shell.run_cell_magic("cuda", f"{A} --name helper", SAXPY)
    finally:
        shell.user_ns.pop("helper", None)
        shell.user_ns_hidden.pop("helper", None)


def test_a_plain_name_binds(shell):
    m = shell.run_cell_magic("cuda", f"{A} --name _mod2", SAXPY)
    assert shell.user_ns["_mod2"] is m


SHELLY = r'''
extern "C" __global__ void get_ipython(float* x) { x[threadIdx.x] = 1.0f; }
extern "C" __global__ void In(float* x) { x[threadIdx.x] = 2.0f; }
extern "C" __global__ void pass(float* x) { x[threadIdx.x] = 3.0f; }
extern "C" __global__ void fine(float* x) { x[threadIdx.x] = 4.0f; }
'''


def test_kernels_never_take_the_shells_names(shell, capsys):
    get_ipython, In = shell.user_ns["get_ipython"], shell.user_ns["In"]
    m = shell.run_cell_magic("cuda", f"{A} --name m", SHELLY)
    err = capsys.readouterr().err
    assert shell.user_ns["get_ipython"] is get_ipython and shell.user_ns["In"] is In
    assert "pass" not in shell.user_ns and isinstance(shell.user_ns["fine"], Kernel)
    assert isinstance(m["get_ipython"], Kernel) and m.In is m["In"] and isinstance(m["pass"], Kernel)
    assert "%%cuda: kernel 'get_ipython' is not bound: that name belongs to IPython; use m['get_ipython']" in err
    assert "kernel 'pass' is not bound: that name belongs to Python" in err
    assert len([ln for ln in err.splitlines() if ln.startswith("%%cuda:")]) == 3
    shell.run_cell_magic("cuda", A, SHELLY)
    assert "(bind the module with --name m)" in capsys.readouterr().err
    assert shell.run_cell("get_ipython()").result is shell


def test_replacing_a_variable_that_is_not_a_kernel_says_so(shell, capsys):
    shell.user_ns["scale"] = np.ones(3)
    shell.run_cell_magic("cuda", A, SAXPY)
    err = capsys.readouterr().err
    assert err.strip() == "%%cuda: kernel 'scale' replaces your variable scale (numpy.ndarray)"
    assert isinstance(shell.user_ns["scale"], Kernel)
    shell.run_cell_magic("cuda", A, SAXPY)           # a kernel replacing a kernel: no note
    assert capsys.readouterr().err == ""


def test_hiding_a_builtin_says_so(shell, capsys):
    shell.user_ns.pop("sum", None)
    try:
        shell.run_cell_magic("cuda", A, SAXPY.replace("scale", "sum"))
        assert "kernel 'sum' hides Python's built-in sum" in capsys.readouterr().err
        assert isinstance(shell.user_ns["sum"], Kernel)
    finally:
        shell.user_ns.pop("sum", None)


def test_name_equal_to_a_kernel_binds_the_module_and_says_so(shell, capsys):
    m = shell.run_cell_magic("cuda", f"{A} --name scale", SAXPY)
    assert shell.user_ns["scale"] is m
    assert "--name scale binds the module, not kernel 'scale'; use scale['scale']" in capsys.readouterr().err


def test_failing_cells_keep_earlier_bindings(shell):
    shell.run_cell_magic("cuda", f"{A} --name m", SAXPY)
    scale, m = shell.user_ns["scale"], shell.user_ns["m"]
    with pytest.raises(UsageError):
        shell.run_cell_magic("cuda", f"{A} --name In", SAXPY)
    with pytest.raises(CellError):
        shell.run_cell_magic("cuda", f"{A} --name m", "\n__global__ void scale(int* p {\n}\n")
    assert shell.user_ns["scale"] is scale and shell.user_ns["m"] is m


def test_a_session_broken_another_way_can_be_shown_and_reset(shell, capsys):
    magics(shell).defaults = {"compiler": "nosuch"}         # %config checks one layer only
    config(shell, "")
    assert "nosuch" in capsys.readouterr().out
    with pytest.raises(ConfigError, match="unknown compiler 'nosuch'.*nothing was changed"):
        config(shell, "--arch sm_80")
    config(shell, "--unset compiler --arch sm_80")
    assert session(shell) == ({"arch": "sm_80"}, None)
