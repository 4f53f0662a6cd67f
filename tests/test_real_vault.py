"""The real, messy public vault: it indexes without errors, and what `engram search --json`
reports for every note agrees with an independent reading of the frontmatter."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

FILE_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def independent_reading(path: Path) -> tuple[list[str], str | None]:
    """Topics (keys topics/tags/tag) and date (created_at/created/date, else file name)."""
    text = path.read_bytes().decode("utf-8", "replace").lstrip("\ufeff").replace("\r\n", "\n")
    meta: Any = {}
    lines = text.split("\n")
    if lines and lines[0].rstrip() == "---":
        for i in range(1, len(lines)):
            if lines[i].rstrip() in ("---", "..."):
                try:
                    meta = yaml.safe_load("\n".join(lines[1:i])) or {}
                except yaml.YAMLError:
                    meta = {}
                break
    if not isinstance(meta, dict):
        meta = {}
    topics: list[str] = []
    for key in ("topics", "tags", "tag"):
        value = meta.get(key)
        items: list[Any]
        if value is None:
            items = []
        elif isinstance(value, list):
            items = [v for v in value if v is not None and not isinstance(v, (list, dict))]
        elif isinstance(value, str):
            items = value.split(",") if "," in value else value.split()
        elif isinstance(value, (int, float, bool)):
            items = [value]
        else:
            items = []
        for item in items:
            s = str(item).strip().lstrip("#").strip()
            if s and s.casefold() not in {t.casefold() for t in topics}:
                topics.append(s)
    date: str | None = None
    for key in ("created_at", "created", "date"):
        value = meta.get(key)
        if isinstance(value, dt.datetime):
            date = value.date().isoformat()
        elif isinstance(value, dt.date):
            date = value.isoformat()
        elif isinstance(value, str):
            try:
                date = (
                    dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
                    .date()
                    .isoformat()
                )
            except ValueError:
                date = None
        if date:
            break
    if date is None:
        for m in FILE_DATE.finditer(path.stem):
            try:
                date = dt.date(int(m[1]), int(m[2]), int(m[3])).isoformat()
                break
            except ValueError:
                continue
    return topics, date


def test_real_vault_agrees_with_independent_reading(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("real")
    (root / ".engram").mkdir(exist_ok=True)
    (root / ".engram" / "config.yaml").write_text("inline_tags: false\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "engram_ls", "index", str(root), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    notes = sorted(root.rglob("*.md"))
    report = json.loads(proc.stdout)
    assert report["status"]["notes"] == len(notes) == 885
    assert report["status"]["state"] == "ready"

    seen: dict[str, dict[str, Any]] = {}
    offset = 0
    while True:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "engram_ls",
                "search",
                "--vault",
                str(root),
                "--json",
                "--path",
                "**",
                "--limit",
                "1000",
                "--offset",
                str(offset),
                "--no-sync",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        data = json.loads(proc.stdout)
        for r in data["results"]:
            seen[r["path"]] = r
        offset += len(data["results"])
        if not data["truncated"]:
            break
    assert len(seen) == 885

    mismatches = []
    for path in notes:
        rel = path.relative_to(root).as_posix()
        topics, date = independent_reading(path)
        got = seen[rel]
        if sorted(t.casefold() for t in got["topics"]) != sorted(t.casefold() for t in topics):
            mismatches.append((rel, "topics", got["topics"], topics))
        if got["created_at"] != date:
            mismatches.append((rel, "date", got["created_at"], date))
    assert mismatches == []


def test_real_vault_inline_tags_add_to_frontmatter(vault_copy: Callable[[str], Path]) -> None:
    """With the default config, frontmatter topics are all still there (inline tags only add)."""
    from engram_ls.core.service import Engram

    root = vault_copy("real")
    with Engram(root) as engram:
        report = engram.sync()
        assert report.parsed == 885
        res = engram.search({"path": "**", "limit": 1000})
        by_path = {h.path: h for h in res.results}
        for path in root.rglob("*.md"):
            topics, _ = independent_reading(path)
            got = {t.casefold() for t in by_path[path.relative_to(root).as_posix()].topics}
            assert {t.casefold() for t in topics} <= got
