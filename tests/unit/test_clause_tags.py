"""A check names its clause once, in ``clause=``: no message repeats it (tests/clause_tags.py),
and ``--fix`` rewrites a site written the old way into one that renders the same message."""

from __future__ import annotations

import textwrap

import pytest
from clause_tags import repeats, scan

from batchspec.conformance.helpers.asserts import ClauseFailure, check, clause_failure


def test_no_message_repeats_its_clause():
    found = repeats()
    assert not found, "run `python tests/clause_tags.py --fix`, then edit the rest by hand:\n" + "\n".join(
        map(str, found)
    )


PLANTED = """
from batchspec.conformance.helpers.asserts import ClauseFailure, check


def run(call, ids, mutated):
    failures = []
    for attempt in (
        lambda: check(False, "labels differ [ctb-shift]", clause="ctb-shift"),
        lambda: check(False, f"keys {ids} [tb-keys: {call}]", clause="tb-keys"),
        lambda: check(False, f"a {ids} b " f"[ctb-shift, tb-keys: call {call}, x]", clause="ctb-shift, tb-keys"),
        lambda: check(False, f"modified: {mutated} [{', '.join(ids)}: {call}]", clause=ids),
    ):
        try:
            attempt()
        except ClauseFailure as failure:
            failures.append(failure)
    def raised():
        raise ClauseFailure(
            f"state {ids!r} "
            "[state-envelope]",
            "state-envelope",
        )
    try:
        raised()
    except ClauseFailure as failure:
        failures.append(failure)
    return [(str(f), f.clauses) for f in failures]
"""


def _run(path):
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # the planted module
    return namespace["run"]("convert(x)", ["ctb-no-mutation", "ctb-shift"], [1])


def test_the_lint_finds_planted_repeats_and_fix_keeps_every_message(tmp_path):
    planted = tmp_path / "test_planted.py"
    planted.write_text(PLANTED)
    found = scan(planted)
    assert [site.line for site in found] == [8, 9, 10, 11, 18], found
    assert all(site.fixable for site in found)
    assert scan(planted, fix=True) == []
    fixed = planted.read_text()
    assert "[ctb-shift" not in fixed and "[tb-keys" not in fixed and "[state-envelope" not in fixed
    assert 'check(False, "labels differ", clause="ctb-shift")' in fixed
    assert 'check(False, f"keys {ids}", clause="tb-keys", call=call)' in fixed
    assert 'clause="ctb-shift, tb-keys", call=f"call {call}, x"' in fixed
    assert "clause_failure(" in fixed and "import ClauseFailure, clause_failure, check" in fixed  # ruff --fix sorts it
    assert scan(planted) == []
    # each message renders as it read before the rewrite (the tag from clause= and call=)
    assert _run(planted) == [
        ("labels differ [ctb-shift]", ("ctb-shift",)),
        ("keys ['ctb-no-mutation', 'ctb-shift'] [tb-keys: convert(x)]", ("tb-keys",)),
        ("a ['ctb-no-mutation', 'ctb-shift'] b [ctb-shift, tb-keys: call convert(x), x]", ("ctb-shift", "tb-keys")),
        ("modified: [1] [ctb-no-mutation, ctb-shift: convert(x)]", ("ctb-no-mutation", "ctb-shift")),
        ("state ['ctb-no-mutation', 'ctb-shift'] [state-envelope]", ("state-envelope",)),
    ]


def test_a_tag_inside_the_message_is_found_and_left_for_a_hand_edit(tmp_path):
    planted = tmp_path / "test_planted.py"
    source = textwrap.dedent("""
        check(ok, f"rank 3 failed [state-roundtrip]:\\n{output}", clause="state-roundtrip")
        check(ok, "a list [1, 2] is fine", clause="state-roundtrip")
    """)
    planted.write_text(source)
    found = scan(planted, fix=True)
    assert [(site.line, site.fixable) for site in found] == [(2, False)]
    assert planted.read_text() == source


def test_check_and_clause_failure_render_the_tag_from_the_argument():
    with pytest.raises(ClauseFailure) as error:
        check(False, "labels[0]=3, but should be 2", clause="ctb-shift", call="f(x)", details=":\n  more")
    assert str(error.value) == "labels[0]=3, but should be 2 [ctb-shift: f(x)]:\n  more"
    assert error.value.clauses == ("ctb-shift",)
    assert str(clause_failure("", clause=["a-b", "c-d.2"])) == "[a-b, c-d.2]"
    assert clause_failure("x", clause="a-b, c-d.2").clauses == ("a-b", "c-d")
    check(True, "never raised", clause="ctb-shift")
