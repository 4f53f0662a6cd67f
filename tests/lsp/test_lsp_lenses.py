"""Code lenses ("N backlinks", "related"), inlay hints (a linked note's title) and settings
changed without a restart (``workspace/didChangeConfiguration``), through the real server."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import DATA
from tests.lsp.conftest import (
    PRESETS,
    Shared,
    lsp_session,
    paths,
    search,
    shared_server,
    wait_ready,
)
from tests.lsp.test_lsp_completion import open_doc
from tests.lsp.test_lsp_links import doc_id, units

TIMEOUT = 30
links = shared_server(DATA / "links", "links", PRESETS)


async def lenses(client: LanguageClient, uri: str) -> list[types.CodeLens]:
    found = await asyncio.wait_for(
        client.text_document_code_lens_async(types.CodeLensParams(text_document=doc_id(uri))),
        TIMEOUT,
    )
    return list(found or [])


async def references(client: LanguageClient, uri: str, line: int) -> list[types.Location]:
    found = await asyncio.wait_for(
        client.text_document_references_async(
            types.ReferenceParams(
                text_document=doc_id(uri),
                position=types.Position(line=line, character=3),
                context=types.ReferenceContext(include_declaration=False),
            )
        ),
        TIMEOUT,
    )
    return list(found or [])


async def hints(client: LanguageClient, uri: str, lines: int = 100) -> list[types.InlayHint]:
    whole = types.Range(
        start=types.Position(line=0, character=0), end=types.Position(line=lines, character=0)
    )
    found = await asyncio.wait_for(
        client.text_document_inlay_hint_async(
            types.InlayHintParams(text_document=doc_id(uri), range=whole)
        ),
        TIMEOUT,
    )
    return list(found or [])


def places(locations: Any) -> list[tuple[str, int, int]]:
    out = []
    for loc in locations:
        if isinstance(loc, dict):  # a command's arguments come back as plain JSON
            uri, start = loc["uri"], loc["range"]["start"]
            out.append((uri, start["line"], start["character"]))
        else:
            out.append((loc.uri, loc.range.start.line, loc.range.start.character))
    return sorted(out)


@pytest.mark.asyncio(loop_scope="module")
async def test_backlinks_lenses_on_the_title_and_on_named_headings(links: Shared) -> None:
    client, root = links.client, links.root
    uri = (root / "alpha.md").as_uri()
    open_doc(client, uri, (root / "alpha.md").read_text(encoding="utf-8"))
    found = await lenses(client, uri)
    by_line = {
        lens.range.start.line: lens
        for lens in found
        if lens.command and lens.command.command == "engram.showReferences"
    }
    title, heading = by_line[0], by_line[2]  # "# Alpha", "## Second Part"
    to_note = await references(client, uri, 0)
    to_heading = await references(client, uri, 2)
    assert len(to_note) == 6 and len(to_heading) == 1
    assert title.command is not None and heading.command is not None
    assert title.command.title == "6 backlinks"
    assert heading.command.title == "1 backlink"
    # Clicking shows the links: the arguments of a references peek, the same places.
    assert title.command.command == heading.command.command == "engram.showReferences"
    note_uri, position, locations = title.command.arguments or []
    assert note_uri == uri and position["line"] == 0
    assert places(locations) == places(to_note)
    assert places(heading.command.arguments[2]) == places(to_heading)  # type: ignore[index]
    # Without search by meaning in this environment or not, "related" is on the title line
    # only, and never on a heading.
    assert {lens.range.start.line for lens in found} <= {0, 2}


@pytest.mark.asyncio(loop_scope="module")
async def test_the_title_lens_sits_on_the_frontmatter_title_line(links: Shared) -> None:
    client, root = links.client, links.root
    uri = (root / "index.md").as_uri()
    open_doc(client, uri, (root / "index.md").read_text(encoding="utf-8"))
    found = [lens for lens in await lenses(client, uri) if lens.command]
    backlinks = [lens for lens in found if lens.command.command == "engram.showReferences"]  # type: ignore[union-attr]
    assert [(lens.range.start.line, lens.command.title) for lens in backlinks] == [  # type: ignore[union-attr]
        (1, "3 backlinks")  # "title: Home": [[index]], [[index#Home]], [home](../index.md)
    ]


@pytest.mark.asyncio(loop_scope="module")
async def test_a_note_nothing_links_to_says_so(links: Shared) -> None:
    client, root = links.client, links.root
    uri = (root / "names" / "scratch.md").as_uri()
    open_doc(client, uri, "# Scratch\n\n## Part\n")  # an unsaved buffer: in no link
    found = [lens for lens in await lenses(client, uri) if lens.command]
    assert [(lens.range.start.line, lens.command.title) for lens in found][:1] == [  # type: ignore[union-attr]
        (0, "0 backlinks")
    ]
    assert all(lens.range.start.line == 0 for lens in found)


@pytest.mark.asyncio(loop_scope="module")
async def test_an_inlay_hint_gives_the_title_of_a_note_linked_by_file_name(links: Shared) -> None:
    client, root, preset = links.client, links.root, links.preset
    uri = (root / "names" / "draft.md").as_uri()
    line = "😀 [[beta]], [[Beta Note]], [[beta|B]], [[Alpha]], [[Missing]], `[[beta]]`"
    open_doc(client, uri, f"# Draft\n\n{line}\n[[projects/gamma]] [[index#Home]]\n")
    found = await hints(client, uri)
    shown = [(h.position.line, h.position.character, h.label) for h in found]
    end = line.index("[[beta]]") + len("[[beta]]")
    assert shown == [
        (2, units(line[:end], preset), "Beta Note"),  # by file name: the title says more
        (3, len("[[projects/gamma]] [[index#Home]]"), "Home"),
    ]
    assert found[0].tooltip == "beta.md"
    # Only the lines asked for.
    assert await hints(client, uri, lines=1) == []


async def wait_for(check: Any, timeout: float = 30) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not await check():
        assert loop.time() < end, "timed out"
        await asyncio.sleep(0.1)


@pytest.mark.parametrize("preset", PRESETS)
async def test_settings_change_without_a_restart(tmp_path: Path, preset: str) -> None:
    from tests.conftest import copy_tree

    root = copy_tree(DATA / "links", tmp_path / "links")
    async with lsp_session([root], preset) as client:
        await wait_ready(client)
        uri = (root / "alpha.md").as_uri()
        open_doc(client, uri, (root / "alpha.md").read_text(encoding="utf-8"))
        assert await lenses(client, uri)
        assert "projects/gamma.md" in paths(await search(client, query="Relative"))

        # The editor's settings change: lenses off, a folder excluded. The client pushes the
        # notification; the server asks for the section (both presets answer
        # workspace/configuration).
        client.set_configuration(
            {"editor": {"code_lens": False}, "exclude": ["projects/**"]}, section="engram"
        )
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))

        async def applied() -> bool:
            status = await wait_ready(client)
            found = await search(client, query="Relative")
            return status["vaults"] and "projects/gamma.md" not in paths(found)

        await wait_for(applied)
        assert await lenses(client, uri) == []
        if preset == "visual-studio-code":  # it can refresh: it is asked to
            assert "codeLens" in client.refreshed  # type: ignore[attr-defined]
        messages = [m.message for m in client.messages]
        assert not any("restart" in m for m in messages), messages

        # And back: nothing is lost, the folder is indexed again.
        client.set_configuration({}, section="engram")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))

        async def back() -> bool:
            await wait_ready(client)
            return "projects/gamma.md" in paths(await search(client, query="Relative"))

        await wait_for(back)

        async def shown() -> bool:  # while the vault is re-parsed, its lenses wait for it
            return bool(await lenses(client, uri))

        await wait_for(shown)


async def test_hostile_settings_change_nothing_and_say_why(tmp_path: Path) -> None:
    """Settings that are not a mapping, keys with bad values, a glob built to stall a matcher:
    the server keeps answering, reports the bad keys, and the notes stay searchable."""
    from tests.conftest import copy_tree

    root = copy_tree(DATA / "links", tmp_path / "links")
    async with lsp_session([root], "neovim") as client:
        await wait_ready(client)

        async def answers() -> bool:
            await wait_ready(client)
            return "alpha.md" in paths(await search(client, query="Second"))

        for section in (5, "x", [1, 2]):  # not a mapping: ignored
            client.set_configuration(section, section="engram")
            client.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings={"engram": section})
            )
            await wait_for(answers)
        client.set_configuration({"limits": {"max_results": "lots"}, "editor": 3}, section="engram")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))

        async def reported() -> bool:
            shown = " ".join(m.message for m in client.messages)
            return "max_results" in shown and "'editor'" in shown

        await wait_for(reported)
        await wait_for(answers)
        client.set_configuration({"exclude": ["**/" * 200 + "*a" * 50]}, section="engram")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
        await wait_for(answers)  # alpha.md has no 'a' run of that shape: still a note


async def backlink_lenses(client: LanguageClient, uri: str) -> dict[int, str]:
    """The "N backlinks" lenses by line (not "related")."""
    return {
        lens.range.start.line: lens.command.title
        for lens in await lenses(client, uri)
        if lens.command and "backlink" in lens.command.title
    }


@pytest.mark.parametrize("attack", ["symlink-out", "fifo", "bad-utf8", "huge-line"])
async def test_lenses_and_hints_when_a_linking_note_turns_hostile(
    tmp_path: Path, attack: str
) -> None:
    """After the index was built, the one note linking to ``target.md`` is swapped for a
    symlink to a file outside the vault (which links to the target too), a FIFO, invalid UTF-8,
    or one line of 3 MB, and nobody tells the server (a client that does not watch). Lenses,
    references and inlay hints still answer at once and agree; nothing outside the vault is
    read (no backlink from it, no range of it); a readable note still counts."""

    root = tmp_path / "vault"
    (root / ".engram").mkdir(parents=True)
    (root / "target.md").write_text("# Target Note\n\n## Part\n\nbody\n", encoding="utf-8")
    (root / "a.md").write_text("# A\n\nsee [[target]] and [[target#Part]]\n", encoding="utf-8")
    outside = tmp_path / "outside.md"
    outside.write_text("# Secret\n\n" + "[[target]] " * 40 + "\n", encoding="utf-8")
    async with lsp_session([root], "visual-studio-code") as client:
        await wait_ready(client)
        uri = (root / "target.md").as_uri()
        before = await backlink_lenses(client, uri)
        assert before == {0: "2 backlinks", 2: "1 backlink"}, before
        a = root / "a.md"
        a.unlink()
        if attack == "symlink-out":
            a.symlink_to(outside)
        elif attack == "fifo":
            os.mkfifo(a)
        elif attack == "bad-utf8":
            a.write_bytes(b"# A\n\nsee \xff\xfe [[target]] and [[target#Part]]\n")
        else:
            a.write_text("# A\n\n" + "x" * 3_000_000 + " [[target]]\n", encoding="utf-8")
        after = await backlink_lenses(client, uri)
        found = await references(client, uri, 0)
        a_uri = (root / "a.md").as_uri()
        open_doc(client, a_uri, "# A\n\nsee [[target]] and [[target#Part]]\n")  # the editor's copy
        # the hints of the editor's copy come from it and the index, not the file on disk
        assert [h.label for h in await hints(client, a_uri)] == ["Target Note"] * 2
        if attack in ("huge-line", "bad-utf8"):  # still a note of the vault that links there
            # (an invalid UTF-8 note as the index parsed it, its bad bytes replaced)
            links = 1 if attack == "huge-line" else 2
            assert after.get(0) == f"{links} backlink" + ("s" if links > 1 else ""), after
            assert [loc.uri for loc in found] == [a_uri] * links, found
        else:  # nothing to read from inside: no backlink from it
            assert after.get(0, "0 backlinks") == "0 backlinks", after
            assert all(loc.uri != a_uri for loc in found), found
        assert all(loc.uri.startswith(root.as_uri()) for loc in found), found
