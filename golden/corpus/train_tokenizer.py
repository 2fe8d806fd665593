#!/usr/bin/env python3
"""Train the corpus tokenizer: byte-level BPE, vocabulary 8192, on nodejs-api/.

Reads the committed ``nodejs-api/part-*.jsonl`` shards in sorted order and
trains a GPT-2 style byte-level BPE with the ``tokenizers`` library:

* special tokens with fixed ids ``<pad>`` = 0, ``<s>`` (BOS) = 1, ``</s>`` (EOS) = 2;
* the 256-symbol byte alphabet (``ByteLevel.alphabet()``) is always in the
  vocabulary, so any text encodes without an unknown token and
  encode -> decode is lossless;
* ``pre_tokenizers.ByteLevel(add_prefix_space=False)`` and
  ``decoders.ByteLevel()``; no normalizer and no post-processor (the
  tokenizer never adds special tokens by itself).

The result is written to ``tokenizer.json`` next to this script; the script
checks the vocabulary size, the special ids and a lossless round trip first.
With tokenizers 0.23.3, re-running it (also with ``RAYON_NUM_THREADS=1``)
was observed to give a byte-identical file.

Usage::

    python golden/corpus/train_tokenizer.py [--shards DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
VOCAB_SIZE = 8192
SPECIAL_TOKENS = ["<pad>", "<s>", "</s>"]  # ids 0, 1, 2


def read_texts(shard_dir: Path) -> list[str]:
    """Return every document's text from ``shard_dir/part-*.jsonl`` in sorted order."""
    paths = sorted(shard_dir.glob("part-*.jsonl"))
    if not paths:
        raise SystemExit(f"no part-*.jsonl under {shard_dir}; run build_corpus.py first")
    texts: list[str] = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            texts.extend(json.loads(line)["text"] for line in f)
    return texts


def train(texts: list[str]):
    """Train and return a ``tokenizers.Tokenizer`` on ``texts``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
    return tok


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: train, check, save, print a summary."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shards", type=Path, default=HERE / "nodejs-api")
    ap.add_argument("--out", type=Path, default=HERE / "tokenizer.json")
    args = ap.parse_args(argv)

    import tokenizers

    texts = read_texts(args.shards)
    tok = train(texts)

    vocab = tok.get_vocab_size(with_added_tokens=True)
    if vocab != VOCAB_SIZE:
        raise SystemExit(f"vocabulary is {vocab}, expected {VOCAB_SIZE}")
    for i, t in enumerate(SPECIAL_TOKENS):
        if tok.token_to_id(t) != i:
            raise SystemExit(f"{t} has id {tok.token_to_id(t)}, expected {i}")
    sample = texts[: min(len(texts), 200)]
    for t in sample:
        if tok.decode(tok.encode(t, add_special_tokens=False).ids) != t:
            raise SystemExit("encode -> decode is not lossless")

    tok.save(str(args.out), pretty=True)
    n_tokens = sum(len(e.ids) for e in tok.encode_batch(texts, add_special_tokens=False))
    print(
        f"tokenizers {tokenizers.__version__}: vocab {vocab}, {len(texts)} documents, "
        f"{n_tokens} tokens (no specials), wrote {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
