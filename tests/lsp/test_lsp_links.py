"""Links through the real server: completion, definition, references, hover, diagnostics with
the create-note quick fix, and willRenameFiles (edits applied and every file checked)."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from engram_ls.core.service import Engram
from tests.conftest import DATA, REAL_VAULT
from tests.lsp.conftest import PRESETS, Shared, search, shared_server, start, wait_ready
from tests.lsp.test_lsp_completion import open_doc

TIMEOUT = 30
MARK = "‸"

# the tests that only open buffers share a server per preset (the presets differ in position
# encoding, which every range here depends on)
links = shared_server(DATA / "links", "links", PRESETS)


def units(text: str, preset: str) -> int:
    if preset == "neovim":  # Neovim offers utf-8 first
        return len(text.encode("utf-8"))
    return len(text.encode("utf-16-le")) // 2


def from_units(line: str, character: int, preset: str) -> int:
    """A client column back to a code-point column."""
    count = 0
    for index, char in enumerate(line):
        if count >= character:
            return index
        count += units(char, preset)
    return len(line)


def apply(text: str, edits: Sequence[types.TextEdit], preset: str) -> str:
    """Apply single-line LSP edits the way an editor would."""
    lines = text.split("\n")
    ordered = sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character))
    for edit in reversed(ordered):
        assert edit.range.start.line == edit.range.end.line
        row = lines[edit.range.start.line]
        start = from_units(row, edit.range.start.character, preset)
        end = from_units(row, edit.range.end.character, preset)
        lines[edit.range.start.line] = row[:start] + edit.new_text + row[end:]
    return "\n".join(lines)


def at(text: str, needle: str, offset: int = 2) -> tuple[int, str]:
    """(line, text of the line before the cursor) of ``needle`` + ``offset`` characters."""
    pos = text.index(needle) + offset
    line = text.count("\n", 0, pos)
    return line, text[text.rfind("\n", 0, pos) + 1 : pos]


def doc_id(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


async def started(
    client: LanguageClient,
    preset: str,
    copy: Callable[[Path, str], Path],
    src: Path = DATA / "links",
) -> Path:
    root = copy(src, "links")
    await start(client, [root], preset)
    await wait_ready(client)
    return root


async def complete_at(
    client: LanguageClient, root: Path, marked: str, preset: str, name: str = "draft.md"
) -> types.CompletionList:
    text = marked.replace(MARK, "")
    line, before = at(marked, MARK, 0)
    uri = (root / name).as_uri()
    open_doc(client, uri, text)
    result = await asyncio.wait_for(
        client.text_document_completion_async(
            types.CompletionParams(
                text_document=doc_id(uri),
                position=types.Position(line=line, character=units(before, preset)),
            )
        ),
        TIMEOUT,
    )
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=doc_id(uri)))
    assert result is None or isinstance(result, types.CompletionList)
    return result or types.CompletionList(is_incomplete=False, items=[])


def inserted(result: types.CompletionList, marked: str, preset: str) -> dict[str, str]:
    """Label → the cursor line after accepting that item."""
    text = marked.replace(MARK, "")
    line, _ = at(marked, MARK, 0)
    out = {}
    for item in result.items:
        assert isinstance(item.text_edit, types.TextEdit)
        out[item.label] = apply(text, [item.text_edit], preset).split("\n")[line]
    return out


@pytest.mark.asyncio(loop_scope="module")
async def test_link_completion(links: Shared) -> None:
    client, root, preset = links.client, links.root, links.preset

    marked = "# Draft\n\n😀 see [[Bet‸"
    got = inserted(await complete_at(client, root, marked, preset), marked, preset)
    assert got == {"Beta Note": "😀 see [[beta]]"}

    marked = "# Draft\n\nsee [[bee‸]] here"
    got = inserted(await complete_at(client, root, marked, preset), marked, preset)
    assert got == {"Bee": "see [[beta|Bee]] here"}

    marked = "# Draft\n\nsee [[Du‸"
    result = await complete_at(client, root, marked, preset)
    assert sorted(inserted(result, marked, preset).values()) == [
        "see [[one/Dup]]",
        "see [[two/Dup]]",
    ]

    marked = "# Draft\n\nsee [[alpha#sec‸"
    got = inserted(await complete_at(client, root, marked, preset), marked, preset)
    assert got == {"Second Part": "see [[alpha#Second Part]]"}

    marked = "# Draft\n\nsee [x](gam‸"
    got = inserted(await complete_at(client, root, marked, preset), marked, preset)
    assert got == {"Gamma": "see [x](projects/gamma.md)"}

    marked = "# Draft\n\nsee [x](../alpha.md#sec‸)"
    result = await complete_at(client, root, marked, preset, name="projects/draft.md")
    assert inserted(result, marked, preset) == {"Second Part": "see [x](../alpha.md#second-part)"}

    marked = "# Draft\n\nsee [x](§‸"
    got = inserted(await complete_at(client, root, marked, preset), marked, preset)
    assert got == {"§ Special Name": "see [x](names/§%20Special%20Name.md)"}

    # not in a link, in code, or in a URL: topic completion's answer (nothing here)
    for marked in ("`[[al‸`", "```\n[[al‸\n```", "[x](https://al‸"):
        result = await complete_at(client, root, "# D\n\n" + marked, preset)
        assert result.items == []


@pytest.mark.asyncio(loop_scope="module")
async def test_definition_and_hover(links: Shared) -> None:
    client, root, preset = links.client, links.root, links.preset
    uri = (root / "index.md").as_uri()
    text = (root / "index.md").read_text(encoding="utf-8")
    open_doc(client, uri, text)

    async def definition(needle: str) -> Any:
        line, before = at(text, needle)
        pos = types.Position(line=line, character=units(before, preset))
        return await asyncio.wait_for(
            client.text_document_definition_async(
                types.DefinitionParams(text_document=doc_id(uri), position=pos)
            ),
            TIMEOUT,
        )

    found = await definition("[[alpha#Second")
    assert [(loc.uri, loc.range.start.line) for loc in found] == [((root / "alpha.md").as_uri(), 2)]
    found = await definition("[[Bee]]")
    assert [loc.uri for loc in found] == [(root / "beta.md").as_uri()]
    found = await definition("[[Dup]]")
    assert sorted(loc.uri for loc in found) == sorted(
        (root / p).as_uri() for p in ("one/Dup.md", "two/Dup.md")
    )
    found = await definition("[special](names")
    assert [loc.uri for loc in found] == [(root / "names/§ Special Name.md").as_uri()]
    found = await definition("[[Ünïcode")
    assert [loc.uri for loc in found] == [(root / "names/Ünïcode 😀.md").as_uri()]
    assert await definition("[[Missing") is None
    assert await definition("[up](../outside") is None

    line, before = at(text, "[[Beta Note]]", 4)
    hover = await asyncio.wait_for(
        client.text_document_hover_async(
            types.HoverParams(
                text_document=doc_id(uri),
                position=types.Position(line=line, character=units(before, preset)),
            )
        ),
        TIMEOUT,
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    shown = hover.contents.value
    assert "Beta Note" in shown and "beta.md" in shown
    assert "The second letter" in shown and "greek" in shown
    assert hover.range is not None
    assert hover.range.start.character == units(before[:-4], preset)
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=doc_id(uri)))


@pytest.mark.asyncio(loop_scope="module")
async def test_references(links: Shared) -> None:
    client, root, preset = links.client, links.root, links.preset
    uri = (root / "alpha.md").as_uri()
    open_doc(client, uri, (root / "alpha.md").read_text(encoding="utf-8"))

    async def refs(line: int, character: int, doc: str = uri) -> list[types.Location]:
        result = await asyncio.wait_for(
            client.text_document_references_async(
                types.ReferenceParams(
                    text_document=doc_id(doc),
                    position=types.Position(line=line, character=character),
                    context=types.ReferenceContext(include_declaration=False),
                )
            ),
            TIMEOUT,
        )
        return list(result or [])

    found = await refs(0, 2)  # on the title: links to the note
    index_text = (root / "index.md").read_text(encoding="utf-8")
    places = sorted(
        (Path(loc.range and loc.uri).name, loc.range.start.line, loc.range.start.character)
        for loc in found
    )
    wide_line = index_text.split("\n")[11]
    wide_col = units(wide_line[: wide_line.index("[[Alpha]]")], preset)
    assert places == sorted(
        [
            ("index.md", 6, 4),
            ("index.md", 6, 18),
            ("index.md", 8, 55),
            ("index.md", 11, wide_col),
            ("gamma.md", 7, 9),
            ("Dup.md", 2, 4),
        ]
    )
    ranges = {(Path(loc.uri).name, loc.range.start.line): loc.range for loc in found}
    assert ranges[("index.md", 11)].end.character == wide_col + len("[[Alpha]]")

    found = await refs(2, 4)  # on "## Second Part": links to that heading
    assert [(Path(loc.uri).name, loc.range.start.line) for loc in found] == [("index.md", 6)]

    # on a link: references of its target
    delta = (root / "projects/delta.md").as_uri()
    open_doc(client, delta, (root / "projects/delta.md").read_text(encoding="utf-8"))
    found = await refs(2, 10, delta)  # [[Gamma]]
    assert sorted(Path(loc.uri).name for loc in found) == ["delta.md", "index.md", "index.md"]
    for doc in (uri, delta):
        client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=doc_id(doc)))


@pytest.mark.presets
async def test_diagnostics_and_create_note(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    root = await started(client, preset, copy)
    uri = (root / "index.md").as_uri()
    text = (root / "index.md").read_text(encoding="utf-8")
    waiting = client.protocol.wait_for_notification_async(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    open_doc(client, uri, text)
    await asyncio.wait_for(waiting, TIMEOUT)
    for _ in range(100):
        shown = client.diagnostics.get(uri, [])
        if shown:
            break
        await asyncio.sleep(0.05)
    codes = sorted((d.code, d.range.start.line) for d in shown)
    # links out of the vault, URLs and links in code are not reported
    assert codes == [("ambiguous-link", 8), ("broken-anchor", 8), ("broken-link", 8)]
    broken = next(d for d in shown if d.code == "broken-link")
    line = text.split("\n")[8]
    assert broken.range.start.character == units(line[: line.index("[[Missing")], preset)

    actions = await asyncio.wait_for(
        client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=doc_id(uri),
                range=broken.range,
                context=types.CodeActionContext(diagnostics=[broken]),
            )
        ),
        TIMEOUT,
    )
    creates = [a for a in actions or [] if isinstance(a, types.CodeAction) and "Create" in a.title]
    if preset == "neovim":  # the preset declares no documentChanges: no file can be created
        assert creates == []
        return
    assert [a.title for a in creates] == ["Create note Missing Note.md"]
    edit = creates[0].edit
    assert edit is not None and edit.document_changes is not None
    create = edit.document_changes[0]
    assert isinstance(create, types.CreateFile)
    assert create.uri == (root / "Missing Note.md").as_uri()

    # a forged diagnostic asking to create a file outside the vault gets nothing
    forged = types.Diagnostic(
        range=broken.range,
        message="x",
        code="broken-link",
        source="engram",
        data={"path": "../evil.md"},
    )
    actions = await asyncio.wait_for(
        client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=doc_id(uri),
                range=broken.range,
                context=types.CodeActionContext(diagnostics=[forged]),
            )
        ),
        TIMEOUT,
    )
    assert not [a for a in actions or [] if "Create" in a.title]


async def will_rename(
    client: LanguageClient, pairs: list[tuple[Path, Path]]
) -> types.WorkspaceEdit | None:
    return await asyncio.wait_for(
        client.workspace_will_rename_files_async(
            types.RenameFilesParams(
                files=[types.FileRename(old_uri=a.as_uri(), new_uri=b.as_uri()) for a, b in pairs]
            )
        ),
        TIMEOUT,
    )


def apply_workspace_edit(edit: types.WorkspaceEdit, preset: str) -> dict[str, str]:
    """Apply the edit to the files on disk; vault-relative paths → new texts."""
    assert edit.changes is not None
    out = {}
    for uri, edits in edit.changes.items():
        path = Path(types_uri_path(uri))
        new = apply(path.read_text(encoding="utf-8"), edits, preset)
        path.write_text(new, encoding="utf-8")
        out[path.name] = new
    return out


def types_uri_path(uri: str) -> str:
    from urllib.parse import unquote, urlparse

    return unquote(urlparse(uri).path)


@pytest.mark.presets
async def test_will_rename_note_and_folder(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    root = await started(client, preset, copy)
    before = {p: p.read_text(encoding="utf-8") for p in root.rglob("*.md")}

    edit = await will_rename(client, [(root / "alpha.md", root / "archive/Alpha Renamed.md")])
    assert edit is not None and edit.changes is not None
    assert sorted(Path(types_uri_path(u)).relative_to(root).as_posix() for u in edit.changes) == [
        "index.md",
        "projects/gamma.md",
        "two/Dup.md",
    ]
    new = apply_workspace_edit(edit, preset)
    index = before[root / "index.md"]
    expected_index = (
        index.replace("[[Alpha]]", "[[Alpha Renamed]]")
        .replace("[[alpha#Second Part|", "[[Alpha Renamed#Second Part|")
        .replace("[[Alpha#Nowhere]]", "[[Alpha Renamed#Nowhere]]")
    )
    assert new["index.md"] == expected_index
    assert new["gamma.md"] == before[root / "projects/gamma.md"].replace(
        "[alpha](../alpha.md)", "[alpha](../archive/Alpha%20Renamed.md)"
    )
    assert new["Dup.md"] == "# Dup two\n\nSee [[Alpha Renamed]].\n"
    untouched = [p for p in before if p.name not in ("index.md", "gamma.md") and p.name != "Dup.md"]
    assert all(p.read_text(encoding="utf-8") == before[p] for p in untouched)
    assert (root / "one/Dup.md").read_text(encoding="utf-8") == before[root / "one/Dup.md"]

    # the rename happens; didRenameFiles updates the index; links resolve
    (root / "archive").mkdir()
    (root / "alpha.md").rename(root / "archive/Alpha Renamed.md")
    client.workspace_did_rename_files(
        types.RenameFilesParams(
            files=[
                types.FileRename(
                    old_uri=(root / "alpha.md").as_uri(),
                    new_uri=(root / "archive/Alpha Renamed.md").as_uri(),
                )
            ]
        )
    )
    for changed in ("index.md", "projects/gamma.md", "two/Dup.md"):
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=doc_id((root / changed).as_uri()))
        )
    await wait_for_backlinks(root, "archive/Alpha Renamed.md", 6)

    # a folder: the links out of it and into it
    edit = await will_rename(client, [(root / "projects", root / "work/projects")])
    assert edit is not None
    new = apply_workspace_edit(edit, preset)
    assert "[gamma intro](work/projects/gamma.md#intro)" in new["index.md"]
    assert "[[projects/Gamma]]" in new["index.md"]
    assert "[alpha](../../archive/Alpha%20Renamed.md)" in new["gamma.md"]
    assert "[beta](<../../beta.md>)" in new["gamma.md"]

    # outside the vault: nothing
    assert await will_rename(client, [(root / "beta.md", root.parent / "beta.md")]) is None


async def wait_for_backlinks(root: Path, path: str, count: int) -> None:
    engram = Engram(root)
    engram.open()
    try:
        for _ in range(200):
            try:
                if len(engram.backlinks(path)) == count:
                    return
            except Exception:
                pass
            await asyncio.sleep(0.05)
        raise AssertionError(f"{path}: {len(engram.backlinks(path))} backlinks, wanted {count}")
    finally:
        engram.close()


@pytest.mark.skipif(not REAL_VAULT.is_dir(), reason="the shared real vault is not present")
@pytest.mark.parametrize("preset", ["visual-studio-code"])
async def test_real_vault(
    client: LanguageClient, preset: str, vault_copy: Callable[[str], Path]
) -> None:
    """Search, definition, completion and a rename on the real vault, through one server."""
    root = vault_copy("real")
    await start(client, [root], preset)
    status = await wait_ready(client, timeout=120)
    assert status["vaults"][0]["notes"] == 885
    result = await search(client, query="golang", limit=5)
    assert result["total"] > 0 and result["index"]["served_by"] == "index"
    for hit in result["results"]:
        assert (root / hit["path"]).is_file()
    tagged = await search(client, tags=["engineering"], limit=1000)
    assert tagged["total"] > 0
    assert all(  # the topic or one nested under it (engineering/frontend)
        any(t.casefold().split("/")[0] == "engineering" for t in hit["topics"])
        for hit in tagged["results"]
    )

    engram = Engram(root)
    engram.open()
    target = "§ Writing.md"
    backlinks = engram.backlinks(target)
    assert backlinks, "the real vault links to § Writing"
    source = backlinks[0].source
    text = (root / source).read_text(encoding="utf-8")
    uri = (root / source).as_uri()
    open_doc(client, uri, text)
    span = backlinks[0].span
    line = text.split("\n")[span.line]
    pos = types.Position(line=span.line, character=units(line[: span.start + 2], preset))
    found = await asyncio.wait_for(
        client.text_document_definition_async(
            types.DefinitionParams(text_document=doc_id(uri), position=pos)
        ),
        TIMEOUT,
    )
    assert [loc.uri for loc in found or []] == [(root / target).as_uri()]

    result = await complete_at(client, root, "# D\n\n[[§ Wri‸", preset)
    assert "§ Writing" in {i.label for i in result.items}

    # rename the § note: every file linking to it is rewritten, and only those links change
    problems_before = {
        b.source: len(engram.link_problems(b.source, (root / b.source).read_text("utf-8")))
        for b in backlinks
    }
    new_path = root / "renamed" / "§ Writing (moved).md"
    edit = await will_rename(client, [(root / target, new_path)])
    assert edit is not None and edit.changes
    originals = {u: Path(types_uri_path(u)).read_text(encoding="utf-8") for u in edit.changes}
    apply_workspace_edit(edit, preset)
    for uri_changed, old_text in originals.items():
        now = Path(types_uri_path(uri_changed)).read_text(encoding="utf-8")
        assert now != old_text
        assert now.count("§ Writing (moved)") >= 1
        assert len(now.split("\n")) == len(old_text.split("\n"))
    new_path.parent.mkdir()
    shutil.move(root / target, new_path)
    engram.sync()
    moved = "renamed/§ Writing (moved).md"
    assert {b.source for b in engram.backlinks(moved)} == {b.source for b in backlinks}
    for src, count in problems_before.items():
        text = (root / src).read_text(encoding="utf-8")
        assert len(engram.link_problems(src, text)) <= count
    engram.close()
