"""The MCP prompts (``notes_about``, ``notes_since``, ``weekly_review``) and argument completion
(``completion/complete``) through the SDK's client: in process, and over stdio against the
real ``engram-mcp`` serving two vaults. Each prompt's message is checked against what the vault
holds (the index's own answers), each kind of completion against the vault's topics, folders,
notes and properties, with the caps, the totals and the errors."""

from __future__ import annotations

import datetime as dt
import os
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.server.mcpserver.prompts.base import Prompt
from mcp.types import Completion, PromptReference, ResourceTemplateReference

from engram_ls.core.index import paths as index_paths
from engram_ls.core.service import Engram
from engram_ls.mcp_server.server import create_server

NOTE = ResourceTemplateReference(uri="engram://{vault}/{+path}")


def opened(root: Path) -> Engram:
    engram = Engram(root)
    engram.open()
    engram.sync()
    return engram


@pytest.fixture
def work(vault_copy: Callable[[str], Path]) -> Engram:
    return opened(vault_copy("example"))


@pytest.fixture
def tags(vault_copy: Callable[[str], Path]) -> Engram:
    return opened(vault_copy("tags"))


async def text_of(client: Client, name: str, args: dict[str, str]) -> str:
    result = await client.get_prompt(name, args)
    assert len(result.messages) == 1 and result.messages[0].role == "user"
    content = result.messages[0].content
    assert content.type == "text"
    return str(content.text)


async def complete(
    client: Client,
    ref: PromptReference | ResourceTemplateReference,
    name: str,
    value: str,
    context: dict[str, str] | None = None,
) -> Completion:
    result = await client.complete(ref, {"name": name, "value": value}, context)
    return result.completion


def listed_paths(text: str, paths: list[str]) -> list[str]:
    """The paths of ``paths`` that the message lists as numbered hits, in its order."""
    at = {p: text.find(f". {p} — ") for p in paths}
    return sorted((p for p in paths if at[p] >= 0), key=lambda p: at[p])


# -- prompts -------------------------------------------------------------------------------


async def test_prompts_are_listed_with_their_arguments(work: Engram) -> None:
    async with Client(create_server(work)) as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
    assert set(prompts) == {"notes_about", "notes_since", "weekly_review"}
    args = {name: {a.name: a.required for a in p.arguments or ()} for name, p in prompts.items()}
    assert args == {
        "notes_about": {"topic_or_question": True, "vault": False},
        "notes_since": {"date": True, "topic": False, "vault": False},
        "weekly_review": {"vault": False, "end": False},
    }
    for prompt in prompts.values():
        assert prompt.title and prompt.description
        assert all(a.description for a in prompt.arguments or ())


async def test_notes_about_lists_the_best_hits_and_the_topic(work: Engram) -> None:
    async with Client(create_server(work)) as client:
        text = await text_of(client, "notes_about", {"topic_or_question": "sqlite"})
    best = work.search({"query": "sqlite", "limit": 8})
    assert text.startswith("What do my notes say about: sqlite")
    assert f'search_notes {{"query": "sqlite"}} found {best.total} notes.' in text
    assert listed_paths(text, [h.path for h in best.results]) == [h.path for h in best.results]
    first = best.results[0]
    assert f"1. {first.path} — {first.title} ({first.created_at}" in text
    assert f"line {first.line}: " in text
    # the topic's notes, those the search did not list, newest first
    tagged = work.search({"tags": ["sqlite"], "limit": 100})
    assert f"{tagged.total} notes have the topic #sqlite" in text
    rest = [h.path for h in tagged.results if h.path not in {h.path for h in best.results}]
    topic_part = text.split("have the topic #sqlite")[1]
    assert listed_paths(topic_part, [h.path for h in tagged.results]) == rest
    assert f'read_note {{"path": "{first.path}"}}' in text
    assert "related_notes" in text and "cite" in text


async def test_notes_about_a_question_searches_any_of_its_words(work: Engram) -> None:
    question = "How did we fix the memory leak in the watcher?"
    assert work.search({"query": question}).total == 0  # no note holds every word
    async with Client(create_server(work)) as client:
        text = await text_of(client, "notes_about", {"topic_or_question": question})
    assert "holding any of fix, memory, leak, watcher" in text
    assert "projects/memory-leak-hunt.md — Hunting the watcher memory leak" in text
    async with Client(create_server(work)) as client:
        text = await text_of(client, "notes_about", {"topic_or_question": "zqxj wvvk"})
    assert "found no note" in text and "\n1. " not in text.split("Do this:")[0]


async def test_notes_since_a_day_on_a_topic(work: Engram) -> None:
    async with Client(create_server(work)) as client:
        text = await text_of(client, "notes_since", {"date": "2025-01-01", "topic": "#LSP"})
        words = await text_of(client, "notes_since", {"date": "2024-01-01", "topic": "watcher"})
        every = await text_of(client, "notes_since", {"date": "2025-06-01"})
    expected = work.search({"date_from": "2025-01-01", "tags": ["lsp"]})
    assert text.startswith("What is new in my notes since 2025-01-01 on LSP?")
    assert f"found {expected.total} notes dated 2025-01-01 or later with the topic #LSP" in text
    paths = [h.path for h in expected.results]
    assert listed_paths(text, paths) == paths  # newest first, as the search gives them
    dates = [h.created_at or "" for h in expected.results]
    assert dates == sorted(dates, reverse=True) and len(paths) == 3
    # a topic no note has: its words instead
    assert "no note since then has the topic #watcher" in words
    found = work.search({"query": "watcher", "date_from": "2024-01-01"})
    assert found.total > 0
    assert listed_paths(words, [h.path for h in found.results]) == [h.path for h in found.results]
    # no topic: every note dated since
    since = work.search({"date_from": "2025-06-01", "limit": 100})
    assert f"found {since.total} notes dated 2025-06-01 or later, newest first" in every
    assert listed_paths(every, [h.path for h in since.results]) == [h.path for h in since.results]


async def test_notes_since_takes_relative_days(work: Engram) -> None:
    week_ago = (dt.date.today() - dt.timedelta(days=7)).isoformat()
    async with Client(create_server(work)) as client:
        text = await text_of(client, "notes_since", {"date": "-7d"})
    assert text.startswith(f"What is new in my notes since {week_ago} (-7d)?")
    assert f'"date_from": "{week_ago}"' in text


async def test_weekly_review_notes_and_tasks(work: Engram) -> None:
    root = work.vault.root
    moved = dt.datetime(2024, 11, 6, 12, tzinfo=dt.UTC).timestamp()
    os.utime(root / "reference" / "sqlite.md", (moved, moved))  # changed that week
    work.sync()
    async with Client(create_server(work)) as client:
        text = await text_of(client, "weekly_review", {"end": "2024-11-10"})
    assert text.startswith("Weekly review of my notes: 2024-11-04 to 2024-11-10.")
    dated = work.search({"date_from": "2024-11-04", "date_to": "2024-11-10"})
    assert f"## Notes dated in those days: {dated.total}" in text
    assert listed_paths(text, [h.path for h in dated.results]) == [h.path for h in dated.results]
    assert "## Changed on disk in those days, dated otherwise: 1 shown" in text
    assert "reference/sqlite.md — SQLite field notes (2023-09-14" in text
    # tasks: due by the end (none open), due in the next 7 days, done in those days
    due = work.tasks(
        {"status": "open", "due_before": "2024-11-11", "sort": "due"}, today=dt.date(2024, 11, 10)
    )
    assert f"## Open tasks due by 2024-11-10: {due['total']}" in text
    assert "## Open tasks due in the next 7 days: 1" in text
    assert (
        "- [ ] Measure the rename of a folder with 1,000 notes; target below 0.3 s. #benchmark"
        " (due 2024-11-15) — meetings/2024/2024-11-04 perf sync.md:27"
    ) in text
    assert "## Tasks done from 2024-11-04 to 2024-11-10: 1" in text
    assert (
        "- [x] Run `optimize` once after the big build (done 2024-11-05)"
        " — meetings/2024/2024-11-04 perf sync.md:28"
    ) in text
    assert 'list_tasks {"status": "open", "due_before": "2024-11-11", "sort": "due"}' in text


async def test_weekly_review_overdue_tasks_and_a_vault_without_tasks(
    work: Engram, tags: Engram
) -> None:
    async with Client(create_server(work)) as client:
        text = await text_of(client, "weekly_review", {"end": "2025-08-10"})
    overdue = work.tasks(
        {"status": "open", "due_before": "2025-08-11", "sort": "due"}, today=dt.date(2025, 8, 10)
    )
    assert overdue["total"] >= 2
    assert f"## Open tasks due by 2025-08-10: {overdue['total']}" in text
    for task in overdue["tasks"]:
        assert f"— {task['path']}:{task['line']}" in text
    assert "(due 2025-07-31, overdue)" in text
    async with Client(create_server(tags)) as client:
        text = await text_of(client, "weekly_review", {})
    today = dt.date.today()
    assert text.startswith(
        f"Weekly review of my notes: {(today - dt.timedelta(days=6)).isoformat()} to "
        f"{today.isoformat()}."
    )
    assert "The vault has no tasks" in text


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        pytest.param(
            "notes_since",
            {"date": "2024-13-01"},
            "ENGRAM_INVALID_REQUEST: date: '2024-13-01' is not a valid calendar date",
            id="calendar",
        ),
        pytest.param(
            "notes_since", {"date": "last tuesday"}, "ENGRAM_INVALID_REQUEST: date: ", id="words"
        ),
        pytest.param("weekly_review", {"end": "soon"}, "ENGRAM_INVALID_REQUEST: end: ", id="end"),
        pytest.param("notes_since", {}, "ENGRAM_INVALID_REQUEST: date: required", id="missing"),
        pytest.param(
            "notes_about",
            {"topic_or_question": "  "},
            "ENGRAM_INVALID_REQUEST: topic_or_question: required",
            id="blank",
        ),
        pytest.param(
            "notes_about",
            {"topic_or_question": "x", "vault": "nope"},
            "ENGRAM_INVALID_REQUEST: vault: no vault named 'nope'",
            id="vault",
        ),
        pytest.param(
            "weekly_review",
            {"days": "7"},
            "ENGRAM_INVALID_REQUEST: weekly_review has no argument 'days'",
            id="unknown-argument",
        ),
        pytest.param(
            "daily_review", {}, "ENGRAM_INVALID_REQUEST: no prompt named 'daily_review'", id="name"
        ),
    ],
)
async def test_prompt_errors_name_the_engram_code(
    work: Engram, name: str, args: dict[str, str], message: str
) -> None:
    async with Client(create_server(work)) as client:
        with pytest.raises(MCPError) as caught:
            await client.get_prompt(name, args)
    assert caught.value.code == -32602
    assert caught.value.message.startswith(message), caught.value.message


async def test_prompts_with_two_vaults(work: Engram, tags: Engram) -> None:
    async with Client(create_server({"work": work, "tags": tags})) as client:
        with pytest.raises(MCPError) as caught:
            await client.get_prompt("notes_about", {"topic_or_question": "python"})
        assert caught.value.message.startswith("ENGRAM_INVALID_REQUEST: vault: several vaults")
        args = {"topic_or_question": "python", "vault": "tags"}
        text = await text_of(client, "notes_about", args)
    assert "Answer from my notes in the vault 'tags' only" in text
    assert '"vault": "tags"' in text  # every tool call it asks for names the vault
    hits = tags.search({"query": "python", "limit": 8})
    assert listed_paths(text, [h.path for h in hits.results]) == [h.path for h in hits.results]


# -- completion ----------------------------------------------------------------------------


async def test_complete_topics(work: Engram) -> None:
    since = PromptReference(name="notes_since")
    async with Client(create_server(work)) as client:
        every = await complete(client, since, "topic", "")
        s = await complete(client, since, "topic", "S")
        py = await complete(client, since, "topic", "#py")
        about_ref = PromptReference(name="notes_about")
        about = await complete(client, about_ref, "topic_or_question", "m")
        none = await complete(client, since, "topic", "zzz")
    topics = work.topics("", 1000)
    assert every.values == [t.name for t in topics]  # most used first
    assert every.total == len(topics) and every.has_more is False
    assert every.values[:2] == ["sqlite", "lsp"]
    assert s.values == [t.name for t in topics if t.name.casefold().startswith("s")]
    assert s.values == ["sqlite", "search"] and s.total == 2
    assert py.values == ["Python"]
    assert about.values == [t.name for t in topics if t.name.casefold().startswith("m")]
    assert none.values == [] and none.total == 0 and none.has_more is False


async def test_complete_vault_names(work: Engram, tags: Engram) -> None:
    async with Client(create_server({"work": work, "tags": tags})) as client:
        every = await complete(client, PromptReference(name="weekly_review"), "vault", "")
        t = await complete(client, NOTE, "vault", "T")
        # several vaults and none chosen: which vault's topics is not known yet
        unknown = await complete(client, PromptReference(name="notes_since"), "topic", "")
        chosen = await complete(
            client, PromptReference(name="notes_since"), "topic", "", {"vault": "tags"}
        )
    assert every.values == ["work", "tags"] and every.total == 2 and every.has_more is False
    assert t.values == ["tags"]
    assert unknown.values == [] and unknown.total == 0
    assert chosen.values == [x.name for x in tags.topics("", 100)]


def expected_children(engram: Engram, folder: str) -> list[str]:
    """What a path completion of ``folder`` should give, from the vault's notes: child folders
    by notes under them (most first), then the notes in it, newest first (undated last)."""
    notes = engram.search({"path": "**", "limit": 1000}).results
    assert len(notes) == engram.status().notes
    counts: Counter[str] = Counter()
    own = []
    for hit in notes:
        if not hit.path.startswith(folder):
            continue
        child, sep, _ = hit.path[len(folder) :].partition("/")
        if sep:
            counts[folder + child + "/"] += 1
        else:
            own.append(hit)
    folders = sorted(counts, key=lambda f: (-counts[f], f.casefold()))
    own.sort(key=lambda h: h.path)
    own.sort(key=lambda h: h.created_at or "", reverse=True)
    return folders + [h.path for h in own]


async def test_complete_folders_and_notes(work: Engram) -> None:
    async with Client(create_server(work)) as client:
        top = await complete(client, NOTE, "path", "")
        meetings = await complete(client, NOTE, "path", "meetings/")
        y2024 = await complete(client, NOTE, "path", "meetings/2024/")
        upper = await complete(client, NOTE, "path", "MEET", {"vault": "vault-example"})
        deep = await complete(client, NOTE, "path", "Meetings/2024/2024-0")
        accented = await complete(client, NOTE, "path", "Reference/CAF")
        encoded = await complete(client, NOTE, "path", "reference/caf%C3%A9%20")
        nothing = await complete(client, NOTE, "path", "nowhere/x")
    assert top.values == expected_children(work, "")
    assert top.values[0] == "meetings/" and "_about.md" in top.values
    assert top.total == len(top.values) and top.has_more is False
    assert meetings.values == ["meetings/2024/", "meetings/2025/"]
    assert y2024.values == expected_children(work, "meetings/2024/")
    assert y2024.values[0] == "meetings/2024/2024-11-04 perf sync.md"  # the newest
    assert upper.values == ["meetings/"]
    assert deep.values == [
        "meetings/2024/2024-09-20 retro.md",
        "meetings/2024/2024-06-11 planning.md",
        "meetings/2024/2024-03-05 sqlite review.md",
        "meetings/2024/2024-01-15 kickoff.md",
    ]
    assert accented.values == encoded.values == ["reference/café notes.md"]
    assert nothing.values == [] and nothing.total == 0


async def test_complete_properties(work: Engram) -> None:
    server = create_server(work)

    def by_property(property: str) -> str:
        """Notes by one property (a prompt of this test: completion goes by argument name)."""
        return f"notes by {property}"

    server.add_prompt(Prompt.from_function(by_property))
    ref = PromptReference(name="by_property")
    async with Client(server) as client:
        every = await complete(client, ref, "property", "")
        s = await complete(client, ref, "property", "S")
        review = await complete(client, ref, "property", "review.")
    props = work.properties("", 1000)
    assert every.values == [p.name for p in props] and every.total == len(props)
    assert every.values[:3] == ["tags", "title", "date"]  # most used first
    assert s.values == ["summary", "status"]
    assert review.values == ["review.interval", "review.next"]


async def test_completion_caps_at_100_with_honest_totals(
    vault_copy: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = vault_copy("tags")
    (root / "bulk").mkdir()
    for i in range(150):
        day = dt.date(2024, 1, 1) + dt.timedelta(days=i)
        (root / "bulk" / f"n{i:03}.md").write_text(
            f"---\ndate: {day.isoformat()}\ntags: [cap-{i:03}]\ncap{i:03}: 1\n---\nbody\n", "utf-8"
        )
    engram = opened(root)
    since = PromptReference(name="notes_since")
    server = create_server(engram)

    def by_property(property: str) -> str:
        """A prompt with a property argument."""
        return property

    server.add_prompt(Prompt.from_function(by_property))
    async with Client(server) as client:
        topics = await complete(client, since, "topic", "cap-")
        notes = await complete(client, NOTE, "path", "bulk/")
        props = await complete(client, PromptReference(name="by_property"), "property", "cap")
        fewer = await complete(client, NOTE, "path", "bulk/n14")
        # a folder with more notes than a completion reads: the total is unknown
        monkeypatch.setattr(index_paths, "SCAN_BUDGET", 40)
        unknown = await complete(client, NOTE, "path", "bulk/")
    assert len(topics.values) == 100 and topics.total == 150 and topics.has_more is True
    assert len(notes.values) == 100 and notes.total == 150 and notes.has_more is True
    assert notes.values[:2] == ["bulk/n149.md", "bulk/n148.md"]  # newest first
    assert len(props.values) == 100 and props.total == 150 and props.has_more is True
    assert fewer.values == [f"bulk/n{i}.md" for i in range(149, 139, -1)]
    assert fewer.total == 10 and fewer.has_more is False
    assert len(unknown.values) == 40 and unknown.total is None and unknown.has_more is True


@pytest.mark.parametrize(
    ("ref", "argument", "context", "message"),
    [
        pytest.param(
            PromptReference(name="nope"),
            "topic",
            None,
            "ENGRAM_INVALID_REQUEST: ref: no prompt named 'nope'",
            id="prompt",
        ),
        pytest.param(
            ResourceTemplateReference(uri="file:///{path}"),
            "path",
            None,
            "ENGRAM_INVALID_REQUEST: ref: no resource template 'file:///{path}'",
            id="template",
        ),
        pytest.param(
            PromptReference(name="notes_about"),
            "path",
            None,
            "ENGRAM_INVALID_REQUEST: argument: prompt 'notes_about' has no argument 'path'",
            id="argument",
        ),
        pytest.param(
            NOTE,
            "path",
            {"vault": "nope"},
            "ENGRAM_INVALID_REQUEST: vault: no vault named 'nope'",
            id="vault",
        ),
    ],
)
async def test_completion_errors(
    work: Engram,
    ref: PromptReference | ResourceTemplateReference,
    argument: str,
    context: dict[str, str] | None,
    message: str,
) -> None:
    async with Client(create_server(work)) as client:
        with pytest.raises(MCPError) as caught:
            await complete(client, ref, argument, "", context)
    assert caught.value.code == -32602
    assert caught.value.message.startswith(message), caught.value.message


async def test_completion_of_a_plain_argument_and_before_the_index(
    vault_copy: Callable[[str], Path],
) -> None:
    root = vault_copy("example")
    engram = Engram(root)  # not opened: the index cannot answer
    async with Client(create_server(engram)) as client:
        date = await complete(client, PromptReference(name="notes_since"), "date", "2")
        topic = await complete(client, PromptReference(name="notes_since"), "topic", "")
        path = await complete(client, NOTE, "path", "")
        capabilities = client.server_capabilities
    assert date.values == [] and date.total == 0
    assert topic.values == [] and path.values == []
    assert capabilities.completions is not None
    assert capabilities.prompts is not None


# -- the real process ----------------------------------------------------------------------


async def test_prompts_and_completion_over_stdio(vault_copy: Callable[[str], Path]) -> None:
    work, tags = vault_copy("example"), vault_copy("tags")
    args = ["-m", "engram_ls.mcp_server", "--vault", f"work={work}", "--vault", f"tags={tags}"]
    async with Client(StdioServerParameters(command=sys.executable, args=args)) as client:
        names = [p.name for p in (await client.list_prompts()).prompts]
        assert names == ["notes_about", "notes_since", "weekly_review"]
        text = await text_of(
            client, "notes_about", {"topic_or_question": "sqlite", "vault": "work"}
        )
        assert '"vault": "work"' in text and "reference/sqlite.md" in text
        review = await text_of(client, "weekly_review", {"vault": "work", "end": "2024-11-10"})
        assert "meetings/2024/2024-11-04 perf sync.md:28" in review
        with pytest.raises(MCPError) as caught:
            await client.get_prompt("notes_since", {"date": "2024-02-30", "vault": "work"})
        assert caught.value.message.startswith("ENGRAM_INVALID_REQUEST: date: ")
        vaults = await complete(client, NOTE, "vault", "")
        assert vaults.values == ["work", "tags"]
        folders = await complete(client, NOTE, "path", "", {"vault": "work"})
        assert folders.values[:2] == ["meetings/", "reference/"]
        topics = await complete(
            client, PromptReference(name="notes_since"), "topic", "mem", {"vault": "tags"}
        )
        assert topics.values == ["memory", "Memory Leak", "memory-leak"]


def test_path_spellings_are_looked_up_letter_by_letter(work: Engram) -> None:
    found = work.path_completions("REFERENCE/", 100)
    assert [c.path for c in found.choices] == expected_children(work, "reference/")
    assert all(not c.folder and c.notes == 1 for c in found.choices)
    folders = work.path_completions("m", 100).choices
    assert [(c.path, c.notes) for c in folders] == [("meetings/", 9)]
    assert work.path_completions("./meetings/2025/incident", 5).choices[0].path == (
        "meetings/2025/incident-review.md"
    )
