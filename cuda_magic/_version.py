"""The package version: one place, read by ``cuda_magic.__version__`` and written into exports."""

__version__ = "0.1.0"
