"""%%cuda_compare and cuda_magic.compare on the CPU: variants, diffs and .FTZ counts from real
compiles with both compilers, toggles that rebuild through the cache, the numbers report."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from IPython.core.error import UsageError

import cuda_magic
from cuda_magic.variants import comparison, numbers
from cuda_magic.correctness.reference import array_diffs, subnormal
from cuda_magic.inspect import diff
from cuda_magic.config import ConfigError
from cuda_magic.display import compare as view
from cuda_magic.variants import default_variants, parse_variant, set_toggle, state, vary

from conftest import ARCH, SAXPY

DIV = SAXPY + r'''
extern "C" __global__ void divide(const float* x, const float* y, float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = x[i] / y[i];
}
'''


def fmuls(cmp, name):
    return [line for line in cmp.instructions(name, "scale") if line.startswith("FMUL")]


# ---- toggles and variants (pure config) ---------------------------------------------------------

def test_state_follows_the_compilers_rules():
    assert state([]) == {"ftz": False, "prec-div": True, "prec-sqrt": True, "fmad": True,
                         "fast-math": False}
    assert state(["--use_fast_math"]) == {"ftz": True, "prec-div": False, "prec-sqrt": False,
                                          "fmad": True, "fast-math": True}
    # an explicit flag wins wherever it stands; every spelling counts
    assert state(["--ftz=false", "--use_fast_math"])["ftz"] is False
    assert state(["-ftz=true"])["ftz"] is True
    assert state(["--ftz", "true"])["ftz"] is True
    assert state(["--prec_div=false", "-use_fast_math", "--fmad=false"])["fmad"] is False


def test_set_toggle_keeps_other_flags_in_order():
    flags = ["-lineinfo", "--ftz", "true", "-std=c++17", "--use_fast_math", "-DN=4"]
    assert set_toggle(flags, "ftz", False) == ["-lineinfo", "-std=c++17", "--use_fast_math", "-DN=4",
                                               "--ftz=false"]
    assert set_toggle(flags, "fast-math", False) == ["-lineinfo", "--ftz", "true", "-std=c++17", "-DN=4"]
    assert set_toggle(["-lineinfo"], "fast-math", True) == ["--use_fast_math", "-lineinfo"]
    with pytest.raises(ConfigError, match="unknown toggle 'fastmath'"):
        set_toggle([], "fastmath", True)


def test_default_variants_set_fast_math_and_ftz_on_the_active_list():
    from cuda_magic.config import resolve
    for compiler in ("nvrtc", "nvcc"):
        r = resolve(("cell", {"compiler": compiler, compiler: ["-lineinfo"]}))
        off, on = (v.apply(r) for v in default_variants())
        assert off[compiler] == ["--use_fast_math", "-lineinfo", "--ftz=false"]
        assert on[compiler] == ["--use_fast_math", "-lineinfo", "--ftz=true"]
        assert on.provenance[compiler] == "variant:ftz=true"
    # with the built-in defaults the list is exactly what the docs say
    r = resolve(("cell", {}))
    assert [v.apply(r)["nvrtc"] for v in default_variants()] == [
        ["--use_fast_math", "--ftz=false"], ["--use_fast_math", "--ftz=true"]]


def test_vary_flips_what_the_config_has():
    from cuda_magic.config import resolve
    r = resolve(("cell", {"nvrtc": ["--use_fast_math", "--ftz=false"]}))
    names = [v.name for v in vary(["ftz", "prec-div", "fast-math", "ftz"], r)]
    assert names == ["baseline", "ftz=true", "prec-div=true", "fast-math=false"]
    with pytest.raises(ConfigError, match="--vary fzt: unknown toggle"):
        vary(["fzt"], r)


def test_parse_variant():
    v = parse_variant('precise: {"cuda": {"nvrtc": ["--prec-div=true"]}}')
    assert (v.name, v.config) == ("precise", {"nvrtc": ["--prec-div=true"]})
    assert parse_variant('flat: {"ptxas": ["-v"]}').config == {"ptxas": ["-v"]}
    with pytest.raises(ConfigError, match="write it as 'NAME: JSON'"):
        parse_variant('{"nvrtc": []}')
    with pytest.raises(ConfigError, match="--variant 'x': the config is not valid JSON"):
        parse_variant("x: {nvrtc: []}")
    with pytest.raises(ConfigError, match="--variant 'x': .*-arch.*'arch' key"):
        parse_variant('x: {"nvrtc": ["-arch=sm_80"]}')


# ---- real compiles -----------------------------------------------------------------------------

@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
@pytest.mark.parametrize("order", [("ftz=false", "ftz=true"), ("ftz=true", "ftz=false")])
def test_ftz_variants_in_both_orders(compiler, order, fresh_cache):
    by_name = {v.name: v for v in default_variants()}
    cmp = cuda_magic.compare(SAXPY, [by_name[n] for n in order], arch=ARCH,
                             config={"compiler": compiler, "target_format": "cubin"})
    assert cmp.names == list(order) and cmp.baseline == order[0]
    for name in order:
        argv = cmp.modules[name].result.argv
        ftz = name == "ftz=true"
        assert ("--ftz=true" in argv) == ftz and ("--ftz=false" in argv) == (not ftz)
        assert "--use_fast_math" in argv
        assert cmp.ftz(name, "scale") == (1 if ftz else 0)
        assert fmuls(cmp, name) == [("FMUL.FTZ" if ftz else "FMUL") + " R7, R2, UR6 ;"] or \
            all((".FTZ" in f) == ftz for f in fmuls(cmp, name))
    rows = diff.side_by_side(cmp.instructions(order[0], "scale"), cmp.instructions(order[1], "scale"))
    changed = [r for r in rows if r.tag != "equal"]
    assert len(changed) == 1 and changed[0].tag == "replace"
    assert {changed[0].left.split()[0], changed[0].right.split()[0]} == {"FMUL", "FMUL.FTZ"}
    text = view.text(cmp)
    assert f"scale: {order[1]} vs {order[0]}: 1 line changed" in text
    res = {label: values for k, label, values, _ in view.resource_diff(cmp)}
    assert res[".FTZ instructions"] == ["0", "1"] if order[0] == "ftz=false" else ["1", "0"]
    assert res["registers"][0] == res["registers"][1]


def test_compare_the_cell_with_several_toggles_and_a_layer(fresh_cache):
    cmp = cuda_magic.compare(DIV, ['precise: {"nvrtc": []}'], vary=["ftz", "prec-div"], arch=ARCH)
    assert cmp.names == ["baseline", "ftz=false", "prec-div=true", "precise"]
    assert cmp.state("baseline")["ftz"] and not cmp.state("ftz=false")["ftz"]
    assert cmp.modules["precise"].result.config.provenance["nvrtc"] == "variant:precise"
    base = cmp.instructions("baseline", "divide")
    precise = cmp.instructions("prec-div=true", "divide")
    # fast math divides by an approximate reciprocal; prec-div=true calls the IEEE slow path
    assert any(i.startswith("MUFU.RCP") for i in base) and not any("CALL" in i for i in base)
    assert any("CALL" in i and "div_rn" in i for i in precise)
    assert len(precise) > 2 * len(base)
    assert cmp.ftz("baseline", "divide") == 1 and cmp.ftz("ftz=false", "divide") == 0
    # the IEEE division's own slow path compares against INF with FSETP.FTZ whatever the flags
    assert cmp.ftz("precise", "scale") == 0
    assert all(i.startswith(("FSETP", "FADD")) for i in cmp.instructions("precise", "divide")
               if ".FTZ" in i)


def test_kernel_headers_get_the_variant_on_top(fresh_cache):
    cell = SAXPY.replace('extern "C"', '//| nvrtc: [-lineinfo]\nextern "C"', 1)
    cmp = cuda_magic.compare(cell, arch=ARCH)
    for name in cmp.names:
        config = cmp.modules[name].config_of("scale")
        assert config["nvrtc"] == ["--use_fast_math", "-lineinfo", f"--{name}"]
        assert config.provenance["nvrtc"] == f"variant:{name}"
    assert cmp.ftz("ftz=true", "scale") == 1 and cmp.ftz("ftz=false", "scale") == 0


def test_bad_comparisons_say_what_to_do():
    with pytest.raises(ConfigError, match="two variants are named 'a'"):
        cuda_magic.compare(SAXPY, ['a: {}', 'a: {"nvrtc": []}'], arch=ARCH)
    with pytest.raises(ConfigError, match="needs two variants or more, got 1"):
        cuda_magic.compare(SAXPY, ['a: {}'], arch=ARCH)
    with pytest.raises(ConfigError, match="--inputs denormal fills the inputs of --run"):
        cuda_magic.compare(SAXPY, arch=ARCH, inputs="denormal")
    with pytest.raises(ConfigError, match="inputs='subnormal'"):
        cuda_magic.compare(SAXPY, arch=ARCH, run="x", inputs="subnormal")
    with pytest.raises(ConfigError, match="variant 'bad': .*compiler"):
        cuda_magic.compare(SAXPY, {"ok": {}, "bad": {"compiler": "nvrtc", "target_format": "fatbin"}},
                           arch=ARCH)


def test_ptx_diff_and_html(fresh_cache):
    cmp = cuda_magic.compare(SAXPY, {"<script>": {"nvrtc": ["--use_fast_math", "--ftz=false"]},
                                     "b": {"nvrtc": ["--use_fast_math", "--ftz=true"]}},
                             arch=ARCH, ptx=True)
    text = view.text(cmp)
    assert "-    mul.f32" in text and "+    mul.ftz.f32" in text
    page = view.page(cmp)
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert 'FMUL<span style="color: #c0392b; font-weight: bold">.FTZ</span>' in page
    assert "mul.ftz.f32" in view.html_ptx(cmp)
    unified = comparison.Comparison(cmp.recipe, cmp.variants, cmp.modules, None, None, None, "unified")
    assert "-FMUL R" in view.text(unified) and "+FMUL.FTZ R" in view.text(unified)
    assert "rgba(46,204,113" in view.html_sass(unified, unified.kernels[0], "unified")


def test_folded_keeps_context_around_changes():
    a = [f"I{i} ;" for i in range(30)]
    b = list(a)
    b[15] = "X ;"
    rows = view.folded(diff.side_by_side(a, b))
    assert rows[0] == 12 and rows[-1] == 11
    assert [r.tag for r in rows[1:-1]] == ["equal"] * 3 + ["replace"] + ["equal"] * 3


# ---- trust: the compute cache never mixes FTZ up -------------------------------------------------

SCRIPT = r'''
import json, sys
import cuda_magic
from cuda_magic.variants import default_variants
src, order, compiler = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
by = {v.name: v for v in default_variants()}
out = {}
for rnd in range(2):
    cmp = cuda_magic.compare(src, [by[n] for n in order], arch="sm_90a", config={"compiler": compiler})
    for n in order:
        out[f"{rnd}:{n}"] = [cmp.ftz(n, "scale"), [i for i in cmp.instructions(n, "scale") if i.startswith("FMUL")]]
    order = order[::-1]
print(json.dumps(out))
'''


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_ftz_is_right_across_processes_and_orders(compiler, tmp_path):
    env = {**os.environ, "CUDA_MAGIC_CACHE_DIR": str(tmp_path / "cache")}
    for order in ("ftz=true,ftz=false", "ftz=false,ftz=true", "ftz=true,ftz=false"):
        proc = subprocess.run([sys.executable, "-c", SCRIPT, SAXPY, order, compiler], env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        for key, (count, fmul) in json.loads(proc.stdout).items():
            ftz = key.endswith("ftz=true")
            assert count == (1 if ftz else 0), (order, key, fmul)
            assert fmul and all((".FTZ" in f) == ftz for f in fmul), (order, key, fmul)


# ---- the magic ---------------------------------------------------------------------------------

def test_magic_end_to_end(shell, capsys):
    c = shell.run_cell_magic("cuda_compare", f"--arch {ARCH} --compiler nvcc --name c", SAXPY)
    assert shell.user_ns["c"] is c and isinstance(c, cuda_magic.Comparison)
    assert "scale" not in shell.user_ns or not isinstance(shell.user_ns["scale"], cuda_magic.Kernel) \
        or shell.user_ns["scale"].result.compiler == "nvrtc"      # binds no kernels of its own
    assert c.modules["ftz=true"].result.compiler == "nvcc"
    assert c.ftz("ftz=true", "scale") == 1 and c.ftz("ftz=false", "scale") == 0
    bundle, _ = shell.display_formatter.format(c)
    assert "2 variants: ftz=false (baseline) vs ftz=true" in bundle["text/plain"]
    # session defaults and presets are layers below the variants
    shell.run_line_magic("cuda_config", f"--arch {ARCH} --nvrtc \"-lineinfo\"")
    c = shell.run_cell_magic("cuda_compare", "--vary ftz", SAXPY)
    assert c.names == ["baseline", "ftz=true"]
    assert c.modules["ftz=true"].result.config["nvrtc"] == ["-lineinfo", "--ftz=true"]
    assert c.modules["baseline"].result.config.provenance["nvrtc"] == "session"


def test_magic_without_a_gpu_compiles_and_says_why_no_numbers(shell, monkeypatch):
    monkeypatch.setattr(comparison, "detect_arch", lambda: None)
    shell.user_ns["x"] = np.ones(4, np.float32)
    c = shell.run_cell_magic("cuda_compare", f"--arch {ARCH} --run 'scale[1, 4](x, x, 0.5, 4)' "
                             "--inputs denormal --diff unified --ptx", SAXPY)
    assert c.numbers is None and "need a GPU" in c.note
    text = view.text(c)
    assert "the numbers need a GPU: --run was not executed" in text
    assert "+FMUL.FTZ" in text and "PTX" in text
    assert "need a GPU" in view.html_numbers(c)


def test_magic_bad_input(shell):
    with pytest.raises(ConfigError, match="--vary fzt: unknown toggle; choose from ftz, .* or "
                                          "arch=sm_80,sm_90a"):
        shell.run_cell_magic("cuda_compare", f"--arch {ARCH} --vary fzt", SAXPY)
    with pytest.raises(ConfigError, match="--variant 'p': the config is not valid JSON"):
        shell.run_cell_magic("cuda_compare", f"--arch {ARCH} --variant 'p: [1'", SAXPY)
    with pytest.raises(UsageError, match="invalid choice: 'side-by-side'"):
        shell.run_cell_magic("cuda_compare", f"--arch {ARCH} --diff side-by-side", SAXPY)
    with pytest.raises(cuda_magic.CompileError, match="nvrtc failed to compile cell.cu for variant 'ftz=false'"):
        shell.run_cell_magic("cuda_compare", f"--arch {ARCH}", "__global__ void k() { oops }")
    with pytest.raises(cuda_magic.CompileError, match="for variant 'bad'") as err:
        shell.run_cell_magic("cuda_compare", f"--arch {ARCH} --variant 'bad: {{\"nvrtc\": [\"-DX=(\"]}}' "
                             "--variant 'ok: {}'", "__global__ void k(float* y) { y[0] = X; }")
    assert err.value._render_traceback_() == [
        "CompileError: nvrtc failed to compile cell.cu for variant 'bad' (2 errors, shown above)"]
    doc = shell.find_cell_magic("cuda_compare").__doc__
    assert "Examples" in doc and "--vary" in doc and "--inputs" in doc


# ---- the widget --------------------------------------------------------------------------------

def count_compiles(monkeypatch):
    from cuda_magic.compile import compiler
    calls = []
    real = compiler.get_backend

    def counting(name):
        backend = real(name)

        class Counted:
            def __getattr__(self, attr):
                return getattr(backend, attr)

            def compile(self, *a, **kw):
                calls.append(kw.get("flags"))
                return backend.compile(*a, **kw)
        return Counted()
    monkeypatch.setattr(compiler, "get_backend", counting)
    return calls


def test_toggles_rebuild_through_the_cache(monkeypatch, fresh_cache):
    cmp = cuda_magic.compare(DIV, arch=ARCH)
    w = view.CompareView(cmp).widget()
    assert [t for t in w.tab.titles] == ["Variants", "Resources", "SASS diff", "Numbers", "PTX diff",
                                          "Source"]
    assert {t: b.value for t, b in w.toggles.items()} == {
        "ftz": True, "prec-div": False, "prec-sqrt": False, "fmad": True, "fast-math": True}
    sass_before = w.panes["SASS diff"].children[1].value
    calls = count_compiles(monkeypatch)

    w.toggles["prec-div"].value = True                      # a new config: compiled
    assert len(calls) == 1 and "--prec-div=true" in calls[0]
    assert w.comparison.names == ["ftz=false", "ftz=true, prec-div=true"]
    assert "compiled in" in w.status.value
    w.kernel.value = "divide"
    assert "div_rn" in w.panes["SASS diff"].children[1].value
    assert w.panes["SASS diff"].children[1].value != sass_before
    assert "prec-div" in w.panes["Variants"].value and "--prec-div=true" in w.panes["Variants"].value

    w.toggles["prec-div"].value = False                     # back: the cached build, no compile
    assert len(calls) == 1
    assert w.comparison.names == ["ftz=false", "ftz=true"]
    assert w.comparison.modules["ftz=true"].result.cache_hit
    assert "from the cache" in w.status.value

    w.toggles["fast-math"].value = False                    # implied values follow
    assert w.toggles["prec-div"].value is True and w.toggles["prec-sqrt"].value is True
    assert w.toggles["ftz"].value is True                   # explicit --ftz=true stays
    assert w.comparison.modules[w.comparison.names[-1]].result.config["nvrtc"] == ["--ftz=true"]
    assert w.comparison.modules["ftz=false"] is cmp.modules["ftz=false"]   # the baseline is fixed

    w.mode.value = "unified"
    assert "@@" in w.panes["SASS diff"].children[1].value
    w.tab.selected_index = 4
    assert "ftz" in w.panes["PTX diff"].value


def test_a_failing_toggle_keeps_the_view(monkeypatch):
    cmp = cuda_magic.compare(SAXPY, arch=ARCH)
    w = view.CompareView(cmp).widget()

    def broken(*a, **kw):
        raise cuda_magic.RunError("the GPU went away")
    monkeypatch.setattr(comparison.Comparison, "toggled", broken)
    w.toggles["fmad"].value = False
    assert "the GPU went away" in w.status.value
    assert w.toggles["fmad"].value is True and w.comparison is cmp


def test_mimebundle_has_the_widget_and_html(monkeypatch):
    from cuda_magic import display
    cmp = cuda_magic.compare(SAXPY, arch=ARCH)
    monkeypatch.setattr(display.frontend, "in_kernel", lambda: True)
    bundle = view.CompareView(cmp)._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "SASS diff" in bundle["text/html"] and "FMUL" in bundle["text/html"]
    monkeypatch.setattr(display.frontend, "in_kernel", lambda: False)
    assert view.CompareView(cmp)._repr_mimebundle_() == {}


# ---- numbers (the report; launching is at the end, marked gpu) -----------------------------------

def test_denormals_span_the_interesting_values():
    for dtype in ("float16", "float32", "float64"):
        x = cuda_magic.denormals(300, dtype)
        info = np.finfo(dtype)
        assert x.dtype == np.dtype(dtype) and x.size == 300
        sub = subnormal(x)
        assert sub.sum() > 100 and (x < 0).sum() > 100
        assert info.tiny in x and -info.tiny in x and info.smallest_subnormal in x
        assert np.signbit(x[1]) and x[1] == 0 and x[0] == 0
        assert np.isfinite(x).all()
    assert cuda_magic.denormals(3).tolist() == [0.0, -0.0, float(np.finfo(np.float32).tiny)]
    with pytest.raises(TypeError, match="dtype=int32"):
        cuda_magic.denormals(4, "int32")
    with pytest.raises(ValueError, match="n=-1"):
        cuda_magic.denormals(-1)


def test_ulp_distance():
    f = np.float32
    one_up = np.nextafter(f(1), f(2))
    tiny = np.finfo(f).tiny
    assert cuda_magic.ulp_distance(np.array([1, 1, 0, -0.0, tiny], f),
                                   np.array([1, one_up, -0.0, 1e-45, 0], f)).tolist() == [0, 1, 0, 1, 2**23]
    nan = np.array([np.nan, np.nan, 1], f)
    d = cuda_magic.ulp_distance(nan, np.array([np.nan, 1, 1], f))
    assert d[0] == 0 and d[1] == np.iinfo(np.uint64).max and d[2] == 0
    assert cuda_magic.ulp_distance(np.array([5], np.int32), np.array([2], np.int32)).tolist() == [3]
    # against a wider reference: the distance in the narrower format's ULPs (fractional)
    assert cuda_magic.ulp_distance(np.array([1], f), np.array([1 + 2**-24], np.float64)).tolist() == [0.5]
    with pytest.raises(ValueError, match="one shape"):
        cuda_magic.ulp_distance(np.zeros(2, f), np.zeros(3, f))


def test_array_diffs_count_flushes_and_ulps():
    x = cuda_magic.denormals(64)
    flushed = np.where(subnormal(x), np.copysign(f := np.float32(0), x), x).astype(np.float32)
    base, ftz = array_diffs("y", {"ftz=false": x, "ftz=true": flushed}, "ftz=false")
    assert (base.variant, base.differ, base.flushed, base.max_ulp) == ("ftz=false", 0, 0, 0)
    n_sub = int(subnormal(x).sum())
    assert ftz.differ == n_sub and ftz.flushed == n_sub
    assert ftz.max_abs == pytest.approx(float(np.nextafter(np.finfo(f).tiny, f)))
    assert ftz.max_ulp == 2**23 - 1
    # the other way round the FTZ variant is the baseline, and the flushes are still its own
    base, other = array_diffs("y", {"ftz=true": flushed, "ftz=false": x}, "ftz=true")
    assert base.flushed == n_sub and other.flushed == 0 and other.differ == n_sub


def test_numbers_show_in_the_report_and_plot(fresh_cache):
    cmp = cuda_magic.compare(SAXPY, arch=ARCH)
    x = cuda_magic.denormals(256)
    runner = comparison.Runner(("scale[1, 256](x, y, 0.5, 256)",), {"x": x, "y": np.zeros_like(x)})
    runner.prepare(cmp.modules[cmp.baseline])
    assert runner.roles == {"x": "input", "y": "output"}
    half = (x.astype(np.float64) * 0.5).astype(np.float32)        # what the GPU computes
    outputs = {"ftz=false": {"x": x, "y": half},
               "ftz=true": {"x": x, "y": np.where(subnormal(half) | subnormal(x),
                                                   np.float32(0), half).astype(np.float32)}}
    ran = comparison.Comparison(cmp.recipe, cmp.variants, cmp.modules, runner, outputs, None)
    assert [d.name for d in ran.numbers] == ["y", "y"]
    assert ran.numbers[1].flushed > 100 and ran.numbers[1].max_ulp > 0
    text = view.text(ran)
    assert "flushed to 0" in text and "float32[256]" in text
    page = view.html_numbers(ran)
    assert "<b>" in page and 'src="data:image/png;base64,' in page
    fig = ran.plot("y")
    assert fig.axes[0].get_title() == "y: ULP difference per element"
    assert len(fig.axes[0].lines) == 1


def test_run_is_checked_before_anything_runs(fresh_cache):
    cmp = cuda_magic.compare(SAXPY, arch=ARCH)
    m = cmp.modules[cmp.baseline]
    with pytest.raises(cuda_magic.RunError, match="not Python"):
        comparison.Runner(("scale[1, 4](x,",), {}).prepare(m)
    with pytest.raises(cuda_magic.RunError, match="names no arrays"):
        comparison.Runner(("scale[1, 4](a, b, 0.5, 4)",), {"a": 1}).prepare(m)
    with pytest.raises(cuda_magic.RunError, match="--inputs random: no float array .* const pointer"):
        comparison.Runner(("scale[1, 4](y, y, 0.5, 4)",), {"y": np.zeros(4, np.float32)},
                          "random").prepare(m)
    x = np.full(8, 3.0, np.float32)
    r = comparison.Runner(("scale[1, 8](x, y, 0.5, 8)",), {"x": x, "y": np.zeros(8, np.float32)}, "denormal")
    r.prepare(m)
    assert r.arrays["x"].tolist() == cuda_magic.denormals(8).tolist() and x.tolist() == [3.0] * 8


def test_show_prints_the_parts_of_a_comparison(capsys):
    cmp = cuda_magic.compare(SAXPY, arch=ARCH)
    assert type(cuda_magic.view(cmp)).__name__ == "CompareView"
    cuda_magic.show(cmp, "sass", kernel="scale")
    out = capsys.readouterr().out
    assert out.startswith("scale: ftz=true vs ftz=false: 1 line changed")
    assert "FMUL R7, R2, UR6 ;                 | FMUL.FTZ R7, R2, UR6 ;" in out
    cuda_magic.show(cmp, "ptx")
    assert "+    mul.ftz.f32" in capsys.readouterr().out
    cuda_magic.show(cmp, "config")
    assert "--use_fast_math --ftz=true" in capsys.readouterr().out
    cuda_magic.show(cmp, "numbers")
    assert capsys.readouterr().out.startswith('not run: give --run')
    cuda_magic.show(cmp)
    assert capsys.readouterr().out.startswith("2 variants: ftz=false (baseline) vs ftz=true")
    with pytest.raises(ValueError, match="kernel='nope': no such kernel here; the kernels are scale"):
        cuda_magic.show(cmp, "sass", kernel="nope")
    with pytest.raises(ValueError, match="what='numbers' is for a %%cuda_compare Comparison"):
        cuda_magic.show(cmp.modules["ftz=true"], "numbers")


# --- %%cuda_compare numbers on a GPU (marked gpu): FTZ in any order and in a second process,
# the ULP report.

FLT_MIN = np.finfo(np.float32).tiny
HALF = 5.877472e-39            # FLT_MIN * 0.5, a subnormal

REDUCE = r'''
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float s[256];
    int t = threadIdx.x;
    float acc = 0.0f;
    for (int i = t; i < n; i += blockDim.x) acc += x[i];
    s[t] = acc;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) out[0] = s[0];
}
'''

DIVIDE = r'''
extern "C" __global__ void divide(const float* p, const float* q, float* r, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) r[i] = p[i] / q[i];
}
'''


def ordered(order):
    by = {v.name: v for v in default_variants()}
    return [by[n] for n in order]


@pytest.mark.gpu
@pytest.mark.parametrize("order", [("ftz=false", "ftz=true"), ("ftz=true", "ftz=false")])
def test_flt_min_half_in_both_orders(order, fresh_cache):
    x = np.full(256, FLT_MIN, np.float32)
    y = np.full(256, 7.0, np.float32)
    for _ in range(2):          # twice round: nothing cached may mix the variants up
        cmp = cuda_magic.compare(SAXPY, ordered(order), run="scale[1, 256](x, y, 0.5, 256)")
        assert y.tolist() == [7.0] * 256 and x[0] == FLT_MIN        # the caller's arrays untouched
        for name in order:
            out = cmp.outputs[name]["y"]
            ftz = name == "ftz=true"
            assert (out == 0).all() if ftz else (out == np.float32(HALF)).all(), (name, out[:4])
            assert (cmp.ftz(name, "scale") > 0) == ftz             # numbers agree with the SASS
        rows = {d.variant: d for d in cmp.numbers}
        assert [d.name for d in cmp.numbers] == ["y", "y"]          # x is an input, not reported
        assert rows["ftz=true"].flushed == 256 and rows["ftz=false"].flushed == 0
        assert rows[order[1]].differ == 256 and rows[order[1]].max_ulp == 2**22
        assert rows[order[1]].max_abs == pytest.approx(HALF)
        order = order[::-1]


SECOND_PROCESS = r'''
import json, sys
import numpy as np
import cuda_magic
from cuda_magic.variants import default_variants
by = {v.name: v for v in default_variants()}
order = sys.argv[2].split(",")
x = np.full(256, np.finfo(np.float32).tiny, np.float32)
y = np.zeros_like(x)
cmp = cuda_magic.compare(sys.argv[1], [by[n] for n in order], run="scale[1, 256](x, y, 0.5, 256)")
print(json.dumps({n: [float(cmp.outputs[n]["y"][0]), cmp.ftz(n, "scale")] for n in order}))
'''


@pytest.mark.gpu
def test_second_process_agrees(tmp_path):
    import os
    env = {**os.environ, "CUDA_MAGIC_CACHE_DIR": str(tmp_path)}
    for order in ("ftz=true,ftz=false", "ftz=false,ftz=true"):
        proc = subprocess.run([sys.executable, "-c", SECOND_PROCESS, SAXPY, order], env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        got = json.loads(proc.stdout)
        assert got["ftz=true"][0] == 0.0 and got["ftz=true"][1] == 1
        assert got["ftz=false"][0] == pytest.approx(HALF, rel=1e-6) and got["ftz=false"][1] == 0


@pytest.mark.gpu
def test_ulp_report_on_a_reduction(fresh_cache):
    x = np.ones(4096, np.float32)          # refilled by --inputs denormal; run= reads x, out here
    out = np.zeros(1, np.float32)
    cmp = cuda_magic.compare(REDUCE, run="block_sum[1, 256](x, out, 4096)", inputs="denormal")
    keep, flush = (float(cmp.outputs[n]["out"][0]) for n in ("ftz=false", "ftz=true"))
    assert keep != flush
    base, ftz = cmp.numbers
    assert (base.name, base.variant, base.differ, base.max_ulp) == ("out", "ftz=false", 0, 0)
    assert ftz.differ == 1 and ftz.max_ulp == int(cuda_magic.ulp_distance(
        np.float32([keep]), np.float32([flush]))[0]) > 0
    text = view.text(cmp)
    assert "float32[1]" in text and str(ftz.max_ulp) in text
    assert 'src="data:image/png;base64,' in view.html_numbers(cmp)


@pytest.mark.gpu
def test_prec_div_differs_by_ulps(fresh_cache):
    p, q, r = (np.zeros(4096, np.float32) for _ in range(3))
    cmp = cuda_magic.compare(DIVIDE, vary=["prec-div"], run="divide[16, 256](p, q, r, 4096)",
                             inputs="random")
    assert cmp.names == ["baseline", "prec-div=true"]
    rows = {d.variant: d for d in cmp.numbers}
    exact = (numbers.random_inputs(4096, seed=0).astype(np.float64)
             / numbers.random_inputs(4096, seed=1).astype(np.float64)).astype(np.float32)
    ieee = cmp.outputs["prec-div=true"]["r"]
    assert (ieee == exact).all()                            # IEEE division rounds correctly
    assert 0 < rows["prec-div=true"].max_ulp <= 2 and rows["prec-div=true"].differ > 0


@pytest.mark.gpu
def test_cupy_and_torch_arrays_are_copied(fresh_cache):
    cupy = pytest.importorskip("cupy")
    torch = pytest.importorskip("torch")
    xc = cupy.full(256, FLT_MIN, dtype=cupy.float32)     # run= below names these locals
    yc = cupy.zeros(256, dtype=cupy.float32)
    xt = torch.full((256,), float(FLT_MIN), dtype=torch.float32, device="cuda")
    yt = torch.zeros(256, dtype=torch.float32, device="cuda")
    cmp = cuda_magic.compare(SAXPY, run=["scale[1, 256](xc, yc, 0.5, 256)",
                                         "scale[1, 256](xt, yt, 0.5, 256)"])
    assert float(yc.sum()) == 0 and float(yt.sum()) == 0           # untouched
    for arr in ("yc", "yt"):
        assert cmp.outputs["ftz=false"][arr][0] == np.float32(HALF)
        assert cmp.outputs["ftz=true"][arr][0] == 0
    assert sorted({d.name for d in cmp.numbers}) == ["yc", "yt"]


@pytest.mark.gpu
def test_magic_and_toggles_rerun(shell, fresh_cache):
    shell.user_ns.update(x=np.full(256, FLT_MIN, np.float32), y=np.zeros(256, np.float32))
    c = shell.run_cell_magic("cuda_compare", '--run "scale[1, 256](x, y, 0.5, 256)" --name c', SAXPY)
    assert {d.variant: d.flushed for d in c.numbers} == {"ftz=false": 0, "ftz=true": 256}
    w = view.CompareView(c).widget()
    w.toggles["ftz"].value = False                # the last variant loses FTZ: same numbers now
    now = w.comparison
    assert now.names == ["ftz=false", "as baseline"]
    assert all(d.differ == 0 for d in now.numbers) and "re-run" in w.status.value
    assert "<b>" not in w.panes["Numbers"].value.split("<table")[1].split("</table>")[0]
    w.toggles["ftz"].value = True                 # back: cached build, flushed again
    assert {d.variant: d.flushed for d in w.comparison.numbers} == {"ftz=false": 0, "ftz=true": 256}
    assert w.comparison.modules["ftz=true"].result.cache_hit
    with pytest.raises(cuda_magic.RunError, match="failed for variant 'ftz=false': .*Error"):
        shell.run_cell_magic("cuda_compare", '--run "scale[1, 256](x, y, 0.5)"', SAXPY)


BF16_SCALE = r'''
#include <cuda_bf16.h>
extern "C" __global__ void scale_bf16(const __nv_bfloat16* x, __nv_bfloat16* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2bfloat16(a * __bfloat162float(x[i]));
}
'''


def test_numbers_of_bfloat16_bits_are_in_bfloat16_ulps(fresh_cache):
    """A uint16 array a __nv_bfloat16* parameter wrote is read as bfloat16: the numbers table
    says bfloat16 and counts its ULPs (not integer differences of the bits)."""
    cmp = cuda_magic.compare(BF16_SCALE, arch=ARCH)
    x = cuda_magic.to_bits(np.linspace(-2, 2, 64), "bfloat16")
    runner = comparison.Runner(("scale_bf16[1, 64](x, y, 0.5, 64)",), {"x": x, "y": np.zeros_like(x)})
    runner.prepare(cmp.modules[cmp.baseline])
    assert runner.formats == {"x": "bfloat16", "y": "bfloat16"}
    y = cuda_magic.to_bits(np.linspace(-1, 1, 64), "bfloat16")
    other = y.copy()
    other[3] += 1                                   # one ULP up (a positive... or negative value)
    other[40] += 2
    outputs = {"ftz=false": {"x": x, "y": y}, "ftz=true": {"x": x, "y": other}}
    ran = comparison.Comparison(cmp.recipe, cmp.variants, cmp.modules, runner, outputs, None)
    row = ran.numbers[1]
    assert row.dtype == "bfloat16" and row.differ == 2 and row.max_ulp == 2
    assert 0 < row.max_abs < 0.05
