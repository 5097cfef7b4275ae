"""Hostile input: every input a user types gives a documented error with a short message, fast.

Documented errors are cuda-magic's :class:`~cuda_magic.errors.Error` subclasses and IPython's
``UsageError``.  The fuzz tests drive the parsing and validation layers (magic lines, ``//|``
headers, JSON configs, ``--variant`` specs) and never compile.  CPU only.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError

from conftest import ARCH
from cuda_magic import config as cfgmod
from cuda_magic.cell import CellError, line_config, parse_cell
from cuda_magic.compile.backends import CompileError
from cuda_magic.compile.compiler import compile_resolved, match_symbol
from cuda_magic.config import ConfigError, from_json, parse_backend_config, resolve, validate
from cuda_magic.errors import Error, clip, printable, quote
from cuda_magic.variants import parse_variant

KERNEL = 'extern "C" __global__ void k(float* x) { x[0] = 1.0f; }\n'
MAX_MESSAGE = 2000          # characters: no message grows with its input beyond this
DOCUMENTED = (Error, UsageError)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository


def short(exc: BaseException) -> str:
    """The message, checked to be short and printable as UTF-8 (no lone surrogates)."""
    text = str(exc)
    assert len(text) <= MAX_MESSAGE, f"{type(exc).__name__} of {len(text)} characters"
    text.encode("utf-8")
    return text


def line_magic(shell, name: str, line: str):
    """``%name line`` as IPython runs it, without IPython's ``$var``/``{expr}`` expansion of the
    line first (that expansion is quadratic in the line's length: 100 KB takes ~30 s)."""
    return shell.magics_manager.magics["line"][name](line)


def cell_magic(shell, name: str, line: str, cell: str):
    """``%%name line`` + ``cell`` as IPython runs it, without the expansion of the line."""
    return shell.magics_manager.magics["cell"][name](line, cell)


# ---- 8: YAML anchors and aliases; capped quotes ------------------------------------------

def _laughs(levels: int = 9) -> str:
    rows = ['//| a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    rows += [f"//| a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(rows) + "\n" + KERNEL


def test_billion_laughs_header_is_refused_fast():
    cell = _laughs()
    assert len(cell) < 1000
    with pytest.raises(CellError, match=r"cell line 1: .*anchors and aliases") as info:
        parse_cell(cell)
    assert info.value.line == 1
    short(info.value)


def test_billion_laughs_is_refused_before_it_expands():
    # 40 levels: 9**40 strings once expanded, so a parser that expands before it refuses never
    # returns; the generous timeout (not a tight figure a loaded machine can miss) is the check
    code = ("import sys; from cuda_magic.cell import CellError, parse_cell\n"
            "try:\n    parse_cell(sys.stdin.read())\nexcept CellError as e:\n    print(e.line)\n")
    out = subprocess.run([sys.executable, "-c", code], input=_laughs(40), capture_output=True,
                         text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.strip() == "1", out.stdout + out.stderr


def test_alias_alone_is_refused_at_its_line():
    cell = "//| arch: sm_90a\n//| nvrtc: *x\n" + KERNEL
    with pytest.raises(CellError, match="anchors and aliases") as info:
        parse_cell(cell)
    assert info.value.line == 2


def test_anchor_in_a_kernel_header_is_refused():
    cell = "\n//| nvrtc: &f [--use_fast_math]\n" + KERNEL
    with pytest.raises(CellError, match="anchors and aliases") as info:
        parse_cell(cell)
    assert info.value.line == 2


def test_quote_caps_and_notes_the_length():
    assert quote("abc") == "'abc'"
    long = quote("x" * 5_000_000)
    assert len(long) < 260 and long.endswith("... (5000000 characters)")
    assert quote("\ud800") == "'\\ud800'"
    deep = []
    for _ in range(5000):   # repr() of this would raise RecursionError
        deep = [deep]
    assert len(quote(deep)) <= 200
    assert quote(10 ** 5000) == "<int>"          # repr() of it would raise ValueError
    assert len(quote(int("9" * 4000))) <= 200
    assert len(quote({"k": "v" * 10_000})) <= 204
    assert clip("y" * 300, 10) == "yyyyyyyyyy... (300 characters)"


def test_printable_escapes_what_the_encoding_lacks():
    assert printable("café 日", "ascii") == "caf\\xe9 \\u65e5"
    assert printable("café", "utf-8") == "café"
    assert printable("a\ud800b", "utf-8") == "a\\ud800b"
    assert printable("ok", "no-such-codec") == "ok"


def test_error_str_has_no_lone_surrogate():
    exc = ConfigError("bad \ud800")
    assert str(exc) == "bad \\ud800"
    str(exc).encode("utf-8")


@pytest.mark.parametrize("cell", [
    "//| nvrtc: [" + "-DX" * 70_000 + "\n" + KERNEL,              # 200 KB unclosed header line
    "//| " + "x" * 200_000 + "\n" + KERNEL,                        # not key: value
    "//| arch: '" + "é" * 200_000 + "'\n" + KERNEL,                # a bad value
    "//| " + "k" * 200_000 + ": 1\n" + KERNEL,                     # a bad key
    "//| nvrtc: [" + ", ".join(["-v"] * 100) + ", \"-DX=\\x00" + "x" * 200_000 + "\"]\n" + KERNEL,
    "//| nvrtc: ['--version " + "x" * 200_000 + "']\n" + KERNEL,
], ids=["unclosed", "not-a-mapping", "bad-value", "bad-key", "nul-flag", "reserved-flag"])
def test_header_messages_are_capped(cell):
    with pytest.raises(CellError) as info:
        parse_cell(cell)
    assert len(str(info.value)) < 1000 and info.value.line == 1


def test_config_messages_are_capped():
    huge = "x" * 1_000_000
    for bad in ({"arch": huge}, {huge: 1}, {"nvrtc": huge}, {"nvrtc": [1] * 100_000},
                {"nvcc": ["a", "b\x00" + huge]}, {"compiler": huge}, {"target_format": huge},
                {"cuda": {"x": huge}}, [huge], {"ptxas": [[[[[[[[huge]]]]]]]]}):
        with pytest.raises(ConfigError) as info:
            validate(bad)
        assert len(str(info.value)) < 600, bad if len(repr(bad)) < 100 else type(bad)


# ---- 9: match_symbol in linear time ------------------------------------------------------

def test_match_symbol_reads_length_prefixes():
    assert match_symbol("scale", ["_Z5scalePKfPffi"]) == "_Z5scalePKfPffi"
    assert match_symbol("scale", ["_ZN2ns5scaleEPf"]) == "_ZN2ns5scaleEPf"
    assert match_symbol("ns::scale", ["_ZN2ns5scaleEPf"]) == "_ZN2ns5scaleEPf"
    assert match_symbol("other::scale", ["_ZN2ns5scaleEPf"]) is None
    assert match_symbol("scale", ["_Z5scalePf", "_ZN2ns5scaleEPf"]) is None    # ambiguous
    assert match_symbol("scale", ["scale", "_Z5scalePf"]) == "scale"          # extern "C"
    assert match_symbol("k", ["_ZN12_GLOBAL__N_11kEPf"]) == "_ZN12_GLOBAL__N_11kEPf"
    assert match_symbol("axpy", ["_Z4axpyIfEvT_PKS_PS_"]) == "_Z4axpyIfEvT_PKS_PS_"
    assert match_symbol("sc", ["_Z5scalePf"]) is None
    assert match_symbol("k", ["_Z99999999999999999999k", "_Z01kv", "_ZN", "_Z", ""]) is None


def test_match_symbol_is_linear_on_long_digit_runs():
    # The old regex backtracked exponentially: 22 digits took ~5 s, 26 digits 76 s.
    code = ("import time; from cuda_magic.compile.compiler import match_symbol as m\n"
            "d = '1234567890' * 4000\n"
            "syms = [f'_ZN1a{len(d) + 1}k{d}EPf', '_Z1gPf', f'_ZN{\"1\" * 30}k{d}E']\n"
            "t = time.perf_counter()\n"
            "assert m('g', syms) == '_Z1gPf'\n"
            "assert m('zz', syms) is None and m('k' + d[:25], syms) is None\n"
            "assert m('k' + d, syms) == syms[0]\n"
            "print(time.perf_counter() - t)\n")
    # 40,000 digits: a backtracking regex would run for ages, so the generous timeout (not a
    # tight figure that a loaded machine can miss) is the check
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr


def test_symbol_of_a_compiled_cell_is_fast():
    # The cell: 22 digits took 3.6-6 s per look-up with the old regex.
    source = ("namespace a { __global__ void k1234567890123456789012(float* x) { x[0] = 1; } }\n"
              "__global__ void g(float* x) { x[0] = 2; }\n")
    r = compile_resolved(source, resolve(("cell", {"arch": ARCH})))
    # the look-up is match_symbol, whose linear time the test above checks on 40,000 digits
    assert r.symbol("g") == "_Z1gPf"
    assert r.symbol("a::k1234567890123456789012") == "_ZN1a23k1234567890123456789012EPf"
    assert r.symbol("nope") is None


# ---- 10: each reachable exception type is a documented error -----------------------------

@pytest.mark.parametrize("magic, line, match", [
    ("cuda_config", '--nvrtc "--use_fast_math', "no closing quotation"),
    ("cuda_config", "--arch sm_90a \\", "no escaped character"),
    ("cuda_config", "--nvrtc --", "argument --nvrtc: expected a value"),
    ("cuda_config", "--nvcc=--", "argument --nvcc: expected a value"),
    ("cuda_config", "--unset=--", "argument --unset: expected a value"),
    ("cuda_config", "--bogus " + "x" * 100_000, "unrecognized arguments"),
], ids=["quote", "backslash", "nvrtc-dashes", "nvcc=--", "unset=--", "long"])
def test_magic_line_usage_errors(shell, magic, line, match):
    with pytest.raises(UsageError, match=match) as info:
        line_magic(shell, magic, line)
    assert "\nusage: %cuda_config [--arch ARCH]" in str(info.value)
    if len(line) < 100:
        with pytest.raises(UsageError, match=match):
            shell.run_line_magic(magic, line)
    short(info.value)


@pytest.mark.parametrize("magic, line", [
    ("cuda", "--variant=--"), ("cuda", '--nvrtc "\'" --bogus'), ("cuda_compare", "--variant=--"),
    ("cuda_compare", "--run=--"), ("cuda_compare", "--instantiate=--"), ("cuda", "'"),
])
def test_cell_magic_line_usage_errors(shell, magic, line):
    with pytest.raises(UsageError) as info:
        shell.run_cell_magic(magic, line, KERNEL)
    short(info.value)


@pytest.mark.parametrize("magic, prefix", [("cuda", "%%"), ("cuda_compare", "%%"),
                                           ("cuda_header", "%%"), ("cuda_config", "%")])
def test_usage_line_has_the_magics_own_prefix(shell, magic, prefix):
    with pytest.raises(UsageError) as info:
        if prefix == "%":
            shell.run_line_magic(magic, "--bogus")
        else:
            shell.run_cell_magic(magic, "x.cuh --bogus", KERNEL)
    usage = str(info.value).split("usage: ", 1)[1]
    assert usage.startswith(f"{prefix}{magic} ") and not usage.startswith(f"{prefix}%")


DEEP_JSON = "[" * 100_000 + "]" * 100_000
BIG_INT = '{"cuda": {"arch": ' + "9" * 5000 + "}}"


@pytest.mark.parametrize("text", [DEEP_JSON, '{"cuda": ' * 5000 + "{}" + "}" * 5000, BIG_INT,
                                  '{"arch": -' + "1" * 4500 + "}", "[1e99999]", '"\\ud800"'],
                         ids=["deep-list", "deep-dict", "big-int", "big-negative", "inf", "surrogate"])
def test_json_inputs(shell, presets_restored, text):
    with pytest.raises(ConfigError):
        from_json(text)
    with pytest.raises(ConfigError):
        parse_backend_config(text)
    with pytest.raises(ConfigError):
        line_config(backend_config=text)
    with pytest.raises(ConfigError) as info:
        parse_variant("deep: " + text)
    assert info.value.args[0].startswith("--variant 'deep'")
    quoted = "'" + text + "'"
    with pytest.raises(ConfigError):
        line_magic(shell, "cuda_config", f"--backend-config {quoted}")
    with pytest.raises(ConfigError):
        line_magic(shell, "cuda_config", f"--register-preset mine {quoted}")
    with pytest.raises(ConfigError):
        cell_magic(shell, "cuda_compare", f"--variant 'a: {{}}' --variant 'b: {text}'", KERNEL)
    short(info.value)


@pytest.mark.parametrize("header, match", [
    ("nvrtc: '--use_fast_math \"--ftz=false'", "write it as a YAML list"),   # unbalanced quote
    ("nvrtc: " + "[" * 5000 + "]" * 5000, "nested more than"),
    ("nvrtc: " + "{a: " * 3000 + "1" + "}" * 3000, "nested more than"),
    ("nvrtc: " + "[" * 20_000, "nested more than"),     # was quadratic in PyYAML's scanner: 40 s
    ("nvrtc:\n//| " + "- " * 3000 + "x", "nested more than"),
    ("arch: !!bool maybe", "cannot read the bool value 'maybe'"),
    ("arch: !!float abc", "cannot read the float value 'abc'"),
    ("arch: !!timestamp x", "cannot read the timestamp value 'x'"),
    ("arch: !!int 0x" + "f" * 5000, "a number of 5002 characters"),
    ("arch: " + "1" * 5000, "a number of 5000 characters"),
    ("arch: " + ":".join(["1"] + ["59"] * 60_000), "a number of"),
    ("arch: !!python/object:os.system x", "could not determine a constructor"),
    ("arch: sm_90\x07", "the character '\\\\x07'"),
    ("? [a, b]\n//| : c", "unhashable|not valid YAML"),
    ("%YAML 1." + "9" * 5000 + "\n//| ---\n//| arch: sm_90", "a version number of 5000 digits"),
], ids=["unbalanced-quote", "deep-flow", "deep-map", "wide-flow", "deep-block", "bool", "float",
        "timestamp", "hex", "int", "sexagesimal", "python-tag", "bell", "list-key", "directive"])
def test_yaml_headers(header, match):
    cell = f"//| {header}\n{KERNEL}"
    with pytest.raises(CellError, match=match) as info:     # refused with its reason, not
        parse_cell(cell)                                     # parsed (or converted) first
    assert info.value.line is not None
    short(info.value)


@pytest.mark.parametrize("cell, line", [
    ("//| arch: sm_90a\n" + KERNEL + "// caf\ud800\n", 3),
    (KERNEL + "//| nvrtc: ['-DX=\ud800']\n" + KERNEL, 2),
    ("\n\n" + KERNEL.replace("1.0f", "1.0f;\x00"), 3),
])
def test_bad_characters_in_the_cell_name_the_line(cell, line):
    with pytest.raises(CellError, match=r"NUL character|lone surrogate") as info:
        parse_cell(cell)
    assert info.value.line == line
    short(info.value)


@pytest.mark.parametrize("flags, match", [
    ('--nvcc "-DX=\ud800"', "lone surrogate"),
    ('--nvrtc "-DX=\ud800"', "lone surrogate"),
    ('--ptxas "-v\x00"', "NUL character"),
    ('--nvcc "-DX=a\x00b"', "NUL character"),
])
def test_bad_characters_in_flags(shell, flags, match):
    with pytest.raises(ConfigError, match=match) as info:
        shell.run_line_magic("cuda_config", flags)
    short(info.value)
    with pytest.raises(ConfigError, match=match):
        shell.run_cell_magic("cuda", f"--arch {ARCH} {flags}", KERNEL)


@pytest.mark.parametrize("flag", ["--version", "-V", "-version", "--dryrun", "-dryrun", "--help",
                                  "-h", "-help", "--list-gpu-arch", "-arch-ls", "--list-gpu-code",
                                  "--keep", "--keep-dir=/tmp"])
@pytest.mark.parametrize("key", ["nvcc", "nvrtc", "ptxas"])
def test_tool_routing_flags_are_reserved(flag, key):
    with pytest.raises(ConfigError, match=r"is reserved") as info:
        validate({key: ["-O3", flag]})
    assert info.value.key == key and f"flag '{flag}'" in str(info.value)
    with pytest.raises(ConfigError, match="is reserved"):
        resolve(("cell", {"compiler": "nvcc", key: [flag]}))


def test_tool_routing_on_the_magic_line(shell):
    for line in ('--compiler nvcc --nvcc "--version"', "--compiler nvcc --nvcc --dryrun",
                 '--nvcc "--help"'):
        with pytest.raises(ConfigError, match=r"'nvcc': flag '--(version|dryrun|help)' is reserved"):
            shell.run_cell_magic("cuda", f"--arch {ARCH} {line}", KERNEL)


def test_form_feed_does_not_shift_header_lines():
    # Compilers count lines on \n only; a form feed or U+2028 in a comment starts no line.
    cell = ("// page\x0cbreak \u2028 here\n//| nvrtc: [--use_fast_math, --ftz=true]\n"
            + KERNEL)
    parsed = parse_cell(cell)
    assert parsed.kernel_headers[3][0] == {"nvrtc": ["--use_fast_math", "--ftz=true"]}


# ---- 11: NUL in the source ---------------------------------------------------------------

def test_nul_in_source_is_refused_before_compiling():
    source = KERNEL + "\x00\n" + KERNEL.replace("void k", "void k2")
    resolved = resolve(("cell", {"arch": ARCH}))
    with pytest.raises(ConfigError, match=r"source line 2 holds a NUL character \(\\x00\) at column 1"):
        compile_resolved(source, resolved)
    with pytest.raises(ConfigError, match="source line 1 holds a lone surrogate"):
        compile_resolved("// \udc80\n" + KERNEL, resolved)
    with pytest.raises(CellError, match="NUL character") as info:
        parse_cell(source)
    assert info.value.line == 2


def test_nul_in_a_cell_binds_nothing(shell):
    shell.user_ns.pop("k2", None)
    cell = KERNEL + "// \x00\n" + KERNEL.replace("void k", "void k2")
    with pytest.raises(CellError, match=r"cell line 2: the cell holds a NUL"):
        shell.run_cell_magic("cuda", f"--arch {ARCH}", cell)
    assert "k2" not in shell.user_ns


# ---- 12: capped messages, any encoding, the usage line -----------------------------------

def test_compile_error_quotes_are_capped():
    line = "p[0] = nope; // " + "z" * 5_000_000
    source = "extern \"C\" __global__ void k(int* p) {\n" + line + "\n}\n"
    log = (f'cell.cu(2): error: identifier "nope" is undefined\n{line}\n      ^\n\n'
           + "".join(f"cell.cu(2): error: more {i}\n" for i in range(500))
           + "502 errors detected in the compilation of \"cell.cu\".\n")
    exc = CompileError("nvrtc", log, ["--gpu-architecture=sm_90a"], source)
    text = str(exc)
    assert len(text) < 12_000 and "... and 481 more errors" in text
    assert f"     2 | p[0] = nope; // {'z' * 100}" in text
    assert exc.log == log and exc.source == source        # all of it is kept
    nolines = CompileError("nvcc", "fatal: " + "q" * 1_000_000, [], source)
    assert len(str(nolines)) < 1000


def test_compile_error_of_a_long_line_is_capped():
    source = ('extern "C" __global__ void k(int* p) {\n    p[0] = nope; /* '
              + "w" * 1_000_000 + " */\n}\n")
    with pytest.raises(CompileError) as info:
        compile_resolved(source, resolve(("cell", {"arch": ARCH})), force=True)
    assert 'identifier "nope" is undefined' in str(info.value)
    assert len(str(info.value)) < 3000


_ASCII_RUN = r'''
import sys
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "cuda_magic")
for cell in (
    "%%cuda --arch sm_90a\nextern \"C\" __global__ void k(int* p) {\n"
    "    p[0] = nope; // caf\u00e9 \u65e5\n}\n",
    "%cuda_config --arch caf\u00e9",
    "%%cuda --arch sm_90a\n//| nvrtc: [-D\u00e9=1, --version]\nextern \"C\" __global__ void k() {}\n",
):
    result = ip.run_cell(cell)
    print("ERROR", type(result.error_in_exec).__name__, flush=True)
'''


def test_messages_print_under_an_ascii_locale():
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "LANG": "C", "LC_ALL": "C",
           "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", _ASCII_RUN], capture_output=True, env=env,
                         timeout=120, cwd=ROOT)
    stdout = out.stdout.decode("ascii")
    assert out.returncode == 0, out.stderr.decode("ascii", "replace")
    assert "UnicodeEncodeError" not in stdout + out.stderr.decode("ascii", "replace")
    assert stdout.count("ERROR CompileError") == 1 and stdout.count("ERROR ConfigError") == 1
    assert stdout.count("ERROR CellError") == 1
    assert "caf\\xe9 \\u65e5" in stdout            # the quoted source line, escaped
    assert "caf\\xe9" in stdout.split("ERROR CompileError")[1]


# ---- 10: the fuzz: only documented errors, short messages --------------------------------

_ODD = ["\x00", "\ud800", "\udfff", "\\", "'", '"', "\n", "\r", "\t", "\x0c", "\u2028", "é", "日",
        "\x85", "--", "=", " ", "#", "\x07", "{", "}", "[", "]", ":", ",", "\\u0000", "\\ud800"]
_BIG = st.one_of(
    st.integers(1, 3000).map(lambda n: "[" * n), st.integers(1, 3000).map(lambda n: "{" * n),
    st.integers(4000, 6000).map(lambda n: "9" * n), st.integers(1, 20_000).map(lambda n: "x" * n),
    st.integers(1, 2000).map(lambda n: '{"cuda": ' * n))


def _text(tokens: list[str], size: int = 14):
    part = st.one_of(st.sampled_from(tokens), st.sampled_from(_ODD), st.text(max_size=6), _BIG)
    return st.tuples(st.lists(part, max_size=size), st.sampled_from([" ", "", "\n", ", "])) \
        .map(lambda t: t[1].join(t[0]))


def _json_value():
    scalar = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(),
                       st.text(max_size=8), st.sampled_from(["sm_90a", "nvrtc", "--version", "-o x",
                                                             "--use_fast_math", "cubin", "fatbin"]))
    keys = st.one_of(st.sampled_from(["cuda", "arch", "compiler", "target_format", "nvcc", "nvrtc",
                                      "ptxas", "tvm"]), st.text(max_size=4))
    return st.recursive(scalar, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)), max_leaves=12)


_JSON_TOKENS = ['{"cuda": {', '"arch": "sm_90a"', '"nvrtc": ["--use_fast_math"]', '"nvcc": [',
                '"ptxas": "-v"', '"compiler": "nvcc"', '"target_format": "fatbin"', '"tvm": {}',
                "1e999", "NaN", "-Infinity", "null", "true", "[", "]", "{", "}", ":", ",",
                '"\\ud800"', '"\\u0000"', '"--version"', '"-o"']
JSON_TEXT = st.one_of(_json_value().map(json.dumps), _text(_JSON_TOKENS),
                      _json_value().map(lambda v: json.dumps({"cuda": v})))

_LINE_TOKENS = [
    "--arch", ARCH, "sm_90", "sm_x", "--compiler", "nvrtc", "nvcc", "--target-format", "ptx",
    "fatbin", "--nvrtc", "--nvcc", "--ptxas", '"--use_fast_math --ftz=false"', '"-o x"', "''",
    '"--version"', "--backend-config", "'{\"cuda\": {\"arch\": \"sm_90a\"}}'", "'[[[['",
    "--preset", "hopper", "nope", "--instantiate", '"axpy<float>"', "--name", "m", "In",
    "--compile-only", "--force", "--quiet", "--vary", "ftz", "prec-div", "--variant",
    "'fast: {\"nvrtc\": []}'", "'bad'", "--run", '"k[1, 1](x)"', "--inputs", "denormal",
    "--diff", "unified", "--ptx", "--unset", "arch", "--reset", "--json", "--register-preset",
    "mine", "'{}'", "--", "-h", "--help", "=", "--nvrtc=--", "--variant=--"]
_HEADER_TOKENS = [
    "arch:", "sm_90a", "compiler:", "nvrtc", "target_format:", "ptx", "nvrtc:", "nvcc:", "ptxas:",
    "[--use_fast_math]", "- -v", "&a", "*a", "!!bool", "!!float", "!!int", "!!timestamp",
    "!!binary", "!!set", "!!omap", "!!str", "!!python/object:os.system", "!!map", "<<:", "? ",
    "maybe", "abc", "1:2:3", "0x", "0o7", "|", ">", "%YAML 1.1", "---", "...", "-", "yes", "~",
    ".inf", "2020-01-01", "--version", "cuda:", "{arch: sm_90a}", "!x", "@", "`"]
_FUZZ = settings(max_examples=2000, deadline=None, database=None,
                 suppress_health_check=list(HealthCheck))


def _documented(call) -> None:
    try:
        call()
    except DOCUMENTED as exc:
        short(exc)


@_FUZZ
@given(magic=st.sampled_from(["cuda", "cuda_compare", "cuda_config"]),
       line=_text(_LINE_TOKENS))
def test_fuzz_magic_lines(shell_once, magic, line):
    """Any %%cuda / %%cuda_compare / %cuda_config line: a documented error or
    success (the cell has a bad //| header, so nothing compiles)."""
    if magic == "cuda_config":
        with contextlib.redirect_stdout(io.StringIO()):
            _documented(lambda: line_magic(shell_once, magic, line))
    else:
        _documented(lambda: cell_magic(shell_once, magic, line, "//| bogus: 1\n" + KERNEL))


@_FUZZ
@given(lines=st.lists(_text(_HEADER_TOKENS, 8), min_size=1, max_size=5),
       kernel=st.booleans(), body=st.sampled_from(["", KERNEL, "\x00", "\ud800", "\x0c\u2028"]))
def test_fuzz_headers(lines, kernel, body):
    header = "".join(f"//| {line}\n" for line in "\n".join(lines).split("\n"))
    cell = header + body + (f"\n{header}{KERNEL}" if kernel else "")
    _documented(lambda: parse_cell(cell))


@_FUZZ
@given(text=JSON_TEXT)
def test_fuzz_json(text):
    _documented(lambda: from_json(text))
    _documented(lambda: parse_backend_config(text))
    _documented(lambda: line_config(backend_config=text, nvrtc=text))


@_FUZZ
@given(name=st.one_of(st.sampled_from(["fast", "a b", "", "{x}", "é"]), st.text(max_size=6), _BIG),
       sep=st.sampled_from([":", ": ", "", "::", " : "]), text=JSON_TEXT)
def test_fuzz_variants(name, sep, text):
    _documented(lambda: parse_variant(name + sep + text))


@pytest.fixture(scope="module")
def shell_once():
    """One shell for the fuzz (hypothesis reruns the test body, not function fixtures)."""
    from IPython.core.interactiveshell import InteractiveShell
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "cuda_magic")
    saved = dict(cfgmod._PRESETS)
    ip.run_line_magic("cuda_config", "--reset")
    yield ip
    ip.run_line_magic("cuda_config", "--reset")
    with cfgmod._PRESETS_LOCK:
        cfgmod._PRESETS.clear()
        cfgmod._PRESETS.update(saved)


def test_long_names_in_preset_unset_and_instantiate_are_capped(shell):
    long = "p" * 5000
    with pytest.raises(ConfigError) as info:
        shell.run_line_magic("cuda_config", f"--preset {long}")
    assert len(short(info.value)) < 600
    with pytest.raises(ConfigError, match="at most 64 characters"):
        cfgmod.register_preset(long, {"arch": ARCH})
    with pytest.raises(UsageError) as info:
        shell.run_line_magic("cuda_config", f"--unset {long}")
    assert len(short(info.value)) < 600
    cell = "template <typename T> __global__ void axpy(T* x) { x[0] = 1; }\n"
    for spelling in (f"axpy<{'float, ' * 2000}float>", f"nope{'x' * 5000}<int>"):
        with pytest.raises(CellError) as info:
            shell.run_cell_magic("cuda", f'--arch {ARCH} --instantiate "{spelling}"', cell)
        assert len(short(info.value)) < 1000


def test_a_header_with_a_nul_is_refused_with_its_line(shell):
    from cuda_magic.compile.header_store import define_header, session_headers
    with pytest.raises(ConfigError, match="line 2, column 3: a NUL"):
        define_header("bad.cuh", "ok\nab\x00c\n")
    with pytest.raises(ConfigError, match="lone surrogate"):
        shell.run_cell_magic("cuda_header", "bad.cuh", "int x; // \udc80\n")
    assert "bad.cuh" not in session_headers()


def test_run_with_a_nul_is_a_run_error(shell):
    from cuda_magic.variants.comparison import RunError
    with pytest.raises(RunError, match="not Python"):
        shell.run_cell_magic("cuda_compare", f'--arch {ARCH} --run "k[1, 1](x\x00)"', KERNEL)


def test_views_print_under_an_ascii_stream(tmp_path):
    script = tmp_path / "ascii.py"
    script.write_text(r'''
from IPython.core.interactiveshell import InteractiveShell
import cuda_magic
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "cuda_magic")
m = shell.run_cell_magic("cuda", "--arch sm_90a --nvrtc '-DX=\u00e9'", "// caf\u00e9\n__global__ void k(float* x) { x[0] = 1; }\n")
shell.display_formatter.format(m)
print(cuda_magic.view(m).text().encode("ascii", "backslashreplace").decode()[:20])
try:
    shell.run_cell_magic("cuda", "--arch sm_90a --nvrtc '-DX=\u00e9'", "// caf\u00e9\n__global__ void k(float* x) { x[0] = nope; }\n")
except cuda_magic.CompileError as exc:
    from cuda_magic.display import ErrorView
    import IPython.lib.pretty as pretty
    print(pretty.pretty(ErrorView(exc))[:30])
print("ok")
''')
    env = dict(os.environ, PYTHONIOENCODING="ascii", LANG="C", LC_ALL="C",
               PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines()[-1] == "ok"


def test_a_huge_magic_line_is_not_expanded(shell):
    shell.user_ns["target"] = ARCH
    m = shell.run_cell_magic("cuda", "--arch $target --compile-only", KERNEL)   # $var still works
    assert m.result.arch == ARCH
    expanded = []
    real = shell.var_expand
    shell.var_expand = lambda text, *a, **k: expanded.append(len(text)) or real(text, *a, **k)
    try:
        with pytest.raises(ConfigError, match="'arch' must look like .*'\\$target'"):
            shell.run_cell_magic("cuda", "--arch $target --compile-only" + " " * 100_000, KERNEL)
    finally:
        del shell.var_expand
    assert all(n < 1000 for n in expanded), expanded   # IPython's own expansion took ~30 s
