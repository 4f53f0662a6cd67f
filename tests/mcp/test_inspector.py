"""The real ``engram-mcp`` over stdio as a third-party client sees it: the MCP Inspector's CLI
(``@modelcontextprotocol/inspector --cli``, the TypeScript SDK's client) lists and calls what
the server offers, on a copy of examples/vault served beside a second vault, and its JSON
output is checked.

Needs what ``scripts/install_inspector.sh`` installs into ``.tools/`` (Node 22 and the
Inspector, from npm). Without them the test is skipped and says so; under ``CI=true`` it fails
(``tests/editors/needs.py``), as the install script does there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import DATA, EXAMPLE, ROOT, copy_tree
from tests.editors import needs
from tests.mcp.test_mcp import READ_TOOLS

TOOLS = ROOT / ".tools"
NODE_BIN = TOOLS / "node22" / "node_modules" / ".bin"
INSPECTOR = TOOLS / "inspector" / "node_modules" / ".bin" / "mcp-inspector"
HINT = "scripts/install_inspector.sh installs Node 22 and the Inspector into .tools/ (from npm)"

Inspect = Callable[..., tuple[int, dict[str, Any]]]


@pytest.fixture(scope="module")
def inspect(tmp_path_factory: pytest.TempPathFactory) -> Inspect:
    """``inspect(METHOD, *ARGS)``: one Inspector CLI run against a fresh ``engram-mcp`` process
    serving ``notes`` (examples/vault) and ``tags``; (exit status, its JSON output)."""
    for path, what in ((NODE_BIN / "node", "Node 22"), (INSPECTOR, "the MCP Inspector")):
        if not path.exists():
            if needs.mandatory():
                pytest.fail(f"{what} is missing: {HINT} (CI=true: this test is mandatory)")
            pytest.skip(f"{what} is missing: {HINT} (under CI=true this fails)")
    base = tmp_path_factory.mktemp("inspector")
    notes = copy_tree(EXAMPLE, base / "notes")
    tags = copy_tree(DATA / "tags", base / "tags")
    server = [sys.executable, "-m", "engram_ls.mcp_server", "--no-watch"]
    server += ["--vault", f"notes={notes}", "--vault", f"tags={tags}"]
    env = {
        **os.environ,
        "PATH": f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        # the Inspector's own files, never the user's ~/.mcp-inspector
        "MCP_CATALOG_PATH": str(base / "catalog.json"),
        "MCP_CLIENT_CONFIG_PATH": str(base / "client.json"),
    }

    def run(method: str, *args: str) -> tuple[int, dict[str, Any]]:
        cmd = [str(INSPECTOR), "--cli", "--format", "json", "--quiet", *server]
        cmd += ["--cwd", str(ROOT), "--method", method, *args]
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=180)
        out = done.stdout.strip() or done.stderr.strip()
        try:
            return done.returncode, json.loads(out)
        except json.JSONDecodeError:
            pytest.fail(f"the Inspector printed no JSON (exit {done.returncode}):\n{out[-2000:]}")

    return run


def result(answer: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    code, out = answer
    assert code == 0 and "result" in out, out
    return out["result"]  # type: ignore[no-any-return]


def test_tools_list_is_strictly_portable(inspect: Inspect) -> None:
    """``--strict`` exits 6 on a tool-schema problem of error severity (warnings, such as a
    nullable ``type: [..., "null"]``, are allowed)."""
    tools = {t["name"]: t for t in result(inspect("tools/list", "--strict"))["tools"]}
    assert set(tools) == READ_TOOLS, "no write tools without --allow-write"
    for tool in tools.values():
        assert tool["description"] and tool["inputSchema"]["type"] == "object", tool["name"]
        assert tool["annotations"]["readOnlyHint"] is True
        if tool["name"] != "list_vaults":
            assert "vault" in tool["inputSchema"]["properties"], tool["name"]
    assert "outputSchema" in tools["search_notes"]


def test_tools_call(inspect: Inspect) -> None:
    found = result(
        inspect(
            "tools/call",
            "--tool-name",
            "search_notes",
            "--tool-arg",
            "vault=notes",
            "query=write-ahead log",
            "limit=2",
        )
    )
    assert not found.get("isError")
    data = found["structuredContent"]
    assert [h["path"] for h in data["results"]][:1] == ["reference/sqlite.md"], data
    assert len(data["results"]) == 2 and data["total"] >= 2 and data["next_cursor"]
    assert json.loads(found["content"][0]["text"])["total"] == data["total"]

    vaults = result(inspect("tools/call", "--tool-name", "list_vaults"))["structuredContent"]
    assert [(v["name"], v["notes"]) for v in vaults["vaults"]] == [("notes", 31), ("tags", 9)]

    code, out = inspect("tools/call", "--tool-name", "search_notes", "--tool-arg", "query=x")
    assert code != 0, "a tool error is a failed call to the Inspector"
    assert out["result"]["isError"] is True
    text = out["result"]["content"][0]["text"]
    assert text.startswith("ENGRAM_INVALID_REQUEST: vault:") and "notes, tags" in text


def test_resources(inspect: Inspect) -> None:
    templates = result(inspect("resources/templates/list"))["resourceTemplates"]
    if not templates:
        pytest.skip("the server registers no resources (resources.py) yet")
    assert [t["uriTemplate"] for t in templates] == ["engram://{vault}/{+path}"]
    listed = result(inspect("resources/list"))
    uris = [r["uri"] for r in listed["resources"]]
    assert uris and "nextCursor" not in listed, "31 + 9 notes: one page"
    assert {u.split("/")[2] for u in uris} == {"notes", "tags"}
    assert all(r["mimeType"] == "text/markdown" for r in listed["resources"])
    assert "engram://notes/inbox/open%20questions.md" in uris
    read = result(inspect("resources/read", "--uri", "engram://notes/reference/sqlite.md"))
    assert read["contents"][0]["text"].startswith("---\ntitle: SQLite field notes\n")
    code, out = inspect("resources/read", "--uri", "engram://notes/../../etc/passwd")
    assert code != 0 and "ENGRAM_" in json.dumps(out), out


def test_resources_list_has_every_note(inspect: Inspect) -> None:
    listed = result(inspect("resources/list"))
    assert len(listed["resources"]) == 40, [r["uri"] for r in listed["resources"]]


def test_prompts(inspect: Inspect) -> None:
    prompts = {p["name"]: p for p in result(inspect("prompts/list"))["prompts"]}
    if not prompts:
        pytest.skip("the server registers no prompts (prompts.py) yet")
    assert {"notes_about", "notes_since", "weekly_review"} <= set(prompts)
    arguments = {a["name"]: a for a in prompts["notes_about"]["arguments"]}
    assert arguments["topic_or_question"]["required"] is True and "vault" in arguments
    got = result(
        inspect(
            "prompts/get",
            "--prompt-name",
            "notes_about",
            "--prompt-args",
            "topic_or_question=sqlite",
            "vault=notes",
        )
    )
    text = got["messages"][0]["content"]["text"]
    assert got["messages"][0]["role"] == "user" and "reference/sqlite.md" in text
