"""The committed real-data corpus, its tokenizer, and the zephon adapter."""

from __future__ import annotations

import copy
import json
import pickle
import random

import pytest

from batchspec.conformance.helpers import corpus as C
from batchspec.conformance.helpers.corpus import (
    BOS_ID,
    CORPUS_DIR,
    EOS_ID,
    PAD_ID,
    SHARD_DIR,
    TOKENIZER_PATH,
    CorpusTokenizer,
    corpus_bytes,
    corpus_texts,
)


@pytest.fixture(scope="module")
def tok() -> CorpusTokenizer:
    return CorpusTokenizer()


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return corpus_texts()


@pytest.fixture(scope="module")
def sample50(texts: list[str]) -> list[str]:
    return random.Random(20240607).sample(texts, 50)


# ------------------------------------------------------------------ data ----
def test_shards_are_canonical_jsonl_with_only_text() -> None:
    paths = C.shard_paths()
    assert [p.name for p in paths] == [f"part-{k:05d}.jsonl" for k in range(len(paths))]
    assert 4 <= len(paths) <= 8
    for path in paths:
        raw = path.read_bytes()
        assert raw.endswith(b"\n") and b"\r" not in raw
        for line in raw.decode("utf-8").splitlines(keepends=True):
            obj = json.loads(line)
            assert isinstance(obj, dict) and list(obj) == ["text"], path
            assert isinstance(obj["text"], str) and obj["text"].strip()
            assert line == json.dumps(obj, ensure_ascii=False, sort_keys=True) + "\n"


def test_corpus_size(texts: list[str]) -> None:
    assert len(texts) >= 300
    n_bytes = sum(len(t.encode("utf-8")) for t in texts)
    assert n_bytes >= 500_000
    assert sum(p.stat().st_size for p in C.shard_paths()) <= 3_000_000
    # corpus_bytes() relies on NUL never occurring in the text.
    assert not any("\x00" in t for t in texts)
    blob = corpus_bytes()
    assert len(blob) == n_bytes + len(C.DOC_SEPARATOR) * (len(texts) - 1)
    assert blob.split(C.DOC_SEPARATOR) == [t.encode("utf-8") for t in texts]


def test_license_and_provenance_present() -> None:
    lic = (CORPUS_DIR / "LICENSE").read_text(encoding="utf-8")
    assert "Copyright Node.js contributors" in lic
    assert "Permission is hereby granted, free of charge" in lic
    readme = (CORPUS_DIR / "README.md").read_text(encoding="utf-8")
    for p in C.shard_paths():
        assert p.name in readme


# ------------------------------------------------------------- tokenizer ----
def test_tokenizer_vocab_and_special_ids(tok: CorpusTokenizer) -> None:
    from tokenizers import Tokenizer

    raw = Tokenizer.from_file(str(TOKENIZER_PATH))
    assert raw.get_vocab_size(with_added_tokens=True) == 8192 == tok.vocab_size
    assert [raw.id_to_token(i) for i in (0, 1, 2)] == ["<pad>", "<s>", "</s>"]
    assert (PAD_ID, BOS_ID, EOS_ID) == (0, 1, 2)
    assert (tok.pad_token_id, tok.bos_token_id, tok.eos_token_id) == (0, 1, 2)
    assert (tok.pad_token, tok.bos_token, tok.eos_token) == ("<pad>", "<s>", "</s>")
    assert tok.name_or_path == "batchspec-nodejs-api-bpe-8192"


def test_roundtrip_on_real_documents(tok: CorpusTokenizer, sample50: list[str]) -> None:
    batch = tok(sample50, add_special_tokens=False, padding=False, truncation=False)
    assert len(batch["input_ids"]) == 50
    for text, ids in zip(sample50, batch["input_ids"]):
        assert ids == tok.encode(text)
        assert not set(ids) & {PAD_ID, BOS_ID, EOS_ID}
        assert all(3 <= i < 8192 for i in ids)
        assert tok.decode(ids) == text
        assert tok.decode_bytes(ids) == text.encode("utf-8")
    # A single str gives flat lists, as HF does.
    one = tok(sample50[0], add_special_tokens=False)
    assert one["input_ids"] == batch["input_ids"][0]


def test_special_token_strings_in_text_stay_text(tok: CorpusTokenizer) -> None:
    text = "a <s> b </s> c <pad> d"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert not set(ids) & {PAD_ID, BOS_ID, EOS_ID}
    assert tok.decode(ids) == text
    for odd in ("", " leading space", "tabs\tand\nnewlines\r\n", "caf\u00e9 \u6e2c\u8a66 \u2714 \U0001f600"):
        assert tok.decode(tok.encode(odd)) == odd


def test_call_options(tok: CorpusTokenizer) -> None:
    texts = ["hello world", "a much longer sentence about the event loop and streams"]
    content = [tok.encode(t) for t in texts]
    out = tok(texts)  # HF default add_special_tokens=True: <s> ... </s>
    assert out["input_ids"] == [[BOS_ID, *c, EOS_ID] for c in content]
    out = tok(texts, add_special_tokens=True, truncation=True, max_length=5)
    assert out["input_ids"] == [[BOS_ID, *c[:3], EOS_ID] for c in content]
    out = tok(texts, add_special_tokens=False, padding="longest")
    width = max(map(len, content))
    assert out["input_ids"] == [c + [PAD_ID] * (width - len(c)) for c in content]
    assert out["attention_mask"] == [[1] * len(c) + [0] * (width - len(c)) for c in content]
    arr = tok(texts, add_special_tokens=False, padding="max_length", max_length=width + 3, return_tensors="np")[
        "input_ids"
    ]
    assert arr.shape == (2, width + 3)
    with pytest.raises(TypeError):
        tok(texts, return_offsets_mapping=True)


def test_decode_bytes_across_a_split_multibyte_char(tok: CorpusTokenizer, texts: list[str]) -> None:
    found = 0
    for doc in texts:
        if doc.isascii():
            continue
        ids = tok.encode(doc)
        doc_bytes = doc.encode("utf-8")
        pieces = [tok.decode_bytes([i]) for i in ids]
        assert b"".join(pieces) == doc_bytes
        offset = 0
        for k, piece in enumerate(pieces):
            offset += len(piece)
            try:
                doc_bytes[:offset].decode("utf-8")
                continue
            except UnicodeDecodeError:
                pass
            # ids[:k + 1] ends inside a multi-byte character.
            lo = max(0, k - 5)
            span = tok.decode_bytes(ids[lo : k + 1])
            assert span in doc_bytes
            assert span == doc_bytes[offset - len(span) : offset]
            with pytest.raises(UnicodeDecodeError):
                span.decode("utf-8")
            assert "\ufffd" in tok.decode(ids[lo : k + 1])  # the lossy decode cannot do this
            found += 1
            break
        if found >= 3:
            break
    assert found >= 1, "no token boundary inside a multi-byte character in the corpus"
    assert tok.decode_bytes([BOS_ID, PAD_ID, EOS_ID]) == b""


def test_adapter_pickles(tok: CorpusTokenizer, sample50: list[str]) -> None:
    before = tok(sample50[:5], add_special_tokens=False)["input_ids"]
    tok.decode_bytes(before[0])  # populate lazy caches; they must not travel
    blob = pickle.dumps(tok)
    assert len(blob) < 1000
    for clone in (pickle.loads(blob), copy.deepcopy(tok)):
        assert isinstance(clone, CorpusTokenizer)
        assert clone(sample50[:5], add_special_tokens=False)["input_ids"] == before
        assert BOS_ID not in clone(sample50[0] + " <s>", add_special_tokens=False)["input_ids"]
        assert clone.decode_bytes(before[0]) == sample50[0].encode("utf-8")


# ---------------------------------------------------------------- zephon ----
def test_real_zephon_pipeline(tmp_path, monkeypatch, tok: CorpusTokenizer) -> None:
    monkeypatch.setenv("ZEPHON_CATALOG_DIR", str(tmp_path / "catalog"))
    from zephon import Dataset, Pipeline, StaticMixtureWorkSource

    seq = 1025
    ds = Dataset.from_path("nodejs_api", str(SHARD_DIR))
    ws = StaticMixtureWorkSource([ds], {"nodejs_api": 1.0}, chunk_size=16, seed=1234, exhausted_policy="repeat")
    p = (
        Pipeline(ws)
        .tokenize(
            tokenizer=CorpusTokenizer(),
            field="text",
            add_attention_mask=False,
            max_length=seq,
            split_long_samples=True,
            special_tokens="bos_eos",
        )
        .pack_flat(seq, algorithm="first_fit", num_bins=8, pad_token_id=PAD_ID)
        .batch(4)
        .options(
            runner="inline", prefetch_batches=0, default_stage_prefetch=0, aggregate_dir=str(tmp_path / "aggregate")
        )
    )
    blob = corpus_bytes()
    it = iter(p)
    try:
        batches = [next(it) for _ in range(3)]
    finally:
        it.close()
    n_segments = 0
    for sb in batches:
        assert len(sb.records) == 4
        for rec in sb.records:
            ids = [int(x) for x in rec.payload["input_ids"]]
            assert len(ids) == seq
            assert all(0 <= i < 8192 for i in ids)
            pad = rec.meta.padding_length or 0
            assert ids[seq - pad :] == [PAD_ID] * pad
            # Every packed segment is a contiguous span of one real document.
            positions = [int(x) for x in rec.payload["positions"]][: seq - pad]
            starts = [k for k, q in enumerate(positions) if q == 0] + [seq - pad]
            for a, b in zip(starts, starts[1:]):
                seg = ids[a:b]
                inner = seg[1 if seg[0] == BOS_ID else 0 : -1 if seg[-1] == EOS_ID else None]
                assert not set(inner) & {PAD_ID, BOS_ID, EOS_ID}
                assert tok.decode_bytes(seg) in blob
                n_segments += 1
    assert n_segments >= 12
