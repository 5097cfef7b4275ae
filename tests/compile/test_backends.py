"""Tests for cuda_magic.compile.backends: the registry, ptxas forwarding, and the compile
flow through a fake backend (no GPU or CUDA toolkit needed)."""

from __future__ import annotations

import dataclasses
import re
import subprocess

import pytest

import cuda_magic
import cuda_magic.compile.backends as backends
import cuda_magic.compile.compiler as compiler_mod
from cuda_magic.compile.backends import (Backend, Output, get_backend, list_backends, ptxas_each,
                                 ptxas_joined, register_backend)
from cuda_magic.compile.cache import Cache
from cuda_magic.config import ConfigError

DEFAULT_PTXAS = ["-v", "--warn-on-local-memory-usage", "--register-usage-level=10"]

FAKE_LOG = (
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'scale' for 'sm_90a'\n"
    "ptxas info    : Function properties for scale\n"
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 12 registers, used 0 barriers, 380 bytes cmem[0]\n"
)


@pytest.fixture
def registry_restored():
    saved = dict(backends._REGISTRY)
    yield
    with backends._LOCK:
        backends._REGISTRY.clear()
        backends._REGISTRY.update(saved)


@pytest.fixture
def private_cache(monkeypatch):
    """A memory-only cache for this test, so nothing touches the shared one or disk."""
    monkeypatch.setattr(compiler_mod, "_CACHE", Cache(None))


class FakeCompiler:
    """Records each call and returns an Output whose argv shows what it got."""

    def __init__(self):
        self.calls = []

    def __call__(self, source, *, arch, target_format, flags, ptxas, name_expressions):
        self.calls.append(dict(source=source, arch=arch, target_format=target_format,
                               flags=list(flags), ptxas=list(ptxas),
                               name_expressions=tuple(name_expressions)))
        argv = ("fakecc", f"--arch={arch}", f"--format={target_format}", *flags, *ptxas)
        return Output(binary=b"FAKE" + source.encode(), format=target_format, argv=argv,
                      log=FAKE_LOG, lowered_names=tuple((n, f"_Z{n}") for n in name_expressions))


def make_fake(name="fake", compile=None, **kw):
    spec = dict(name=name, formats=("cubin", "ptx"), default_format="cubin",
                forward_ptxas=ptxas_each, compile=compile or FakeCompiler(),
                version=lambda: "9.9")
    spec.update(kw)
    return Backend(**spec)


# ---- ptxas forwarding --------------------------------------------------------

def test_ptxas_each():
    assert ptxas_each(["-v", "-O3"]) == ["--ptxas-options=-v", "--ptxas-options=-O3"]
    assert ptxas_each([]) == []


def test_ptxas_joined():
    assert ptxas_joined(["-v", "-O3"]) == ["--ptxas-options=-v,-O3"]
    assert ptxas_joined(["-v"]) == ["--ptxas-options=-v"]
    assert ptxas_joined([]) == []


def test_builtin_forwarding():
    assert get_backend("nvrtc").forward_ptxas is ptxas_each
    assert get_backend("nvcc").forward_ptxas is ptxas_joined


# ---- registry ----------------------------------------------------------------

def test_builtins_registered():
    names = list_backends()
    assert {"nvrtc", "nvcc"} <= set(names)
    nvrtc = get_backend("nvrtc")
    assert nvrtc.name == "nvrtc"
    assert "fatbin" not in nvrtc.formats and nvrtc.default_format == "cubin"
    nvcc = get_backend("nvcc")
    assert "fatbin" in nvcc.formats and nvcc.default_format == "fatbin"


def test_register_identical_is_noop(registry_restored):
    before = list_backends()
    nvrtc = get_backend("nvrtc")
    assert register_backend(nvrtc) is nvrtc
    # an equal spec that is a different object is identical too
    assert register_backend(dataclasses.replace(nvrtc)) == nvrtc
    assert list_backends() == before


def test_register_different_declaration_rejected(registry_restored):
    nvrtc = get_backend("nvrtc")
    other = dataclasses.replace(nvrtc, formats=("cubin",), default_format="cubin")
    with pytest.raises(ValueError, match=r"backend 'nvrtc' is already registered with a "
                                         r"different declaration"):
        register_backend(other)
    assert get_backend("nvrtc") is nvrtc
    assert get_backend("nvrtc").formats == nvrtc.formats


def test_backend_default_format_must_be_a_format():
    with pytest.raises(ValueError, match="default format 'fatbin' is not one of"):
        make_fake(default_format="fatbin")


def test_get_unknown_backend_lists_known():
    with pytest.raises(ConfigError, match=r"unknown compiler 'nope'; known compilers: "
                                          r"nvcc, nvrtc") as e:
        get_backend("nope")
    assert e.value.key == "compiler"


def test_list_backends_returns_copy():
    listing = list_backends()
    listing.pop("nvrtc")
    listing["bogus"] = listing["nvcc"]
    fresh = list_backends()
    assert "nvrtc" in fresh and "bogus" not in fresh
    with pytest.raises(ConfigError):
        get_backend("bogus")
    assert fresh is not list_backends()


def test_register_then_unknown_error_lists_new_name(registry_restored):
    register_backend(make_fake(name="fake_listed"))
    with pytest.raises(ConfigError, match=r"known compilers: fake_listed, nvcc, nvrtc"):
        get_backend("nope")


def test_registry_cleanup_works():
    # the fixture restored the registry after the tests above
    assert not [n for n in list_backends() if n.startswith("fake")]


# ---- the compile flow through a fake backend ---------------------------------

def test_compile_through_fake_backend(registry_restored, private_cache):
    fake = FakeCompiler()
    register_backend(make_fake(compile=fake))
    assert get_backend("fake").name == "fake"
    src = "extern \"C\" __global__ void scale(float* x) {}\n"
    resolved = cuda_magic.resolve(("cell", {"compiler": "fake", "arch": "sm_90a"}))
    r = cuda_magic.compile_resolved(src, resolved)

    assert len(fake.calls) == 1
    call = fake.calls[0]
    assert call["source"] == src
    assert call["arch"] == "sm_90a"
    assert call["target_format"] == "cubin"          # the backend's default format
    assert call["flags"] == []                       # no "fake" key in the config
    assert call["ptxas"] == ptxas_each(DEFAULT_PTXAS)
    assert call["name_expressions"] == ()

    expected_argv = ("fakecc", "--arch=sm_90a", "--format=cubin",
                     "--ptxas-options=-v", "--ptxas-options=--warn-on-local-memory-usage",
                     "--ptxas-options=--register-usage-level=10")
    assert r.argv == expected_argv
    assert r.binary == b"FAKE" + src.encode()
    assert r.format == "cubin"
    assert r.compiler == "fake" and r.compiler_version == "9.9"
    assert r.cache_hit is False
    assert r.arch == "sm_90a"
    assert r.config["target_format"] == "cubin"
    assert r.provenance["target_format"] == "default"
    assert r.provenance["compiler"] == "cell" and r.provenance["arch"] == "cell"
    assert r.provenance["ptxas"] == "default"
    assert r.kernels == ["scale"]
    assert r.resources["scale"].registers == 12
    assert r.log == FAKE_LOG

    # the same input again is served from the cache without calling the backend
    again = cuda_magic.compile_resolved(src, resolved)
    assert again.cache_hit is True and len(fake.calls) == 1
    assert again.argv == expected_argv and again.binary == r.binary
    # force recompiles
    forced = cuda_magic.compile_resolved(src, resolved, force=True)
    assert forced.cache_hit is False and len(fake.calls) == 2


def test_fake_backend_explicit_format_and_name_expressions(registry_restored, private_cache):
    fake = FakeCompiler()
    register_backend(make_fake(compile=fake, forward_ptxas=ptxas_joined))
    resolved = cuda_magic.resolve(("session", {"compiler": "fake", "arch": "sm_100a"}),
                                  ("cell", {"target_format": "ptx", "ptxas": ["-v", "-O3"]}))
    r = cuda_magic.compile_resolved("src", resolved, name_expressions=["k<int>"])
    call = fake.calls[-1]
    assert call["target_format"] == "ptx" and call["ptxas"] == ["--ptxas-options=-v,-O3"]
    assert call["name_expressions"] == ("k<int>",)
    assert r.format == "ptx" and r.provenance["target_format"] == "cell"
    assert r.lowered_names == {"k<int>": "_Zk<int>"}
    assert r.argv[-1] == "--ptxas-options=-v,-O3"


def test_fake_backend_rejects_unsupported_format(registry_restored, private_cache):
    fake = FakeCompiler()
    register_backend(make_fake(compile=fake))
    resolved = cuda_magic.resolve(("cell", {"compiler": "fake", "arch": "sm_90a",
                                            "target_format": "fatbin"}))
    with pytest.raises(ConfigError, match=r"fake cannot produce 'fatbin' \(set by layer "
                                          r"'cell'\); it makes cubin, ptx") as e:
        cuda_magic.compile_resolved("src", resolved)
    assert e.value.key == "target_format"
    assert fake.calls == []


def test_fake_backend_gets_its_own_flag_key(registry_restored, private_cache):
    # a backend named like a list key receives that key's flags
    fake = FakeCompiler()
    nvcc = get_backend("nvcc")
    with backends._LOCK:
        backends._REGISTRY["nvcc"] = dataclasses.replace(nvcc, compile=fake,
                                                         version=lambda: "fake-nvcc")
    resolved = cuda_magic.resolve(("cell", {"compiler": "nvcc", "arch": "sm_90a",
                                            "nvcc": ["-O3", "-lineinfo"]}))
    r = cuda_magic.compile_resolved("src", resolved)
    call = fake.calls[-1]
    assert call["flags"] == ["-O3", "-lineinfo"]
    assert call["target_format"] == "fatbin"
    assert call["ptxas"] == [ptxas_joined(DEFAULT_PTXAS)[0]]
    assert r.provenance["target_format"] == "default"
    assert r.config["nvrtc"] == ["--use_fast_math"]  # other list keys untouched


def test_fake_backend_is_gone_after_cleanup():
    with pytest.raises(ConfigError, match="unknown compiler 'fake'"):
        get_backend("fake")
    from cuda_magic import tools
    from cuda_magic.compile.backends import nvcc as nvcc_module
    nvcc = get_backend("nvcc")
    assert nvcc is nvcc_module.BACKEND and nvcc.version is nvcc_module.version
    version = nvcc.version()                    # the real nvcc's, not "fake-nvcc"
    said = subprocess.run([tools.find("nvcc"), "--version"], capture_output=True,
                          text=True).stdout
    assert re.fullmatch(r"\d+\.\d+\.\d+", version) and f"V{version}" in said, (version, said)
    assert get_backend("nvcc").compile.__class__ is not FakeCompiler
