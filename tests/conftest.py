import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import pytest

from cuda_magic import clear_cache, detect_arch

# benchmarks/fake_driver.py, the stub driver the CPU tests launch through
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
from common import HEAVY  # noqa: E402  (48 live accumulators: spills under --maxrregcount=24)

ARCH = "sm_90a"

SAXPY = r'''
extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * a;
}
'''

@pytest.fixture(autouse=True, scope="session")
def _pch_dir():
    """NVRTC precompiled headers (~300 MB each) go to a directory of the test session's own."""
    path = tempfile.mkdtemp(prefix="cuda-magic-pch-")
    old = os.environ.get("CUDA_MAGIC_PCH_DIR")
    os.environ["CUDA_MAGIC_PCH_DIR"] = path
    yield path
    if old is None:
        os.environ.pop("CUDA_MAGIC_PCH_DIR", None)
    else:
        os.environ["CUDA_MAGIC_PCH_DIR"] = old
    shutil.rmtree(path, ignore_errors=True)


def cfg(**kw):
    """TVM-style backend_config with the test arch."""
    return {"cuda": {"arch": ARCH, **kw}}


@pytest.fixture
def ctrl_c():
    """Python's own Ctrl-C handler for a test that sends itself SIGINT.  A process started as a
    background job of a non-interactive shell (``cmd &`` in a script, as CI harnesses and
    ``nohup ... &`` do) starts with SIGINT ignored, and Python then leaves it ignored: the
    Ctrl-C never arrives and the wait never ends (a clean-clone run hung so; CI once failed so)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


@pytest.fixture
def fresh_cache():
    clear_cache()
    yield
    clear_cache()


# The tests that take a second or more (tests/slow.py writes the list from a timed run): the
# quick check, -m "not slow and not browser", leaves them out.
SLOW = frozenset(line.strip() for line in (Path(__file__).parent / "slow.txt").read_text().splitlines())


def pytest_collection_modifyitems(config, items):
    slow = pytest.mark.slow
    # A kernel hung on purpose makes other processes' launches on the GPU fail meanwhile
    # (measured on the H200: a CuPy stream's and a PDL pair's results never arrived): those
    # tests run only in a run of their own, `pytest -m hangs` without -n.
    beside = os.environ.get("PYTEST_XDIST_WORKER") is not None
    alone = pytest.mark.skip(reason="hangs the GPU on purpose: run it alone, "
                                    "python3 -m pytest -m hangs (no -n)")
    for item in items:
        if beside and item.get_closest_marker("hangs") is not None:
            item.add_marker(alone)
        if item.nodeid in SLOW:
            item.add_marker(slow)
    if detect_arch() is None:
        skip = pytest.mark.skip(reason="no NVIDIA GPU/driver here")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


@pytest.fixture
def presets_restored():
    """Restore the preset registry after a test that changes shared state."""
    from cuda_magic import config
    saved = dict(config._PRESETS)
    yield
    with config._PRESETS_LOCK:
        config._PRESETS.clear()
        config._PRESETS.update(saved)


@pytest.fixture
def shell():
    """An IPython shell with the extension loaded, as a user has it."""
    from IPython.core.interactiveshell import InteractiveShell
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "cuda_magic")
    ip.run_line_magic("cuda_config", "--reset")
    yield ip
    ip.run_line_magic("cuda_config", "--reset")


@pytest.fixture(scope="session")
def old_cccls(tmp_path_factory):
    """nvidia-cuda-cccl 13.0 (CCCL 3.0, CUDA 13.0's) and 13.1 (3.1) installed into scratch
    directories, as pip gives them: version -> its ``nvidia/cu13/include`` (CCCL under
    ``cccl/``); skipped when pip cannot download them (offline).  Once per test run."""
    import subprocess
    import sys
    out = {}
    for version in ("13.0.85", "13.1.115"):
        target = tmp_path_factory.mktemp(f"cccl-{version}")
        run = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                              "--target", str(target), f"nvidia-cuda-cccl=={version}"],
                             capture_output=True, text=True, timeout=300)
        inc = target / "nvidia" / "cu13" / "include"
        if run.returncode != 0 or not (inc / "cccl" / "cuda" / "std" / "version").is_file():
            pytest.skip(f"pip could not install nvidia-cuda-cccl=={version} (offline?)")
        out[version] = inc
    return out
