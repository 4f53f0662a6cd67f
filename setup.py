"""The package's one compiled module, optional: the two loops of a search by meaning in C
(``engram_ls/core/semantic/_kernels.c``). It is built when a C compiler is at hand; without one
(or with ``ENGRAM_PURE_PYTHON`` set, as for the VS Code extension's bundle, one wheel for every
Python) the package is pure Python and numpy does the same sums (``core/semantic/bits.py``).
Everything else about the package is in pyproject.toml."""

import os

from setuptools import Extension, setup

KERNELS = Extension(
    "engram_ls.core.semantic._kernels",
    ["engram_ls/core/semantic/_kernels.c"],
    optional=True,
)

setup(ext_modules=[] if os.environ.get("ENGRAM_PURE_PYTHON") else [KERNELS])
