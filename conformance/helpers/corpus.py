"""Real-data helpers: the committed Node.js API corpus and its BPE tokenizer.

The corpus (``golden/corpus/nodejs-api/part-*.jsonl``, one ``{"text": ...}``
object per line) and ``golden/corpus/tokenizer.json`` (byte-level BPE,
vocabulary 8192, ``<pad>``/``<s>``/``</s>`` = 0/1/2) are built by the scripts
in ``golden/corpus/``; see its README for provenance.

:class:`CorpusTokenizer` adapts the tokenizer to what zephon 0.2.0's tokenize
op calls (``tok(texts, add_special_tokens=..., padding=..., truncation=...,
[max_length=...], [return_tensors=...])``, plus the BOS/EOS/PAD id
attributes), is picklable for process runners, and can map token ids back to
the exact raw UTF-8 bytes they cover.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from batchspec.conformance.run.package_data import ROOT as GOLDEN_ROOT

__all__ = [
    "BOS_ID",
    "CORPUS_DIR",
    "EOS_ID",
    "PAD_ID",
    "SHARD_DIR",
    "TOKENIZER_PATH",
    "CorpusTokenizer",
    "corpus_bytes",
    "corpus_texts",
    "shard_paths",
]

CORPUS_DIR: Path = GOLDEN_ROOT / "corpus"
"""Directory holding the corpus, its build scripts, LICENSE and README."""

SHARD_DIR: Path = CORPUS_DIR / "nodejs-api"
"""Directory of the JSONL shards; pass it to ``zephon.Dataset.from_path``."""

TOKENIZER_PATH: Path = CORPUS_DIR / "tokenizer.json"
"""The trained ``tokenizers`` byte-level BPE (vocabulary 8192)."""

PAD_ID, BOS_ID, EOS_ID = 0, 1, 2
_SPECIAL_IDS = frozenset((PAD_ID, BOS_ID, EOS_ID))

DOC_SEPARATOR = b"\n\x00\n"
"""Separator between documents in :func:`corpus_bytes` (NUL never occurs in the text)."""


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable-character table used by byte-level BPE."""
    bs = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("\xa1"), ord("\xac") + 1))
        + list(range(ord("\xae"), ord("\xff") + 1))
    )
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


_UNICODE_TO_BYTE: dict[str, int] = {u: b for b, u in _bytes_to_unicode().items()}


class CorpusTokenizer:
    """HF-style callable wrapper around ``golden/corpus/tokenizer.json``.

    Fits zephon 0.2.0's ``Pipeline.tokenize(tokenizer=CorpusTokenizer(), ...)``.
    Under ``special_tokens="bos_eos"`` zephon calls it with
    ``add_special_tokens=False`` and adds BOS/EOS itself; with
    ``add_special_tokens=True`` (the HF default, used by zephon's
    ``"tokenizer_default"`` mode) this tokenizer's template is
    ``<s> text </s>``. Literal ``<s>``/``</s>``/``<pad>`` strings in the text
    are encoded as ordinary text, never as special ids. The Rust tokenizer is
    loaded lazily and is not part of the pickled state.
    """

    name_or_path = "batchspec-nodejs-api-bpe-8192"
    vocab_size = 8192
    pad_token, pad_token_id = "<pad>", PAD_ID
    bos_token, bos_token_id = "<s>", BOS_ID
    eos_token, eos_token_id = "</s>", EOS_ID
    all_special_ids = [PAD_ID, BOS_ID, EOS_ID]
    padding_side = "right"

    def __init__(self, path: str | Path | None = None) -> None:
        """Wrap the tokenizer at ``path`` (default :data:`TOKENIZER_PATH`)."""
        self.path = str(path if path is not None else TOKENIZER_PATH)
        self._tok: Any = None
        self._id_bytes: list[bytes] | None = None

    # -- pickling: ship the path, not the Rust object ---------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path = state["path"]
        self._tok = None
        self._id_bytes = None

    def __repr__(self) -> str:
        return f"CorpusTokenizer({self.path!r})"

    def __len__(self) -> int:
        return self.vocab_size

    @property
    def backend(self) -> Any:
        """The underlying ``tokenizers.Tokenizer`` (loaded on first use)."""
        if self._tok is None:
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(self.path)
            if tok.get_vocab_size(with_added_tokens=True) != self.vocab_size:
                raise ValueError(f"{self.path}: vocabulary is not {self.vocab_size}")
            for tid, text in ((PAD_ID, "<pad>"), (BOS_ID, "<s>"), (EOS_ID, "</s>")):
                if tok.id_to_token(tid) != text:
                    raise ValueError(f"{self.path}: id {tid} is not {text!r}")
            # Without this, "<s>" inside raw text would become id 1 even with
            # add_special_tokens=False. Not stored in tokenizer.json or pickles.
            tok.encode_special_tokens = True
            self._tok = tok
        return self._tok

    def encode(self, text: str) -> list[int]:
        """Content token ids of ``text`` (no special tokens)."""
        return list(self.backend.encode(text, add_special_tokens=False).ids)

    def __call__(
        self,
        texts: Sequence[str] | str,
        add_special_tokens: bool = True,
        padding: bool | str = False,
        truncation: bool | str = False,
        max_length: int | None = None,
        return_tensors: str | None = None,
        return_attention_mask: bool | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Tokenize one text or a batch, HF style.

        Returns ``{"input_ids": ..., "attention_mask": ...}``: lists of lists
        for a batch, flat lists for a single ``str``; ``return_tensors`` "np"
        or "pt" gives arrays (rows must then have equal length).
        ``add_special_tokens=True`` brackets each text as ``[BOS] ids [EOS]``;
        ``truncation`` cuts to ``max_length`` tokens including those specials;
        ``padding`` True/"longest"/"max_length" right-pads with ``<pad>``.
        Unsupported keyword arguments raise ``TypeError``.
        """
        if kwargs:
            raise TypeError(f"CorpusTokenizer: unsupported arguments {sorted(kwargs)}")
        single = isinstance(texts, str)
        batch = [texts] if single else list(texts)
        if not all(isinstance(t, str) for t in batch):
            raise TypeError("CorpusTokenizer: texts must be str or a sequence of str")

        ids = [list(e.ids) for e in self.backend.encode_batch(batch, add_special_tokens=False)]
        n_specials = 2 if add_special_tokens else 0
        if truncation not in (False, None, "do_not_truncate"):
            if max_length is None:
                raise ValueError("CorpusTokenizer: truncation needs max_length")
            keep = max(0, max_length - n_specials)
            ids = [x[:keep] for x in ids]
        if add_special_tokens:
            ids = [[BOS_ID, *x, EOS_ID] for x in ids]
        masks = [[1] * len(x) for x in ids]

        if padding not in (False, None, "do_not_pad"):
            if padding == "max_length":
                if max_length is None:
                    raise ValueError("CorpusTokenizer: padding='max_length' needs max_length")
                target = max_length
            elif padding in (True, "longest"):
                target = max((len(x) for x in ids), default=0)
            else:
                raise ValueError(f"CorpusTokenizer: unsupported padding={padding!r}")
            for x, m in zip(ids, masks):
                extra = target - len(x)
                if extra > 0:
                    x.extend([PAD_ID] * extra)
                    m.extend([0] * extra)

        out: dict[str, Any] = {"input_ids": ids}
        if return_attention_mask is not False:
            out["attention_mask"] = masks
        if single:
            out = {k: v[0] for k, v in out.items()}
        if return_tensors is None:
            return out
        if return_tensors in ("np", "numpy"):
            import numpy as np

            return {k: np.asarray(v, dtype=np.int64) for k, v in out.items()}
        if return_tensors == "pt":
            import torch

            return {k: torch.tensor(v, dtype=torch.long) for k, v in out.items()}
        raise ValueError(f"CorpusTokenizer: unsupported return_tensors={return_tensors!r}")

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids`` with the special ids (0, 1, 2) skipped."""
        return self.backend.decode([int(i) for i in ids], skip_special_tokens=True)

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        """Exact raw UTF-8 bytes covered by ``ids``, special ids skipped.

        Unlike :meth:`decode`, this never replaces a partial multi-byte
        character, so a span cut anywhere is still a byte substring of the
        document it came from.
        """
        table = self._id_bytes
        if table is None:
            tok = self.backend
            table = [
                b"" if i in _SPECIAL_IDS else bytes(_UNICODE_TO_BYTE[ch] for ch in tok.id_to_token(i))
                for i in range(self.vocab_size)
            ]
            self._id_bytes = table
        return b"".join(table[int(i)] for i in ids)


def shard_paths() -> list[Path]:
    """The corpus shards, ``SHARD_DIR/part-*.jsonl``, in sorted (= zephon shard id) order."""
    return sorted(SHARD_DIR.glob("part-*.jsonl"))


@functools.lru_cache(maxsize=1)
def _texts() -> tuple[str, ...]:
    out: list[str] = []
    for path in shard_paths():
        with open(path, encoding="utf-8") as f:
            out.extend(json.loads(line)["text"] for line in f)
    return tuple(out)


def corpus_texts() -> list[str]:
    """All corpus documents in shard order, then line order (a fresh list)."""
    return list(_texts())


@functools.lru_cache(maxsize=1)
def corpus_bytes() -> bytes:
    """All documents' UTF-8 bytes joined by :data:`DOC_SEPARATOR` (cached), for substring checks."""
    return DOC_SEPARATOR.join(t.encode("utf-8") for t in _texts())
