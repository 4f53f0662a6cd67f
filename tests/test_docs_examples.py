"""Every ``console`` example of docs/semantic.md, docs/queries.md, docs/tasks.md and
docs/cli.md, run on a copy of the example vault: the hits it shows are the hits the command
prints (their snippet lines and the summary line aside; a task's line is a hit, not a
snippet). An example that shows no output only has to succeed."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.conftest import engram_in_process as engram

DOCS = {name: ROOT / "docs" / name for name in ("semantic.md", "queries.md", "tasks.md", "cli.md")}
_SUMMARY = re.compile(r"\d+ of \d+ (notes|tasks)")
_TASK_LINE = re.compile(r" +\d+  \[.\] ")
_BLOCK = re.compile(r"```console\n(.*?)```", re.DOTALL)


def _examples(doc: Path) -> list[tuple[list[str], list[str]]]:
    out = []
    for block in _BLOCK.findall(doc.read_text(encoding="utf-8")):
        lines = block.strip("\n").split("\n")
        assert lines[0].startswith("$ engram "), lines[0]
        out.append((shlex.split(lines[0][2:])[1:], lines[1:]))
    return out


EXAMPLES = [(name, *example) for name, doc in DOCS.items() for example in _examples(doc)]


@pytest.mark.parametrize("name", list(DOCS))
def test_the_page_has_examples(name: str) -> None:
    assert len(_examples(DOCS[name])) >= (1 if name == "cli.md" else 4)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.conftest import copy_tree

    root = copy_tree(ROOT / "examples" / "vault", tmp_path_factory.mktemp("docs") / "vault")
    proc = engram("index", str(root))
    assert proc.returncode == 0 and "embedded 31 notes" in proc.stdout, proc.stdout + proc.stderr
    return root


@pytest.mark.parametrize(
    ("page", "args", "shown"), EXAMPLES, ids=[f"{p}: {' '.join(a)}" for p, a, _ in EXAMPLES]
)
def test_an_example_prints_what_the_page_shows(
    indexed: Path, page: str, args: list[str], shown: list[str]
) -> None:
    proc = engram(*args, cwd=indexed)
    assert proc.returncode == 0, proc.stderr
    if not shown:
        return
    hits = [
        line
        for line in proc.stdout.splitlines()
        if line
        and (not line.startswith(" ") or _TASK_LINE.match(line))
        and not _SUMMARY.search(line)
    ]
    assert hits == [line for line in shown if line and not _SUMMARY.search(line)]
