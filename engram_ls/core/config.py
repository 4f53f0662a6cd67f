"""Typed configuration with defaults, loaded from ``<vault>/.engram/config.yaml``.

Every key is optional. A bad value is reported and that key falls back to its default; the rest
of the file still applies. The same keys are accepted by the language server as
``initializationOptions`` and as the ``engram`` section of ``workspace/configuration``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engram_ls.core.contained import read_regular
from engram_ls.core.frontmatter import SafeYamlLoader

CONFIG_DIR = ".engram"
CONFIG_FILE = "config.yaml"
INDEX_FILE = "index.sqlite"


class Limits(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_note_bytes: int = Field(default=2_000_000, ge=1024)
    """Bytes of a note that are parsed and indexed; beyond it only metadata and the head count."""
    query_max_chars: int = Field(default=1000, ge=1)
    snippet_chars: int = Field(default=300, ge=20, le=300)
    default_limit: int = Field(default=50, ge=1)
    max_results: int = Field(default=1000, ge=1, le=1000)
    response_chars: int = Field(default=20_000, ge=1000)
    """Character budget of text answers for agents."""
    deadline_ms: int = Field(default=10_000, ge=10)
    workspace_symbols: int = Field(default=100, ge=1, le=1000)
    """Results of one ``workspace/symbol`` request (all vaults together)."""
    check_interval_s: float = Field(default=600.0, ge=0)
    """Seconds between the servers' background integrity checks of the index (``PRAGMA
    quick_check``, about 1 s at 100k notes), run when no search came for a few seconds;
    0: only the check right after the index is opened."""


class Semantic(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    """Search by meaning (modes ``semantic`` and ``hybrid``), when the ``semantic`` extra is
    installed: the servers embed the notes in the background after the index is ready."""
    model: str | None = None
    """The embedding model: None (or ``wordllama``) for the one shipped in the ``wordllama``
    package; else a folder (absolute, ``~``, or relative to the vault) holding a model2vec
    static model (``model.safetensors`` and ``tokenizer.json``)."""


class Tasks(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    overdue: Literal["off", "hint", "information", "warning"] = "off"
    """Whether engram-ls marks each open task due before today in an open note, and how
    (a diagnostic of that severity, code ``task-overdue``)."""


class Editor(BaseModel):
    """What engram-ls shows in a note besides its answers; nothing in the index depends on it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    code_lens: bool = True
    """Code lenses: "N backlinks" on a note's title and on the headings links point to, and
    "related" on the title when search by meaning is on."""
    inlay_hints: bool = True
    """Inlay hints: after a wiki link written with a file name, the title of its note."""


class EngramConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    include: tuple[str, ...] = ("**/*.md",)
    exclude: tuple[str, ...] = ()
    topic_keys: tuple[str, ...] = ("topics", "tags", "tag")
    date_keys: tuple[str, ...] = ("created_at", "created", "date")
    date_formats: tuple[str, ...] = ()
    """Extra strftime patterns tried on date strings, e.g. ``%m/%d/%Y``."""
    summary_keys: tuple[str, ...] = ("summary", "description")
    inline_tags: bool = True
    keyword_topics: dict[str, str] = Field(default_factory=dict)
    trigram_index: bool = False
    """Keep a trigram index of the notes' text, which answers ``literal`` searches from
    candidates instead of a ripgrep scan of every file. Off by default until its cost to a cold
    build is cut (it about halves the build's notes/s and adds about 60 % to the index); off,
    literal searches scan, with the same answers."""
    index_path: str | None = None
    """Where the index lives; relative paths are taken from the vault root."""
    limits: Limits = Field(default_factory=Limits)
    semantic: Semantic = Field(default_factory=Semantic)
    tasks: Tasks = Field(default_factory=Tasks)
    editor: Editor = Field(default_factory=Editor)

    @field_validator("topic_keys", "date_keys", "summary_keys")
    @classmethod
    def _non_empty_keys(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        keys = tuple(k.strip() for k in value if k and k.strip())
        return keys


def config_from_mapping(raw: Any) -> tuple[EngramConfig, list[str]]:
    """Validate a mapping; keys with bad values fall back to defaults and are reported."""
    warnings: list[str] = []
    if raw is None:
        return EngramConfig(), warnings
    if not isinstance(raw, dict):
        return EngramConfig(), [
            f"configuration must be a mapping of keys, got {type(raw).__name__}"
        ]
    data = dict(raw)
    for _ in range(len(data) + 1):
        try:
            return EngramConfig.model_validate(data), warnings
        except ValidationError as exc:
            bad: set[str] = set()
            for err in exc.errors():
                loc = err.get("loc") or ("?",)
                key = str(loc[0])
                where = ".".join(str(p) for p in loc)
                warnings.append(f"config key '{where}': {err.get('msg')}; using the default")
                bad.add(key)
            for key in bad:
                data.pop(key, None)
            if not bad:
                break
    return EngramConfig(), warnings


CONFIG_MAX_BYTES = 1024 * 1024
"""A config file larger than this is not read (defaults apply, with a warning)."""


def read_config_file(vault_root: Path) -> tuple[dict[str, Any], list[str]]:
    """The raw mapping of ``<vault>/.engram/config.yaml`` ({} when absent or unreadable)."""
    path = vault_root / CONFIG_DIR / CONFIG_FILE
    try:
        data = read_regular(path, CONFIG_MAX_BYTES + 1)
        if len(data) > CONFIG_MAX_BYTES:
            raise OSError(f"larger than {CONFIG_MAX_BYTES} bytes")
        text = data.decode("utf-8")
    except FileNotFoundError:
        return {}, []
    except (OSError, UnicodeDecodeError) as exc:
        return {}, [f"cannot read {CONFIG_DIR}/{CONFIG_FILE}: {exc}; using defaults"]
    try:
        raw = yaml.load(text, Loader=SafeYamlLoader)
    except yaml.YAMLError as exc:
        return {}, [f"{CONFIG_DIR}/{CONFIG_FILE} is not valid YAML ({exc}); using defaults"]
    if raw is None:
        return {}, []
    if not isinstance(raw, dict):
        return {}, [f"{CONFIG_DIR}/{CONFIG_FILE} must be a mapping of keys; using defaults"]
    return raw, []


def load_config(
    vault_root: Path, overrides: dict[str, Any] | None = None
) -> tuple[EngramConfig, list[str]]:
    """The config file's keys, with ``overrides`` (e.g. editor settings) on top.

    Never raises for bad content: problems come back as warnings, with defaults in place.
    """
    raw, warnings = read_config_file(vault_root)
    if overrides:
        raw = {**raw, **{k: v for k, v in overrides.items() if v is not None}}
    config, more = config_from_mapping(raw)
    return config, warnings + more
