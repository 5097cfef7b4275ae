"""Launching: ``Kernel`` objects and everything between a Python call and ``cuLaunchKernel(Ex)``.

- :mod:`.kernel`: :class:`~.kernel.Kernel` (``k[grid, block](*args)``, ``k.launch``, the
  methods ``k.bench``/``k.profile``/``k.check``/``k.verify``/``k.timeline``);
- :mod:`.subscript`: ``k[grid, block]``, the :class:`~.subscript.Launcher` whose call becomes the
  launch plan of repeat launches, and ``k[LaunchConfig]``;
- :mod:`.form`: those methods written like a launch (``k.bench[grid, block](...)``);
- :mod:`.configuration`: a launch's grid, block, shared memory and stream, checked;
- :mod:`.attributes`: launch attributes (clusters, cooperative launches, PDL) as one
  :class:`~.attributes.Attributes` value, checked before the driver sees them;
- :mod:`.params`: what a C parameter is (:class:`~.params.Param`, :class:`~.params.Scalar`);
- argument marshalling: Python values -> one kernel-parameter buffer, by the parsed signature.
  Scalars are packed with :mod:`struct` at the declared type (never a guessed width;
  out-of-range values raise).  Pointers take NumPy arrays (staged on the device, copied back
  for non-const pointees), objects with ``__cuda_array_interface__`` (CuPy, PyTorch, Numba: by
  pointer, no copy), cuda.core Buffers, or ``None`` (a null pointer).  Structs by value take
  bytes or a NumPy structured scalar of the kernel's parameter size.  References (``const
  int& n``: an address in the ABI) take a device array holding the value, function pointers
  an int device address, and declarations the parser could not read only raw bytes of the
  compiled parameter's size.  How: :mod:`.packer` (the parameter buffer, its layout, the
  launch plan of repeat launches) with its parts :mod:`.values` (by-value arguments),
  :mod:`.pointers` (pointers and references: which array, its full and quick checks) and
  :mod:`.staging` (NumPy arrays copied to the device and back).  The errors they raise,
  :class:`~cuda_magic.errors.ArgumentError` and :class:`~cuda_magic.errors.ArgumentRangeError`,
  are in :mod:`cuda_magic.errors`;
- :mod:`.device_print`: what a kernel prints on the GPU, into the cell's output.
"""
