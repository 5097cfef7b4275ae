"""cuda_magic.tools.find: one finder for every CUDA tool, each tool's search order, the hints."""

import os
import stat

import pytest

import cuda_magic
from cuda_magic import tools as finder
from cuda_magic.errors import ToolNotFoundError


def _exe(path, text="#!/bin/sh\nexit 0\n"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(path)


# ---- ncu and compute-sanitizer (runtime/nsight/run.py's finder before) -----------------------------

def test_on_path(tmp_path):
    ncu = _exe(tmp_path / "bin" / "ncu")
    assert finder.find("ncu", environ={"PATH": str(tmp_path / "bin")}, system=()) == ncu


def test_in_cuda_home(tmp_path):
    cs = _exe(tmp_path / "cuda" / "bin" / "compute-sanitizer")
    env = {"PATH": str(tmp_path / "empty"), "CUDA_HOME": str(tmp_path / "cuda")}
    assert finder.find("compute-sanitizer", environ=env, system=()) == cs


def test_newest_nsight_compute_install(tmp_path):
    _exe(tmp_path / "nsight-compute" / "2024.1.0" / "ncu")
    _exe(tmp_path / "nsight-compute" / "2025.3.1" / "ncu")
    new = _exe(tmp_path / "nsight-compute" / "2025.10.0" / "ncu")     # 10 > 3: numbers, not text
    found = finder.find("ncu", environ={"PATH": ""}, system=(str(tmp_path / "nsight-compute" / "*"),))
    assert found == new


def test_missing_says_where_it_looked_and_what_to_install(tmp_path):
    with pytest.raises(ToolNotFoundError, match=r"^ncu was not found \(looked in PATH\); install "
                                                r"Nsight Compute or put it on PATH$"):
        finder.find("ncu", environ={"PATH": str(tmp_path)}, system=())
    with pytest.raises(ToolNotFoundError, match=r"compute-sanitizer was not found \(looked in "
                                                r"PATH; \$CUDA_HOME/bin; /nowhere\); install the "
                                                r"CUDA toolkit's compute-sanitizer"):
        finder.find("compute-sanitizer", environ={"PATH": "", "CUDA_HOME": str(tmp_path)},
                    system=("/nowhere",))


def test_skips_files_that_do_not_run(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "ncu").write_text("not executable")
    with pytest.raises(ToolNotFoundError):
        finder.find("ncu", environ={"PATH": str(tmp_path / "bin")}, system=())


# ---- the order: PATH first for the profilers, CUDA_HOME before PATH for the compilers ----------

def test_each_tools_order(tmp_path):
    on_path = {n: _exe(tmp_path / "path" / n) for n in ("ncu", "nvcc", "cu++filt", "nvdisasm")}
    home = {n: _exe(tmp_path / "home" / "bin" / n) for n in ("ncu", "nvcc", "cu++filt", "nvdisasm")}
    env = {"PATH": str(tmp_path / "path"), "CUDA_HOME": str(tmp_path / "home")}
    assert finder.find("ncu", environ=env, system=()) == on_path["ncu"]        # a standalone install
    for name in ("nvcc", "cu++filt", "nvdisasm"):                              # the toolkit's
        assert finder.find(name, environ=env, system=()) == home[name]
    env = {"PATH": str(tmp_path / "path"), "CUDA_PATH": str(tmp_path / "home")}
    assert finder.find("nvcc", environ=env, system=()) == home["nvcc"]


def test_system_places_come_last(tmp_path):
    sys_nvcc = _exe(tmp_path / "usr-local-cuda" / "bin" / "nvcc")
    assert finder.find("nvcc", environ={"PATH": ""}, system=(str(tmp_path / "usr-local-cuda" / "bin"),)) \
        == sys_nvcc
    path_nvcc = _exe(tmp_path / "path" / "nvcc")
    assert finder.find("nvcc", environ={"PATH": str(tmp_path / "path")},
                       system=(str(tmp_path / "usr-local-cuda" / "bin"),)) == path_nvcc


def test_default_system_places():
    assert finder.SYSTEM["*"] == ("/usr/local/cuda/bin",)
    assert "/opt/nvidia/nsight-compute/*" in finder.SYSTEM["ncu"]


# ---- cuda.pathfinder first, the cache -----------------------------------------------------------

def test_pathfinder_first_for_what_it_knows(monkeypatch, tmp_path):
    wheel = _exe(tmp_path / "wheel" / "nvdisasm")
    _exe(tmp_path / "home" / "bin" / "nvdisasm")
    import cuda.pathfinder
    asked = []
    monkeypatch.setattr(cuda.pathfinder, "find_nvidia_binary_utility",
                        lambda name: asked.append(name) or (wheel if name == "nvdisasm" else None))
    monkeypatch.setattr(finder, "_found", {})
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "home"))
    assert finder.find("nvdisasm") == wheel
    assert finder.find("nvdisasm") == wheel and asked == ["nvdisasm"]          # cached
    monkeypatch.setenv("PATH", str(tmp_path))                                  # another environment
    finder.find("nvdisasm")
    assert asked == ["nvdisasm", "nvdisasm"]
    os.unlink(wheel)                                                           # gone: looked for again
    assert finder.find("nvdisasm") == str(tmp_path / "home" / "bin" / "nvdisasm")
    with pytest.raises(ToolNotFoundError, match=r"cu\+\+filt was not found \(looked in "
                                                r"\$CUDA_HOME/bin; PATH; /nowhere\)"):
        finder.find("cu++filt", environ={"PATH": "", "CUDA_HOME": str(tmp_path / "home")},
                    system=("/nowhere",))
    assert "cu++filt" not in asked                                            # pathfinder knows no cu++filt


def test_an_explicit_environment_does_not_ask_pathfinder(monkeypatch, tmp_path):
    import cuda.pathfinder
    monkeypatch.setattr(cuda.pathfinder, "find_nvidia_binary_utility", lambda name: "/bin/sh")
    with pytest.raises(ToolNotFoundError):
        finder.find("nvcc", environ={"PATH": str(tmp_path)}, system=())


# ---- the real tools here -------------------------------------------------------------------------

def test_real_tools_and_versions():
    nvcc = finder.find("nvcc")
    assert os.access(nvcc, os.X_OK)
    v = finder.version("nvcc")
    assert v == cuda_magic.get_backend("nvcc").version() and v.count(".") == 2
    for name in ("nvdisasm", "cuobjdump", "cu++filt", "c++filt"):   # what binary.py needs
        try:
            assert os.access(finder.find(name), os.X_OK)
        except ToolNotFoundError as exc:
            assert name in str(exc) and "install" in str(exc)


def test_the_old_finders_are_gone():
    """One finder: the four that were are not reachable (binary.py's two move onto it)."""
    import cuda_magic.compile.backends.nvcc as nvcc
    import cuda_magic.inspect as inspect
    import cuda_magic.inspect.disasm as disasm
    import cuda_magic.runtime.nsight.run as rtools
    for mod, name in ((nvcc, "find_nvcc"), (inspect, "find_tool"), (disasm, "find_tool"),
                      (rtools, "find_tool")):
        assert not hasattr(mod, name), f"{mod.__name__}.{name}"


# ---- the CUDA toolkits: one search order, written once --------------------------------------------

def test_cuda_roots_order(tmp_path, monkeypatch):
    env = {"CUDA_PATH": str(tmp_path / "p"), "CUDA_HOME": "~/cuda-x", "PATH": ""}
    assert finder.cuda_homes(env) == {"CUDA_HOME": os.path.expanduser("~/cuda-x"),
                                      "CUDA_PATH": str(tmp_path / "p")}
    assert finder.cuda_roots(env) == [os.path.expanduser("~/cuda-x"), str(tmp_path / "p"),
                                      "/usr/local/cuda"]
    assert finder.cuda_roots({"CUDA_HOME": ""}) == ["/usr/local/cuda"]
    from cuda_magic.compile import toolkit_headers
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "home"))
    roots = toolkit_headers.search_roots()
    assert roots.index(str(tmp_path / "home" / "include")) < roots.index("/usr/local/cuda/include")


def test_the_toolkit_search_is_written_only_in_tools():
    """``$CUDA_HOME``, ``$CUDA_PATH`` and ``/usr/local/cuda`` as code (not prose) only in
    cuda_magic/tools.py: every other module asks :func:`cuda_magic.tools.cuda_roots`."""
    import ast
    import pathlib
    root = pathlib.Path(cuda_magic.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == root / "tools.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    (node.value in ("CUDA_HOME", "CUDA_PATH") or
                     node.value.startswith("/usr/local/cuda")):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert found == []
