"""The package's one compiled module, optional: the two loops of a search by meaning in C
(``engram_ls/core/semantic/_kernels.c``). It is built when a C compiler is at hand; without one
the build goes on without it, and numpy does the same sums (``core/semantic/bits.py``). With
``ENGRAM_PURE_PYTHON`` set (the VS Code extension's bundle) it is not declared at all, so the
wheel is pure Python, one for every platform and Python. Everything else about the package is
in pyproject.toml."""

import os

from setuptools import Extension, setup

KERNELS = Extension(
    "engram_ls.core.semantic._kernels",
    ["engram_ls/core/semantic/_kernels.c"],
    optional=True,
)

setup(ext_modules=[] if os.environ.get("ENGRAM_PURE_PYTHON") else [KERNELS])
