"""What every helper process shares: the binary it loads, how arguments cross, how messages travel.

Three kinds of helper process run kernels away from the notebook's CUDA: the launcher of
``isolate()`` and of launches after a fault (:mod:`.worker`, its process :mod:`.main`), the
sweep's helpers, one per GPU (:mod:`..sweep`), and the one launch that Nsight Compute or
compute-sanitizer watches (:mod:`..nsight.child`).  They share three pieces:

- :mod:`.program`: :class:`~.program.Program`, the one record of the binary a helper loads
  (the bytes compiled in the notebook, their format and arch, the kernels' symbols and
  parameters);
- :mod:`.encoding`: how one argument is described to a child and rebuilt there (arrays by
  name, values, bytes, null), and :func:`~.encoding.host_copy`, the one copy of a device array
  to the host;
- :mod:`.transport`: framed pickles over a pipe (the worker and the sweep's helpers), and
  :mod:`.specdir`: the spec directory the tools' child reads (why two: see its docstring).
"""
