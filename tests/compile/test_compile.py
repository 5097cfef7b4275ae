"""compile_source end to end with the real NVRTC and nvcc (no GPU needed)."""

import json
import os
import re
import stat
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import pytest

import cuda_magic
from cuda_magic import CompileError, ConfigError, ToolNotFoundError, compile_source, sass
from cuda_magic.compile.backends import nvrtc as nvrtc_backend
from conftest import ARCH, HEAVY, SAXPY, cfg

FATBIN_MAGIC = (0xBA55ED50).to_bytes(4, "little")


@pytest.mark.parametrize("compiler,fmt", [
    ("nvrtc", "cubin"), ("nvrtc", "ptx"), ("nvcc", "cubin"), ("nvcc", "ptx"), ("nvcc", "fatbin")])
def test_every_format_compiles(compiler, fmt):
    r = compile_source(SAXPY, cfg(compiler=compiler, target_format=fmt), force=True)
    assert r.format == fmt and r.compiler == compiler and not r.cache_hit
    if fmt == "cubin":
        assert r.binary[:4] == b"\x7fELF"
    elif fmt == "fatbin":
        assert r.binary[:4] == FATBIN_MAGIC
    else:
        text = r.binary.decode()
        assert ".entry scale" in text and f".target {ARCH}" in text
    if fmt != "ptx":
        assert r.resources["scale"].registers > 0
    assert r.compile_time > 0 and re.fullmatch(r"\d+\.\d+(\.\d+)?", r.compiler_version)


def test_default_formats_and_provenance():
    r = compile_source(SAXPY, cfg())
    assert (r.compiler, r.format) == ("nvrtc", "cubin")
    assert r.provenance == {"arch": "cell", "compiler": "default", "nvcc": "default",
                            "nvrtc": "default", "ptxas": "default", "target_format": "default"}
    r = compile_source(SAXPY, cfg(compiler="nvcc"))
    assert r.format == "fatbin" and r.provenance["target_format"] == "default"


def test_nvrtc_argv_is_exact():
    r = compile_source(SAXPY, cfg(nvrtc=["--use_fast_math", "--ftz=false"], ptxas=["-v", "-O3"]))
    argv = list(r.argv)
    assert argv[:5] == ["--gpu-architecture=sm_90a", "--use_fast_math", "--ftz=false",
                        "--ptxas-options=-v", "--ptxas-options=-O3"]
    added = argv[5:]
    assert all(a.startswith("-I") for a in added if a not in ("--no-cache", nvrtc_backend.UNROLL))
    assert ("--no-cache" in added) == (nvrtc_backend.version_tuple() >= (12, 9))
    assert added[-1] == nvrtc_backend.UNROLL == "-D_CCCL_META_UNROLL_LIMIT=10"   # nvcc's value
    said = compile_source(SAXPY, cfg(nvrtc=["-D_CCCL_META_UNROLL_LIMIT=4"]))
    assert nvrtc_backend.UNROLL not in said.argv        # the user's own value wins, alone


def test_nvcc_argv_is_exact():
    r = compile_source(SAXPY, cfg(compiler="nvcc", target_format="cubin",
                                  nvcc=["--use_fast_math", "-lineinfo"], ptxas=["-v", "-O3"]))
    assert os.path.basename(r.argv[0]) == "nvcc"
    from cuda_magic.compile.toolkit_headers import cutlass_dirs
    cutlass = [f"-I{d}" for d in cutlass_dirs()]     # the nvidia-cutlass wheel: include, tools/util
    out, src = r.argv[-2:]
    keep = ["--keep", f"--keep-dir={os.path.dirname(src)}"]     # the PTX view of this very run
    assert list(r.argv[1:-2]) == ["-arch=sm_90a", "--cubin", "--use_fast_math", "-lineinfo",
                                  "--ptxas-options=-v,-O3", "-I.", *cutlass, *keep, "-o"]
    assert os.path.basename(out) == "out.cubin" and os.path.basename(src) == "cell.cu"
    assert os.path.dirname(out) == os.path.dirname(src) and not os.path.exists(src)


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_quoted_includes_and_relative_flags_resolve_from_the_working_directory(
        compiler, tmp_path, monkeypatch):
    (tmp_path / "inc").mkdir()
    (tmp_path / "local.cuh").write_text("#define FACTOR 3.0f\n")
    (tmp_path / "inc" / "other.cuh").write_text("#define OFFSET 1.0f\n")
    monkeypatch.chdir(tmp_path)
    src = ('#include "local.cuh"\n#include "other.cuh"\n'
           'extern "C" __global__ void k(float* y) { y[0] = y[0] * FACTOR + OFFSET; }\n')
    r = compile_source(src, cfg(compiler=compiler, target_format="cubin",
                                **{compiler: ["-Iinc"]}), force=True)
    assert r.kernels == ["k"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inc", "local.cuh"]


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
@pytest.mark.parametrize("order", [("true", "false"), ("false", "true")])
def test_ftz_is_honoured(compiler, order, fresh_cache):
    fmt = "cubin"
    for ftz in order + order:  # twice round, so a stale cache would show
        r = compile_source(SAXPY, cfg(compiler=compiler, target_format=fmt,
                                      **{compiler: ["--use_fast_math", f"--ftz={ftz}"]}), force=True)
        fmuls = [line for line in sass(r, "scale").splitlines() if "FMUL" in line]
        assert fmuls, sass(r, "scale")
        assert all(("FMUL.FTZ" in line) == (ftz == "true") for line in fmuls), fmuls


def _log_registers(log, kernel):
    """The register count for ``kernel`` read straight from the ptxas log."""
    lines = log.splitlines()
    start = next(i for i, l in enumerate(lines) if f"Compiling entry function '{kernel}'" in l)
    return int(next(re.search(r"Used (\d+) registers", l).group(1)
                    for l in lines[start:] if "Used" in l))


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_resources_from_real_ptxas_logs(compiler):
    src = SAXPY + r'''
__device__ __noinline__ float helper(float* p, int i) {
    float loc[32];
    for (int k = 0; k < 32; k++) loc[k] = p[k + i];
    return loc[i & 31] * 2.f;
}
__global__ void staged(const float* x, float* y, int n) {
    __shared__ float s[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x & 63] = x[i];
    __syncthreads();
    if (i < n) y[i] = s[threadIdx.x & 63] + helper(y, i);
}
'''
    r = compile_source(src, cfg(compiler=compiler, target_format="cubin"))
    assert set(r.kernels) == {"scale", "_Z6stagedPKfPfi"}
    staged = r.resources["_Z6stagedPKfPfi"]
    assert staged.registers == _log_registers(r.log, "_Z6stagedPKfPfi")
    assert (staged.shared, staged.barriers, staged.arch) == (256, 1, ARCH)
    assert staged.stack_frame == 128 and staged.cumulative_stack == 128
    assert any("Local memory" in w for w in staged.warnings)
    assert r.resources["scale"].registers == _log_registers(r.log, "scale")
    assert r.resources["scale"].barriers == 0 and not r.resources["scale"].spills
    assert "_Z6helperPfi" in r.functions and not r.functions["_Z6helperPfi"].entry


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_spills_are_reported(compiler):
    r = compile_source(HEAVY, cfg(compiler=compiler, target_format="cubin",
                                  **{compiler: ["--maxrregcount=24"]}))
    heavy = r.resources["heavy"]
    m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", r.log)
    assert heavy.spills and heavy.registers == 24
    assert (heavy.spill_stores, heavy.spill_loads) == (int(m.group(1)), int(m.group(2)))
    assert heavy.spill_stores > 0 and heavy.stack_frame > 0
    relaxed = compile_source(HEAVY, cfg(compiler=compiler, target_format="cubin"))
    assert not relaxed.resources["heavy"].spills


BROKEN = 'extern "C" __global__ void k(float* y) {\n    y[0] = 1.0f\n    y[1] = 2.0f;\n}\n'


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_syntax_error_quotes_the_line(compiler):
    with pytest.raises(CompileError) as info:
        compile_source(BROKEN, cfg(compiler=compiler))
    err = info.value
    msg = str(err)
    assert msg.startswith(f"{compiler} failed to compile cell.cu")
    assert "cell.cu(3): error" in msg and "   3 |     y[1] = 2.0f;" in msg
    assert err.source == BROKEN and err.argv and "expected a \";\"" in err.log
    assert err.error_lines()[0][0] == 3


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_missing_include_quotes_the_line(compiler):
    with pytest.raises(CompileError) as info:
        compile_source('#include "nope.cuh"\n', cfg(compiler=compiler))
    assert "nope.cuh" in str(info.value) and '   1 | #include "nope.cuh"' in str(info.value)
    assert "detected" not in str(info.value)  # the summary line is not an error line


@pytest.mark.parametrize("compiler,expected", [
    ("nvrtc", "unrecognized option --bogus"), ("nvcc", "Unknown option '--bogus'")])
def test_unknown_native_flag_shows_compilers_message(compiler, expected):
    with pytest.raises(CompileError, match=re.escape(expected)):
        compile_source(SAXPY, cfg(compiler=compiler, **{compiler: ["--bogus"]}))


def test_nvcc_absent(monkeypatch):
    import cuda.pathfinder
    import cuda_magic.tools as finder
    monkeypatch.setattr(cuda.pathfinder, "find_nvidia_binary_utility", lambda name: None)
    monkeypatch.setattr(finder, "SYSTEM", {})            # /usr/local/cuda/bin has one here
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ToolNotFoundError, match=r"nvcc was not found.*cuda-magic\[nvcc\]"):
        compile_source(SAXPY, cfg(compiler="nvcc"), force=True)


def test_no_files_left_behind(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    r = compile_source(SAXPY + "// files\n", cfg(compiler="nvcc"), force=True)
    sass(r)
    with pytest.raises(CompileError):
        compile_source(BROKEN, cfg(compiler="nvcc"), force=True)
    r = compile_source(SAXPY + "// files\n", cfg(), force=True)
    sass(r)
    assert list(tmp_path.iterdir()) == []


def test_eight_configs_compile_concurrently(fresh_cache):
    configs = [cfg(compiler=c, target_format="cubin", **{c: ["--use_fast_math", f"--ftz={ftz}", *extra]})
               for c in ("nvrtc", "nvcc") for ftz in ("true", "false")
               for extra in ([], ["--maxrregcount=32"])]
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda c: compile_source(SAXPY, c), configs))
    assert len({r.key for r in results}) == 8
    for c, r in zip(configs, results):
        flags = c["cuda"][r.compiler]
        assert r.config[r.compiler] == flags and not r.cache_hit
        assert ("FMUL.FTZ" in sass(r, "scale")) == ("--ftz=true" in flags)


def test_cache_hits_and_misses(fresh_cache):
    first = compile_source(SAXPY, cfg(nvrtc=["--use_fast_math", "--ftz=false"]))
    again = compile_source(SAXPY, {"cuda": {"nvrtc": ["--use_fast_math", "--ftz=false"], "arch": ARCH}})
    assert not first.cache_hit and again.cache_hit and again.binary is first.binary
    with pytest.raises(TypeError):  # what the cache hands out cannot be changed under it
        again.resources["scale"] = None
    assert again.key == first.key and again.compile_time == first.compile_time
    misses = [
        compile_source(SAXPY + " ", cfg(nvrtc=["--use_fast_math", "--ftz=false"])),  # source
        compile_source(SAXPY, cfg(nvrtc=["--use_fast_math", "--ftz=true"])),          # config
        compile_source(SAXPY, cfg(nvrtc=["--ftz=false", "--use_fast_math"])),        # arg order
        compile_source(SAXPY, cfg(compiler="nvcc", target_format="cubin",
                                  nvcc=["--use_fast_math", "--ftz=false"],
                                  nvrtc=["--use_fast_math", "--ftz=false"])),        # backend
    ]
    assert all(not r.cache_hit for r in misses)
    assert len({r.key for r in misses} | {first.key}) == 5
    forced = compile_source(SAXPY, cfg(nvrtc=["--use_fast_math", "--ftz=false"]), force=True)
    assert not forced.cache_hit and forced.binary is not first.binary


def test_cache_hit_keeps_callers_provenance(fresh_cache):
    compile_source(SAXPY, cfg())
    hit = compile_source(SAXPY, None, session={"arch": ARCH})
    assert hit.cache_hit and hit.provenance["arch"] == "session"


def test_disk_cache(tmp_path, fresh_cache):
    store = tmp_path / "cache"
    cuda_magic.set_cache_dir(store)
    try:
        src = SAXPY + "// disk\n"
        r = compile_source(src, cfg())
        assert stat.S_IMODE(store.stat().st_mode) == 0o700
        entry = store / f"{r.key}.json"
        assert entry.exists() and [p.name for p in store.iterdir()] == [entry.name]
        cuda_magic.clear_cache()
        from_disk = compile_source(src, cfg())
        assert from_disk.cache_hit and from_disk.binary == r.binary
        assert from_disk.resources == r.resources and from_disk.argv == r.argv
        valid = json.loads(entry.read_text())
        wrong_shape = json.dumps({k: v for k, v in valid.items() if k != "log"}).encode()
        for garbage in (b"{not json", b'{"key": "x"}', entry.read_bytes()[:-40], wrong_shape):
            entry.write_bytes(garbage)
            cuda_magic.clear_cache()
            rebuilt = compile_source(src, cfg())
            assert not rebuilt.cache_hit and rebuilt.binary[:4] == b"\x7fELF"
        cuda_magic.clear_cache()
        assert compile_source(src, cfg()).cache_hit  # the rebuilt entry is valid
    finally:
        cuda_magic.set_cache_dir(None)


def test_headers_compile_with_nvrtc():
    src = r'''
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void halves(const __half* x, __nv_bfloat16* y, int n) {
    cg::thread_block block = cg::this_thread_block();
    int i = block.group_index().x * block.size() + block.thread_rank();
    if (i < n) y[i] = __float2bfloat16(__half2float(x[i]) * 2.0f);
}
'''
    r = compile_source(src, cfg())
    assert "halves" in r.kernels and any(a.startswith("-I") for a in r.argv)


def test_name_expressions_for_templates():
    src = "template <typename T> __global__ void twice(T* y) { y[threadIdx.x] *= T(2); }\n"
    r = compile_source(src, cfg(), name_expressions=["twice<float>", "twice<double>"])
    assert r.lowered_names == {"twice<float>": "_Z5twiceIfEvPT_", "twice<double>": "_Z5twiceIdEvPT_"}
    assert set(r.kernels) == set(r.lowered_names.values())
    assert "FMUL" in sass(r, "twice<float>") or "FADD" in sass(r, "twice<float>")
    assert "DADD" in sass(r, "twice<double>") or "DMUL" in sass(r, "twice<double>")
    # nvcc: the same names, by lines after the cell and the binary's demangled entries
    r = compile_source(src, cfg(compiler="nvcc"), name_expressions=["twice<float>", "twice<double>"])
    assert r.lowered_names == {"twice<float>": "_Z5twiceIfEvPT_", "twice<double>": "_Z5twiceIdEvPT_"}


def test_no_arch_and_no_gpu_says_how_to_set_one(monkeypatch):
    import cuda_magic.compile.compiler as compiler
    monkeypatch.setattr(compiler, "detect_arch", lambda: None)
    with pytest.raises(ConfigError, match=r"no 'arch' is set.*--arch sm_90a") as info:
        compile_source(SAXPY)
    assert info.value.key == "arch"
    monkeypatch.setattr(compiler, "detect_arch", lambda: "sm_90a")
    r = compile_source(SAXPY)
    assert r.arch == "sm_90a" and r.provenance["arch"] == "detected"


def test_format_the_backend_cannot_make():
    with pytest.raises(ConfigError, match="NVRTC cannot produce 'fatbin'"):
        compile_source(SAXPY, cfg(target_format="fatbin"))
    # the format and the compiler come from different layers: the message names the layer
    with pytest.raises(ConfigError, match="NVRTC cannot produce 'fatbin' \\(set by layer 'session'\\)"):
        compile_source(SAXPY, cfg(compiler="nvrtc"),
                       session={"compiler": "nvcc", "target_format": "fatbin"})


def test_source_must_be_text():
    with pytest.raises(TypeError, match="source must be a str"):
        compile_source(SAXPY.encode(), cfg())


def test_detect_arch_without_a_driver_is_quick_and_none():
    # never hangs: the generous timeout, not a tight figure a loaded machine can miss, is the check
    code = "import cuda_magic; print(cuda_magic.detect_arch())"
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env=env)
    assert out.stdout.split() == ["None"], out.stderr
    assert cuda_magic.compile.arch.arch_for(9, 0) == "sm_90a" and cuda_magic.compile.arch.arch_for(8, 6) == "sm_86"
    assert cuda_magic.compile.arch.arch_for(10, 0) == "sm_100a"


def test_import_does_not_initialise_cuda():
    code = ("import sys, cuda_magic; "
            "print(sorted(m for m in sys.modules if m.startswith('cuda.bindings')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


def _runtime_capability() -> tuple[int, int]:
    """GPU 0's compute capability as the CUDA runtime API reports it (detect_arch asks the
    driver API's attributes)."""
    from cuda.bindings import runtime
    err, prop = runtime.cudaGetDeviceProperties(0)
    assert err == runtime.cudaError_t.cudaSuccess, err
    return int(prop.major), int(prop.minor)


def _smi_capabilities() -> set[tuple[int, int]] | None:
    """Every GPU's compute capability as nvidia-smi prints it (None: no nvidia-smi)."""
    import shutil
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    out = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        return None
    return {tuple(int(p) for p in line.strip().split(".")) for line in out.stdout.split("\n")
            if line.strip()}


@pytest.mark.gpu
def test_arch_is_detected_on_a_gpu(fresh_cache):
    """detect_arch() against sources of its own: the runtime API's device properties and
    nvidia-smi (the arch spelled out here: sm_<major><minor>, 'a' from 9.0 up)."""
    arch = cuda_magic.detect_arch()
    major, minor = _runtime_capability()
    assert arch == f"sm_{major}{minor}" + ("a" if major >= 9 else ""), (arch, major, minor)
    smi = _smi_capabilities()
    if smi is not None:                # device 0 is one of the GPUs nvidia-smi lists
        assert (major, minor) in smi, (smi, major, minor)
    r = compile_source(SAXPY)
    assert r.arch == arch and r.provenance["arch"] == "detected"
    assert r.resources["scale"].arch == arch


def test_disk_cache_write_failure_warns_and_compiles(tmp_path, monkeypatch, fresh_cache):
    import cuda_magic.compile.cache
    cuda_magic.set_cache_dir(tmp_path)
    try:
        def full(*a, **k):
            raise OSError(28, "No space left on device")
        monkeypatch.setattr(cuda_magic.compile.cache.tempfile, "mkstemp", full)
        with pytest.warns(RuntimeWarning, match="could not write the disk cache.*No space left"):
            r = compile_source(SAXPY + "// full disk\n", cfg())
        assert r.binary[:4] == b"\x7fELF" and list(tmp_path.iterdir()) == []
    finally:
        cuda_magic.set_cache_dir(None)


def test_memory_cache_is_bounded():
    from cuda_magic.compile.cache import Cache
    c = Cache(max_entries=3)
    for k in "abcd":
        c.put(k, k.upper())
    assert c.get("a") is None and [c.get(k) for k in "bcd"] == ["B", "C", "D"]
    c.get("b")          # b becomes the most recent
    c.put("e", "E")     # so c is evicted
    assert c.get("c") is None and c.get("b") == "B" and len(c) == 3


def test_name_expressions_must_be_strings():
    with pytest.raises(TypeError, match="name_expressions must be non-empty strings"):
        compile_source(SAXPY, cfg(), name_expressions=[b"scale"])
