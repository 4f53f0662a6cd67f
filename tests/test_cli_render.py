"""What ``engram search`` prints for a person, to the byte, over a small vault made here: the
hit lines and snippets without colour and with it (the ANSI codes asserted exactly), colour
only on a terminal (a real pseudo-terminal), ``NO_COLOR``, the hints after an empty answer,
``--json`` untouched by either, and the wording of bad options: real processes where the
terminal, the environment or the exit status are what is under test."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import engram_in_process as engram

NOTES = {
    "alpha.md": "---\ntags: [engineering, sqlite]\ndate: 2024-03-05\n---\n\n# Alpha\n\n"
    "![the checkpoint diagram](checkpoint.png)\n\nA checkpoint copies pages back.\n",
    "beta.md": "---\ntags: [engine]\ndate: 2025-06-01\n---\n\n# Beta\n\n"
    "<div align=center>\n\n| column | other |\n|---|---|\n\nSee [[alpha|the alpha note]] and "
    "[the docs](https://example.com/checkpoint) on checkpoint timing.\n",
    "gamma.md": "# Gamma\n\n```python\nprint('x')\n```\n\n" + "word " * 40 + "far checkpoint end\n",
}
SUMMARY = "3 of 3 notes; served by index (index ready), "


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("render") / "vault"
    root.mkdir()
    for name, text in NOTES.items():
        (root / name).write_text(text, encoding="utf-8")
    proc = engram("index", str(root), "--no-semantic")
    assert proc.returncode == 0, proc.stderr
    return root


def _search(vault: Path, *args: str, env: dict[str, str | None] | None = None) -> list[str]:
    proc = engram("search", "--vault", str(vault), "--no-sync", *args, env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1].startswith(SUMMARY.split(";")[0]) or " of " in lines[-1]
    return lines[:-1]


def test_plain_output_shows_path_line_title_date_topics_and_a_cleaned_snippet(
    vault: Path,
) -> None:
    assert _search(vault, "checkpoint", "--color", "never", env={"COLUMNS": "60"}) == [
        "alpha.md:10  Alpha  (2024-03-05)  [engineering, sqlite]",
        "    A checkpoint copies pages back.",
        "beta.md:13  Beta  (2025-06-01)  [engine]",
        "    See the alpha note and the docs on checkpoint timing.",
        "gamma.md:7  Gamma  (undated)",
        "    …" + "word " * 7 + "far checkpoint end",
    ]


def test_colour_always_highlights_as_ripgrep_does(vault: Path) -> None:
    lines = _search(vault, "checkpoint", "--color", "always", env={"COLUMNS": "60"})
    assert lines[:2] == [
        "\x1b[35malpha.md\x1b[0m:\x1b[32m10\x1b[0m  \x1b[1mAlpha\x1b[0m  (2024-03-05)"
        "  \x1b[36m[engineering, sqlite]\x1b[0m",
        "    A \x1b[1;31mcheckpoint\x1b[0m copies pages back.",
    ]
    title = _search(vault, "alpha", "--color", "always")
    assert title[0] == (
        "\x1b[35malpha.md\x1b[0m:\x1b[32m10\x1b[0m  \x1b[1;31mAlpha\x1b[0m  (2024-03-05)"
        "  \x1b[36m[engineering, sqlite]\x1b[0m"
    )


def test_literal_matches_are_highlighted_in_the_line_as_written(vault: Path) -> None:
    lines = _search(
        vault, "--mode", "literal", "[[alpha", "--color", "always", env={"COLUMNS": "200"}
    )
    assert lines[1] == (
        "    See \x1b[1;31m[[alpha\x1b[0m|the alpha note]] and [the docs]"
        "(https://example.com/checkpoint) on checkpoint timing."
    )


def test_colour_is_off_when_piped_and_with_no_color(vault: Path) -> None:
    piped = _search(vault, "checkpoint")  # auto, and standard output is not a terminal
    assert not any("\x1b[" in line for line in piped)
    no_color = _search(vault, "checkpoint", "--color", "auto", env={"NO_COLOR": "1"})
    assert no_color == piped
    forced = _search(vault, "checkpoint", "--color", "always", env={"NO_COLOR": "1"})
    assert "\x1b[1;31mcheckpoint\x1b[0m" in forced[1]


def _on_a_terminal(vault: Path, *args: str, env: dict[str, str]) -> str:
    """``engram search ARGS`` as a real process whose standard output is a pseudo-terminal;
    what it wrote there."""
    main, child = pty.openpty()
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "engram_ls",
                "search",
                "--vault",
                str(vault),
                "--no-sync",
                *args,
            ],
            stdout=child,
            stderr=subprocess.PIPE,
            env={**os.environ, "COLUMNS": "60", "TERM": "xterm", **env},
            timeout=120,
        )
        os.close(child)
        child = -1
        out = b""
        while True:
            try:
                block = os.read(main, 65536)
            except OSError:  # the terminal closed: everything was read
                break
            if not block:
                break
            out += block
    finally:
        if child != -1:
            os.close(child)
        os.close(main)
    assert proc.returncode == 0, proc.stderr
    return out.decode("utf-8").replace("\r\n", "\n")


def test_on_a_terminal_colour_is_on_unless_no_color(vault: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    coloured = _on_a_terminal(vault, "checkpoint", env={**env, "NO_COLOR": ""})
    assert "A \x1b[1;31mcheckpoint\x1b[0m copies pages back." in coloured
    plain = _on_a_terminal(vault, "checkpoint", env={"NO_COLOR": "1"})
    assert "\x1b[" not in plain and "A checkpoint copies pages back." in plain
    dumb = _on_a_terminal(vault, "checkpoint", env={"TERM": "dumb"})
    assert "\x1b[" not in dumb


def test_json_is_the_documented_object_with_no_colour_and_no_hints(vault: Path) -> None:
    for args in (["checkpoint", "--color", "always"], ["--tag", "enginering"]):
        proc = engram("search", "--vault", str(vault), "--no-sync", "--json", *args)
        assert proc.returncode == 0 and proc.stderr == ""
        assert "\x1b" not in proc.stdout
        data = json.loads(proc.stdout)
        assert set(data) == {"results", "total", "truncated", "index", "elapsed_ms"}
        for hit in data["results"]:
            keys = {"path", "uri", "title", "created_at", "topics", "score", "snippet", "line"}
            assert set(hit) == keys
    assert data["total"] == 0 and data["results"] == []


def test_an_empty_answer_says_why_on_stderr(vault: Path) -> None:
    proc = engram("search", "--vault", str(vault), "--no-sync", "--tag", "enginering")
    assert proc.returncode == 0
    assert proc.stdout.startswith("0 of 0 notes;")
    assert proc.stderr == "engram: no topic 'enginering'; did you mean engineering, engine?\n"
    proc = engram(
        "search", "--vault", str(vault), "--no-sync", "--from", "2030-01-01", "--to", "2030-12-31"
    )
    assert proc.stderr == (
        "engram: no note dated 2030-01-01..2030-12-31; notes are dated 2024-03-05..2025-06-01\n"
    )
    # a known topic and a date range with notes: the filters together explain it, no hint
    proc = engram(
        "search", "--vault", str(vault), "--no-sync", "--tag", "engine", "--to", "2024-12-31"
    )
    assert proc.stdout.startswith("0 of 0 notes;") and proc.stderr == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["search", "--from", "2024-13-01"], "--from 2024-13-01 is not a date", id="day"
        ),
        pytest.param(
            ["search", "--to", "2024/1/1"], "--to 2024/1/1 is not a date (YYYY-MM-DD)", id="form"
        ),
        pytest.param(
            ["search", "--from", "2024-05-01", "--to", "2024-01-01"],
            "--from 2024-05-01 is after --to 2024-01-01",
            id="order",
        ),
        pytest.param(
            ["search", "x", "--limit", "abc"], "--limit abc is not a whole number", id="int"
        ),
        pytest.param(["search", "x", "--limit", "0"], "--limit must be 1 or more, not 0", id="min"),
        pytest.param(
            ["search", "x", "--mode", "fuzzy"],
            "--mode fuzzy is not one of text, literal, regex, semantic, hybrid",
            id="choice",
        ),
        pytest.param(
            ["search", "x", "--where", "status ~ x"],
            "--where 'status ~ x' is not 'PROPERTY OP VALUE'",
            id="where",
        ),
        pytest.param(
            ["search", "x", "--max-staleness-ms", "-5"],
            "--max-staleness-ms must be 0 or more, not -5",
            id="ms",
        ),
        pytest.param(
            ["tasks", "--due-before", "soon"],
            "--due-before soon is not a day (YYYY-MM-DD, today, tomorrow, yesterday,",
            id="task-day",
        ),
        pytest.param(
            ["tasks", "--scheduled-after", "2024-02-30"],
            "--scheduled-after 2024-02-30 is not a date",
            id="task-date",
        ),
        pytest.param(
            ["tasks", "--priority", "urgent", "--sort", "soon"],
            "--priority urgent is not a priority (highest, high, medium, normal, low, lowest);"
            " --sort soon is not one of path, due, priority",
            id="task-two",
        ),
        pytest.param(["tasks", "--offset", "x"], "--offset x is not a whole number", id="task-int"),
    ],
)
def test_bad_options_are_named_by_flag_in_plain_words(
    vault: Path, args: list[str], message: str
) -> None:
    proc = engram(*args, "--vault", str(vault), "--no-sync")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"engram: error: {message}"), proc.stderr
    assert proc.stderr.endswith(" [ENGRAM_INVALID_REQUEST]\n")
    for word in ("date_from", "date_to", "due_before", "Input should", "Value error", "request"):
        assert word not in proc.stderr


def test_a_bad_option_in_a_real_process_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    (root / ".engram").mkdir(parents=True)
    (root / "note.md").write_text("# Note\n\nhello\n")
    proc = subprocess.run(
        [sys.executable, "-m", "engram_ls", "search", "hello", "--from", "2024-13-01"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        "engram: error: --from 2024-13-01 is not a date [ENGRAM_INVALID_REQUEST]\n"
    )
    assert not (root / ".engram" / "index.sqlite").exists()  # checked before anything is built
    other = subprocess.run(
        [sys.executable, "-m", "engram_ls", "topics", "--limit", "many"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert other.returncode == 2 and "argument --limit: many is not a whole number" in other.stderr
