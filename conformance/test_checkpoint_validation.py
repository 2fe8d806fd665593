"""What ``ZephonDataLoader.load_state_dict`` rejects, and in which order (SPEC.md,
"``ZephonDataLoader`` checkpoint state (single process)"): malformed state mappings, tampered
or foreign envelope bytes, a changed ``canonical_replicas``, the first failed check of
[state-load-validates-first] named, and a ``RuntimeError`` first after the start.

The index pipelines follow field reports F16/F17 (docs/sources.md#loader-state-setup); the
corruptions and the checks they fail are ``conformance/helpers/envelope.py``'s.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batchspec.conformance.helpers.asserts import assert_raises, check, clause_failure
from batchspec.conformance.helpers.envelope import (
    BAD_ARGUMENTS,
    BODY_KEYS,
    CHECKS,
    CORRUPTIONS,
    DIGEST,
    HEADER,
    MAGIC,
    MUTATIONS,
    VERSION,
    body_length,
    canonical_json,
    corrupt,
    digest_matches,
    mutate,
    raw_body,
    version_of,
    with_version,
)
from batchspec.conformance.helpers.pipelines import (
    SpyPipeline,
    check_exact_resume,
    envelope_after,
    index_pipeline,
    make_loader,
    saved_after,
)

# --- errors -------------------------------------------------------------------------------


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-load-errors")
@pytest.mark.parametrize(
    "name, error",
    [
        # item 1: not a mapping, or no "zephon" key; item 2: a "zephon" value that is not bytes
        *(
            pytest.param(
                name, error, marks=pytest.mark.clause(f"state-load-errors.{item}"), id=f"{name}-{error.__name__}"
            )
            for name, error, item in (
                ("empty_mapping", ValueError, 1),
                ("missing_key", ValueError, 1),
                ("list_of_pairs", ValueError, 1),
                ("bytes", ValueError, 1),
                ("none", ValueError, 1),
                ("str_value", TypeError, 2),
                ("none_value", TypeError, 2),
                ("bytearray_value", TypeError, 2),
            )
        )
    ],
)
def test_malformed_state_mapping_is_rejected(backend, scratch, name, error):
    loader = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))
    assert_raises(error, (), loader.load_state_dict, BAD_ARGUMENTS[name], clause="state-load-errors")
    check(
        loader.state_dict() == {"zephon": b""},
        "a rejected load must change nothing",
        clause="state-load-errors",
    )
    assert list(loader) == [[i] for i in range(10)]


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-load-empty", "state-after-start", "state-exact-resume")
def test_empty_state_after_a_non_empty_load_is_rejected(backend, scratch):
    check_exact_resume(backend, scratch)  # the plain resume first: its failure is its own clauses'
    saved = saved_after(backend, scratch, 5)
    loader = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))
    loader.load_state_dict(saved)
    assert_raises(ValueError, (), loader.load_state_dict, {"zephon": b""}, clause="state-load-empty")
    assert loader.state_dict() == saved
    check(list(loader) == [[i] for i in range(5, 10)], "", clause="state-load-empty")


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause(
    "state-canonical-replicas",
    "state-load-validates-first",
    "state-load-validates-first.7",
    "state-after-start",
    "state-exact-resume",
)
def test_canonical_replicas_change_names_both_values(backend, scratch):
    check_exact_resume(backend, scratch)  # the plain resume first: its failure is its own clauses'
    saved = saved_after(backend, scratch, 2, n=12, canonical_replicas=2)
    loader = make_loader(backend, index_pipeline(scratch, 12, 2, "redistribute", canonical_replicas=3))
    assert_raises(
        ValueError, ("canonical_replicas changed",), loader.load_state_dict, saved, clause="state-load-validates-first"
    )
    assert_raises(ValueError, (2, 3), loader.load_state_dict, saved, clause="state-canonical-replicas")
    check(loader.state_dict() == {"zephon": b""}, "", clause="state-load-validates-first")
    same = make_loader(backend, index_pipeline(scratch, 12, 2, "redistribute", canonical_replicas=2))
    same.load_state_dict(saved)
    check(
        len(list(same)) == 10,
        "the same canonical_replicas resumes the remaining 10 rows",
        clause="state-canonical-replicas",
    )


# --- envelope -----------------------------------------------------------------------------


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-envelope", "state-load-validates-first", "state-exact-resume")
@pytest.mark.parametrize(
    "corruption, check",
    [
        # loaded into the pipeline that saved it: the tampering is the only fault, so each
        # parameter cites the [state-load-validates-first] item of its check
        pytest.param(
            corruption,
            check,
            marks=pytest.mark.clause(f"state-load-validates-first.{CHECKS.index(check) + 1}"),
            id=f"{corruption}-{check.replace(' ', '-')}",
        )
        for corruption, check in (
            ("flip_body_byte", "checksum mismatch"),
            ("drop_last_byte", "truncated"),
            ("cut_header", "truncated"),
            ("extra_byte", "truncated"),
            ("bad_magic", "bad magic"),
            ("version_2", "unsupported version"),
            ("body_not_json", "malformed body"),
            ("body_only_state", "malformed body"),
            ("topology_replicas_as_string", "malformed body"),
        )
    ],
)
def test_tampered_envelope_is_rejected_by_name(backend, scratch, corruption, check):
    saved = saved_after(backend, scratch, 5)
    data = saved["zephon"]
    if not (data[: len(MAGIC)] == MAGIC and version_of(data) == VERSION):
        raise clause_failure("envelope header", clause="state-envelope")
    if not len(data) == HEADER + body_length(data) + DIGEST:
        raise clause_failure("", clause="state-envelope")
    if not digest_matches(data):
        raise clause_failure("digest of everything before it", clause="state-envelope")
    body = raw_body(data)
    if not body == canonical_json(json.loads(body)):
        raise clause_failure("the body must be canonical JSON", clause="state-envelope")
    if not sorted(json.loads(body)) == list(BODY_KEYS):
        raise clause_failure("", clause="state-envelope")

    loader = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))
    # The message contains the failed check's name [state-load-validates-first]; the rest of it is free.
    assert_raises(
        ValueError,
        (check,),
        loader.load_state_dict,
        {"zephon": corrupt(data, [corruption])},
        clause="state-load-validates-first",
    )
    if not loader.state_dict() == {"zephon": b""}:
        raise clause_failure("", clause="state-load-validates-first")
    loader.load_state_dict(saved)
    if not list(loader) == [[i] for i in range(5, 10)]:
        raise clause_failure("a correct state still loads and resumes exactly", clause="state-exact-resume")


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-load-validates-first", "state-envelope", "state-exact-resume")
def test_random_and_mutated_bytes_raise_only_value_error(backend, scratch):
    """Random bytes and flips, truncations, insertions and splices of a valid state raise
    only ValueError; afterwards the same loader accepts the valid state and resumes exactly."""
    saved = saved_after(backend, scratch, 5)
    valid = saved["zephon"]
    loader = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))

    @given(
        st.one_of(st.binary(max_size=200), st.lists(MUTATIONS, min_size=1, max_size=4).map(lambda m: mutate(valid, m)))
    )
    def feed(data):
        if data == valid:
            return
        try:
            loader.load_state_dict({"zephon": data})
        except ValueError:
            pass
        except Exception as error:
            raise clause_failure(
                f"{len(data)} mutated bytes raised {type(error).__name__}({error}), but only ValueError is allowed",
                clause="state-load-validates-first",
            ) from error
        else:
            check(
                data == b"",
                f"{data[:40]!r}... was accepted, but should be rejected",
                clause="state-envelope",
            )
        check(
            loader.state_dict() == {"zephon": b""},
            "a rejected load must change nothing",
            clause="state-load-validates-first",
        )

    feed()
    loader.load_state_dict(saved)
    check(list(loader) == [[i] for i in range(5, 10)], "", clause="state-exact-resume")


def named_checks(error: BaseException) -> list[str]:
    """The [state-load-validates-first] checks a message names."""
    return [check for check in CHECKS if check in str(error)]


# --- the checks and their order ---------------------------------------------------------

# (corruptions of a valid state, applied in order; the check that must be reported). Each
# row's bytes fail the reported check and, where a corruption adds one, later checks too;
# loaded into a batch(2) pipeline with canonical_replicas=3, every state that passes the
# envelope checks also fails "fingerprint mismatch" and "canonical_replicas changed".
FIRST_FAILED_CHECK = [
    (("bad_magic",), "bad magic"),
    (("version_2", "bad_magic", "drop_last_byte"), "bad magic"),
    (("foreign",), "bad magic"),
    (("short_foreign",), "bad magic"),
    (("magic_only",), "unsupported version"),
    (("version_0",), "unsupported version"),
    (("version_0", "resign"), "unsupported version"),
    (("version_2", "resign"), "unsupported version"),
    (("version_2", "drop_last_byte"), "unsupported version"),
    (("version_0", "extra_byte"), "unsupported version"),
    (("drop_last_byte",), "truncated"),
    (("cut_header",), "truncated"),
    (("extra_byte",), "truncated"),
    (("magic_less_one",), "bad magic"),
    (("header_only",), "truncated"),
    (("header_less_one",), "truncated"),
    (("length_plus_one",), "truncated"),
    (("length_minus_one",), "truncated"),
    (("flip_body_byte", "drop_last_byte"), "truncated"),
    (("flip_body_byte",), "checksum mismatch"),
    (("body_not_json", "flip_digest_byte"), "checksum mismatch"),
    (("body_not_json",), "malformed body"),
    (("body_not_object",), "malformed body"),
    (("body_without_state",), "malformed body"),
    (("body_extra_key",), "malformed body"),
    (("topology_extra_key",), "malformed body"),
    (("topology_replicas_as_string",), "malformed body"),
    (("topology_world_size_0",), "malformed body"),
    (("topology_dp_degree_0",), "malformed body"),
    (("topology_replicas_0",), "malformed body"),
    (("state_nan",), "malformed body"),
    (("body_duplicate_key",), "malformed body"),
    (("fingerprint_not_string",), "malformed body"),
    (("state_not_object",), "malformed body"),
    (("topology_not_object",), "malformed body"),
    ((), "fingerprint mismatch"),
]


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-load-validates-first", "state-envelope")
@pytest.mark.parametrize(
    "corruptions, check", FIRST_FAILED_CHECK, ids=["+".join(c) or "other-pipeline" for c, _ in FIRST_FAILED_CHECK]
)
def test_the_first_failed_check_is_reported(backend, scratch, corruptions, check):
    """Checks run in the order bad magic, unsupported version, truncated, checksum mismatch,
    malformed body, fingerprint mismatch, canonical_replicas changed; the message names the
    first that fails, and only it. Foreign bytes are a bad magic whatever their length; the
    version byte is exactly 1; extra bytes are truncated; the body has exactly its keys, of
    their types, in strict JSON (no NaN, no duplicate key)."""
    data = corrupt(envelope_after(backend, index_pipeline(scratch / "saved", 10, 2, "redistribute"), 5), corruptions)
    spy = SpyPipeline(index_pipeline(scratch, 10, 2, "redistribute", batch_size=2, canonical_replicas=3))
    loader = make_loader(backend, spy)
    error = assert_raises(
        ValueError, (check,), loader.load_state_dict, {"zephon": data}, clause="state-load-validates-first"
    )
    named = named_checks(error)
    if not named == [check]:
        raise clause_failure(
            f"message {str(error)!r} names the checks {named}, but should name only {check!r}, the first that fails",
            clause="state-load-validates-first",
        )
    if not loader.state_dict() == {"zephon": b""}:
        raise clause_failure("a rejected load must change nothing", clause="state-load-validates-first")
    if not spy.calls == {"iter": 0, "checkpoint": 0, "restore": 0}:
        raise clause_failure(
            f"pipeline calls {spy.calls} during a rejected load, but should be none",
            clause="state-load-validates-first",
        )


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause(
    "state-envelope", "state-load-validates-first", "state-load-validates-first.2", "state-exact-resume"
)
@pytest.mark.parametrize("version", [0, 2, 255])
def test_the_version_byte_is_exactly_one(backend, scratch, version):
    """Any version byte but 1 is rejected, also with a correct digest; the version is named."""
    saved = envelope_after(backend, index_pipeline(scratch / "saved", 10, 2, "redistribute"), 5)
    check(
        saved[: len(MAGIC)] == MAGIC and version_of(saved) == VERSION,
        f"header {saved[:9]!r}",
        clause="state-envelope",
    )
    other = corrupt(with_version(saved, version), ["resign"])
    loader = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))
    assert_raises(
        ValueError,
        ("unsupported version", str(version)),
        loader.load_state_dict,
        {"zephon": other},
        clause="state-load-validates-first",
    )
    check(loader.state_dict() == {"zephon": b""}, "", clause="state-load-validates-first")
    loader.load_state_dict({"zephon": saved})
    check(
        list(loader) == [[i] for i in range(5, 10)],
        "a correct state still loads",
        clause="state-exact-resume",
    )


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-load-validates-first", "state-load-validates-first.1", "state-envelope")
@pytest.mark.parametrize(
    "data",
    [b"\x01" * 100, b"PK\x03\x04" + bytes(60), b"\x80\x04\x95" + bytes(60), b"{}", b"BSZ"],
    ids=["ones", "zip", "pickle", "json", "short-magic"],
)
def test_foreign_bytes_are_a_bad_magic(backend, scratch, data):
    """Bytes that do not start with the magic are reported as ``bad magic``, not by what their
    would-be length field says."""
    loader = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))
    error = assert_raises(
        ValueError, ("bad magic",), loader.load_state_dict, {"zephon": data}, clause="state-load-validates-first"
    )
    check(
        named_checks(error) == ["bad magic"],
        f"message {str(error)!r} should name only 'bad magic'",
        clause="state-load-validates-first",
    )


# --- load_state_dict after the start: RuntimeError first ---------------------------------

AFTER_START = [
    *(("argument", name) for name in BAD_ARGUMENTS),
    *(("bytes", name) for name in ("foreign", "version_0", "drop_last_byte", "flip_body_byte", "body_not_json", "")),
    ("other-pipeline", ""),
]


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-load-after-start", "state-load-errors", "state-load-validates-first")
@pytest.mark.parametrize("kind, name", AFTER_START, ids=[f"{k}-{n or 'valid'}" for k, n in AFTER_START])
def test_after_the_start_every_load_is_a_runtime_error(backend, scratch, kind, name):
    """After the first next(), load_state_dict raises RuntimeError whatever it is given: the
    [state-load-after-start] check comes before [state-load-errors] and the envelope checks."""
    saved = envelope_after(backend, index_pipeline(scratch / "saved", 10, 2, "redistribute"), 5)
    if kind == "argument":
        argument = BAD_ARGUMENTS[name]
    elif kind == "bytes":
        argument = {"zephon": CORRUPTIONS[name](saved) if name else saved}
    else:  # a valid state of another pipeline (a fingerprint mismatch before the start)
        argument = {
            "zephon": envelope_after(backend, index_pipeline(scratch / "other", 10, 2, "redistribute", batch_size=2), 1)
        }
    loader = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))
    assert next(loader) == [0]
    assert_raises(RuntimeError, (), loader.load_state_dict, argument, clause="state-load-after-start")
    check(
        list(loader) == [[i] for i in range(1, 10)],
        "a rejected load must not disturb the stream",
        clause="state-load-after-start",
    )
