"""Golden cases for SPEC.md's "``ZephonDataLoader`` checkpoint state (single process)".

Each case plays a script against ``ZephonDataLoader``s over real in-memory Zephon pipelines
(field reports F16/F17, docs/sources.md#loader-state-setup: ``n`` one-token rows,
``chunk_size``, ``exhausted_policy``, ``batch``, inline runner; ``convert_batch`` returns each batch's row indices). The actions
and what each records are described in ``conformance/helpers/state_script.py``: ``new:P``,
``next``, ``rest``, ``iter``, ``close``, ``state``, ``save:S``, ``same:S``, ``load:S``,
``load:S:<corruption>``, ``load_arg:<bad argument>``, ``calls``, ``restores``.

Canon cases hand-write every outcome: row-index lists (the uninterrupted run is part of the
case wherever Zephon's order is not the obvious one), ``None``/``True``, and errors as
``{"raised", "check", "names"}``. The ``envelope_*`` cases are generated: the reference gives
the envelope views (header, digest, canonical JSON, the fingerprint's hex digest, topology,
Zephon's checkpoint dict, and the sha256 of the whole envelope), so fingerprints are compared
byte for byte ([state-fingerprint-canonical] pins them). ``fingerprint_of_a_fixed_pipeline``
hand-writes one pipeline's description and its digest.
"""

from __future__ import annotations

import hashlib
import json

from batchspec.conformance.golden.api import Case

A = {"n": 10, "chunk_size": 2, "policy": "redistribute"}  # F17: rows 0..9
END = {"n": 4, "chunk_size": 2, "policy": "redistribute"}  # F16 finite: rows 0..3
REPEAT = {"n": 4, "chunk_size": 4, "policy": "repeat"}  # F16 endless
ZERO_CALLS = {"iter": 0, "checkpoint": 0}


def one_row_batches(*indices: int) -> list[list[int]]:
    """The batches of a ``batch(1)`` stream: one row index each."""
    return [[i] for i in indices]


def nexts(*indices: int) -> list[tuple[str, list[int]]]:
    return [("next", [i]) for i in indices]


def raised(error: str, check: str | None = None, names: list | None = None) -> dict:
    return {"raised": error, "check": check, "names": names or []}


def save_after(pipeline: str, k: int, label: str = "S") -> list[tuple[str, object]]:
    """A loader over ``pipeline`` (batch(1), rows 0, 1, …) takes ``k`` batches and saves."""
    return [(f"new:{pipeline}", None), *nexts(*range(k)), (f"save:{label}", "non-empty")]


def _canon(name, clauses, description, pipelines, steps):
    return Case(
        name=f"test_state_{name}",
        clauses=clauses,
        description=description,
        function="ZephonDataLoader.state",
        inputs={"pipelines": pipelines},
        options={"script": [action for action, _ in steps]},
        expected={"outcomes": {f"{i} {action}": outcome for i, (action, outcome) in enumerate(steps)}},
    )


def _generated(name, clauses, description, pipelines, script):
    return Case(
        name=f"test_state_{name}",
        clauses=clauses,
        description=description,
        function="ZephonDataLoader.state",
        inputs={"pipelines": pipelines},
        options={"script": script},
    )


# --- before start, load/state round trip, load order (F17) --------------------------------


def case_before_start():
    return _canon(
        "before_start_is_empty_and_lazy",
        ("state-before-start", "loader-construct-lazy"),
        "F17: before the first next(), state_dict() is {'zephon': b''}; neither it nor iter(loader) iterates or "
        "checkpoints the pipeline",
        {"A": A},
        [
            ("new:A", None),
            ("state", ""),
            ("calls", ZERO_CALLS),
            ("iter", True),
            ("state", ""),
            ("calls", ZERO_CALLS),
            *nexts(0, 1),
        ],
    )


def case_load_empty_on_fresh_loader():
    return _canon(
        "load_empty_on_a_fresh_loader",
        ("state-load-empty", "state-before-start"),
        "loading {'zephon': b''} into a loader never loaded changes nothing: the state stays b'', the pipeline "
        "is untouched, and the stream starts at row 0",
        {"A": A},
        [
            ("new:A", None),
            ("load_arg:empty", None),
            ("state", ""),
            ("calls", ZERO_CALLS),
            ("load_arg:empty", None),
            ("rest", one_row_batches(*range(10))),
        ],
    )


def case_roundtrip_and_resume():
    return _canon(
        "roundtrip_and_exact_resume",
        ("state-roundtrip", "state-exact-resume", "state-before-start", "state-after-start"),
        "F17: S saved after 5 batches; a fresh loader loaded with S returns exactly S from state_dict() without "
        "touching the pipeline, then yields batches 6..10 of the uninterrupted run",
        {"A": A},
        [
            *save_after("A", 5),
            ("rest", one_row_batches(5, 6, 7, 8, 9)),
            ("new:A", None),
            ("load:S", None),
            ("same:S", True),
            ("calls", ZERO_CALLS),
            ("same:S", True),
            ("rest", one_row_batches(5, 6, 7, 8, 9)),
        ],
    )


def case_load_twice():
    return _canon(
        "load_twice_the_last_wins",
        ("state-load-twice", "state-roundtrip"),
        "states saved after 2 and after 7 batches, loaded in both orders: the last load wins, whichever is further",
        {"A": A},
        [
            *save_after("A", 2, "S2"),
            *nexts(2, 3, 4, 5, 6),
            ("save:S7", "non-empty"),
            ("new:A", None),
            ("load:S2", None),
            ("load:S7", None),
            ("same:S7", True),
            ("rest", one_row_batches(7, 8, 9)),
            ("new:A", None),
            ("load:S7", None),
            ("load:S2", None),
            ("same:S2", True),
            ("rest", one_row_batches(*range(2, 10))),
        ],
    )


def case_iterator_and_distributed_checkpointing():
    return _canon(
        "loader_is_an_iterator_with_distributed_checkpointing",
        ("loader-iterator", "loader-distributed-checkpointing"),
        "a ZephonDataLoader is a collections.abc.Iterator, and use_distributed_checkpointing is the bool True on "
        "its class and on the instance, before and after iteration starts",
        {"A": A},
        [
            ("new:A", None),
            ("iterator", True),
            ("distributed", {"class": True, "instance": True}),
            *nexts(0),
            ("iterator", True),
            ("distributed", {"class": True, "instance": True}),
        ],
    )


def case_load_after_start():
    return _canon(
        "load_after_start_is_a_runtime_error",
        ("state-load-after-start",),
        "F17: load_state_dict after the first next() raises RuntimeError (also for b'', after exhaustion and after "
        "close()); the stream goes on undisturbed",
        {"A": A},
        [
            *save_after("A", 5),
            ("new:A", None),
            *nexts(0),
            ("load:S", raised("RuntimeError")),
            ("load_arg:empty", raised("RuntimeError")),
            *nexts(1),
            ("rest", one_row_batches(*range(2, 10))),
            ("load:S", raised("RuntimeError")),
            ("close", None),
            ("load:S", raised("RuntimeError")),
        ],
    )


def case_iter_then_load():
    return _canon(
        "iter_then_load_resumes",
        ("state-iter-then-load", "state-exact-resume"),
        "F17: iter(loader) before load_state_dict starts nothing; the stream starts, restored, at the first next()",
        {"A": A},
        [
            *save_after("A", 5),
            ("new:A", None),
            ("iter", True),
            ("calls", ZERO_CALLS),
            ("load:S", None),
            ("iter", True),
            ("rest", one_row_batches(5, 6, 7, 8, 9)),
        ],
    )


def case_load_after_start_comes_first():
    return _canon(
        "load_after_start_comes_before_every_other_check",
        ("state-load-after-start", "state-load-errors", "state-load-validates-first"),
        "after the first next(), load_state_dict raises RuntimeError whatever it is given: a bad argument "
        "(which would be a ValueError or TypeError before the start), bytes failing an envelope check, b''; the "
        "stream goes on",
        {"A": A},
        [
            *save_after("A", 5),
            ("new:A", None),
            *nexts(0),
            *[
                (f"load_arg:{name}", raised("RuntimeError"))
                for name in ("none", "missing_key", "list_of_pairs", "str_value", "bytearray_value", "empty")
            ],
            *[
                (f"load:S:{how}", raised("RuntimeError"))
                for how in ("foreign", "version_0", "drop_last_byte", "flip_body_byte", "body_not_json")
            ],
            ("load:S", raised("RuntimeError")),
            ("rest", one_row_batches(*range(1, 10))),
        ],
    )


# --- load errors, empty states ----------------------------------------------------------


def case_load_argument_errors():
    bad = [
        ("empty_mapping", "ValueError"),
        ("missing_key", "ValueError"),
        ("list_of_pairs", "ValueError"),
        ("bytes", "ValueError"),
        ("none", "ValueError"),
        ("str_value", "TypeError"),
        ("none_value", "TypeError"),
        ("bytearray_value", "TypeError"),
    ]
    return _canon(
        "load_argument_errors",
        ("state-load-errors",),
        "A18: {} / {'other': b''} / [('zephon', b'')] / b'' / None raise ValueError; a 'zephon' value that is a str, "
        "None or bytearray raises TypeError; none of them changes the loader",
        {"A": A},
        [
            ("new:A", None),
            *[(f"load_arg:{name}", raised(error)) for name, error in bad],
            ("state", ""),
            ("calls", ZERO_CALLS),
            ("rest", one_row_batches(*range(10))),
        ],
    )


def case_empty_after_load():
    return _canon(
        "empty_state_after_a_non_empty_load",
        ("state-load-empty", "state-roundtrip"),
        "{'zephon': b''} after a non-empty load raises ValueError (an empty state needs a fresh loader); the loaded "
        "state stays",
        {"A": A},
        [
            *save_after("A", 5),
            ("new:A", None),
            ("load:S", None),
            ("load_arg:empty", raised("ValueError")),
            ("same:S", True),
            ("rest", one_row_batches(5, 6, 7, 8, 9)),
        ],
    )


# --- state after start, end of epoch, endless streams (F16) ---------------------------------


def case_state_after_close():
    return _canon(
        "state_after_close_covers_returned_batches",
        ("state-after-start", "state-exact-resume"),
        "a state taken after close() in mid-stream covers exactly the 3 batches returned: resuming yields 4..10",
        {"A": A},
        [
            ("new:A", None),
            *nexts(0, 1, 2),
            ("close", None),
            ("save:S", "non-empty"),
            ("new:A", None),
            ("load:S", None),
            ("rest", one_row_batches(*range(3, 10))),
        ],
    )


def case_end_of_epoch():
    return [
        _canon(
            "end_of_epoch_after_stop_iteration",
            ("state-end-of-epoch", "state-after-start", "state-roundtrip"),
            "F16 finite (N=4, redistribute, c=2): the state saved after StopIteration resumes to an exhausted "
            "stream; the finished pass is not replayed",
            {"E": END},
            [
                ("new:E", None),
                ("rest", one_row_batches(0, 1, 2, 3)),
                ("next", "StopIteration"),
                ("save:S", "non-empty"),
                ("new:E", None),
                ("load:S", None),
                ("same:S", True),
                ("next", "StopIteration"),
                ("rest", []),
            ],
        ),
        _canon(
            "end_of_epoch_after_the_last_batch",
            ("state-end-of-epoch", "state-after-start", "state-roundtrip"),
            "F16 finite: the state saved after the 4th (last) batch, before StopIteration, also resumes to an "
            "exhausted stream",
            {"E": END},
            [
                *save_after("E", 4),
                ("new:E", None),
                ("load:S", None),
                ("same:S", True),
                ("rest", []),
                ("next", "StopIteration"),
            ],
        ),
    ]


def case_endless_streams():
    def case(name, shuffle, first_pass, continuation, description):
        return _canon(
            name,
            ("state-exact-resume", "state-end-of-epoch"),
            description,
            {"R": {**REPEAT, "shuffle": shuffle}},
            [
                ("new:R", None),
                *nexts(*first_pass),
                ("save:S", "non-empty"),
                *nexts(*continuation),
                ("new:R", None),
                ("load:S", None),
                *nexts(*continuation),
            ],
        )

    return [
        case(
            "endless_stream_resumes_after_one_pass",
            False,
            (0, 1, 2, 3),
            (0, 1, 2, 3, 0, 1, 2, 3),
            "F16 endless (N=4, repeat, c=4): saved after exactly one pass, the resumed loader gives batches 5..12 "
            "of the uninterrupted run",
        ),
        case(
            "endless_shuffled_stream_resumes_after_one_pass",
            True,
            (2, 0, 1, 3),
            (2, 0, 3, 1, 1, 3, 2, 0),
            "F16 endless with shuffle_within_shard: pass 2's order differs from pass 1's, so a replayed pass 1 "
            "is caught",
        ),
    ]


# --- rejected states (D-7) ----------------------------------------------------------------


def _refused_then_resumed(tampered: tuple[tuple[str, str], ...] | list[tuple[str, str]]) -> list:
    """The steps of a tampering case: the state saved after 5 batches, each ``(how, check)``
    tampering loaded into a fresh loader and refused with a ValueError starting with ``check``,
    the loader left unchanged, then the untampered state loads and resumes at batch 5."""
    return [
        *save_after("A", 5),
        ("new:A", None),
        *[(f"load:S:{how}", raised("ValueError", check)) for how, check in tampered],
        ("state", ""),
        ("calls", ZERO_CALLS),
        ("restores", 0),
        ("load:S", None),
        ("same:S", True),
        ("rest", one_row_batches(5, 6, 7, 8, 9)),
    ]


def case_tampered_envelopes():
    tampered = [
        ("drop_last_byte", "truncated"),
        ("cut_header", "truncated"),
        ("extra_byte", "truncated"),
        ("bad_magic", "bad magic"),
        ("foreign", "bad magic"),
        ("short_foreign", "bad magic"),
        ("magic_only", "unsupported version"),
        ("version_2+resign", "unsupported version"),
        ("version_0+resign", "unsupported version"),
        ("version_0", "unsupported version"),
        ("flip_body_byte", "checksum mismatch"),
        ("flip_digest_byte", "checksum mismatch"),
        ("body_not_json", "malformed body"),
        ("body_not_object", "malformed body"),
        ("body_without_state", "malformed body"),
        ("topology_replicas_as_string", "malformed body"),
        ("body_extra_key", "malformed body"),
        ("topology_extra_key", "malformed body"),
        ("topology_world_size_0", "malformed body"),
    ]
    return _canon(
        "tampered_envelopes_are_rejected_by_check",
        ("state-load-validates-first", "state-envelope"),
        "the state saved after 5 batches, tampered with (bytes dropped, added, flipped; another magic; foreign "
        "bytes, also fewer than 8; the magic alone; version 2 or 0, with a correct digest too; a body with a "
        "correct digest that is not JSON, not an object, has no 'state' or an extra key, a string "
        "canonical_replicas, an extra topology key, world_size 0): each raises ValueError starting with its "
        "check; the loader is unchanged and the untampered state still loads and resumes",
        {"A": A},
        _refused_then_resumed(tampered),
    )


def case_length_fields_at_their_bounds():
    """[state-load-validates-first] checks 1 and 3 at their bounds (issue 31): 7 bytes of the magic
    (``bad magic``); exactly the 17 header bytes, one byte fewer, and a header whose body length L
    is one more or one less than the body, digest recomputed (``truncated``); the untampered
    state (exactly 17 + L + 32 bytes) loads."""
    bounds = (
        ("magic_less_one", "bad magic"),
        ("header_only", "truncated"),
        ("header_less_one", "truncated"),
        ("length_plus_one", "truncated"),
        ("length_minus_one", "truncated"),
    )
    return _canon(
        "length_fields_at_their_bounds",
        ("state-load-validates-first",),
        "the state saved after 5 batches cut to 7 bytes of its magic (bad magic), to its 17 header bytes or to 16, "
        "or with the header's body length one more or one less than the body and a correct digest (truncated): "
        "each raises ValueError starting with its check; the loader is unchanged and the untampered state "
        "(exactly 17 + L + 32 bytes) loads and resumes",
        {"A": A},
        _refused_then_resumed(bounds),
    )


def case_topology_at_its_bounds():
    """[state-envelope]'s topology integers at their bound of 1 (issue 31): ``dp_degree`` 0 and
    ``canonical_replicas`` 0, re-signed, are a ``malformed body`` (each is one below the bound;
    check 5 comes before check 7, so a changed ``canonical_replicas`` is not the check named); the
    saved state, whose ``world_size``, ``dp_degree`` and ``canonical_replicas`` are exactly 1,
    loads and resumes."""
    bounds = (
        ("topology_dp_degree_0", "malformed body"),
        ("topology_replicas_0", "malformed body"),
        ("topology_world_size_0", "malformed body"),
    )
    return _canon(
        "topology_at_its_bounds",
        ("state-load-validates-first", "state-envelope"),
        "the state saved after 5 batches (world_size, dp_degree and canonical_replicas all 1) with its topology's "
        "dp_degree, canonical_replicas or world_size set to 0 and a correct digest: each raises ValueError starting "
        "with 'malformed body'; the loader is unchanged and the untampered state (every topology integer at its "
        "bound, 1) loads and resumes",
        {"A": A},
        _refused_then_resumed(bounds),
    )


def case_check_order():
    return _canon(
        "checks_run_in_order",
        ("state-load-validates-first", "state-fingerprint", "state-canonical-replicas"),
        "bytes failing several checks raise the first in the order bad magic, unsupported version, truncated, "
        "checksum mismatch, malformed body, fingerprint mismatch, canonical_replicas changed (A's state loaded into B3, "
        "a batch(2) pipeline with canonical_replicas=3, fails both of the last two; foreign bytes whose 'length' "
        "disagrees are a bad magic, not truncated)",
        {"A": A, "B3": {**A, "batch_size": 2, "canonical_replicas": 3}},
        [
            *save_after("A", 5),
            ("new:B3", None),
            ("load:S:version_2+bad_magic+drop_last_byte", raised("ValueError", "bad magic")),
            ("load:S:foreign", raised("ValueError", "bad magic")),
            ("load:S:version_2+drop_last_byte", raised("ValueError", "unsupported version")),
            ("load:S:version_0+extra_byte", raised("ValueError", "unsupported version")),
            ("load:S:flip_body_byte+drop_last_byte", raised("ValueError", "truncated")),
            ("load:S:body_not_json+flip_digest_byte", raised("ValueError", "checksum mismatch")),
            ("load:S:topology_replicas_as_string", raised("ValueError", "malformed body")),
            ("load:S", raised("ValueError", "fingerprint mismatch", ["fp0", "fp1"])),
            ("state", ""),
            ("calls", ZERO_CALLS),
            ("restores", 0),
        ],
    )


def case_fingerprint_mismatch():
    return _canon(
        "fingerprint_mismatch_names_both",
        ("state-fingerprint", "state-load-validates-first"),
        "states of batch(1) (A) and batch(2) (B) over the same rows do not load into each other: ValueError "
        "'fingerprint mismatch' naming both fingerprints; nothing is restored, the loader runs from the start",
        {"A": A, "B": {**A, "batch_size": 2}},
        [
            *save_after("A", 1),
            ("new:B", None),
            ("next", [0, 1]),
            ("save:T", "non-empty"),
            ("new:B", None),
            ("load:S", raised("ValueError", "fingerprint mismatch", ["fp0", "fp1"])),
            ("state", ""),
            ("restores", 0),
            ("rest", [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]),
            ("new:A", None),
            ("load:T", raised("ValueError", "fingerprint mismatch", ["fp0", "fp1"])),
            ("state", ""),
            ("restores", 0),
            ("rest", one_row_batches(*range(10))),
        ],
    )


def case_fingerprint_ignores_runtime_options():
    return _canon(
        "fingerprint_ignores_runtime_options",
        ("state-fingerprint", "state-exact-resume"),
        "a pipeline differing only in runtime options (run_id, aggregate_dir) loads the state and resumes",
        {"A": A, "A_other_run": {**A, "run_id": "another-run"}},
        [*save_after("A", 4), ("new:A_other_run", None), ("load:S", None), ("rest", one_row_batches(4, 5, 6, 7, 8, 9))],
    )


def case_canonical_replicas():
    # Zephon's single-rank order with canonical_replicas=2: rows of the two canonical replicas interleave.
    order = [[0], [2], [1], [3], [4], [6], [5], [7], [10], [8], [11], [9]]
    rows12 = {"n": 12, "chunk_size": 2, "policy": "redistribute"}
    return _canon(
        "canonical_replicas_change_is_rejected",
        ("state-canonical-replicas", "state-load-validates-first", "state-exact-resume"),
        "a state saved with canonical_replicas=2 (after 2 batches) raises ValueError 'canonical_replicas changed' "
        "naming both values when loaded with canonical_replicas=3 or 1 (the fingerprint ignores topology, so this "
        "check is reached); with canonical_replicas=2 it resumes the uninterrupted run",
        {"C1": rows12, "C2": {**rows12, "canonical_replicas": 2}, "C3": {**rows12, "canonical_replicas": 3}},
        [
            ("new:C2", None),
            ("next", order[0]),
            ("next", order[1]),
            ("save:T", "non-empty"),
            ("rest", order[2:]),
            ("new:C3", None),
            ("load:T", raised("ValueError", "canonical_replicas changed", [2, 3])),
            ("state", ""),
            ("restores", 0),
            ("new:C1", None),
            ("load:T", raised("ValueError", "canonical_replicas changed", [1, 2])),
            ("state", ""),
            ("new:C2", None),
            ("load:T", None),
            ("same:T", True),
            ("rest", order[2:]),
        ],
    )


# --- envelope bytes (generated) ----------------------------------------------------------


def case_envelope_through_an_epoch():
    return _generated(
        "envelope_through_an_epoch",
        ("state-envelope", "state-after-start", "state-before-start", "state-end-of-epoch", "state-roundtrip"),
        "generated: the envelope (header, digest, canonical JSON body, topology, Zephon's checkpoint dict) before "
        "start (b''), after 1 and 5 batches, after exhaustion, after close(); and after loading the state of 5 "
        "batches into a fresh loader (the same bytes)",
        {"A": A},
        [
            "new:A",
            "state",
            "next",
            "state",
            "next",
            "next",
            "next",
            "next",
            "state",
            "save:S",
            "rest",
            "state",
            "next",
            "state",
            "close",
            "state",
            "new:A",
            "load:S",
            "state",
        ],
    )


def case_envelope_fingerprints():
    return _generated(
        "envelope_fingerprints_and_topology",
        ("state-envelope", "state-fingerprint"),
        "generated: envelopes after one batch of pipelines that differ in runtime options (run_id), topology "
        "(canonical_replicas=2: same fingerprint label, another topology), rows and chunk size (not operators: "
        "same fingerprint), batch size, and packing length and algorithm (other fingerprints)",
        {
            "A": A,
            "A_other_run": {**A, "run_id": "another-run"},
            "A_replicas_2": {**A, "canonical_replicas": 2},
            "A_rows_12_chunk_4": {**A, "n": 12, "chunk_size": 4},
            "B": {**A, "batch_size": 2},
            "P8_wrap": {"n": 40, "chunk_size": 8, "policy": "redistribute", "pack": [8, "wrap"]},
            "P8_first_fit": {"n": 40, "chunk_size": 8, "policy": "redistribute", "pack": [8, "first_fit"]},
            "P6_wrap": {"n": 40, "chunk_size": 8, "policy": "redistribute", "pack": [6, "wrap"]},
        },
        [
            step
            for p in (
                "A",
                "A_other_run",
                "A_replicas_2",
                "A_rows_12_chunk_4",
                "B",
                "P8_wrap",
                "P8_first_fit",
                "P6_wrap",
            )
            for step in (f"new:{p}", "next", "state")
        ],
    )


def case_envelope_endless():
    return _generated(
        "envelope_endless_shuffled_stream",
        ("state-envelope", "state-after-start"),
        "generated: envelopes of the endless shuffled F16 stream after one pass and after one and a half passes",
        {"R": {**REPEAT, "shuffle": True}},
        ["new:R", "next", "next", "next", "next", "state", "next", "next", "state"],
    )


# --- the canonical fingerprint ----------------------------------------------------------

# F16/F17's rows 0..11 packed by pack_flat(8, "first_fit", num_bins=4, pad_token_id=0), batch(2).
FIXED = {"n": 12, "chunk_size": 4, "policy": "redistribute", "pack": [8, "first_fit"], "batch_size": 2}
FIXED_DESCRIPTION = {
    "batchspec_fingerprint": 1,
    "stages": [
        {"op": "pack_flat", "max_length": 8, "algorithm": "first_fit", "num_bins": 4, "pad_token_id": 0},
        {"op": "batch", "batch_size": 2, "drop_last": True},
    ],
}
FIXED_CANONICAL_JSON = (
    '{"batchspec_fingerprint":1,"stages":[{"algorithm":"first_fit","max_length":8,"num_bins":4,"op":"pack_flat",'
    '"pad_token_id":0},{"batch_size":2,"drop_last":true,"op":"batch"}]}'
)
FIXED_FINGERPRINT = "c6f16f29bd86ea0407a6c2464e66eaf7428713d1df8e5b6e4b654988b123ec13"


def case_fingerprint_of_a_fixed_pipeline():
    # The three literals agree: the description's canonical JSON, and its sha256.
    assert (
        json.dumps(FIXED_DESCRIPTION, sort_keys=True, separators=(",", ":"), ensure_ascii=True) == FIXED_CANONICAL_JSON
    )
    assert hashlib.sha256(FIXED_CANONICAL_JSON.encode("ascii")).hexdigest() == FIXED_FINGERPRINT
    script = ["new:P", "next", "state"]
    return Case(
        name="test_state_fingerprint_of_a_fixed_pipeline",
        # items 2 (pack_flat) and 3 (batch): the stages of this pipeline
        clauses=(
            "state-fingerprint-canonical",
            "state-fingerprint-canonical.2",
            "state-fingerprint-canonical.3",
            "state-fingerprint",
            "state-envelope",
        ),
        description="the envelope of a pipeline of one-token rows, pack_flat(8, algorithm='first_fit', num_bins=4, "
        "pad_token_id=0), batch(2) (inline runner, no prefetch) holds the fingerprint sha256("
        f"{FIXED_CANONICAL_JSON}) = {FIXED_FINGERPRINT}: the fetch stage of the work source and "
        "Zephon's own ReplayFilter are left out, batch_size is Zephon's microbatch_size",
        function="ZephonDataLoader.state",
        inputs={"pipelines": {"P": FIXED}},
        options={"script": script},
        expected={
            "outcomes": {
                "2 state": {
                    "magic": "BSZSTATE",
                    "version": 1,
                    "fingerprint": FIXED_FINGERPRINT,
                    "topology": {"canonical_replicas": 1, "dp_degree": 1, "world_size": 1},
                }
            }
        },
    )
