"""The clause index (docs/clauses.md) is current, and the clause citations it is built from are
literal, known and consistent with the tests' marks (conformance/tools/clause_index.py)."""

from __future__ import annotations

from pathlib import Path

from batchspec.conformance.run.spec import spec_clauses
from batchspec.conformance.tools.clause_index import citation_problems, lint, reference_citations, tag_problems

KNOWN = set(spec_clauses())


def test_citations_are_literal_known_and_match_the_marks():
    problems = lint()
    assert not problems, "\n".join(problems)


def test_every_must_clause_has_a_reference_symbol():
    cited = reference_citations()
    missing = sorted(cid for cid, level in spec_clauses().items() if level == "MUST" and not cited.get(cid))
    assert not missing, f"MUST clauses that no reference symbol cites: {missing}"
    assert "reference/convert.py::convert_text_batch" in cited["ctb-shift"]
    assert "reference/loader.py::ZephonDataLoader.load_state_dict" in cited["state-load-validates-first"]


def test_the_lint_finds_a_planted_wildcard_an_unknown_id_and_a_section_sign():
    text = '"""Implements [xdoc-*] and [ctb-shift, tb-fields].\n\nSee §6."""\n'
    problems = citation_problems(Path("planted.py"), text, KNOWN)
    assert any("wildcard clause citation [xdoc-*]" in p for p in problems), problems
    assert any("unknown clause id [tb-fields]" in p for p in problems), problems
    assert any("section sign" in p for p in problems), problems
    assert not any("ctb-shift" in p for p in problems), problems
    # Decisions and the harness tag are not clause citations.
    assert not citation_problems(Path("ok.py"), "# [D-6]\n", KNOWN)


def test_the_lint_finds_a_mismatched_clause_tag_and_a_tag_that_is_no_clause():
    text = (
        "import pytest\n\n"
        "@pytest.mark.clause('ctb-shift')\n"
        "def test_planted(backend):\n"
        '    """Mentions [ctb-positions] in its docstring, which is fine."""\n'
        "    assert_tensor_equal('x', a, b, clause='ctb-padding-mask', call='c')\n"
        "    assert_batch_equal(a, b, clause='example-A')\n"
        "    assert a == b, 'labels differ [ctb-shift: call]'\n"
        "    assert a == b, f'keys differ [tb-keys: {call}]'\n"
    )
    problems = tag_problems(Path("test_planted.py"), text, KNOWN)
    assert len(problems) == 3, problems
    assert any("tag [ctb-padding-mask] is not among the test's marks ['ctb-shift']" in p for p in problems)
    assert any("tag 'example-A' is not a clause id" in p for p in problems)
    assert any("tag [tb-keys]" in p for p in problems)
