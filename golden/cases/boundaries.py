"""Generated ``convert_text_batch`` cases at the boundary sizes of issue #5: one-token
documents, one-row batches, rows with no padding, all-but-one padding, S = 1, many tiny
documents, in batched and THD output, with and without xdoc and metadata, and the unpacked
route. Inputs come from a seeded ``random.Random`` (no hypothesis), so regeneration is
byte-identical; expected values come from the reference.
"""

from __future__ import annotations

import random

from batchspec.conformance.golden.api import (
    CONVERT_CLAUSES,
    DOCUMENT_IDS_METADATA_CONTRACT,
    METADATA_CONTRACT,
    Case,
    Row,
    packed_row,
    text_batch_inputs,
)

CORE = (*CONVERT_CLAUSES, "ctb-no-mutation")


def _row(rng: random.Random, length: int, shape: str) -> Row:
    """A packed row of ``length`` unshifted tokens; ``shape`` picks the boundary."""
    if shape == "all_but_one_padding":
        return packed_row([[rng.randint(1, 50)]], padding=length - 1)
    if shape == "one_token_documents":
        return packed_row([[rng.randint(1, 50)] for _ in range(length)], padding=0)
    padding = 0 if shape == "no_padding" else rng.randint(0, length - 1)
    real, documents = length - padding, []
    top = 1 if shape == "many_tiny_documents" else 4
    while real > 0:
        n = min(rng.randint(1, top), real)
        documents.append([rng.randint(1, 50) for _ in range(n)])
        real -= n
    return packed_row(documents, padding=padding)


SHAPES = ("mixed", "no_padding", "all_but_one_padding", "one_token_documents", "many_tiny_documents")
VARIANTS = [
    ("batched", {}, ("batched-block-causal", "batched-packed-seq-ids", "ctb-cross-document-targets")),
    ("metadata", {"contract": DOCUMENT_IDS_METADATA_CONTRACT}, ("batched-document-ids-mask", "batched-metadata")),
    ("msk", {"mask_segment_starts": True, "contract": METADATA_CONTRACT}, ("ctb-segment-starts", "batched-metadata")),
    ("thd", {"output_format": "thd"}, ("thd-lengths", "thd-qkv-format", "ctb-output-route")),
    ("xdoc", {"xdoc": True, "contract": METADATA_CONTRACT}, ("ctb-xdoc", "ctb-selected-ids", "xdoc-positions")),
    ("xdoc_thd", {"xdoc": True, "output_format": "thd"}, ("ctb-xdoc", "ctb-selected-ids", "thd-lengths")),
]


def case_boundary_sizes():
    rng = random.Random(20260210)
    cases = []
    for shape in SHAPES:
        for variant, options, clauses in VARIANTS:
            batch_size = rng.choice([1, 1, 2, 3])
            length = rng.choice([2, 3, 5, 9])  # L = 2 is S = 1
            batch = [_row(rng, length, shape) for _ in range(batch_size)]
            cases.append(
                Case(
                    name=f"test_boundary_{shape}_{variant}",
                    clauses=CORE + clauses,
                    description=f"{shape.replace('_', ' ')}, B={batch_size}, S={length - 1}, {variant}",
                    function="convert_text_batch",
                    inputs=text_batch_inputs(*batch),
                    options=dict(options),
                )
            )
    return cases


def case_s1_and_one_row():
    rng = random.Random(20260211)
    cases = []
    for i in range(6):
        batch = [_row(rng, 2, rng.choice(SHAPES)) for _ in range(rng.randint(1, 4))]
        variant, options, clauses = VARIANTS[i % len(VARIANTS)]
        cases.append(
            Case(
                name=f"test_boundary_s1_{i:02d}_{variant}",
                clauses=CORE + clauses,
                description=f"S = 1, B={len(batch)}, {variant}",
                function="convert_text_batch",
                inputs=text_batch_inputs(*batch),
                options=dict(options),
            )
        )
    return cases


def case_unpacked_generated():
    rng = random.Random(20260212)
    cases = []
    for i in range(6):
        target = rng.choice([2, 4, 7])
        batch = [
            Row(tuple(rng.randint(1, 50) for _ in range(rng.randint(1, target))), None, None)
            for _ in range(rng.randint(1, 3))
        ]
        options = {"pad_to_length": target, "pad_token_id": rng.choice([0, 2, 99])}
        if i % 2:
            options["output_format"] = "thd"
        cases.append(
            Case(
                name=f"test_boundary_unpacked_{i:02d}",
                clauses=("unpacked-padding", "unpacked-same-route") + CORE,
                description=f"unpacked records padded to {target}, {options}",
                function="convert_text_batch",
                inputs=text_batch_inputs(*batch),
                options=options,
            )
        )
    return cases
