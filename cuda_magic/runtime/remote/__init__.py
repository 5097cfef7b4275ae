"""Remote GPUs: compile in the notebook, launch on a GPU of a Dask cluster.

- :mod:`.session`: the notebook's end: :func:`~.session.remote` connects (a Client, an
  address, None), :class:`~.session.Remote` sends each launch's message to a worker's host and
  reads the answer, :func:`~.session.remote_gpus` lists the cluster's GPUs;
- :mod:`.host`: the worker's end, a Dask actor per worker with a helper process per GPU;
- :mod:`.across`: one call on several GPUs (``on="all"``) and the table of their results.

See docs/remote.md.
"""

from .across import Across
from .session import GPU, Remote, current, remote, remote_gpus

__all__ = ["remote", "remote_gpus", "current", "Remote", "GPU", "Across"]
