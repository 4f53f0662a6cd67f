"""textDocument/completion of topics, through the real server (and the slot finder alone)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from engram_ls.core.config import EngramConfig
from engram_ls.lsp.document import locate
from engram_ls.lsp.features.topics import find_slot, render
from tests.conftest import DATA
from tests.lsp.conftest import PRESETS, Shared, shared_server, start, wait_ready

TIMEOUT = 30

tags = shared_server(DATA / "tags", "tags")  # the tests that only read share it


def units(text: str, preset: str) -> int:
    """Length of ``text`` in the position encoding pygls picks for the preset."""
    if preset == "neovim":  # Neovim offers utf-8 first
        return len(text.encode("utf-8"))
    return len(text.encode("utf-16-le")) // 2


def cursor(marked: str) -> tuple[str, int, str]:
    """(text without the ``|`` marker, cursor line, text of the cursor line before it)."""
    at = marked.index("|")
    text = marked[:at] + marked[at + 1 :]
    line = text.count("\n", 0, at)
    before = text[text.rfind("\n", 0, at) + 1 : at]
    return text, line, before


def open_doc(client: LanguageClient, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=version, text=text
            )
        )
    )


async def complete(
    client: LanguageClient,
    root: Path,
    marked: str,
    preset: str,
    *,
    name: str = "draft.md",
    trigger: str | None = None,
) -> types.CompletionList | None:
    """Open ``marked`` (``|`` is the cursor) as an unsaved note and ask for completions."""
    text, line, before = cursor(marked)
    uri = (root / name).as_uri()
    open_doc(client, uri, text)
    context = types.CompletionContext(
        trigger_kind=types.CompletionTriggerKind.TriggerCharacter
        if trigger
        else types.CompletionTriggerKind.Invoked,
        trigger_character=trigger,
    )
    result = await asyncio.wait_for(
        client.text_document_completion_async(
            types.CompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=line, character=units(before, preset)),
                context=context,
            )
        ),
        TIMEOUT,
    )
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert result is None or isinstance(result, types.CompletionList)
    return result


def labels(result: types.CompletionList | None) -> list[str]:
    assert result is not None
    return [item.label for item in result.items]


def edit_of(item: types.CompletionItem) -> types.TextEdit:
    assert isinstance(item.text_edit, types.TextEdit)
    return item.text_edit


@pytest.mark.presets
async def test_completion_styles(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    root = copy(DATA / "tags", "tags")
    await start(client, [root], preset)
    await wait_ready(client)

    # flow list: most used first, counts as detail, the list's own topics left out
    flow = await complete(client, root, "---\ntitle: x\ntags: [python, mem|]\n---\n", preset)
    assert labels(flow) == ["memory", "Memory Leak", "memory-leak"]
    assert flow is not None and not flow.is_incomplete
    assert [i.detail for i in flow.items] == ["4 notes", "2 notes", "1 note"]
    edit = edit_of(flow.items[1])
    assert edit.new_text == "Memory Leak"
    col = len("tags: [python, ")
    assert edit.range == types.Range(
        start=types.Position(line=2, character=col), end=types.Position(line=2, character=col + 3)
    )

    # non-ASCII before the cursor: the range is in the negotiated units
    accented = await complete(client, root, "---\ntags: [café, sq|]\n---\n", preset)
    assert labels(accented) == ["sqlite"]
    start_col = units("tags: [café, ", preset)
    assert edit_of(accented.items[0]).range == types.Range(  # type: ignore[union-attr]
        start=types.Position(line=1, character=start_col),
        end=types.Position(line=1, character=start_col + 2),
    )

    # block list (key matched case-insensitively), siblings after the cursor left out
    block = await complete(
        client, root, "---\nTags:\n  - sqlite\n  - |\n  - python\n---\n", preset, trigger=" "
    )
    assert labels(block) == ["memory", "Memory Leak", "memory-leak"]
    assert edit_of(block.items[0]).range.start == types.Position(line=3, character=4)  # type: ignore[union-attr]

    # an inline #tag in the body: only topics that can be tags
    body = "---\ntags: [a]\n---\n\nSome text #mem|\n"
    tag = await complete(client, root, body, preset, trigger="#")
    assert labels(tag) == ["memory", "memory-leak"]
    edit = edit_of(tag.items[0])  # type: ignore[union-attr]
    assert edit.new_text == "memory"
    assert edit.range.start == types.Position(line=4, character=11)
    assert edit.range.end == types.Position(line=4, character=14)

    # no frontmatter at all, a tag at the start of a line
    assert labels(await complete(client, root, "#py|", preset)) == ["python"]
    # a plain comma-separated value of a topic key
    assert labels(await complete(client, root, "---\ntag: memory, py|\n---\n", preset)) == [
        "python"
    ]


@pytest.mark.parametrize(
    "marked",
    [
        pytest.param("---\ntitle: |\ntags: [a]\n---\n", id="title-value"),
        pytest.param("---\ntitle: py|\n---\n", id="title-typed"),
        pytest.param("---\nsummary:\n  - py|\n---\n", id="other-key-block"),
        pytest.param("---\ntags: [a]\n---\n\nplain body py|\n", id="body-text"),
        pytest.param("---\ntags: [a]\n---\n\n```\n#py|\n```\n", id="fenced-code"),
        pytest.param("---\ntags: [a]\n---\n\n~~~md\ntext #py|\n", id="unclosed-fence"),
        pytest.param("---\ntags: [a]\n---\n\nsee `#py|` here\n", id="inline-code"),
        pytest.param("---\ntags: [a]\n---\ntags: [py|]\n", id="flow-after-frontmatter"),
        pytest.param("---\ntags: [a]\n---\ntags:\n  - py|\n", id="block-after-frontmatter"),
        pytest.param("---\ntags: [a]\n---\n# py|\n", id="heading"),
        pytest.param("---\ntags: [a] # py|\n---\n", id="yaml-comment"),
        pytest.param("---\ntags: [a]|\n---\n", id="after-flow-list"),
        pytest.param("---\ntags: [a]\n---\nissue#py|\n", id="hash-inside-word"),
    ],
)
@pytest.mark.asyncio(loop_scope="module")
async def test_no_completion_elsewhere(tags: Shared, marked: str) -> None:
    client, root = tags.client, tags.root
    assert await complete(client, root, marked, "visual-studio-code") is None


@pytest.mark.asyncio(loop_scope="module")
async def test_link_anchor_gets_headings_not_topics(tags: Shared) -> None:
    client, root = tags.client, tags.root
    marked = "---\ntags: [a]\n---\n# Python notes\n[link](#py|)\n"
    assert labels(await complete(client, root, marked, "visual-studio-code")) == ["Python notes"]


@pytest.mark.asyncio(loop_scope="module")
async def test_no_completion_outside_vaults(tags: Shared, tmp_path: Path) -> None:
    client, root, preset = tags.client, tags.root, PRESETS[0]
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    assert await complete(client, outside, "---\ntags: [py|]\n---\n", preset) is None
    assert await complete(client, root, "tags: [py|]\n", preset, name="x.txt") is None


@pytest.mark.asyncio(loop_scope="module")
async def test_empty_value_waits_for_typing(tags: Shared) -> None:
    """``tags: `` then Enter starts a block list: typing the space does not pop a list up,
    but asking explicitly does."""
    client, root = tags.client, tags.root
    marked = "---\ntags: |\n---\n"
    assert await complete(client, root, marked, "visual-studio-code", trigger=" ") is None
    result = await complete(client, root, marked, "visual-studio-code")
    assert labels(result)[:2] == ["memory", "python"]


async def test_capped_list_is_incomplete(
    client: LanguageClient, preset: str, tmp_path: Path
) -> None:
    root = tmp_path / "many"
    root.mkdir()
    for i in range(130):
        (root / f"n{i:03d}.md").write_text(f"---\ntags:\n  - topic{i:03d}\n---\nbody\n", "utf-8")
    for i in range(0, 130, 10):  # every tenth topic is used twice: ranked first
        (root / f"popular{i:03d}.md").write_text(f"---\ntags: [topic{i:03d}]\n---\n", "utf-8")
    await start(client, [root], preset)
    await wait_ready(client)
    capped = await complete(client, root, "---\ntags: [top|]\n---\n", preset)
    assert capped is not None and capped.is_incomplete
    assert len(capped.items) == 100
    assert all(item.label.startswith("topic") for item in capped.items)
    assert capped.items[0].detail == "2 notes" and capped.items[-1].detail == "1 note"
    narrow = await complete(client, root, "---\ntags: [topic12|]\n---\n", preset)
    assert narrow is not None and not narrow.is_incomplete
    assert labels(narrow) == ["topic120", *[f"topic12{i}" for i in range(1, 10)]]


async def test_quoting_in_yaml(client: LanguageClient, tmp_path: Path) -> None:
    root = tmp_path / "quoting"
    root.mkdir()
    (root / "a.md").write_text('---\ntags: ["c#: tips", "2024", plain]\n---\n', "utf-8")
    await start(client, [root], "visual-studio-code")
    await wait_ready(client)
    flow = await complete(client, root, "---\ntags: [|]\n---\n", "visual-studio-code")
    texts = {i.label: edit_of(i).new_text for i in flow.items}  # type: ignore[union-attr]
    assert texts == {"c#: tips": '"c#: tips"', "2024": '"2024"', "plain": "plain"}
    typed_quote = await complete(client, root, "---\ntags: ['c|]\n---\n", "visual-studio-code")
    item = typed_quote.items[0]  # type: ignore[union-attr]
    assert edit_of(item).new_text == "'c#: tips'"
    assert edit_of(item).range.start.character == len("tags: [")
    body = await complete(client, root, "#|", "visual-studio-code", trigger="#")
    assert labels(body) == ["plain"]  # "2024" has no letter, "c#: tips" is no tag


# -- the slot finder alone ------------------------------------------------------------------


def slot_at(marked: str, whole: bool = False) -> tuple[str, str, list[str]] | None:
    text, line, before = cursor(marked)
    where = locate(text, line)
    if where is None:
        return None
    slot = find_slot(where, len(before), EngramConfig(), whole=whole)
    return None if slot is None else (slot.style, slot.text, sorted(slot.siblings))


@pytest.mark.parametrize(
    ("marked", "expected"),
    [
        ("---\ntags: [a, b, py|]\n---\n", ("flow", "py", ["a", "b"])),
        ("---\ntags: [a, b, py|\n---\n", ("flow", "py", ["a", "b"])),
        ("---\ntags: [a,|]\n---\n", ("flow", "", ["a"])),
        ('---\ntags: ["Memory Le|\n---\n', ("flow", "Memory Le", [])),
        ("---\ntags: [a,\n  b, py|\n---\n", ("flow", "py", ["b"])),
        ("---\ntags:\n  - a\n  - py|\n  - c\n---\n", ("block", "py", ["a", "c"])),
        ("---\ntags:\n- a\n- |\n---\n", ("block", "", ["a"])),
        ("---\ntags: a, py|\n---\n", ("plain", "py", ["a"])),
        ('---\ntags: "a, py|"\n---\n', ("plain", "py", ["a"])),
        ("---\ntags: [a]\n---\ntext #py| #b\n", ("tag", "py", ["b"])),
        ("---\ntags: [a]\n---\n```\nx\n```\n(#py|)\n", ("tag", "py", [])),
        ("#memory-|\n", ("tag", "memory-", [])),
        ("---\n#py|\n", None),  # unclosed frontmatter while it is being written: YAML comment
        ("---\ntags:\n  -|\n---\n", None),
        ("---\ntags: x\n  - py|\n---\n", None),
        ("---\ntags: [a]\n  b, py|\n---\n", None),
        ("---\ntags: [a]\n---\nx\n---\ntags: [py|]\n", None),
        ("---\ntags: [a]\n---\n\n`code` `#py|\n", None),
    ],
)
def test_slot_for_completion(marked: str, expected: tuple[str, str, list[str]] | None) -> None:
    assert slot_at(marked) == expected


@pytest.mark.parametrize(
    ("marked", "expected"),
    [
        ("---\ntags: [a, py|thon, c]\n---\n", ("flow", "python", ["a", "c"])),
        ("---\ntags:\n  - Memo|ry Leak # note\n---\n", ("block", "Memory Leak", [])),
        ('---\ntags: ["Memory| Leak", x]\n---\n', ("flow", "Memory Leak", ["x"])),
        ("---\ntags: a b|c\n---\n", ("plain", "bc", ["a"])),
        ("x #pyth|on y\n", ("tag", "python", [])),
        ("x #|python/ y\n", ("tag", "python", [])),
        ("x `#pyth|on` y\n", None),
        ("colour #ff88|00\n", None),
    ],
)
def test_slot_for_hover(marked: str, expected: tuple[str, str, list[str]] | None) -> None:
    assert slot_at(marked, whole=True) == expected


def test_render() -> None:
    text, line, before = cursor("---\ntags: [|]\n---\n")
    where = locate(text, line)
    assert where is not None
    slot = find_slot(where, len(before), EngramConfig(), whole=False)
    assert slot is not None
    assert render(slot, "yes") == ('"yes"', "yes")
    assert render(slot, "node.js") == ("node.js", "node.js")
    assert render(slot, 'say "hi"') == ('"say \\"hi\\""', 'say "hi"')
