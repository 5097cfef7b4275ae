"""Compiling: config -> backend (NVRTC in-process, nvcc subprocess) -> :class:`CompilationResult`.

``compiler`` resolves and caches, ``backends/`` run the compilers, ``ptxas``
parses ``ptxas -v``, ``arch`` detects the GPU, ``cache`` keeps binaries.
Nothing here needs a GPU except arch detection when no arch is set.
"""
