"""The signature check ([api-signatures], conformance/run/interface.py) passes the reference and
fails the planted signature bugs a fast backend ships."""

from __future__ import annotations

from batchspec import reference
from batchspec.conformance.run.interface import SIGNATURES, signature_problems


def test_the_reference_has_every_signature_of_the_spec():
    for name in SIGNATURES:
        target = reference
        for part in name.split("."):
            target = getattr(target, part)
        assert signature_problems(name, target) == [], name


def test_a_convert_text_batch_without_pad_token_id_or_with_another_order_fails():
    def no_pad_token_id(
        sample_batch,
        packing_contract,
        ignore_index,
        mask_segment_starts,
        allow_cross_document_attention,
        output_format="batched",
        pad_to_length=None,
    ):
        raise NotImplementedError

    def swapped(
        sample_batch,
        packing_contract,
        ignore_index,
        allow_cross_document_attention,
        mask_segment_starts,
        output_format="batched",
        pad_to_length=None,
        pad_token_id=None,
    ):
        raise NotImplementedError

    assert signature_problems("convert_text_batch", no_pad_token_id) == [
        "convert_text_batch: parameter 'pad_token_id' is missing"
    ]
    problems = signature_problems("convert_text_batch", swapped)
    assert len(problems) == 1 and "positional parameters are" in problems[0], problems


def test_options_of_collate_datums_accepted_positionally_fail():
    def positional(datums, packed=False, pad_seq_len_divisible=None, ignore_index=-100):
        raise NotImplementedError

    problems = signature_problems("collate_datums", positional)
    assert "collate_datums: parameter 'packed' is positional, but should be keyword" in problems
    assert len(problems) == 3, problems  # one per option


def test_an_extra_required_parameter_or_a_wrong_default_fails_and_an_extra_optional_one_passes():
    def extra_required(batch, pad_seq_len_divisible=None, *, device):
        raise NotImplementedError

    def wrong_default(batch, pad_seq_len_divisible=8):
        raise NotImplementedError

    def extra_optional(batch, pad_seq_len_divisible=None, *, device=None):
        raise NotImplementedError

    assert signature_problems("default_collater", extra_required) == [
        "default_collater: parameter 'device' is required, but the SPEC has no such parameter"
    ]
    assert signature_problems("default_collater", wrong_default) == [
        "default_collater: parameter 'pad_seq_len_divisible' has default 8, but should have default None"
    ]
    assert signature_problems("default_collater", extra_optional) == []
