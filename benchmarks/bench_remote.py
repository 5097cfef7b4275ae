"""What a launch on a remote GPU costs (``cuda_magic.remote``), beside Dask's own round trips.

    python3 benchmarks/bench_remote.py [--scheduler tcp://host:8786] [--repeat N] [--quick]
    python3 benchmarks/bench_remote.py --fake-driver        # no GPU: the stub driver

With no ``--scheduler`` it starts a ``distributed.LocalCluster`` of one process worker on this
machine (a round trip over loopback TCP).  On the GPU machine the figures of docs/remote.md
came from a scheduler and a worker started with the GPU and this script run with
``CUDA_VISIBLE_DEVICES=""`` (the notebook's side sees no GPU).  Each figure is the median
(min) in ms over ``--repeat`` calls, one at a time:

- ``bare submit``: ``client.submit(f).result()`` of a function that returns at once (through
  the scheduler): the floor of the obvious design;
- ``actor call, via the scheduler`` / ``direct``: a no-op method of cuda-magic's Host actor,
  with the client's ``direct_to_workers`` off and on (``remote("tcp://...")`` turns it on);
- ``remote launch``: ``k[grid, block](x, y, a, n)`` of a scale kernel with NumPy arrays of
  1 KiB and 16 MiB (in and out), waited for and copied back; ``first launch`` sends the binary
  too; ``local launch``: the same launch with NumPy arrays in the worker's own process (copies
  to and from the GPU, no network);
- bytes: the binary (sent once per worker) and what one launch sends besides its arrays.
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, ROOT]

from common import timed  # noqa: E402

SCALE = r'''
extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * a;
}
'''


def _noop():
    return None


def _local_launches(source: str, arch: str, n: int, repeat: int) -> list[float]:
    """In the worker: the same launch with NumPy arrays in its own process (ms each)."""
    import numpy as np
    from cuda_magic.cell import build, line_config
    k = build(source, line_config(arch=arch)).scale
    x, y = np.ones(n, np.float32), np.zeros(n, np.float32)
    out = []
    for i in range(repeat + 2):
        start = time.perf_counter()
        k[(n + 255) // 256, 256](x, y, 2.0, n)
        out.append((time.perf_counter() - start) * 1e3)
    return out[2:]


def _figure(times: list[float]) -> str:
    return f"{statistics.median(times):9.3f} ({min(times):8.3f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scheduler", help="a running cluster's address (default: a LocalCluster)")
    ap.add_argument("--repeat", type=int, default=200, help="calls per figure (default 200)")
    ap.add_argument("--quick", action="store_true", help="20 calls per figure")
    ap.add_argument("--fake-driver", action="store_true",
                    help="workers launch on the stub driver (no GPU; made-up kernel times)")
    args = ap.parse_args()
    repeat = 20 if args.quick else args.repeat
    import distributed
    import cuda_magic
    from cuda_magic.cell import build, line_config
    from cuda_magic.runtime.remote import host as _host

    cluster = None
    if args.fake_driver:
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (os.path.join(HERE, "remote_site"), HERE, ROOT,
                        os.environ.get("PYTHONPATH")) if p)
    address = args.scheduler
    if address is None:
        cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                           dashboard_address=None, worker_dashboard_address=None)
        address = cluster.scheduler_address
    far = cuda_magic.remote(address)                   # its own client, direct to workers
    gpu = far.gpu()
    proxy = distributed.Client(address, set_as_default=False, direct_to_workers=False)
    rows: list[tuple[str, str]] = []
    try:
        client = far.client
        rows.append(("bare submit (scheduler)", _figure([timed(lambda: client.submit(
            _noop, pure=False).result()) for _ in range(repeat)])))
        actor = far.host(gpu.worker)
        with proxy.as_current():
            slow = proxy.submit(_host.Host, "bench-proxy", actor=True, workers=[gpu.worker],
                                pure=False).result()
        rows.append(("actor call, via the scheduler", _figure([timed(lambda: slow.held().result())
                                                               for _ in range(repeat)])))
        rows.append(("actor call, direct", _figure([timed(lambda: actor.held().result())
                                                    for _ in range(repeat)])))
        arch = gpu.arch
        m = build(SCALE, line_config(arch=arch))
        k = m.scale
        binary = len(bytes(k.result.binary))
        for label, n in (("1 KiB", 256), ("16 MiB", 4 << 20)):
            x, y = np.ones(n, np.float32), np.zeros(n, np.float32)
            grid = (n + 255) // 256
            if label == "1 KiB":
                sent = far.sent_bytes
                first = timed(lambda: k[grid, 256](x, y, 2.0, n))
                rows.append(("first remote launch, 1 KiB (sends the binary)",
                             f"{first:9.3f}           "))
                assert far.sent_bytes - sent == binary, "the binary went more than once"
            times = [timed(lambda: k[grid, 256](x, y, 2.0, n)) for _ in range(repeat)]
            assert far.sent_bytes == binary, "a later launch sent the binary again"
            assert np.all(y == 2.0), "the outputs did not come back"
            rows.append((f"remote launch, {label} in and out", _figure(times)))
            local = client.run(_local_launches, SCALE, arch, n, repeat, workers=[gpu.worker])
            rows.append((f"local launch in the worker, {label}", _figure(local[gpu.worker])))
        from cuda_magic.runtime.helper import worker
        x, y = np.ones(256, np.float32), np.zeros(256, np.float32)
        sent = worker.message(k, "run", (1, 1, 1, 256, 1, 1), 0, (x, y, 2.0, 256), None)
        light = (sent[0], sent[1].key, *sent[2:], sent[1].kernels[sent[2]])
        message = len(pickle.dumps(light)) - 2 * 1024
    finally:
        proxy.close()
        cuda_magic.remote(None)
        if cluster is not None:
            cluster.close()

    print(f"GPU: {gpu.label}, {gpu.arch}   scheduler: {address}   "
          f"{'stub driver (made-up kernel times)' if args.fake_driver else ''}")
    print(f"median (min) in ms over {repeat} calls, one at a time\n")
    print(f"{'figure':48} {'median (min) ms':>21}")
    print("-" * 70)
    for name, fig in rows:
        print(f"{name:48} {fig}")
    med = {name: float(fig.split()[0]) for name, fig in rows}
    floor = med["bare submit (scheduler)"]
    launch = med["remote launch, 1 KiB in and out"]
    print("-" * 70)
    print(f"{'remote launch 1 KiB - bare submit':48} {launch - floor:+9.3f} ms   "
          f"goal <= +2 ms: {'PASS' if launch - floor <= 2 else 'MISS'}")
    print(f"{'remote launch 1 KiB - direct actor call':48} "
          f"{launch - med['actor call, direct']:+9.3f} ms")
    print(f"{'binary sent once per worker':48} {binary:9,d} bytes")
    print(f"{'a launch message besides its arrays':48} {message:9,d} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
