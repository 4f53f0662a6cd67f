"""The scan path's ripgrep prefilter for text queries never drops a note that matches.

The oracle is the same scan with the prefilter off (every file parsed), and the index path
(the scan folds words exactly as the index's tokenizer does: accents, not ``ß`` or ligatures).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engram_ls.core.search import scan_path as scan
from engram_ls.core.service import Engram

NOTES: dict[str, bytes] = {
    "plain.md": b"---\ntitle: Plain\n---\nThe cafe on the corner.\n",
    "accent.md": "---\ntitle: Accent\n---\nUn café noir.\n".encode(),
    "decomposed.md": "Un cafe\u0301 cre\u0300me.\n".encode(),
    "upper.md": b"# LOUD\n\nCAFE AND STRASSE\n",
    "eszett.md": "Die Straße ist lang.\n".encode(),
    "ligature.md": "An \ufb01le of notes.\n".encode(),  # the fi ligature
    "fullwidth.md": "\uff23\uff21\uff26\uff25 in full width.\n".encode(),
    "latin1.md": "Caf\xe9 in Latin-1.\n".encode("latin-1"),
    "binary.md": b"cafe\x00\x01\x02 binary bytes\n",
    "cafe-from-name.md": b"Nothing about it in the text.\n",
    "topics.md": b"---\ntopics: [cafe]\n---\nOnly the topic says it.\n",
    "inline.md": b"Tagged #cafe inline.\n",
    "summary.md": b"---\nsummary: a cafe summary\n---\nBody.\n",
    "prefix.md": b"Cafeteria food.\n",
    "phrase.md": b"The corner cafe opens early.\n",
    "nothing.md": b"Unrelated text.\n",
    "caf\u00e9-name.md": b"No word inside.\n",
}
QUERIES = [
    "cafe",
    "café",
    "CAFE",
    "strasse",
    "file",
    "caf*",
    '"corner cafe"',
    "cafe corner",
    "binary",
    "fi",
]


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "v"
    root.mkdir()
    for name, data in NOTES.items():
        (root / name).write_bytes(data)
    for i in range(80):  # enough files for the prefilter to run
        (root / f"filler-{i:02d}.md").write_bytes(f"Filler note {i} about tea.\n".encode())
    return root


def paths(engram: Engram, query: str) -> list[str]:
    response = engram.search({"query": query, "limit": 1000})
    return sorted(hit.path for hit in response.results)


def test_prefilter_keeps_every_match(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    unindexed = Engram(vault)  # never opened: the scan path answers
    with_prefilter = {q: paths(unindexed, q) for q in QUERIES}
    monkeypatch.setattr(scan, "PREFILTER_MIN", 10**9)
    without = {q: paths(unindexed, q) for q in QUERIES}
    assert with_prefilter == without
    assert "cafe-from-name.md" in with_prefilter["cafe"]
    assert "accent.md" in with_prefilter["cafe"]
    assert "decomposed.md" in with_prefilter["cafe"]


def test_prefilter_agrees_with_the_index(vault: Path) -> None:
    indexed = Engram(vault)
    indexed.open()
    indexed.sync()
    unindexed = Engram(vault, index_path=vault.parent / "unused.sqlite")
    for q in [*QUERIES, "tea"]:
        assert paths(unindexed, q) == paths(indexed, q), q
    indexed.close()


def test_prefilter_reads_fewer_files(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    unindexed = Engram(vault)
    read: list[str] = []
    original = unindexed.read_note

    def counting(rel: str) -> object:
        read.append(rel)
        return original(rel)

    monkeypatch.setattr(unindexed, "read_note", counting)
    assert paths(unindexed, "corner")
    assert not any(p.startswith("filler-") for p in read)
