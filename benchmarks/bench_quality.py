"""Quality benchmark of search by meaning: recall@10 and MRR of modes ``text``, ``semantic``
and ``hybrid`` on a labelled query set, through the core service.

    python benchmarks/bench_quality.py [VAULT] [--queries FILE] [--first N] [--variants]
        [--model DIR ...] [--distil DIR ...] [--lsp] [--json OUT]

The vault (default: ``shared/vaults/dwarvesf-brain`` beside the repository, as the tests find
it) is copied to a temporary folder, indexed and embedded with the shipped model, and every
query of ``tests/data/semantic_queries.json`` (see ``tests/data/semantic_queries.md``) is run
in each mode with ``limit`` 10. recall@10 is the share of a query's relevant notes among its
first 10 hits; the reciprocal rank is 1/rank of the first relevant hit (0 when none is in the
first 10); both are averaged over the queries, overall and per kind of query.

``--variants`` also measures, from the same index, what might make it better (the core is not
changed; each variant is computed here):

- ``semantic exact``: the cosine of the query with every chunk's stored vector (no sign-bit
  pre-selection), a note scored by its best chunk: what the pre-selection loses;
- ``text or``: the text side as FTS5 ``a OR b OR c`` of the query's words (BM25), instead of
  the default, where every word must occur;
- ``hybrid ...``: reciprocal rank fusion of a text ranking (AND or OR) and the semantic ranking,
  each its first 100 notes, with RRF k of 10 and 60. The shipped ``hybrid`` fuses the
  semantic ranking with BM25 over the query's informative words (``core/search/any_word.py``:
  no stop words, the rarer words within a budget of matching notes) with RRF k 10;
  ``fusion_check`` recomputes that here and counts the queries where it gives the shipped top
  10.

``--model DIR`` (repeatable) builds another index with that static model (a model2vec folder:
``model.safetensors`` and ``tokenizer.json``, the config's ``semantic.model``) and reports the
same figures. ``--distil DIR`` does the same with a static model distilled from a BERT
sentence-transformers folder (``Bert.distil``: model2vec's recipe, in numpy). ``--lsp`` also
runs the three modes through a real ``engram-ls`` process (``engram/search``) on the same
index and counts the queries where it answers as the core does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib as b

from engram_ls.core.config import EngramConfig, Semantic
from engram_ls.core.index import fts
from engram_ls.core.search.semantic_path import HYBRID_DEPTH, RRF_K
from engram_ls.core.service import Engram

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_VAULT = ROOT.parent / "shared" / "vaults" / "dwarvesf-brain"
DEFAULT_QUERIES = ROOT / "tests" / "data" / "semantic_queries.json"
K = 10
MODES = ("text", "semantic", "hybrid")
RRF_KS = (10, 60)

Ranking = list[str]
"""Note paths, best first."""


# -- the measures ------------------------------------------------------------------------------


def judge(ranking: Ranking, relevant: Sequence[str]) -> dict[str, Any]:
    """recall@K, reciprocal rank and the rank of the first relevant note (None past K)."""
    top = ranking[:K]
    found = [p for p in relevant if p in top]
    first = next((i for i, p in enumerate(top, 1) if p in relevant), None)
    return {
        "recall": len(found) / len(relevant),
        "rr": 0.0 if first is None else 1 / first,
        "first": first,
    }


def aggregate(rows: list[dict[str, Any]], kinds: list[str]) -> dict[str, Any]:
    """Mean recall@K and MRR of per-query judgements, overall and per kind."""

    def mean(part: list[dict[str, Any]]) -> dict[str, Any]:
        n = len(part)
        return {
            "recall@10": round(sum(r["recall"] for r in part) / n, 3) if n else None,
            "mrr": round(sum(r["rr"] for r in part) / n, 3) if n else None,
            "queries": n,
        }

    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row, kind in zip(rows, kinds, strict=True):
        by_kind[kind].append(row)
    return {"all": mean(rows), **{k: mean(by_kind[k]) for k in sorted(by_kind)}}


def fuse(rankings: Sequence[Ranking], k: int, ids: dict[str, int]) -> Ranking:
    """Reciprocal rank fusion as ``core/search/semantic_path.py`` does it: ``1/(k + rank)``
    from each ranking a note is in (its first HYBRID_DEPTH), ties by note id."""
    score: dict[str, float] = defaultdict(float)
    for ranking in rankings:
        for rank, path in enumerate(ranking[:HYBRID_DEPTH], 1):
            score[path] += 1 / (k + rank)
    return sorted(score, key=lambda p: (-score[p], ids[p]))


def shipped_text_side(engram: Engram, query: str, deep: dict[str, Any]) -> Ranking:
    """The text side of the shipped ``hybrid`` (``core/search/any_word.py``), as a raw FTS5
    search: what ``fusion_check`` fuses with the semantic ranking to recompute ``hybrid``."""
    from engram_ls.core.search import make_plan, parse_request
    from engram_ls.core.search.any_word import any_word_plan

    plan = make_plan(parse_request({"query": query, "mode": "hybrid"}), engram.vault, engram.config)
    conn = engram.index.conn()
    notes = int(conn.execute("SELECT count(*) FROM notes").fetchone()[0])
    side = any_word_plan(plan, conn, ("bench_quality", notes), notes, HYBRID_DEPTH)
    if side is None:
        return []
    return paths(engram, {**deep, "query": side.fts_query, "raw_fts": True})


def or_query(query: str) -> str | None:
    """The query's words as FTS5 ``"a" OR "b" OR ...`` (None when it has no word)."""
    words = list(dict.fromkeys(fts.tokenize(query)))
    return " OR ".join(fts.quoted(w) for w in words) if words else None


# -- running the queries -----------------------------------------------------------------------


def load_queries(path: Path, first: int | None) -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    queries: list[dict[str, Any]] = data["queries"]
    return queries[:first] if first else queries


def paths(engram: Engram, request: dict[str, Any]) -> Ranking:
    return [h.path for h in engram.search(request).results]


def embedded(root: Path, index: Path, model: str | None) -> Engram:
    """An open, synced and embedded service of ``root`` (its index at ``index``)."""
    config = EngramConfig(semantic=Semantic(model=model))
    engram = Engram(root, config=config, index_path=index)
    engram.open()
    engram.sync()
    report = engram.embed()
    status = engram.status().semantic
    if status.state != "ready":
        raise SystemExit(f"semantic search is {status.state}: {status.error}")
    print(
        f"model {status.model} ({status.dims} dims): {status.notes} notes, {status.chunks}"
        f" chunks embedded in {report.elapsed_s:.1f} s",
        file=sys.stderr,
    )
    return engram


class ExactCosine:
    """Every chunk's stored vector, read from the index: the exact nearest notes."""

    def __init__(self, index: Path, embed: Callable[[list[str]], Any]) -> None:
        import numpy as np

        from engram_ls.core.semantic.bits import from_blobs

        conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
        try:
            rows = conn.execute(
                "SELECT n.path, v.vec FROM chunks c JOIN chunk_vectors v ON v.id = c.id"
                " JOIN notes n ON n.id = c.note_id ORDER BY c.id"
            ).fetchall()
        finally:
            conn.close()
        self.paths = np.array([r[0] for r in rows], dtype=object)
        self.matrix = from_blobs([r[1] for r in rows])
        self.embed = embed

    def ranking(self, query: str, depth: int = HYBRID_DEPTH) -> Ranking:
        import numpy as np

        q = self.embed([query])[0]
        if not q.any():
            return []
        cos = self.matrix @ q
        out: Ranking = []
        seen: set[str] = set()
        for i in np.argsort(-cos, kind="stable"):
            path = str(self.paths[i])
            if path not in seen:
                seen.add(path)
                out.append(path)
                if len(out) >= depth:
                    break
        return out


def note_ids(index: Path) -> dict[str, int]:
    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        return {str(p): int(i) for i, p in conn.execute("SELECT id, path FROM notes")}
    finally:
        conn.close()


def measure(
    engram: Engram, index: Path, queries: list[dict[str, Any]], variants: bool
) -> dict[str, Any]:
    """Every mode (and, with ``variants``, every variant) judged on every query."""
    rankings: dict[str, list[Ranking]] = defaultdict(list)
    times: dict[str, list[float]] = defaultdict(list)
    for q in queries:
        for mode in MODES:
            t0 = time.perf_counter()
            rankings[mode].append(paths(engram, {"query": q["query"], "mode": mode, "limit": K}))
            times[mode].append((time.perf_counter() - t0) * 1000)
    checks: dict[str, Any] = {}
    if variants:
        ids = note_ids(index)
        exact = ExactCosine(index, engram.semantic.model().embed)
        shipped_hybrid = rankings["hybrid"]
        agree = same_exact = 0
        for i, q in enumerate(queries):
            deep = {"query": q["query"], "limit": HYBRID_DEPTH}
            text_and = paths(engram, {**deep, "mode": "text"})
            ored = or_query(q["query"])
            text_or = paths(engram, {**deep, "query": ored, "raw_fts": True}) if ored else []
            sem = paths(engram, {**deep, "mode": "semantic"})
            sem_exact = exact.ranking(q["query"])
            rankings["semantic exact"].append(sem_exact)
            rankings["text or"].append(text_or)
            for k in RRF_KS:
                rankings[f"hybrid and k{k}"].append(fuse([text_and, sem], k, ids))
                rankings[f"hybrid or k{k}"].append(fuse([text_or, sem], k, ids))
                rankings[f"hybrid or k{k} exact"].append(fuse([text_or, sem_exact], k, ids))
            text_any = shipped_text_side(engram, q["query"], deep)
            recomputed = fuse([text_any, sem], RRF_K, ids)
            agree += recomputed[:K] == shipped_hybrid[i][:K]
            same_exact += sem_exact[:K] == rankings["semantic"][i][:K]
        checks["fusion_check"] = {"same_top10": agree, "queries": len(queries)}
        checks["exact_check"] = {"same_top10": same_exact, "queries": len(queries)}
        """Queries whose semantic top 10 is the exact cosine's."""
    kinds = [q["kind"] for q in queries]
    out: dict[str, Any] = {"modes": {}, **checks}
    for name, ranked in rankings.items():
        rows = [judge(r, q["relevant"]) for r, q in zip(ranked, queries, strict=True)]
        out["modes"][name] = aggregate(rows, kinds)
        out["modes"][name]["answered"] = sum(bool(r) for r in ranked)
        """Queries with at least one hit."""
        if name in times:
            out["modes"][name]["latency"] = b.summary(times[name])
    out["per_query"] = [
        {
            "id": q["id"],
            "kind": q["kind"],
            "first_relevant_rank": {
                name: judge(rankings[name][i], q["relevant"])["first"] for name in rankings
            },
            "top3": {mode: rankings[mode][i][:3] for mode in MODES},
        }
        for i, q in enumerate(queries)
    ]
    return out


# -- a static model distilled from a transformer -----------------------------------------------


class Bert:
    """A BERT sentence-transformers folder (``model.safetensors``, ``config.json``,
    ``tokenizer.json``; all-MiniLM-L6-v2's shape) run with numpy, inference only: enough to
    distil a static model from it (about a minute for a 30,000-token vocabulary here)."""

    def __init__(self, folder: Path) -> None:
        from safetensors import safe_open
        from tokenizers import Tokenizer

        with safe_open(os.fspath(folder / "model.safetensors"), framework="np") as st:
            self.t = {k.removeprefix("bert."): st.get_tensor(k) for k in st.keys()}  # noqa: SIM118
        config = json.loads((folder / "config.json").read_text())
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.tokenizer = Tokenizer.from_file(os.fspath(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()

    def _norm(self, x: Any, name: str) -> Any:
        import numpy as np

        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.t[name + ".weight"] + self.t[
            name + ".bias"
        ]

    def _dense(self, x: Any, name: str) -> Any:
        """``x W^T + b`` as one 2-d product (a stack of small ones is many times slower)."""
        w = self.t[name + ".weight"]
        flat = x.reshape(-1, x.shape[-1]) @ w.T + self.t[name + ".bias"]
        return flat.reshape(*x.shape[:-1], w.shape[0])

    def hidden(self, ids: Any, mask: Any) -> Any:
        """The last hidden states of a batch of token ids ([B, T]; mask 1 for real tokens)."""
        import numpy as np

        t = self.t
        n, length = ids.shape
        x = t["embeddings.word_embeddings.weight"][ids]
        x = x + t["embeddings.position_embeddings.weight"][:length]
        x = x + t["embeddings.token_type_embeddings.weight"][0]
        x = self._norm(x, "embeddings.LayerNorm")
        d = x.shape[-1] // self.heads
        bias = ((1.0 - mask) * -1e4)[:, None, None, :].astype(np.float32)
        for i in range(self.layers):
            pre = f"encoder.layer.{i}."

            def split(y: Any) -> Any:
                return y.reshape(n, length, self.heads, d).transpose(0, 2, 1, 3)

            q = split(self._dense(x, pre + "attention.self.query"))
            k = split(self._dense(x, pre + "attention.self.key"))
            v = split(self._dense(x, pre + "attention.self.value"))
            att = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + bias  # a float keeps float32
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(n, length, -1)
            x = self._norm(
                x + self._dense(ctx, pre + "attention.output.dense"),
                pre + "attention.output.LayerNorm",
            )
            h = self._dense(x, pre + "intermediate.dense")
            h = 0.5 * h * (1 + np.tanh(0.7978845608 * (h + 0.044715 * h**3)))  # gelu
            x = self._norm(x + self._dense(h, pre + "output.dense"), pre + "output.LayerNorm")
        return x

    def distil(self, dest: Path, dims: int = 256) -> Path:
        """A static model2vec folder from this model, model2vec's recipe: every vocabulary
        token alone between [CLS] and [SEP], its output vector; PCA to ``dims``; weighted by
        SIF of a Zipf estimate of its frequency from its rank (the vocabulary order)."""
        import numpy as np
        from safetensors.numpy import save_file

        vocab = self.t["embeddings.word_embeddings.weight"].shape[0]
        cls = self.tokenizer.token_to_id("[CLS]")
        sep = self.tokenizer.token_to_id("[SEP]")
        rows = []
        for start in range(0, vocab, 2048):
            tok = np.arange(start, min(vocab, start + 2048))
            ids = np.stack([np.full_like(tok, cls), tok, np.full_like(tok, sep)], axis=1)
            rows.append(self.hidden(ids, np.ones(ids.shape, dtype=np.float32))[:, 1])
        table = np.concatenate(rows).astype(np.float64)
        table -= table.mean(0)
        _, _, vt = np.linalg.svd(table, full_matrices=False)
        table = table @ vt[:dims].T
        proba = 1 / np.arange(2, vocab + 2)
        proba /= proba.sum()
        table *= (1e-4 / (1e-4 + proba))[:, None]
        dest.mkdir(parents=True)
        save_file({"embeddings": table.astype(np.float32)}, os.fspath(dest / "model.safetensors"))
        self.tokenizer.save(os.fspath(dest / "tokenizer.json"))
        return dest


# -- through engram-ls -------------------------------------------------------------------------


async def lsp_figures(vault: Path, index: Path, queries: list[dict[str, Any]]) -> dict[str, Any]:
    """The three modes through a real ``engram-ls`` (``engram/search``) on the same index."""
    import bench_lsp

    rankings: dict[str, list[Ranking]] = defaultdict(list)
    session = bench_lsp.Session(vault, index, "visual-studio-code", settings={})
    await session.start()
    try:
        for q in queries:
            for mode in MODES:
                res = await session.search(query=q["query"], mode=mode, limit=K)
                rankings[mode].append([h["path"] for h in res["results"]])
    finally:
        await session.stop()
    kinds = [q["kind"] for q in queries]
    return {
        "modes": {
            mode: aggregate(
                [judge(r, q["relevant"]) for r, q in zip(rankings[mode], queries, strict=True)],
                kinds,
            )
            for mode in MODES
        },
        "rankings": rankings,
    }


# -- the report --------------------------------------------------------------------------------


def table(title: str, modes: dict[str, Any]) -> str:
    kinds = [k for k in next(iter(modes.values())) if k not in ("all", "latency", "answered")]
    head = f"{title:24} {'answered':>8} {'recall@10':>9} {'MRR':>6}" + "".join(
        f" {k[:10] + ' R':>12} {'MRR':>6}" for k in kinds
    )
    lines = [head]
    for name, row in modes.items():
        cells = f"{name:24} {row.get('answered', ''):>8} {row['all']['recall@10']:>9.3f}"
        cells += f" {row['all']['mrr']:>6.3f}"
        for k in kinds:
            cells += f" {row[k]['recall@10']:>12.3f} {row[k]['mrr']:>6.3f}"
        lines.append(cells)
    return "\n".join(lines)


def copy_vault(src: Path, dest: Path) -> Path:
    """A writable copy of the vault (the benchmark never writes beside the original)."""
    shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns(".engram"))
    return dest


def flattened(folder: Path, dest: Path) -> Path:
    """A model2vec folder whose embeddings are per cluster (vocabulary quantization: tensors
    ``mapping`` token -> row and ``weights`` per token) as the plain form the core reads: one
    row per token, ``weights[t] * embeddings[mapping[t]]``, which is model2vec's own forward
    pass. A folder without ``mapping`` is returned as it is. (``core/semantic/model.py`` folds
    ``weights`` into the table before the mapping, which fails on such a model.)"""
    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import save_file

    with safe_open(os.fspath(folder / "model.safetensors"), framework="np") as st:
        tensors = {key: st.get_tensor(key) for key in st.keys()}  # noqa: SIM118
    if "mapping" not in tensors:
        return folder
    table = tensors["embeddings"].astype(np.float32)[tensors["mapping"]]
    if "weights" in tensors:
        table *= tensors["weights"].astype(np.float32)[:, None]
    dest.mkdir(parents=True)
    save_file({"embeddings": np.ascontiguousarray(table)}, os.fspath(dest / "model.safetensors"))
    shutil.copy(folder / "tokenizer.json", dest / "tokenizer.json")
    return dest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("vault", type=Path, nargs="?", default=DEFAULT_VAULT)
    ap.add_argument("--queries", type=Path, default=DEFAULT_QUERIES)
    ap.add_argument("--first", type=int, default=None, help="only the first N queries")
    ap.add_argument("--variants", action="store_true", help="also measure the variants")
    ap.add_argument(
        "--model", action="append", default=[], metavar="DIR", help="another static model"
    )
    ap.add_argument(
        "--distil",
        action="append",
        default=[],
        metavar="DIR",
        help="a BERT sentence-transformers folder: measure a static model distilled from it",
    )
    ap.add_argument("--lsp", action="store_true", help="also through a real engram-ls")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    if not args.vault.is_dir():
        ap.error(f"no vault at {args.vault}")
    queries = load_queries(args.queries, args.first)
    tmp = Path(tempfile.mkdtemp(prefix="engram-quality-"))
    out: dict[str, Any] = {"queries": len(queries), "k": K, "rrf_k": RRF_K, "models": {}}
    try:
        vault = copy_vault(args.vault, tmp / "vault")
        models: list[tuple[str, Path | None]] = [("default", None)]
        models += [("/".join(Path(m).parts[-2:]), Path(m)) for m in args.model]
        for source in args.distil:
            label = f"distilled from {Path(source).name}"
            t0 = time.perf_counter()
            models.append((label, Bert(Path(source)).distil(tmp / "distilled" / Path(source).name)))
            print(f"{label}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        for n, (label, model) in enumerate(models):
            index = tmp / f"index-{n}.sqlite"
            folder = None if model is None else flattened(model, tmp / f"m{n}" / model.name)
            engram = embedded(vault, index, None if folder is None else os.fspath(folder))
            try:
                status = engram.status()
                figures = measure(engram, index, queries, args.variants)
                figures["model"] = status.semantic.model
                figures["dims"] = status.semantic.dims
                figures["notes"] = status.semantic.notes
                figures["chunks"] = status.semantic.chunks
                if args.lsp and model is None:
                    figures["lsp"] = asyncio.run(lsp_figures(vault, index, queries))
                    ranked = figures["lsp"].pop("rankings")
                    figures["lsp"]["same_as_core"] = {
                        mode: sum(
                            r == paths(engram, {"query": q["query"], "mode": mode, "limit": K})
                            for r, q in zip(ranked[mode], queries, strict=True)
                        )
                        for mode in MODES
                    }
            finally:
                engram.close()
            out["models"][label] = figures
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for name, figures in out["models"].items():
        print(
            f"\n{name}: {figures['model']} ({figures['dims']} dims), {figures['notes']} notes,"
            f" {figures['chunks']} chunks, {len(queries)} queries"
        )
        print(table("mode", figures["modes"]))
        if "fusion_check" in figures:
            fc = figures["fusion_check"]
            print(
                "fusion recomputed here = shipped hybrid top 10:"
                f" {fc['same_top10']}/{fc['queries']}"
            )
        if "exact_check" in figures:
            ec = figures["exact_check"]
            print(f"semantic top 10 = exact cosine top 10: {ec['same_top10']}/{ec['queries']}")
        if "lsp" in figures:
            print(table("through engram-ls", figures["lsp"]["modes"]))
            print(f"engram-ls answers equal to the core's: {figures['lsp']['same_as_core']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
