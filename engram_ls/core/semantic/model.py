"""Static embedding models: a token's vector looked up, a text's vector the mean of its tokens'.

Two kinds of model folder are read, both offline, neither through its own package's loader:

- the default, the 256-dimension model that the ``wordllama`` package ships inside its wheel
  (``weights/l2_supercat_256.safetensors`` and ``tokenizers/l2_supercat_tokenizer_config.json``);
  only its files are read: importing ``wordllama`` configures the root logger and its
  ``load()`` looks for a hub;
- a model2vec folder the user has (``semantic.model`` in the config): ``model.safetensors``
  (tensor ``embeddings``, optional per-token ``weights`` and vocabulary ``mapping``) and
  ``tokenizer.json``.

A text is tokenized without special tokens, its tokens' rows are averaged and the mean is
scaled to unit length, which is what both packages do (``tests/core/test_semantic_model.py``
compares the default with ``wordllama``'s own output). numpy, tokenizers and safetensors come
with the ``semantic`` extra; this module imports them only when a model is loaded.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shlex
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engram_ls.core.errors import EngramError, UnsupportedMode

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

DEFAULT_MODEL = "wordllama"
"""``semantic.model`` when the config names none: the model inside the ``wordllama`` wheel."""
_WORDLLAMA_WEIGHTS = ("weights", "l2_supercat_256.safetensors")
_WORDLLAMA_TOKENIZER = ("tokenizers", "l2_supercat_tokenizer_config.json")
_NEEDS = ("numpy", "tokenizers", "safetensors")


@functools.cache
def install_command() -> str:
    """How to add the ``semantic`` extra to the Python that runs Engram: its requirements as
    the installed package's metadata lists them (Engram is installed from a checkout or a
    wheel, not from the package index, so ``pip install 'engram-ls[semantic]'`` cannot work)."""
    try:
        listed = importlib.metadata.requires("engram-ls") or []
    except importlib.metadata.PackageNotFoundError:  # run from a tree that is not installed
        listed = []
    wanted = []
    for line in listed:
        spec, _, marker = line.partition(";")
        if "extra" in marker and "semantic" in marker:
            wanted.append(shlex.quote(spec.strip().replace(" ", "")))
    if not wanted:
        return "pip install '.[semantic]' (in Engram's source folder)"
    return f"{shlex.quote(sys.executable)} -m pip install {' '.join(wanted)}"


MAX_TOKENS = 4096
"""Tokens of one text that count (a chunk is far shorter; this bounds a hostile one)."""


class ModelError(EngramError):
    """A model that cannot be loaded or used (missing files, bad tensors)."""

    code = "ENGRAM_UNSUPPORTED_MODE"


@functools.cache
def missing_packages() -> tuple[str, ...]:
    """The packages of the ``semantic`` extra that are not installed (none: it is); looked up
    once per process (every status and search by meaning asks)."""
    return tuple(name for name in _NEEDS if importlib.util.find_spec(name) is None)


def unavailable_error(detail: str | None = None) -> UnsupportedMode:
    """The error of a semantic or hybrid search that this installation cannot answer."""
    why = detail or (
        "semantic search needs the semantic extra (missing: "
        + ", ".join(missing_packages() or ["the model"])
        + ")"
    )
    install = install_command()
    return UnsupportedMode(f"{why}; install it with: {install}", data={"install": install})


@dataclass(frozen=True, slots=True)
class ModelFiles:
    name: str
    weights: Path
    tokenizer: Path
    tensor: str
    shipped: bool = False
    """Inside an installed package (the default): its token table is read from its file a row
    at a time (``TableFile``), never a folder that could be changed under a running server."""


def model_files(spec: str | None, vault_root: Path | None = None) -> ModelFiles:
    """Where the model ``spec`` (None or ``wordllama``: the default; else a folder) lives."""
    if spec in (None, "", DEFAULT_MODEL):
        found = importlib.util.find_spec("wordllama")
        if found is None or not found.submodule_search_locations:
            install = install_command()
            raise ModelError(f"the default model comes with the semantic extra: {install}")
        root = Path(next(iter(found.submodule_search_locations)))
        return ModelFiles(
            name=DEFAULT_MODEL + "/l2_supercat_256",
            weights=root.joinpath(*_WORDLLAMA_WEIGHTS),
            tokenizer=root.joinpath(*_WORDLLAMA_TOKENIZER),
            tensor="embedding.weight",
            shipped=True,
        )
    folder = Path(os.path.expanduser(spec))
    if not folder.is_absolute() and vault_root is not None:
        folder = vault_root / folder
    return ModelFiles(
        name=folder.name,
        weights=folder / "model.safetensors",
        tokenizer=folder / "tokenizer.json",
        tensor="embeddings",
    )


_KEYS: dict[tuple[str, int, int], str] = {}
_SAMPLES = 64
_BLOCK = 4096
_KEYS_LOCK = threading.Lock()


def files_key(files: ModelFiles) -> str:
    """The model's key: its name and a digest of its files (weights and tokenizer), so that
    the index knows which model its vectors are of without loading it, and a model whose files
    change is another model. The digest is of each file's size and of 64 blocks of 4 KiB
    spread over it (the first and last included): about 0.5 MB read instead of the whole 18 MB
    (the first status of a server would wait for that), any retrained or other model differs
    in nearly every block. OSError when a file cannot be read."""
    digest = hashlib.blake2b(digest_size=8)
    for path in (files.weights, files.tokenizer):
        st = path.stat()
        known = (os.fspath(path), st.st_size, st.st_mtime_ns)
        with _KEYS_LOCK:
            part = _KEYS.get(known)
        if part is None:
            h = hashlib.blake2b(str(st.st_size).encode(), digest_size=16)
            with open(path, "rb") as f:
                for i in range(_SAMPLES):
                    f.seek(max(0, (st.st_size - _BLOCK) * i // (_SAMPLES - 1)))
                    h.update(f.read(_BLOCK))
            part = h.hexdigest()
            with _KEYS_LOCK:
                _KEYS[known] = part
        digest.update(part.encode())
    return f"{files.name}:{digest.hexdigest()}"


class StaticModel:
    """A loaded static embedding model. ``embed`` is thread-safe (no state changes)."""

    def __init__(self, files: ModelFiles) -> None:
        import numpy as np
        from safetensors import safe_open
        from tokenizers import Tokenizer

        for f in (files.weights, files.tokenizer):
            if not f.is_file():
                raise ModelError(f"model file not found: {f.name} (model {files.name})")
        try:
            on_file = _table_file(files) if files.shipped else None
            tensors: dict[str, Any] = {}
            if on_file is None:
                with safe_open(os.fspath(files.weights), framework="np") as st:
                    for key in st.keys():  # noqa: SIM118 (a safetensors handle, not a dict)
                        if key in (files.tensor, "weights", "mapping"):
                            tensors[key] = st.get_tensor(key)
            tokenizer = Tokenizer.from_file(os.fspath(files.tokenizer))
        except Exception as exc:  # safetensors and tokenizers raise their own types
            raise ModelError(f"model {files.name} cannot be loaded: {exc}") from exc
        table: Any = on_file if on_file is not None else tensors.get(files.tensor)
        if table is None or len(table.shape) != 2 or table.shape[0] == 0:
            raise ModelError(f"model {files.name} has no 2-d tensor {files.tensor!r}")
        mapping, weights = _mapping_and_weights(files.name, tensors, table.shape[0])
        if weights is not None and mapping is None:  # one weight per row: fold it in
            table = table.astype(np.float32) * weights[:, None]
            weights = None
        self.weights = weights
        """model2vec's per-token weights when a ``mapping`` shares rows between tokens."""
        self.table = table if on_file is not None else table.astype(np.float16)
        """The token vectors as float16 (16 MiB for the default model): what a query needs
        (the default model's read from its file a row at a time: none of it in memory)."""
        self._fast: Any = None
        """A float32 copy while ``bulk()`` is entered: gathering float16 rows is several
        times slower, which only bulk embedding notices."""
        self._bulk = 0
        self._bulk_lock = threading.Lock()
        self.mapping = mapping
        self.tokenizer = tokenizer
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self.name = files.name
        self.dims = int(table.shape[1])
        self.key = files_key(files)
        """Names the model and its numbers: vectors made by another model are not reused."""

    @contextlib.contextmanager
    def bulk(self) -> Iterator[None]:
        """Embed many texts faster inside this block (the table as float32: 16 MiB more)."""
        import numpy as np

        with self._bulk_lock:
            self._bulk += 1
            if self._fast is None:
                self._fast = self.table.astype(np.float32)
        try:
            yield
        finally:
            with self._bulk_lock:
                self._bulk -= 1
                if not self._bulk:
                    self._fast = None

    def embed(self, texts: list[str]) -> Vectors:
        """Unit vectors, one row per text; a text with no known token gets a zero row."""
        import numpy as np

        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        if not texts:
            return out
        encode = getattr(self.tokenizer, "encode_batch_fast", self.tokenizer.encode_batch)
        encoded = encode(texts, add_special_tokens=False)
        rows = self.table.shape[0]
        table = self._fast if self._fast is not None else self.table
        for i, enc in enumerate(encoded):
            ids = np.asarray(enc.ids[:MAX_TOKENS], dtype=np.int64)
            if not len(ids):
                continue
            if self.mapping is not None:
                np.clip(ids, 0, len(self.mapping) - 1, out=ids)
                vecs = table[self.mapping[ids]].astype(np.float32)
                if self.weights is not None:
                    vecs *= self.weights[ids][:, None]
                out[i] = vecs.sum(axis=0) / len(ids)
                continue
            np.clip(ids, 0, rows - 1, out=ids)
            # One text's rows at a time: summing a small block is several times faster than
            # np.add.reduceat over a batch, and float16 rows are summed as float32.
            out[i] = table[ids].sum(axis=0, dtype=np.float32) / len(ids)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        out[~np.isfinite(out).all(axis=1)] = 0.0
        return out


class TableFile:
    """A float16 token table in its file, read a row at a time (``os.pread``): a query reads
    the few rows of its words and keeps none of them. A map of the file would keep far more
    than it reads: the kernel maps the cached pages around each one touched (the whole 16 MiB
    table after some twenty queries, counted in the server's RSS), and a file cut short under
    it kills the process (SIGBUS) instead of raising. What ``StaticModel`` uses of an array:
    ``shape``, ``table[ids]`` and ``astype`` (the whole table, for bulk embedding)."""

    def __init__(self, path: Path, begin: int, rows: int, dims: int) -> None:
        self.path = path
        self.shape = (rows, dims)
        self._begin = begin
        self._row = dims * 2
        self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))

    def __del__(self) -> None:
        fd = getattr(self, "_fd", -1)
        if fd >= 0:
            os.close(fd)

    def _read(self, offset: int, size: int) -> bytes:
        data = os.pread(self._fd, size, offset)
        if len(data) != size:
            raise ModelError(f"model file {self.path.name} changed while in use: restart")
        return data

    def __getitem__(self, ids: np.ndarray) -> np.ndarray:
        import numpy as np

        wanted, where = np.unique(ids, return_inverse=True)
        buf = b"".join(self._read(self._begin + int(i) * self._row, self._row) for i in wanted)
        rows = np.frombuffer(buf, dtype=np.float16).reshape(len(wanted), self.shape[1])
        return rows[where.reshape(-1)]

    def astype(self, dtype: Any) -> np.ndarray:
        import numpy as np

        whole = self._read(self._begin, self.shape[0] * self._row)
        return np.frombuffer(whole, dtype=np.float16).reshape(self.shape).astype(dtype)


def _table_file(files: ModelFiles) -> TableFile | None:
    """The token table of a model file whose table is 2-d float16 as the safetensors format
    lays it out (8 bytes of header length, the JSON header, the data), read from the file
    (``TableFile``); None for any other, which is read into memory."""
    with open(files.weights, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        length = int.from_bytes(f.read(8), "little")
        if not 0 < length <= min(size - 8, 1 << 24):
            return None
        try:
            info = json.loads(f.read(length)).get(files.tensor)
            begin, end = (int(x) for x in info["data_offsets"])
            rows, dims = (int(x) for x in info["shape"])
            fits = begin >= 0 and end - begin == rows * dims * 2 and 8 + length + end <= size
            if info["dtype"] != "F16" or not fits or rows <= 0 or dims <= 0:
                return None
        except (ValueError, TypeError, KeyError, AttributeError):
            return None
    return TableFile(files.weights, 8 + length + begin, rows, dims)


def _mapping_and_weights(name: str, tensors: dict[str, Any], rows: int) -> tuple[Any, Any]:
    """model2vec's optional ``mapping`` (token → row, when tokens share rows) and ``weights``
    (one per token), checked: a model that does not hold together is a ModelError, never an
    error at the first text embedded."""
    import numpy as np

    mapping = tensors.get("mapping")
    weights = tensors.get("weights")
    if mapping is not None:
        if mapping.ndim != 1 or not np.issubdtype(mapping.dtype, np.integer) or not len(mapping):
            raise ModelError(f"model {name}: 'mapping' is not a list of row numbers")
        if int(mapping.min()) < 0 or int(mapping.max()) >= rows:
            raise ModelError(f"model {name}: 'mapping' names rows the model does not have")
        mapping = mapping.astype(np.int64)
    if weights is not None:
        tokens = len(mapping) if mapping is not None else rows
        if weights.ndim != 1 or len(weights) != tokens:
            raise ModelError(f"model {name}: 'weights' has {weights.shape}, not one per token")
        weights = weights.astype(np.float32)
    return mapping, weights


def load_model(spec: str | None, vault_root: Path | None = None) -> StaticModel:
    """The model ``spec`` names, loaded; ModelError (or UnsupportedMode without the extra)."""
    missing = missing_packages()
    if missing:
        raise unavailable_error()
    return StaticModel(model_files(spec, vault_root))


__all__ = [
    "DEFAULT_MODEL",
    "ModelError",
    "StaticModel",
    "files_key",
    "install_command",
    "load_model",
    "missing_packages",
    "model_files",
    "unavailable_error",
]
