"""The methods that take a launch's grid and block first (``k.bench``, ``k.profile``,
``k.check``, ``k.verify``), written like a launch too: ``k.bench[grid, block](*args, **kw)``,
``k.bench[grid, block, shared_mem, stream](...)``, or with a cuda.core ``LaunchConfig``,
``k.bench[config](...)``."""

from __future__ import annotations

import functools
import inspect

from . import attributes as launch_attrs
from ...errors import ArgumentError

__all__ = ["launch_form"]


class launch_form:
    """A method that takes a launch's grid and block first (``bench``, ``profile``, ``check``,
    ``verify``), callable as ``k.bench(grid, block, *args, **kw)`` and also written like a
    launch: ``k.bench[grid, block](*args, **kw)``, with ``[grid, block, shared_mem, stream]`` as
    in ``k[...]`` (where the method takes a stream), or ``k.bench[config]`` with a cuda.core
    ``LaunchConfig`` (the settings the method takes; one it does not is refused)."""

    def __init__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn)
        self.params = inspect.signature(fn).parameters
        self.extra = tuple(n for n in ("shared_mem", "stream") if n in self.params)

    def __get__(self, kernel, owner=None):
        return self if kernel is None else _BoundLaunchForm(self, kernel)


class _BoundLaunchForm:
    __slots__ = ("_form", "_kernel", "__doc__", "__signature__")

    def __init__(self, form: launch_form, kernel):
        self._form, self._kernel = form, kernel
        self.__doc__ = form.fn.__doc__                       # k.bench? shows the method's help
        self.__signature__ = inspect.signature(functools.partial(form.fn, kernel))

    def __call__(self, *args, **kwargs):
        return self._form.fn(self._kernel, *args, **kwargs)

    def __getitem__(self, key):
        name, extra = f"{self._kernel.name}.{self._form.fn.__name__}", self._form.extra
        given = launch_attrs.from_launch_config(key, name)
        if given is not None:              # a cuda.core LaunchConfig
            params = self._form.params
            refused = [k for k, v in given.items() if v and k not in params]
            if refused:
                raise ArgumentError(f"{name} takes no {' or '.join(refused)}; the LaunchConfig "
                                    f"asks for it")
            return functools.partial(self._form.fn, self._kernel, given.pop("grid"),
                                     given.pop("block"),
                                     **{k: v for k, v in given.items() if k in params})
        key = key if isinstance(key, tuple) else (key,)
        if not 2 <= len(key) <= 2 + len(extra):
            raise ArgumentError(f"write {name}[grid, block{''.join(', ' + e for e in extra)}]"
                                f"(*args, ...) or {name}(grid, block, *args, ...)")
        return functools.partial(self._form.fn, self._kernel, key[0], key[1],
                                 **dict(zip(extra, key[2:])))

    def __repr__(self) -> str:
        return f"<{self._kernel.name}.{self._form.fn.__name__}: call (grid, block, *args) or [grid, block](*args)>"
