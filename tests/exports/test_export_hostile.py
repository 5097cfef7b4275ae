"""cuda_magic.export with hostile input, no GPU: nothing a cell or an option says becomes code
in a generated file (kernel.h under gcc and g++, kernel.py and the torch package imported in a
fresh process, pyproject.toml, the wheel's METADATA and manifest.json parsed); the names the
generators use for themselves never collide with a kernel's or a parameter's (every such name
tried, taken from the generated text); what an export refuses (package names, versions,
kernels=, output dtypes, a cell with no kernels, an unclosed quote); the lines it prints for a
package whose name= differs from its directory; the manifest the same bytes wherever the
include roots are; the wheel's torch dependency, with torch unimportable."""

from __future__ import annotations

import dataclasses
import email.parser
import io
import json
import keyword
import pathlib
import re
import subprocess
import sys
import textwrap
import tokenize
import tomllib
import zipfile

import pytest
from IPython.core.error import UsageError

import cuda_magic
from conftest import ARCH, SAXPY
from cuda_magic import export
from cuda_magic.cell import build
from cuda_magic.compile.toolkit_headers import header_dirs
from cuda_magic.errors import CompileError, Error, ExportError
from cuda_magic.exports import manifest as manifest_module
from cuda_magic.exports.spec import collect

SQ = "'" * 3
# text that ends a Python docstring, a C comment or a string if written into one as it is
PAYLOADS = ['R"(""";open("PWNED","w");""")"', 'R"(*/ #error injected /*)"', 'R"(\\)"',
            'R"(' + SQ + ';open("PWNED","w");' + SQ + ')"', 'R"(\nopen("PWNED","w")\n)"',
            '"\\"\\"\\";open(\\"PWNED\\",\\"w\\");\\"\\"\\""', 'R"(??/)"']
HOSTILE = "// \"\"\";open(\"PWNED\",\"w\");\"\"\"  */ #error injected /*\n" + "".join(
    f'extern "C" __global__ void h{i}(const float* x, float* y, int n, const char* s = {p}) '
    f'{{ if (threadIdx.x < n) y[threadIdx.x] = x[threadIdx.x] + s[0]; }}\n'
    for i, p in enumerate(PAYLOADS))
# an expression that parses, its comment ending a docstring if the text were kept
COMMENTED = '(n, # """;open("PWNED","w");"""  */ #error injected /*\n)'
CXX_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq
nullptr operator or or_eq private protected public register reinterpret_cast requires return
short signed sizeof static static_assert static_cast struct switch template this thread_local
throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t while
xor xor_eq""".split())
# macros and types of the C headers, and C-only keywords: not names the generator writes, but
# names a kernel.h must survive as a kernel's or a parameter's
C_EXTRA = {"linux", "unix", "restrict", "NULL", "CUDA_VERSION", "INT32_MAX", "RAND_MAX",
           "EXIT_SUCCESS", "NFDBITS", "WNOHANG", "size_t", "uint32_t", "_Bool", "offsetof"}


def cdiv(a, b):
    return -(-a // b)


def block_rule(n):
    return 8 if n < 4096 else 256


grid_rule = lambda n: cdiv(n, 2)  # noqa: E731


def tree(path) -> dict[str, bytes]:
    root = pathlib.Path(path)
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def python(code: str, cwd, *, blocked=()) -> dict:
    """Run ``code`` in a fresh Python (``-I``) in ``cwd``, modules ``blocked`` unimportable;
    the JSON it prints last."""
    head = textwrap.dedent(f"""
        import importlib.abc, json, sys
        class _Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {tuple(blocked)!r}:
                    raise ImportError(name + " is blocked here")
        sys.meta_path.insert(0, _Block())
        """)
    run = subprocess.run([sys.executable, "-I", "-c", head + textwrap.dedent(code)],
                         capture_output=True, text=True, timeout=300, cwd=cwd)
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def compiles_as_c_and_cxx(directory, tmp_path, program='#include "kernel.h"\n'):
    (tmp_path / "prog.c").write_text(program)
    for compiler in (["gcc", "-x", "c"], ["g++", "-x", "c++"]):
        run = subprocess.run([*compiler, "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                              "-I", header_dirs()["cudart"], "-I", str(directory),
                              str(tmp_path / "prog.c")], capture_output=True, text=True)
        assert run.returncode == 0 and run.stderr == "", (compiler[0], run.stderr[-3000:])


def no_pwned(root):
    assert not [p for p in pathlib.Path(root).rglob("PWNED*")]


# --- nothing written becomes code ---------------------------------------------------------------

@pytest.fixture(scope="module")
def hostile():
    return build(HOSTILE, {"arch": ARCH})


@pytest.fixture(scope="module")
def hostile_exports(hostile, tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    rules = dict(grid="cdiv(n, # \"\"\";open('PWNED','w')  */\n 2)", block=1,
                 outputs={"y": COMMENTED})
    return root, {"cubin": export(hostile, "cubin", root / "kx"),
                  "torch": export(hostile, "torch", root / "hpkg", **rules),
                  "wheel": export(hostile, "wheel", root / "wsrc", name="hwheel", **rules)}


def test_the_cell_holds_the_payloads(hostile):
    """Each payload reached the kernel's signature as written (else the rest tests nothing)."""
    got = [k.params[-1].declared for k in collect(hostile)]
    assert got[0] == 'const char* s = R"(""";open("PWNED","w");""")"'
    assert got[1] == 'const char* s = R"(*/ #error injected /*)"'
    assert len(got) == len(PAYLOADS)


def test_kernel_h_keeps_hostile_text_in_comments(hostile_exports, tmp_path):
    root, e = hostile_exports
    h = (root / "kx" / "kernel.h").read_text()
    assert "#error injected" in h               # it is there, as comment text
    compiles_as_c_and_cxx(root / "kx", tmp_path)


def test_kernel_py_and_the_packages_import_and_run_without_running_the_text(hostile_exports,
                                                                            hostile, tmp_path):
    root, e = hostile_exports
    run = tmp_path / "run"
    run.mkdir()
    out = python(f"""
        import torch
        sys.path[:0] = [{str(root / "kx")!r}, {str(root)!r}, {str(root / "wsrc")!r}]
        import kernel, hpkg, hwheel
        out = {{"kernel_doc": kernel.__doc__, "signatures": {{}}, "docs": {{}}, "errors": {{}}}}
        for name in kernel.__all__:
            k = getattr(kernel, name)
            if isinstance(k, kernel.LoadedKernel):
                out["signatures"][name] = k.signature
        for pkg in (hpkg, hwheel):
            for op in pkg.__all__:
                f = getattr(pkg, op)
                out["docs"][pkg.__name__ + "." + op] = getattr(f, "_init_fn", f).__doc__
                try:     # on the CPU: the op's body runs up to its device check
                    f(torch.zeros(4), 4, torch.zeros(4, dtype=torch.int8))
                except ValueError as err:
                    out["errors"][pkg.__name__ + "." + op] = str(err)
        print(json.dumps(out))
        """, run)
    no_pwned(run)
    no_pwned(root)
    signatures = {k.name: k.signature for k in collect(hostile)}
    assert out["signatures"] == signatures
    for name, sig in signatures.items():
        assert f"{name}: {name}({sig})" in out["kernel_doc"]
        for pkg in ("hpkg", "hwheel"):
            doc = out["docs"][f"{pkg}.{name}"]
            assert doc == f"{name}({sig}): returns y ({COMMENTED}).", doc
            assert "parameter 'x' is on cpu" in out["errors"][f"{pkg}.{name}"]


def test_text_files_parse_and_hold_the_text(hostile_exports, hostile):
    root, e = hostile_exports
    for m in (e["cubin"].manifest, e["torch"].manifest):
        assert m["source"] == hostile.source
        assert [k["signature"] for k in m["kernels"]] == [k.signature for k in collect(hostile)]
    for f in (root / "kx" / "manifest.json", root / "hpkg" / "manifest.json",
              root / "wsrc" / "hwheel" / "manifest.json"):
        assert json.loads(f.read_bytes())["source"] == hostile.source
    op = json.loads((root / "hpkg" / "manifest.json").read_bytes())["kernels"][0]["op"]
    assert op["outputs"] == {"y": COMMENTED} and op["grid"].startswith("cdiv(n, # ")
    toml = tomllib.loads((root / "wsrc" / "pyproject.toml").read_text())
    names = ", ".join(k.name for k in collect(hostile))
    assert toml["project"]["name"] == "hwheel" and toml["project"]["version"] == "0.1.0"
    assert toml["project"]["description"] == f"{names}: CUDA kernels as PyTorch ops (cuda-magic export)"
    assert toml["tool"]["setuptools"]["package-data"] == {"hwheel": ["manifest.json", "binaries/*"]}
    with zipfile.ZipFile(e["wheel"].wheel) as z:
        meta = z.read("hwheel-0.1.0.dist-info/METADATA").decode()
    headers = email.parser.Parser().parsestr(meta)
    assert sorted(headers.keys()) == ["Metadata-Version", "Name", "Requires-Dist",
                                      "Requires-Python", "Summary", "Version"]
    assert headers["Summary"] == toml["project"]["description"]


def test_the_escapers_round_trip_every_character():
    """Each escaper's output, read back by its own language's reader, is the text: every
    control character, quotes, backslashes, comment ends, a lone surrogate."""
    from cuda_magic.exports.names import c_comment, c_string, py_comment, py_doc, toml_string
    text = "".join(map(chr, range(0, 0x80))) + '"""' + SQ + "*/ /* ??/ \u2028 é \U0001F600"
    assert eval(py_doc(text + "\ud800")) == text + "\ud800"
    assert "\n" not in py_comment(text) and "\r" not in py_comment(text)
    assert tomllib.loads(f"v = {toml_string(text)}")["v"] == text
    comment = c_comment(text)
    assert "*/" not in comment and "/*" not in comment and "??" not in comment
    assert all(" " <= ch <= "~" for ch in comment)
    literal = c_string(text)
    assert "??" not in literal and not re.search(r'[^\\]"', literal[1:-1])


# --- expression rules are formulas --------------------------------------------------------------

@pytest.fixture(scope="module")
def saxpy():
    return build(SAXPY, {"arch": ARCH})


@pytest.mark.parametrize("grid, message", [
    ("open('PWNED', 'w') and 1", r"uses a string"),
    ("open and 1", r"uses open, which the exported package does not have"),
    ("__import__", r"uses __import__"),
    ("eval", r"uses eval"),
    ("getattr(x, n)", r"uses getattr"),
    ("x.__class__", r"uses the attribute __class__"),
    ("x._base", r"uses the attribute _base"),
    ("(lambda: 1)()", r"uses a lambda"),
    ("[i for i in range(n)][0]", r"uses ListComp syntax"),
    ("(m := n)", r"uses an assignment \(:=\)"),
    ("f'{n}'", r"uses an f-string"),
])
def test_an_expression_string_is_a_formula(grid, message, saxpy, tmp_path):
    with pytest.raises(ExportError, match=r"^grid of scale: .* " + message):
        export(saxpy, "torch", tmp_path / "pkg", grid=grid, block=1)
    assert not (tmp_path / "pkg").exists()


def test_a_function_rule_reaches_no_import_or_private_attribute(saxpy, tmp_path):
    def imports(n):
        import os
        return os.cpu_count()

    def private(x):
        return x.__class__

    def opens(n):
        return open("PWNED", "w")
    for rule, message in ((imports, r"^grid of scale: imports uses import"),
                          (private, r"^grid of scale: private uses the attribute __class__"),
                          (opens, r"^grid of scale: opens uses open, which a rule cannot call")):
        with pytest.raises(ExportError, match=message):
            export(saxpy, "torch", tmp_path / "pkg", grid=rule, block=1)
    no_pwned(tmp_path)


# --- generated names never collide with the user's ----------------------------------------------

BASE_C = 'extern "C" __global__ void k(float* y, int n) { if (n) y[0] = n; }\n'
BASE_TORCH = ('extern "C" __global__ void k(const float* x, float* y, int n) '
              '{ if (n) y[0] = x[0]; }\n')


def c_identifiers(text: str) -> set[str]:
    """The identifiers of C source ``text``, comments and strings aside."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r'"(?:\\.|[^"\\])*"', " ", text)
    return set(re.findall(r"\b[A-Za-z_]\w*\b", text))


def py_identifiers(text: str) -> set[str]:
    """The names of Python source ``text`` (keywords and attributes included)."""
    return {t.string for t in tokenize.generate_tokens(io.StringIO(text).readline)
            if t.type == tokenize.NAME}


def usable(names, kernels: bool) -> list[str]:
    """Names a CUDA C++ kernel or parameter can have; for kernels, as the cell binds them in
    Python (underscores at either end dropped, runs of them one: ``_K_k`` is the kernel
    ``K_k``)."""
    names = {re.sub("_+", "_", n).strip("_") for n in names} - {""} if kernels else set(names)
    return sorted(n for n in names if n not in CXX_KEYWORDS and not n.startswith("__"))


def built(names, source):
    """The cell ``source(names)`` built, less the names it cannot compile with (macros of
    NVRTC's own headers), found by halving."""
    def ok(ns):
        try:
            return build(source(ns), {"arch": ARCH})
        except (CompileError, Error):
            return None
    names = list(names)
    m = ok(names)
    if m is not None:
        return m, names
    if len(names) == 1:
        return None, []
    half = len(names) // 2
    _, a = built(names[:half], source)
    _, b = built(names[half:], source)
    return (ok(a + b) if a + b else None), a + b


def kernels_named(names):
    return "".join(f'extern "C" __global__ void {n}(float* y, int n) {{ if (n) y[0] = n; }}\n'
                   for n in names)


def params_named(names):
    return ('extern "C" __global__ void k(float* y, int n, '
            + ", ".join(f"int {n}" for n in names) + ") { if (n) y[0] = n; }\n"
            'extern "C" __global__ void kp(int n, '
            + ", ".join(f"float* {n}" for n in names) + f") {{ if (n) *{names[0]} = n; }}\n")


@pytest.fixture(scope="module")
def generated_names(tmp_path_factory):
    """Every name the generators write of their own (from a one-kernel export in each format),
    each format's apart; kernel.h's also without its prefix (``kx_load`` -> ``load``)."""
    root = tmp_path_factory.mktemp("base")
    c = export(build(BASE_C, {"arch": ARCH}), "cubin", root / "kx")
    t = export(build(BASE_TORCH, {"arch": ARCH}), "torch", root / "tp", grid=grid_rule,
               block=block_rule, outputs={"y": "like x"})
    h = c_identifiers((root / "kx" / "kernel.h").read_text())
    h |= {n[3:] for n in h if n.startswith("kx_")} | C_EXTRA
    own = {"c": h - {"k", "y", "n"},
           "loader": py_identifiers((root / "kx" / "kernel.py").read_text()) - {"k", "y", "n"},
           "torch": py_identifiers((root / "tp" / "__init__.py").read_text())
           - {"k", "x", "y", "n", "tp"}}
    return {fmt: {"kernels": usable(names, True), "params": usable(names, False)}
            for fmt, names in own.items()}


def test_the_generated_names_are_many(generated_names):
    """What the later tests try: the names the issue found and the generators' own."""
    assert {"load", "unload", "t", "module", "CUdeviceptr", "linux"} <= \
        set(generated_names["c"]["kernels"])
    assert {"grid_x", "stream", "shared_bytes", "cm_args", "cm_m", "CUdeviceptr", "linux"} <= \
        set(generated_names["c"]["params"])
    assert {"LoadedKernel", "ctypes", "CudaError", "len", "sys", "threading"} <= \
        set(generated_names["loader"]["kernels"])
    assert {"hashlib", "cdiv", "math", "torch", "block_rule", "TEMPLATES", "K_k"} <= \
        set(generated_names["torch"]["kernels"])
    assert {"_torch", "_driver", "_K_k", "_launch_k", "_outputs_k", "_dev", "_grid_k"} <= \
        set(generated_names["torch"]["params"])


@pytest.mark.parametrize("what", ["kernels", "params"])
def test_kernel_h_compiles_with_every_generated_name(what, generated_names, tmp_path):
    wanted = generated_names["c"][what]
    m, names = built(wanted, kernels_named if what == "kernels" else params_named)
    assert len(names) > 0.9 * len(wanted), sorted(set(wanted) - set(names))
    if what == "kernels":            # each kernel bound under the name tried
        assert sorted(k.name for k in collect(m)) == sorted(names)
    e = export(m, "cubin", tmp_path / "kx")
    ks = e.manifest["kernels"]
    calls = "".join(
        f"    (void)kx_{k['c']}(&m, 1, 1, 1, 1, 1, 1, 0, NULL"
        + "".join(", 0" for _ in k["params"]) + ");\n" for k in ks)
    compiles_as_c_and_cxx(e.path, tmp_path, '#include "kernel.h"\nvoid f(void);\n'
                          'void f(void)\n{\n    kx_t m;\n    (void)kx_load(&m);\n' + calls +
                          '    (void)kx_unload(&m);\n}\n')
    if what == "kernels":
        assert {k["name"] for k in ks} >= {"load", "unload", "t", "module"}


def test_kernel_py_imports_with_every_generated_name(generated_names, tmp_path):
    km, knames = built(generated_names["loader"]["kernels"], kernels_named)
    pm, pnames = built(generated_names["loader"]["params"], params_named)
    assert {"LoadedKernel", "ctypes", "len"} <= set(knames)
    assert sorted(k.name for k in collect(km)) == sorted(knames)
    out = {}
    for tag, m in (("kernels", km), ("params", pm)):
        e = export(m, "cubin", tmp_path / tag / "kx")
        run = tmp_path / f"run_{tag}"
        run.mkdir()
        out[tag] = python(f"""
            sys.path.insert(0, {e.path!r})
            import kernel
            m = json.loads(open({e.path + '/manifest.json'!r}).read())
            got = {{}}
            for k in m["kernels"]:
                obj = getattr(kernel, k["python"])
                got[k["name"]] = [type(obj).__name__, obj.symbol, list(obj.params)]
            try:     # the run time still works: it says there is no driver (or no GPU)
                getattr(kernel, m["kernels"][0]["python"])[1, 1](*[0] * len(m["kernels"][0]["params"]))
                error = None
            except kernel.CudaError as err:
                error = err.name
            print(json.dumps({{"got": got, "error": error, "types": [type(kernel.LoadedKernel).__name__,
                              type(kernel.ctypes).__name__, type(kernel.struct).__name__]}}))
            """, run, blocked=("cuda_magic", "torch", "numpy", "cupy"))
        no_pwned(run)
        for k in collect(m):
            assert out[tag]["got"][k.name] == ["LoadedKernel", k.symbol, [p.name for p in k.params]]
        assert out[tag]["types"] == ["type", "module", "module"]
        assert out[tag]["error"] in ("CUDA_ERROR_NO_DEVICE", "CUDA_ERROR_INVALID_VALUE",
                                     "CUDA_ERROR_NO_BINARY_FOR_GPU")


def test_the_torch_package_works_with_every_generated_name(generated_names, tmp_path):
    """Each op registers its schema and, on CPU tensors that say they are on GPU 0, reaches the
    launch with the rules' values: for kernels and parameters named after every name the
    package writes for itself."""
    km, knames = built(generated_names["torch"]["kernels"], lambda ns: "".join(
        f'extern "C" __global__ void {n}(const float* x, float* y, int n) {{ if (n) y[0] = x[0]; }}\n'
        for n in ns))
    pm, pnames = built(generated_names["torch"]["params"], lambda ns: (
        'extern "C" __global__ void k(const float* x, float* y, int n, '
        + ", ".join(f"int {n}" for n in ns) + ") { if (n) y[0] = x[0]; }\n"
        'extern "C" __global__ void kp(float* y, int n, '
        + ", ".join(f"const float* {n}" for n in ns) + ") { if (n) y[0] = 1; }\n"))
    assert {"hashlib", "cdiv", "math", "torch", "K_k", "block_rule"} <= set(knames)
    assert sorted(k.name for k in collect(km)) == sorted(knames)
    assert {"_torch", "_K_k", "_launch_k"} <= set(pnames)
    a = export(km, "torch", tmp_path / "kn_pkg", grid=grid_rule, block=block_rule,
               outputs={"y": "like x"})
    b = export(pm, "torch", tmp_path / "pn_pkg", grid="cdiv(n, 2)", block="math.gcd(n, 8)",
               kernels={"k": {"outputs": {"y": "like x"}}})
    run = tmp_path / "run"
    run.mkdir()
    out = python(f"""
        import torch
        sys.path.insert(0, {str(tmp_path)!r})
        import kn_pkg, pn_pkg
        torch.Tensor.get_device = lambda self: 0          # as if on GPU 0
        out = {{}}
        for pkg in (kn_pkg, pn_pkg):
            m = json.load(open(pkg.__file__.rsplit("/", 1)[0] + "/manifest.json"))
            calls = []
            pkg._torch.launch = lambda k, dev, g, b, s, *v: calls.append([k.name, g, b, s, len(v)])
            for k in m["kernels"]:
                op = getattr(pkg, k["python"])
                schema = str(getattr(getattr(torch.ops, pkg.__name__), k["python"]).default._schema)
                args = [torch.zeros(4) if p["kind"] == "pointer" else 4 for p in k["params"]
                        if p["name"] not in k["op"]["outputs"]]
                op(*args)
                out[pkg.__name__ + "." + k["name"]] = [schema, calls.pop()]
        print(json.dumps(out))
        """, run)
    no_pwned(run)
    for e in (a, b):
        for k in e.manifest["kernels"]:
            schema, call = out[f"{e.name}.{k['name']}"]
            assert schema == e.ops[k["name"]]
            n_values = len(k["params"])
            want = [k["name"], 2, 8, 0, n_values] if e is a else \
                [k["name"], 2, 4, 0, n_values]
            assert call == want, (k["name"], call)


# --- what an export refuses ---------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["torch", "wheel"])
def test_package_names_that_shadow_a_module_are_refused(fmt, saxpy, tmp_path):
    for name in ("torch", "ctypes", "math", "struct", "prim", "aten", "json", "pathlib", "cuda_magic",
                 "hashlib", *sorted(n for n in sys.stdlib_module_names if n.isidentifier())):
        with pytest.raises(ExportError, match=rf"^name='{name}': "):
            export(saxpy, fmt, tmp_path / "pkg", name=name, grid=1, block=1)
    for name in ("class", "None", "lambda"):
        with pytest.raises(ExportError, match=r"a package name is a Python identifier"):
            export(saxpy, fmt, tmp_path / "pkg", name=name, grid=1, block=1)
    assert not (tmp_path / "pkg").exists()


def test_a_torch_package_directory_named_like_a_module_is_refused(saxpy, tmp_path):
    """A torch package is imported by its directory's name: ``out/math`` would shadow math."""
    with pytest.raises(ExportError, match=r"^path='math': a package of that name would shadow"):
        export(saxpy, "torch", tmp_path / "math", name="my_math", grid=1, block=1)
    with pytest.raises(ExportError, match=r"^name='torch': "):
        export(saxpy, "torch", tmp_path / "torch", grid=1, block=1)
    assert list(tmp_path.iterdir()) == []
    export(saxpy, "cubin", tmp_path / "math")              # a C prefix shadows no module
    with pytest.raises(ExportError, match=r"^name='size': kernel.h would declare size_t"):
        export(saxpy, "cubin", tmp_path / "size")


@pytest.mark.parametrize("version", ["١.٠.٠", "1.0.0-beta", "01.0", "1.0\n", "1.0 ", "v1.0",
                                     '1.0"\n[x]', "1." * 40 + "0", "１.0", "1.0.0a", "", None])
def test_versions_are_pep_440(version, saxpy, tmp_path):
    with pytest.raises(ExportError, match=r"^version=.*: a version like '0.1.0' \(PEP 440"):
        export(saxpy, "wheel", tmp_path / "w", version=version, grid=1, block=1)
    assert not (tmp_path / "w").exists()


@pytest.mark.parametrize("version", ["0", "1.0rc1", "2.0.post1", "1!2.0", "1.2.3.dev4", "3.0b2"])
def test_canonical_versions_make_a_wheel_pip_can_read(version, saxpy, tmp_path):
    e = export(saxpy, "wheel", tmp_path / "w", version=version, grid=1, block=1)
    assert e.wheel.endswith(f"/w-{version}-py3-none-any.whl")
    with zipfile.ZipFile(e.wheel) as z:
        assert f"Version: {version}\n" in z.read(f"w-{version}.dist-info/METADATA").decode()


def test_a_cell_with_no_kernels_says_so(tmp_path):
    template = build("template <int N> __global__ void k(float* y) { y[0] = N; }", {"arch": ARCH})
    device = build("__device__ float f(float x) { return x; }", {"arch": ARCH})
    for fmt in ("cubin", "torch"):
        with pytest.raises(ExportError, match=r"^the cell has no kernels to export: k<\d+> is a "
                                              r"template with no instance in the binary; "
                                              r"instantiate one \(--instantiate \"k<\d+>\""):
            export(template, fmt, tmp_path / "x", grid=1, block=1) if fmt == "torch" else \
                export(template, fmt, tmp_path / "x")
        with pytest.raises(ExportError, match=r"^the cell has no kernels to export: it declares "
                                              r"no __global__ function"):
            export(device, fmt, tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_kernels_of_the_wrong_type_is_an_export_error(saxpy, tmp_path):
    for kernels in (5, 2.5, object(), b"scale"):
        for obj in (saxpy, saxpy.scale if hasattr(saxpy, "scale") else saxpy["scale"]):
            with pytest.raises(ExportError, match=r"^kernels=.*: give a kernel's name, a list"):
                export(obj, "torch", tmp_path / "pkg", kernels=kernels, grid=1, block=1)
    assert not (tmp_path / "pkg").exists()


def test_an_output_dtype_must_be_a_torch_dtype(tmp_path):
    m = build('extern "C" __global__ void untyped(const float* x, void* out, int n) '
              '{ if (threadIdx.x < n) ((float*)out)[threadIdx.x] = x[threadIdx.x]; }',
              {"arch": ARCH})
    for dtype in ("float99", "Float16", "float", "torch.float16", "", "float16\n"):
        with pytest.raises(ExportError, match=r"^outputs of untyped: 'out': dtype .* is no torch "
                                              r"dtype an output can have; give one of float32, "
                                              r"float64, float16, bfloat16"):
            export(m, "torch", tmp_path / "pkg", grid=1, block=1,
                   outputs={"out": ("like x", dtype)})
    assert not (tmp_path / "pkg").exists()
    torch = pytest.importorskip("torch")
    e = export(m, "torch", tmp_path / "pkg", grid=1, block=1,
               outputs={"out": ("like x", torch.bfloat16)})
    assert e.manifest["kernels"][0]["op"]["outputs"] == {"out": "like x"}
    assert "_untyped_out = _torch.dtype('bfloat16')" in (tmp_path / "pkg" / "__init__.py").read_text()


def test_an_unclosed_quote_in_the_magic_line_is_a_usage_error(shell, tmp_path):
    shell.run_cell_magic("cuda", f"--arch {ARCH} --name m", SAXPY)
    for line in (f"m cubin '{tmp_path}/x", f'm cubin "{tmp_path}/x', f'm cubin "{tmp_path}/x\\"'):
        with pytest.raises(UsageError, match=r"^PATH .*: no closing quote; write PATH in "
                                             r"matching quotes") as err:
            shell.run_line_magic("cuda_export", line)
        assert "\n" not in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_the_lines_printed_for_a_renamed_package_work(saxpy, tmp_path):
    """name= different from the directory: the printed lines import the package (by its
    directory's name, importlib for one that is no identifier) and reach the op."""
    a = export(saxpy, "torch", tmp_path / "scale_dir", name="scale_ns", grid=1, block=1)
    b = export(saxpy, "torch", tmp_path / "my-ops", name="my_ops", grid=1, block=1)
    lines = {}
    for e in (a, b):
        use = cuda_magic.view(e).text().split("\nuse:\n", 1)[1].splitlines()
        path_line = use[0].strip().split("  (or copy")[0]
        import_line = use[1].strip().split("   #")[0].rsplit(";", 1)[0]
        op = use[1].strip().split("   #")[0].rsplit(";", 1)[1].strip().split("(")[0]
        lines[e.name] = [path_line, import_line, op]
    assert lines["scale_ns"][1] == "import scale_dir"
    assert lines["my_ops"][1] == "import importlib; my_ops = importlib.import_module('my-ops')"
    run = tmp_path / "run"
    run.mkdir()
    out = python("import sys, torch\n" + "".join(
        f"{p}\n{i}\nassert callable({op})\n" for p, i, op in lines.values()) + textwrap.dedent("""
        print(json.dumps([str(torch.ops.scale_ns.scale.default._schema),
                          str(torch.ops.my_ops.scale.default._schema)]))
        """), run)
    assert out == [a.ops["scale"], b.ops["scale"]]


# --- the manifest is the same wherever the roots are ---------------------------------------------

class _Config:
    """A resolved config with other lists (``config``), the rest as it was."""

    def __init__(self, resolved, config: dict):
        self._resolved, self.config, self.provenance = resolved, config, resolved.provenance

    def __getitem__(self, key):
        return self._resolved[key]


def _moved(ks, old: dict, new: dict):
    """``ks`` as if built where each header family is at ``new`` instead of ``old``, with an
    include of the user's under that root, in a build directory of its own."""
    def move(text):
        for family, d in sorted(old.items(), key=lambda p: -len(p[1])):
            text = text.replace(d, new[family])
        return text

    def result(r):
        argv = [move(a) for a in r.argv] + ["-I" + new["cudart"] + "/../extra"]
        config = _Config(r.config, {**r.config.config, "nvrtc": [
            *r.config.config.get("nvrtc", []), "-I" + new["cudart"] + "/../extra"]})
        return dataclasses.replace(r, argv=tuple(argv), config=config)
    return [dataclasses.replace(k, builds=tuple(dataclasses.replace(b, result=result(b.result))
                                                 for b in k.builds)) for k in ks]


def test_the_manifest_is_the_same_bytes_wherever_the_include_roots_are(saxpy, tmp_path):
    real = {f: d for f, d in header_dirs().items()}
    ks = collect(saxpy)
    out = []
    for root in ("/opt/machine-a/site-packages", "/srv/other/py3/lib"):
        fake = {f: d.replace(str(pathlib.Path(real["cudart"]).parents[2]), root)
                for f, d in real.items()}
        m = manifest_module.manifest("kx", "cubin", "0.1.0", _moved(ks, real, fake),
                                     saxpy.source, "0", families=fake)
        out.append(manifest_module.dumps(m))
        assert root not in out[-1].decode() and "{cuda_include}" in out[-1].decode()
    assert out[0] == out[1]
    # the unmoved build gives the same bytes too, less the include added above
    argv = json.loads(out[0])["builds"][0]["argv"]
    assert argv[:-1] == json.loads(manifest_module.dumps(manifest_module.manifest(
        "kx", "cubin", "0.1.0", ks, saxpy.source, "0")))["builds"][0]["argv"]


def test_nvcc_and_pch_paths_are_left_out_or_named(tmp_path):
    where = manifest_module.roots({"cudart": "/x/include", "cccl": "/x/include/cccl"})
    tmp = next(d for d, role in where if role == "tmp")
    home = next(d for d, role in where if role == "home")
    argv = ["/some/where/bin/nvcc", "-I/x/include", "-I/x/include/cccl/cub",
            f"--keep-dir={tmp}/cuda-magic-abc123", "-o", f"{tmp}/cuda-magic-abc123/out.fatbin",
            f"{tmp}/cuda-magic-abc123/cell.cu", f"-I{home}/proj/include", "-I.",
            f"--use-pch={home}/.cache/x.pch", f"--create-pch={tmp}/y.pch.12.tmp", "--use_fast_math"]
    assert manifest_module.portable(argv, where, "nvcc") == [
        "{nvcc}", "-I{cuda_include}", "-I{cccl}/cub", "--keep-dir={build}", "-o",
        "{build}/out.fatbin", "{build}/cell.cu", "-I{home}/proj/include", "-I.",
        "--use_fast_math"]


# --- the wheel keeps its torch dependency -------------------------------------------------------

def test_the_wheel_requires_torch_checked_without_torch(tmp_path):
    out = python(f"""
        from cuda_magic import export
        from cuda_magic.cell import build
        m = build({SAXPY!r}, {{"arch": {ARCH!r}}})
        e = export(m, "wheel", {str(tmp_path / "w")!r}, grid="cdiv(n, 256)", block=256)
        print(json.dumps({{"wheel": e.wheel, "torch": "torch" in sys.modules}}))
        """, tmp_path, blocked=("torch",))
    assert out["torch"] is False
    toml = tomllib.loads((tmp_path / "w" / "pyproject.toml").read_text())
    assert toml["project"]["dependencies"] == ["torch>=2.4"]
    with zipfile.ZipFile(out["wheel"]) as z:
        meta = email.parser.Parser().parsestr(z.read("w-0.1.0.dist-info/METADATA").decode())
    assert meta.get_all("Requires-Dist") == ["torch>=2.4"]


def test_keyword_kernel_names_get_python_names(tmp_path):
    """A C kernel may be named like a Python keyword (``pass``, ``None``): kernel.py and the
    torch package give it a trailing ``_``."""
    m = build(kernels_named(["pass", "None", "lambda", "from"]), {"arch": ARCH})
    c = export(m, "cubin", tmp_path / "kx")
    assert {k["name"]: k["python"] for k in c.manifest["kernels"]} == {
        "pass": "pass_", "None": "None_", "lambda": "lambda_", "from": "from_"}
    t = export(m, "torch", tmp_path / "kw_ops", grid=1, block=1)
    assert sorted(t.ops) == ["None", "from", "lambda", "pass"]
    assert t.ops["pass"].startswith("kw_ops::pass_(")
    for f in (tmp_path / "kx" / "kernel.py", tmp_path / "kw_ops" / "__init__.py"):
        compile(f.read_text(), str(f), "exec")
    assert all(not keyword.iskeyword(k["python"]) for k in t.manifest["kernels"])


@pytest.mark.gpu
def test_kernels_and_parameters_named_like_generated_names_run_on_the_gpu(tmp_path):
    """On the GPU: an op named cdiv (beside rules that call cdiv), one named LoadedKernel with a
    parameter named _torch, and kernel.py's LoadedKernel_ give the kernels' results."""
    torch = pytest.importorskip("torch")
    import importlib.util
    m = build('extern "C" __global__ void cdiv(float* y, int n, int stream) {\n'
              '    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = i + stream; }\n'
              'extern "C" __global__ void LoadedKernel(float* y, int n, int _torch) {\n'
              '    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2 * i + _torch; }\n',
              {})
    name = f"gpu_names_{tmp_path.name[-12:].replace('-', '_')}"
    e = export(m, "torch", tmp_path / name, grid="cdiv(n, 256)", block=256)
    c = export(m, "cubin", tmp_path / "kx")
    assert [k["python"] for k in e.manifest["kernels"]] == ["cdiv_", "LoadedKernel"]
    sys.path.insert(0, str(tmp_path))
    try:
        pkg = __import__(name)
        y = torch.zeros(1000, device="cuda")
        pkg.cdiv_(y, 1000, 5)
        assert torch.equal(y, torch.arange(1000, device="cuda", dtype=torch.float32) + 5)
        pkg.LoadedKernel(y, 1000, 3)
        assert torch.equal(y, 2 * torch.arange(1000, device="cuda", dtype=torch.float32) + 3)
        spec = importlib.util.spec_from_file_location(f"{name}_loader", f"{c.path}/kernel.py")
        loader = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(loader)
        loader.LoadedKernel_[4, 256](y, 1000, 7)
        loader.cdiv[4, 256](y, 10, 1)
        torch.cuda.synchronize()
        want = 2 * torch.arange(1000, device="cuda", dtype=torch.float32) + 7
        want[:10] = torch.arange(10, device="cuda", dtype=torch.float32) + 1
        assert torch.equal(y, want)
    finally:
        sys.path.remove(str(tmp_path))
