"""Collating 64 RL rollouts (collated every step: on the hot path): ``collate_datums`` padded and
packed, and the THD collater on the packed features, beside upstream nemo-automodel 0.7.0's, and
Hugging Face's flattening collator on the same sequences."""

from __future__ import annotations

import pytest
import torch

from batchspec.bench.workloads import rollouts

ROLLOUTS = 64


def _datums(datum_class):
    """The rollouts as ``datum_class`` objects (built outside the timed call)."""
    return [
        datum_class(
            input_ids=torch.as_tensor(r.input_ids, dtype=torch.int64),
            loss_fn_inputs={
                "target_tokens": torch.as_tensor(r.target_tokens, dtype=torch.int64),
                "weights": torch.as_tensor(r.weights),
                "logprobs": torch.as_tensor(r.logprobs),
                "advantages": torch.tensor([r.advantage]),
            },
        )
        for r in rollouts(ROLLOUTS)
    ]


def _upstream():
    try:  # importing the loader imports the automodel backend, which loads upstream
        from batchspec.backends.automodel.upstream import load_upstream

        return load_upstream()
    except ImportError as error:
        pytest.skip(str(error))


def _record(run, call, name, kind, workload):
    tokens = sum(len(r.input_ids) for r in rollouts(ROLLOUTS))
    run(call, implementation=name, kind=kind, workload=workload, family="collate", tokens=tokens, items=ROLLOUTS)


@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
def test_collate_datums(run, backend, backend_name, packed):
    datums = _datums(backend.Datum)
    workload = f"collate/collate_datums/{'packed' if packed else 'padded'}/{ROLLOUTS}"
    _record(run, lambda: backend.collate_datums(datums, packed=packed), backend_name, "backend", workload)


@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
def test_collate_datums_upstream(run, packed):
    datum, _ = _upstream()
    workload = f"collate/collate_datums/{'packed' if packed else 'padded'}/{ROLLOUTS}"

    def call():
        # Upstream converts the datums' loss_fn_inputs in place (decision D-6): the first call
        # (the counting one) does it, the timed calls find them converted.
        return datum.collate_datums(datums, packed=packed)

    datums = _datums(datum.Datum)
    _record(run, call, "upstream", "comparator", workload)


def _packed_features(backend_or_utils, datums):
    return [backend_or_utils.pack_features_for_thd([d.to_features() for d in datums])]


def test_thd_collater(run, backend, backend_name):
    packs = _packed_features(backend, _datums(backend.Datum))
    _record(
        run, lambda: backend.packed_sequence_thd_collater(packs), backend_name, "backend", "collate/thd_collater/64"
    )


def test_thd_collater_upstream(run):
    datum, utils = _upstream()
    packs = _packed_features(utils, _datums(datum.Datum))
    _record(run, lambda: utils.packed_sequence_thd_collater(packs), "upstream", "comparator", "collate/thd_collater/64")


def test_hf_flattening_collator(run):
    transformers = pytest.importorskip("transformers", reason="the bench extra installs transformers")
    collator = transformers.DataCollatorWithFlattening(return_flash_attn_kwargs=True, return_tensors="pt")
    features = [{"input_ids": r.input_ids.tolist(), "labels": r.target_tokens.tolist()} for r in rollouts(ROLLOUTS)]
    _record(
        run,
        lambda: collator(features),
        "hf.DataCollatorWithFlattening",
        "comparator",
        "collate/collate_datums/packed/64",
    )
