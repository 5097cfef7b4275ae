"""cuda_magic.settings: every setting in one module, read by the modules that use it (CPU)."""

import ast
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import cuda_magic
from cuda_magic import InputTypeError
from cuda_magic import ConfigError, settings
from cuda_magic.compile import pch
from cuda_magic.compile.backends import limits
from cuda_magic.compile.cache import Cache
from cuda_magic.compile.compiler import cache

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "cuda_magic"
ENV_NAME = re.compile(r"(?<!\w)CUDA_MAGIC_[A-Z0-9_]*[A-Z0-9](?!\w)")   # not _CUDA_MAGIC_FN_ (a macro)


@pytest.fixture(autouse=True)
def kept(monkeypatch):
    """Each test leaves the settings as it found them, the environment without our variables."""
    for s in settings.TABLE.values():
        if not s.at_import:
            monkeypatch.delenv(s.env, raising=False)
    saved = dict(settings._values)
    yield
    for name in settings.TABLE:
        if name not in saved and name in settings._values:
            settings.reset(name)
    for name, value in saved.items():
        if settings._values.get(name, object()) != value:
            settings.put(name, value)


# ---- one module reads the CUDA_MAGIC_ variables -----------------------------------------------

def _environ_reads(tree: ast.AST):
    """The key expressions of every read of os.environ (get, [], in, pop, setdefault) and
    os.getenv in a module."""
    def is_environ(node):
        return (isinstance(node, ast.Attribute) and node.attr == "environ") or \
               (isinstance(node, ast.Name) and node.id == "environ")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in ("get", "pop", "setdefault") \
                    and is_environ(f.value):
                yield node.args[0]
            if isinstance(f, ast.Attribute) and f.attr == "getenv" or \
                    isinstance(f, ast.Name) and f.id == "getenv":
                yield node.args[0]
        if isinstance(node, ast.Subscript) and is_environ(node.value) and \
                isinstance(node.ctx, ast.Load):
            yield node.slice
        if isinstance(node, ast.Compare) and len(node.comparators) == 1 and \
                isinstance(node.ops[0], (ast.In, ast.NotIn)) and is_environ(node.comparators[0]):
            yield node.left


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def scan(root: Path = PACKAGE) -> list[str]:
    """Where a module other than settings.py reads a CUDA_MAGIC_ variable or spells one's name
    in code (not in a docstring or a message): ``path:line: what``."""
    import importlib
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent)
        if rel.as_posix() == "cuda_magic/settings.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    id(node) not in docs and ENV_NAME.fullmatch(node.value):
                found.append(f"{rel}:{node.lineno}: the name {node.value!r}")
        keys = list(_environ_reads(tree))
        if not keys:
            continue
        module = None
        for key in keys:
            if isinstance(key, ast.Constant):
                value = key.value
            else:             # a name or attribute: its value in the module (ENV, launcher.CHILD_ENV)
                if module is None:
                    name = ".".join(rel.with_suffix("").parts).removesuffix(".__init__")
                    module = vars(importlib.import_module(name))
                try:
                    value = eval(compile(ast.Expression(key), str(rel), "eval"), dict(module))
                except Exception:
                    continue      # a local variable: not a module's constant
            if isinstance(value, str) and value.startswith("CUDA_MAGIC_"):
                found.append(f"{rel}:{key.lineno}: reads os.environ[{value!r}]")
    return found


def test_no_module_but_settings_reads_a_cuda_magic_variable():
    assert scan() == []


def test_the_scan_finds_what_it_looks_for(tmp_path):
    """The scan itself, on a planted package: a literal read, a read through a module constant
    and through another module's, getenv, ``in``, and a bare name in code."""
    pkg = tmp_path / "cuda_magic"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "settings.py").write_text('import os\nX = os.environ.get("CUDA_MAGIC_X")\n')
    (pkg / "sub" / "a.py").write_text(
        '"""Docs may say CUDA_MAGIC_A."""\nimport os\n'
        'ENV = "CUDA_MAGIC_A"\n'
        'def f():\n    return os.environ.get(ENV), os.getenv("CUDA_MAGIC_B"), "CUDA_MAGIC_C" in os.environ\n'
        'def g():\n    return os.environ["CUDA_MAGIC_D"], os.environ.get("PATH")\n')
    sys.path.insert(0, str(tmp_path))
    saved = {k: v for k, v in sys.modules.items() if k == "cuda_magic" or k.startswith("cuda_magic.")}
    try:
        for k in saved:
            del sys.modules[k]
        found = scan(pkg)
    finally:
        sys.path.remove(str(tmp_path))
        for k in [k for k in sys.modules if k == "cuda_magic" or k.startswith("cuda_magic.")]:
            del sys.modules[k]
        sys.modules.update(saved)
    text = "\n".join(found)
    assert "settings.py" not in text
    for want in ("the name 'CUDA_MAGIC_A'", "reads os.environ['CUDA_MAGIC_A']",
                 "'CUDA_MAGIC_B'", "'CUDA_MAGIC_C'", "'CUDA_MAGIC_D'"):
        assert want in text, text
    assert "PATH" not in text


def test_every_variable_the_docs_name_is_a_setting():
    """Each CUDA_MAGIC_ variable docs/ and the package's docstrings name is in the table (or is
    the helper's marker, or a test's own)."""
    known = {s.env for s in settings.TABLE.values()} | {settings.TOOL_CHILD}
    tests_own = {"CUDA_MAGIC_ARTIFACTS",          # tests/browser_util.py: where screenshots go
                 "CUDA_MAGIC_UPDATE_SCREENSHOTS"}  # and whether docs/img/ is rewritten
    named = set()
    for path in [*(ROOT / "docs").rglob("*.md"), *PACKAGE.rglob("*.py"), ROOT / "README.md"]:
        if path.exists() and path.suffix in (".md", ".py") and "thin" not in path.parts:
            named |= set(ENV_NAME.findall(path.read_text(encoding="utf-8")))
    assert named - known - tests_own == set()


def test_the_docs_table_lists_every_setting():
    text = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(\w+)` \| `(CUDA_MAGIC_\w+)`", text, re.M))
    assert rows == {s.name: s.env for s in settings.TABLE.values()}


# ---- each setting: default, environment, set, reset --------------------------------------------

def test_defaults():
    assert {n: settings.TABLE[n].default_value() for n in settings.TABLE
            if n not in ("cache_dir", "cache_limit", "pch_dir")} == {
        "compile_timeout": None, "launch_timeout": 60.0, "pch": True, "pch_limit": 2 << 30, "stale_tmp_seconds": 300,
        "static_sass": False, "plan_launch": "auto", "remote": None}
    assert settings.TABLE["cache_limit"].default == 256 * 2**20
    assert settings.TABLE["cache_dir"].default is None


def test_set_beats_environment_beats_default(monkeypatch):
    assert settings.pch_limit == 2 << 30 and settings.source("pch_limit") == "default"
    monkeypatch.setenv("CUDA_MAGIC_PCH_LIMIT", " 1000 ")
    assert settings.pch_limit == 1000 and settings.source("pch_limit") == "CUDA_MAGIC_PCH_LIMIT"
    settings.pch_limit = 5
    assert settings.pch_limit == 5 and settings.source("pch_limit") == "set"
    settings.reset("pch_limit")
    assert settings.pch_limit == 1000
    monkeypatch.setenv("CUDA_MAGIC_PCH_LIMIT", "lots")
    with pytest.raises(ConfigError, match="CUDA_MAGIC_PCH_LIMIT must be a whole number >= 0, not 'lots'"):
        settings.pch_limit


def test_values_are_checked_and_errors_name_who_set_them():
    with pytest.raises(ConfigError, match=r"^cuda_magic.settings.plan_launch: 'auto' or 'bindings', "
                                          r"not 'cupy'$"):
        settings.plan_launch = "cupy"
    with pytest.raises(ConfigError, match="^nbytes must be >= 0, not -1$"):
        pch.set_limit(-1)
    # one check for every count: the cache's limit reads the same, a TypeError for a non-int
    with pytest.raises(ConfigError, match="^nbytes must be >= 0, not -1$"):
        cuda_magic.set_cache_limit(-1)
    with pytest.raises(InputTypeError, match="^nbytes must be a whole number >= 0, not '1 GB'$"):
        cuda_magic.set_cache_limit("1 GB")
    with pytest.raises(ConfigError, match="^nbytes must be a whole number >= 0, not True$"):
        pch.set_limit(True)
    with pytest.raises(ConfigError, match="set_compile_timeout: the compile time limit"):
        cuda_magic.set_compile_timeout("soon")
    with pytest.raises(ConfigError, match="no setting 'pch_limt'; the settings are cache_dir, "):
        settings.get("pch_limt")
    with pytest.raises(AttributeError):
        settings.pch_limt
    assert settings.plan_launch == "auto" and settings.source("plan_launch") == "default"


def test_override_restores_set_and_unset():
    settings.pch_limit = 7
    with settings.override(pch_limit=9, plan_launch="bindings"):
        assert (settings.pch_limit, settings.plan_launch) == (9, "bindings")
    assert settings.pch_limit == 7 and settings.source("plan_launch") == "default"
    with pytest.raises(ConfigError):
        with settings.override(plan_launch="bindings", stale_tmp_seconds=-1):
            pass
    assert settings.source("plan_launch") == "default"


def test_read_each_use(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_MAGIC_PCH", "0")
    assert not pch.enabled()
    monkeypatch.setenv("CUDA_MAGIC_PCH", "OFF")
    assert not pch.enabled()
    monkeypatch.setenv("CUDA_MAGIC_PCH", "1")
    assert pch.enabled()
    monkeypatch.setenv("CUDA_MAGIC_PCH_DIR", str(tmp_path / "p"))
    assert pch.directory() == str(tmp_path / "p")
    monkeypatch.setenv("CUDA_MAGIC_COMPILE_TIMEOUT", "2.5")
    assert limits.compile_timeout() == 2.5 == settings.compile_timeout
    monkeypatch.setenv("CUDA_MAGIC_PLAN_LAUNCH", "bindings")
    assert settings.plan_launch == "bindings"
    monkeypatch.setenv("CUDA_MAGIC_STALE_TMP_SECONDS", "7")
    assert settings.stale_tmp_seconds == 7


# ---- the setters are the settings -------------------------------------------------------------

def test_setters_set_the_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    cuda_magic.set_compile_timeout(30)
    assert settings.compile_timeout == 30 and limits.compile_timeout() == 30
    pch.set_limit(12345)
    assert settings.pch_limit == 12345
    before = cache().max_bytes
    try:
        cuda_magic.set_cache_limit(10 * 2**20)
        assert settings.cache_limit == 10 * 2**20 == cache().max_bytes
        settings.cache_limit = 11 * 2**20                 # the setting applies it too
        assert cache().max_bytes == 11 * 2**20
        with pytest.raises(TypeError):                    # the cache's own check, kept
            settings.cache_limit = "1GB"
        assert settings.cache_limit == cache().max_bytes == 11 * 2**20
        cuda_magic.set_cache_dir(tmp_path / "c")
        assert settings.cache_dir == str(tmp_path / "c") and cache().directory == str(tmp_path / "c")
        settings.cache_dir = None
        assert cache().directory is None and cache().max_bytes == 11 * 2**20
    finally:
        cuda_magic.set_cache_dir(None)
        cuda_magic.set_cache_limit(before)


def test_stale_temp_age_is_the_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    d = tmp_path / "cache"
    Cache(d)
    tmp = d / ".tmp-abc.json"
    tmp.write_text("{}")
    old = time.time() - 100
    os.utime(tmp, (old, old))
    Cache(d)
    assert tmp.exists()                               # 100 s < 300 s
    with settings.override(stale_tmp_seconds=60):
        Cache(d)
    assert not tmp.exists()


def test_magics_cache_dir_reads_the_setting(shell, tmp_path, monkeypatch):
    from cuda_magic.magics import CudaMagics
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    try:
        settings.cache_dir = str(tmp_path / "c")
        assert CudaMagics(shell=shell).cache_dir == str(tmp_path / "c")
    finally:
        cuda_magic.set_cache_dir(None)
    assert CudaMagics(shell=shell).cache_dir is None


# ---- variables read at import ---------------------------------------------------------------

def _run(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **env}, cwd=ROOT)


def test_read_at_import_and_never_failing_it(tmp_path):
    code = ("import cuda_magic; from cuda_magic.compile.compiler import cache; "
            "print(cache().max_bytes, cache().directory, cuda_magic.settings.source('cache_limit'))")
    out = _run(code, CUDA_MAGIC_CACHE_LIMIT="1000", CUDA_MAGIC_CACHE_DIR=str(tmp_path / "c"),
               XDG_CACHE_HOME=str(tmp_path / "xdg"))
    assert out.returncode == 0 and out.stdout.split() == ["1000", str(tmp_path / "c"),
                                                          "CUDA_MAGIC_CACHE_LIMIT"], out.stderr
    out = _run(code, CUDA_MAGIC_CACHE_LIMIT="1 GB")
    assert out.returncode == 0 and out.stdout.split()[0] == str(256 * 2**20)
    assert "ignoring CUDA_MAGIC_CACHE_LIMIT (CUDA_MAGIC_CACHE_LIMIT must be a whole number" in out.stderr
    out = _run(code + "; import os; os.environ['CUDA_MAGIC_CACHE_LIMIT'] = '5'; "
               "print(cuda_magic.settings.cache_limit)", CUDA_MAGIC_CACHE_LIMIT="1000")
    assert out.stdout.split()[-1] == "1000"              # read once: what the cache was built with


def test_monkeypatch_style_set_and_undo(monkeypatch):
    """A test's monkeypatch.setattr(settings, NAME, v) is undone by ``del``: back to unset."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(settings, "plan_launch", "bindings")
        assert settings.plan_launch == "bindings"
    assert settings.source("plan_launch") == "default"
    monkeypatch.setenv("CUDA_MAGIC_PLAN_LAUNCH", "bindings")
    assert settings.plan_launch == "bindings"          # the environment is in force again
