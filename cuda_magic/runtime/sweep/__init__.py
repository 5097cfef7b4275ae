"""Benchmark jobs in helper processes: one per GPU of this host, or on a Dask cluster.

A :class:`Job` is what one tune candidate needs on a GPU, as plain data: the
:class:`~cuda_magic.runtime.helper.program.Program` (**the bytes compiled in the notebook**,
its kernels' symbols and parameters), the launches to replay in order, the arrays by name
(NumPy) and which of them are outputs, and :func:`~cuda_magic.runtime.measure.bench.options` for
timing.  A helper process (``python3 -m cuda_magic.runtime.sweep``) pinned to one GPU with
``CUDA_VISIBLE_DEVICES`` loads the bytes, replays the launches once on its own copies of the
arrays (the outputs come back to be checked, or are checked there against the reference:
:mod:`cuda_magic.correctness.reference`), then times each launch with the same code as ``k.bench``.

A kernel fault ends only its helper: the :class:`Outcome` says ``fault`` and the next job
starts a fresh helper.  A job that runs past its time limit has its helper killed.
:class:`LocalPool` keeps one helper per GPU and gives each job to whichever is free;
:class:`DaskPool` runs the same jobs as Dask tasks, each worker with a helper of its own
(``dask-cuda``'s ``LocalCUDACluster`` pins one worker per GPU); the arrays travel to the
workers once (``client.scatter``), the binaries with their jobs.

The parts: :mod:`.jobs` (the records), :mod:`.replay` (a job on the GPU, in the helper),
:mod:`.protocol` (the helper's messages and loop), :mod:`.pools` (the notebook's end:
:class:`Helper`, the pools).
"""

from .jobs import Job, Launch, Outcome, SweepError
from .pools import DaskPool, Helper, LocalPool, close_pools, local_pool
from .replay import run_job

__all__ = ["Launch", "Job", "Outcome", "Helper", "LocalPool", "DaskPool", "run_job", "SweepError",
           "local_pool", "close_pools"]
