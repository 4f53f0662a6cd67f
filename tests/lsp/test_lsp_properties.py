"""Frontmatter property completion and hover through the real server, on the example vault
(``status`` is done on 2 notes, doing and todo on 1 each; ``priority`` is 1, 2 or low)."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types

from engram_ls.core.index.prop_stats import ValueCount
from engram_ls.core.properties import Kind
from engram_ls.lsp.features.properties import written
from engram_ls.lsp.slots import Slot
from tests.conftest import EXAMPLE
from tests.lsp.conftest import Shared, shared_server
from tests.lsp.test_lsp_completion import complete, cursor, edit_of, labels, open_doc, units

example = shared_server(EXAMPLE, "vault", ["visual-studio-code", "neovim"])


@pytest.mark.asyncio(loop_scope="module")
async def test_names_most_used_first_without_those_already_there(example: Shared) -> None:
    client, root, preset = example.client, example.root, example.preset
    typed = await complete(client, root, "---\nsta|\n---\n# x\n", preset)
    assert labels(typed) == ["status"]
    assert typed is not None and typed.items[0].detail == "text, 4 notes"
    edit = edit_of(typed.items[0])
    assert edit.new_text == "status: "
    assert edit.range == types.Range(types.Position(1, 0), types.Position(1, 3))

    every = labels(await complete(client, root, "---\nstatus: todo\n|\ntags: [a]\n---\n", preset))
    assert every[:2] == ["title", "date"] and "priority" in every and "rating" in every
    assert "status" not in every and "tags" not in every  # the note has them already
    assert not any("." in name for name in every)  # review.next is written nested

    # the colon is there already: only the name is replaced
    renamed = await complete(client, root, "---\nprio|: 3\n---\n", preset)
    assert [edit_of(i).new_text for i in renamed.items] == ["priority"]  # type: ignore[union-attr]


@pytest.mark.asyncio(loop_scope="module")
async def test_values_of_a_property_with_few_values(example: Shared) -> None:
    client, root, preset = example.client, example.root, example.preset
    plain = await complete(client, root, "---\ntitle: x\nstatus: |\n---\n", preset)
    assert labels(plain) == ["done", "doing", "todo"]
    assert plain is not None and [i.detail for i in plain.items] == [
        "text, 2 notes",
        "text, 1 note",
        "text, 1 note",
    ]
    typed = await complete(client, root, "---\nstatus: do|\n---\n", preset)
    assert labels(typed) == ["done", "doing"]
    edit = edit_of(typed.items[0])  # type: ignore[union-attr]
    assert edit.new_text == "done"
    assert edit.range.start == types.Position(1, len("status: "))

    # every YAML style
    flow = await complete(client, root, "---\nstatus: [done, |]\n---\n", preset)
    assert labels(flow) == ["doing", "todo"]  # the list's own value left out
    block = await complete(client, root, "---\nstatus:\n  - t|\n---\n", preset)
    assert labels(block) == ["todo"]

    # a value the user types inside quotes stays inside them
    quoted = await complete(client, root, '---\nstatus: "d|"\n---\n', preset)
    assert [edit_of(i).new_text for i in quoted.items] == ["done", "doing"]  # type: ignore[union-attr]
    assert edit_of(quoted.items[0]).range.start == types.Position(1, len('status: "'))  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("marked", "trigger"),
    [
        pytest.param("---\nstatus: |\n---\n", " ", id="space-after-key"),  # Enter stays Enter
        pytest.param("---\ntitle: |\n---\n", None, id="free-text"),  # every title differs
        pytest.param("---\nsummary: |\n---\n", None, id="summary"),
        pytest.param("---\npriority: |\n---\n", None, id="no-value-repeats"),  # 1, 2, low
        pytest.param("---\nunknown: |\n---\n", None, id="unknown-key"),
        pytest.param("---\nx: 1\n---\nsta|\n", None, id="body"),
        pytest.param("---\n  sta|\n---\n", None, id="indented"),
        pytest.param("---\nstatus: done # d|\n---\n", None, id="comment"),
    ],
)
@pytest.mark.asyncio(loop_scope="module")
async def test_nothing_offered_elsewhere(example: Shared, marked: str, trigger: str | None) -> None:
    found = await complete(example.client, example.root, marked, example.preset, trigger=trigger)
    assert found is None or found.items == []


@pytest.mark.asyncio(loop_scope="module")
async def test_hover_on_a_key_tells_its_kinds_counts_and_values(example: Shared) -> None:
    client, root, preset = example.client, example.root, example.preset
    text, line, before = cursor("---\nsta|tus: done\npriority: 3\n---\n")
    uri = (root / "hover-draft.md").as_uri()
    open_doc(client, uri, text)
    try:
        hover = await asyncio.wait_for(
            client.text_document_hover_async(
                types.HoverParams(
                    text_document=types.TextDocumentIdentifier(uri=uri),
                    position=types.Position(line=line, character=units(before, preset)),
                )
            ),
            30,
        )
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        value = hover.contents.value
        assert "status" in value and "text, 4 notes" in value
        assert "done" in value and "2" in value
        mixed = await client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=2, character=2),
            )
        )
        assert mixed is not None and isinstance(mixed.contents, types.MarkupContent)
        assert "priority**: number, 3 notes" in mixed.contents.value
        assert "Kinds: number 2, text 1" in mixed.contents.value
    finally:
        client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )


@pytest.mark.parametrize(
    ("kind", "value", "quote", "expected"),
    [
        ("number", 3, "", "3"),
        ("bool", 1, "", "true"),
        ("date", "2024-05-01", "", "2024-05-01"),
        ("text", "done", "", "done"),
        ("text", "2", "", '"2"'),  # plain 2 would be a number
        ("text", "yes", "", '"yes"'),  # plain yes would be a bool
        ("text", "in progress", "", "in progress"),
        ("number", 3, '"', None),  # inside quotes it would become text
        ("text", "a\nb", "", None),
    ],
)
def test_a_value_is_written_as_its_kind_needs(
    kind: Kind, value: str | int, quote: str, expected: str | None
) -> None:
    slot = Slot("plain", 8, 8, "", quote, "", frozenset(), "status")
    found = written(slot, ValueCount(kind, value, 2))
    assert (None if found is None else found[0]) == expected
