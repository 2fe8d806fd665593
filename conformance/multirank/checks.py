"""What a multi-rank job's per-rank results must show (conformance/test_checkpoint_ranks.py):
every rank succeeded, loaded what it was given, resumed its uninterrupted tail, and returned
the same state envelope of the job's topology; failures name the clause and, for differing
envelopes, the first differing byte and the part of [state-envelope] it is in."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from batchspec.conformance.helpers.asserts import check, clause_failure
from batchspec.conformance.helpers.envelope import DIGEST, HEADER, MAGIC, body_of

__all__ = [
    "assert_continues",
    "assert_identical_states",
    "assert_loaded",
    "difference",
    "envelope_topology",
    "flat",
    "ok",
    "resumed_at",
    "rows_of",
    "state_bytes",
    "where_bytes_differ",
    "windows",
]


def ok(job, name, clause=None):
    """The per-rank results of a job that must have succeeded on every rank.

    A failed job is tagged with ``clause`` (what the job step checks), and with
    [state-collective-all-ranks] when a rank's error is a checkpoint timeout.
    """
    returncode, results, _, output = job
    errors = [f"rank {r['rank']}:\n{r['error']}" for r in results if r["error"]]
    tags = [clause] if clause else []
    if any("timed out" in e.lower() for e in errors):
        tags.append("state-collective-all-ranks")
    if not (returncode == 0 and not errors):
        details = ":\n" + "\n".join(errors) + output
        if tags:
            raise clause_failure(f"job {name!r} failed (rc={returncode})", clause=tags, details=details)
        raise AssertionError(f"job {name!r} failed (rc={returncode}){details}")
    return results


def assert_loaded(results, name):
    """Every rank's state_dict() right after load_state_dict() returned the loaded bytes."""
    for r in results:
        check(
            r["loaded"],
            f"job {name!r}, rank {r['rank']}: state_dict() right after loading bytes with sha256 "
            f"{r['loaded_sha256'][:16]}… returned {r['after_load']} instead of those bytes",
            clause="state-roundtrip",
        )


def resumed_at(got: list, uninterrupted: list, cursor: int) -> str:
    """A hint when a resumed stream is the uninterrupted one from another cursor."""
    for start in range(len(uninterrupted) + 1):
        if start != cursor and got == uninterrupted[start:]:
            what = " (the state was not restored)" if start == 0 else ""
            return f"; it resumed at batch {start} instead of {cursor}{what}"
    return ""


def assert_continues(who: str, got: list, uninterrupted: list, cursor: int, clause: str) -> None:
    """``got`` (what a rank read after the restore) is ``uninterrupted[cursor:]``."""
    expected = uninterrupted[cursor:]
    check(
        got == expected,
        f"{who} saved after {cursor} batches; its resumed stream differs from its uninterrupted tail at "
        f"{difference(got, expected)}{resumed_at(got, uninterrupted, cursor)}",
        clause=clause,
    )


def difference(got: list, expected: list) -> str:
    """Where two batch lists first differ, for failure messages."""
    for index, (a, b) in enumerate(zip(got, expected, strict=False)):
        if a != b:
            return f"batch {index}: got {a}, expected {b} ({len(got)} batches, expected {len(expected)})"
    return f"got {len(got)} batches, expected {len(expected)}"


def flat(batches):
    return [i for batch in batches for i in batch]


def state_bytes(workdir: Path, name: str, ranks: int) -> list[bytes]:
    return [(workdir / name / f"state_r{rank}.bin").read_bytes() for rank in range(ranks)]


def envelope_topology(data: bytes) -> dict:
    check(data[: len(MAGIC)] == MAGIC, f"state starts with {data[:8]!r}", clause="state-envelope")
    return body_of(data)["topology"]


def where_bytes_differ(a: bytes, b: bytes) -> str:
    """The first differing byte of two state envelopes and the part of [state-envelope] it is in."""
    offset = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    if offset < HEADER:
        part = "header (magic, version, body length)"
    elif offset >= min(len(a), len(b)) - DIGEST:
        part = "sha256 digest or length"
    else:
        part = "JSON body"
    detail = f"first difference at byte {offset} of {len(a)} and {len(b)} bytes, in the {part}"
    if part == "JSON body":
        try:
            body_a, body_b = body_of(a), body_of(b)
            keys = sorted(k for k in set(body_a) | set(body_b) if body_a.get(k) != body_b.get(k))
            detail += f"; body keys that differ: {keys}"
            for key in keys:
                if isinstance(body_a.get(key), dict) and isinstance(body_b.get(key), dict):
                    sub = sorted(
                        k for k in set(body_a[key]) | set(body_b[key]) if body_a[key].get(k) != body_b[key].get(k)
                    )
                    detail += f"; {key}: {sub[:8]}"
        except ValueError:
            pass
    return detail


def assert_identical_states(workdir, name, results, topology):
    """Every rank's state_dict() returned the same bytes, an envelope of ``topology``."""
    shas = [r["state_sha256"] for r in results]
    check(
        all(r["all_state_sha256"] == shas for r in results),
        f"job {name!r}: ranks disagree on the gathered sha256s",
        clause="state-all-ranks-identical",
    )
    states = state_bytes(workdir, name, len(results))
    differing = [rank for rank, data in enumerate(states) if data != states[0]]
    if differing:
        raise clause_failure(
            f"job {name!r}: state_dict() bytes differ across ranks (sha256 by rank {shas}); rank 0 vs rank "
            f"{differing[0]}: {where_bytes_differ(states[0], states[differing[0]])}; every rank must return the same "
            "merged state",
            clause="state-all-ranks-identical",
        )
    got = envelope_topology(states[0])
    check(
        got == topology,
        f"job {name!r}: the envelope's topology is {got}, but the job ran {topology}",
        clause="state-envelope",
    )


def windows(per_rank: list[list[list]], batches_per_rank: int) -> list[Counter]:
    """Global steps (windows of C batches) of a phase, given each rank's batches: step s holds
    the batches s*b .. (s+1)*b - 1 of every rank, where b = C / ranks."""
    steps = min(len(batches) for batches in per_rank) // batches_per_rank
    return [
        Counter(i for batches in per_rank for i in flat(batches[s * batches_per_rank : (s + 1) * batches_per_rank]))
        for s in range(steps)
    ]


def rows_of(elements: Counter) -> list:
    return sorted(elements.elements())
