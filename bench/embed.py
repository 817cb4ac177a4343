"""Embedding throughput: the static model distilled from MiniLM vs the packaged MiniLM itself.

    python bench/embed.py [--n 2000]

Texts are what ingest embeds (request + answer + keywords of synthetic turns).
"""

from __future__ import annotations

import argparse
import random
import time

from archive_mcp.refiners.embed import MiniLMEmbedder, StaticEmbedder

from archive_mcp.ingest.jobs import embed_text
from archive_mcp.synthetic.sessions import random_turn


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    args = ap.parse_args()
    rng = random.Random(3)
    texts = []
    for _ in range(args.n):
        t = random_turn(rng, big_output=False)
        texts.append(embed_text({"user_text": t.user, "assistant_text": t.answer, "keywords": []}))
    for name, embedder in (("static", StaticEmbedder()), ("minilm", MiniLMEmbedder())):
        t = time.perf_counter()
        embedder.embed(texts[:8])  # load
        load = time.perf_counter() - t
        t = time.perf_counter()
        embedder.embed(texts)
        s = time.perf_counter() - t
        print(f"{name}: load {load:.1f} s, {args.n / s:,.0f} texts/s")


if __name__ == "__main__":
    main()
