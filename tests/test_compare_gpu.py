"""%%cuda_compare numbers on a GPU: FTZ in any order and in a second process, the ULP report."""

import json
import subprocess
import sys

import numpy as np
import pytest

import cuda_magic
from cuda_magic.variants import numbers
from cuda_magic.display import compare as view
from cuda_magic.variants import default_variants

from conftest import SAXPY

pytestmark = pytest.mark.gpu

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


SCRIPT = r'''
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


def test_second_process_agrees(tmp_path):
    import os
    env = {**os.environ, "CUDA_MAGIC_CACHE_DIR": str(tmp_path)}
    for order in ("ftz=true,ftz=false", "ftz=false,ftz=true"):
        proc = subprocess.run([sys.executable, "-c", SCRIPT, SAXPY, order], env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        got = json.loads(proc.stdout)
        assert got["ftz=true"][0] == 0.0 and got["ftz=true"][1] == 1
        assert got["ftz=false"][0] == pytest.approx(HALF, rel=1e-6) and got["ftz=false"][1] == 0


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
