"""The stale contract in the service (issue 15, item 4): ``require_index`` fails with
ENGRAM_INDEX_STALE where a search would scan, ``max_staleness_ms`` where the index was last in
line with the files longer ago than asked; without them the answers are as before. Real index
files, real vault folders."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from engram_ls.core.errors import IndexStale, InvalidRequest
from engram_ls.core.search import parse_request
from engram_ls.core.service import Engram

OLD = "2020-01-01T00:00:00Z"


def _built(root: Path) -> Engram:
    engram = Engram(root)
    engram.open()
    engram.sync()
    return engram


def _age_index(index: Path, when: str = OLD) -> None:
    """The index as another process left it long ago: its last change at ``when``."""
    with sqlite3.connect(index) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'updated_at'", (when,))


def test_the_fields_default_to_todays_behaviour() -> None:
    req = parse_request({"query": "x"})
    assert req.require_index is False and req.max_staleness_ms is None
    with pytest.raises(InvalidRequest, match="max_staleness_ms"):
        parse_request({"query": "x", "max_staleness_ms": -1})


def test_no_index_scans_by_default_and_fails_with_require_index(
    vault_copy: Callable[[str], Path],
) -> None:
    root = vault_copy("tags")
    engram = Engram(root, read_only=True)  # no index file, never created
    engram.open()
    scanned = engram.search({"query": "", "tags": ["memory"]})
    assert scanned.index.served_by == "scan" and scanned.total > 0
    with pytest.raises(IndexStale) as err:
        engram.search({"query": "", "tags": ["memory"], "require_index": True})
    assert err.value.code == "ENGRAM_INDEX_STALE"
    assert "require_index" in err.value.message and "no index" in err.value.message
    assert err.value.data["state"] == "empty"
    assert not (root / ".engram" / "index.sqlite").exists()  # nothing written meanwhile


def test_an_unusable_index_fails_with_require_index(
    vault_copy: Callable[[str], Path], unmakeable_index: Path
) -> None:
    root = vault_copy("tags")
    engram = Engram(root, index_path=unmakeable_index)
    engram.open()
    assert engram.unavailable is not None
    assert engram.search({"query": "memory"}).index.served_by == "scan"
    with pytest.raises(IndexStale, match="require_index"):
        engram.search({"query": "memory", "require_index": True})


def test_a_damaged_index_fails_with_require_index_until_rebuilt(
    vault_copy: Callable[[str], Path],
) -> None:
    root = vault_copy("tags")
    engram = _built(root)
    engram.close()
    index = root / ".engram" / "index.sqlite"
    for suffix in ("-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    size = index.stat().st_size
    index.write_bytes(index.read_bytes()[:100] + b"\xa5" * (size - 100))  # header kept
    again = Engram(root)
    again.open()  # the damaged file is moved aside; the new one is empty until a sync
    assert again.status().moved_aside is not None
    with pytest.raises(IndexStale):
        again.search({"query": "memory", "require_index": True})
    assert again.search({"query": "memory"}).index.served_by == "scan"
    again.sync()
    served = again.search({"query": "memory", "require_index": True})
    assert served.index.served_by == "index" and served.total > 0


def test_max_staleness_after_a_sync_in_this_process(vault_copy: Callable[[str], Path]) -> None:
    engram = _built(vault_copy("tags"))
    ok = engram.search({"query": "memory", "max_staleness_ms": 60_000})
    assert ok.index.served_by == "index" and ok.total > 0
    with pytest.raises(IndexStale) as err:
        engram.search({"query": "memory", "max_staleness_ms": 0})
    assert err.value.data["max_staleness_ms"] == 0
    assert err.value.data["staleness_ms"] >= 0


def test_max_staleness_of_an_index_another_process_left(
    vault_copy: Callable[[str], Path],
) -> None:
    root = vault_copy("tags")
    _built(root).close()
    index = root / ".engram" / "index.sqlite"
    _age_index(index)
    reader = Engram(root, read_only=True)  # as ``engram search --no-sync``: no sync here
    reader.open()
    with pytest.raises(IndexStale, match="60000 ms") as err:
        reader.search({"query": "memory", "max_staleness_ms": 60_000})
    assert err.value.data["staleness_ms"] > 60_000
    assert reader.search({"query": "memory"}).index.served_by == "index"  # default: as before
    writer = Engram(root)
    writer.open()
    writer.sync()  # nothing changed, but the files were compared: in line from now on
    assert writer.search({"query": "memory", "max_staleness_ms": 60_000}).total > 0


def test_max_staleness_alone_still_scans_without_an_index(
    vault_copy: Callable[[str], Path],
) -> None:
    """A scan reads the files as they are now: it is never stale; only ``require_index``
    forbids it."""
    engram = Engram(vault_copy("tags"), read_only=True)
    engram.open()
    res = engram.search({"query": "memory", "max_staleness_ms": 0})
    assert res.index.served_by == "scan" and res.total > 0


def test_results_and_status_carry_the_source_revision(
    git_vault: Callable[..., tuple[Path, str]], vault_copy: Callable[[str], Path]
) -> None:
    root, head = git_vault(dirty=True)
    engram = _built(root)
    res = engram.search({"query": "hello"})
    assert res.index.source_revision is not None
    assert (res.index.source_revision.commit, res.index.source_revision.dirty) == (head, True)
    assert engram.status().source_revision == res.index.source_revision
    plain = _built(vault_copy("tags"))
    assert plain.search({"query": "memory"}).index.source_revision is None
    assert plain.status().source_revision is None


def test_an_index_being_built_fails_with_require_index(vault_copy: Callable[[str], Path]) -> None:
    """As another process's first build leaves the file while it runs: ``building``."""
    root = vault_copy("tags")
    _built(root).close()
    with sqlite3.connect(root / ".engram" / "index.sqlite") as conn:
        conn.execute("UPDATE meta SET value = 'building' WHERE key = 'state'")
    reader = Engram(root, read_only=True)
    reader.open()
    assert reader.search({"query": "memory"}).index.served_by == "scan"
    with pytest.raises(IndexStale, match="it is building") as err:
        reader.search({"query": "memory", "require_index": True})
    assert err.value.data["state"] == "building"
