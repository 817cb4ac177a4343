"""The shipped static model run with `tokenizers`, `safetensors` and numpy alone.

A static model is a table of one vector per token: a text's vector is the mean of its tokens'
rows, then scaled to unit length. This is what model2vec's `StaticModel.encode` computes for a
model folder like the shipped one (`model.safetensors` with an `embeddings` table and no
vocabulary quantisation, `tokenizer.json`, `config.json`), step for step so that the vectors are
the same to the bit (tests/test_static_model.py compares them with model2vec when it is
installed, as the `test` extra does): model2vec itself, with joblib and jinja2, is no dependency.

1. each text is cut to `max_length` x the median token length (in characters) of the vocabulary;
2. tokenised without special tokens, at most `max_length` tokens, unknown tokens dropped;
3. the mean of the tokens' rows in the table's precision (float16 here, summed in float32 by
   numpy), texts of one token count at once; a text without a token is a zero vector;
4. with `normalize` in the config, divided by its norm (float32, + 1e-32) and stored back in the
   table's precision.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np


class StaticModel:
    """A model2vec folder's table, tokenizer and settings, loaded once."""

    def __init__(self, folder: Path) -> None:
        from safetensors import safe_open
        from tokenizers import Tokenizer

        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        with safe_open(str(folder / "model.safetensors"), framework="numpy") as tensors:
            if {"weights", "mapping"} & set(tensors.keys()):
                raise ValueError(f"{folder} is vocabulary-quantised: model2vec runs it")
            self.table: np.ndarray = tensors.get_tensor("embeddings")
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        padding = self.tokenizer.padding
        if padding is not None:  # model2vec pads to length 0: not at all
            self.tokenizer.enable_padding(
                pad_id=padding["pad_id"],
                pad_token=padding["pad_token"],
                pad_type_id=padding["pad_type_id"],
                length=0,
            )
        self.max_length: int | None = config.get("max_length", 512)
        if self.max_length is None:
            self.tokenizer.no_truncation()
        else:
            self.tokenizer.enable_truncation(self.max_length)
        self.normalize = bool(config.get("normalize", False))
        self.cut = (
            None
            if self.max_length is None
            else self.max_length * int(np.median([len(t) for t in self.tokenizer.get_vocab()]))
        )
        unknown = getattr(self.tokenizer.model, "unk_token", None)
        self.unknown = None if unknown is None else self.tokenizer.token_to_id(unknown)

    def encode(self, texts: list[str], batch_size: int = 1024) -> np.ndarray:
        """One row per text, in the table's precision (steps 1 to 4 of the module's docstring)."""
        parts = [
            self.encode_ids(self.token_ids(texts[i : i + batch_size]))
            for i in range(0, len(texts), batch_size)
        ]
        return (
            np.concatenate(parts) if parts else np.zeros((0, self.table.shape[1]), self.table.dtype)
        )

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        """Each text's token ids, unknown tokens dropped (steps 1 and 2): what `encode_ids`
        reads. An index stores a text's ids once, and a query then skips the tokenizer."""
        if self.cut is not None:
            texts = [t[: self.cut] for t in texts]
        encoded = self.tokenizer.encode_batch_fast(texts, add_special_tokens=False)
        return [[i for i in e.ids if i != self.unknown] for e in encoded]

    def encode_ids(self, ids: list[list[int]]) -> np.ndarray:
        """One row per list of token ids (steps 3 and 4): `encode` of the texts they came from,
        to the bit (a row's mean and norm read its own tokens alone)."""
        dtype = np.float32 if self.table.dtype == np.int8 else self.table.dtype
        out = np.zeros((len(ids), self.table.shape[1]), dtype)
        by_length: dict[int, list[int]] = defaultdict(list)
        for row, tokens in enumerate(ids):
            if tokens:
                by_length[len(tokens)].append(row)
        for rows in by_length.values():
            out[rows] = self.table[np.array([ids[r] for r in rows], dtype=np.int64)].mean(axis=1)
        if not self.normalize:
            return out
        wide = out.astype(np.float32)
        return (wide / (np.linalg.norm(wide, axis=1, keepdims=True) + 1e-32)).astype(out.dtype)
