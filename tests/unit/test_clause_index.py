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


def test_the_lint_resolves_a_constant_built_mark_and_names_a_wrong_id_in_it(tmp_path):
    (tmp_path / "conformance" / "helpers").mkdir(parents=True)
    (tmp_path / "conformance" / "helpers" / "planted.py").write_text(
        'SHARED = ("ctb-shift", "ctb-no-such-clause")\nOTHER: tuple[str, ...] = ("ctb-positions",)\n'
    )
    text = (
        "import pytest\n"
        "from batchspec.conformance.helpers.planted import SHARED, OTHER as RENAMED\n\n"
        'LOCAL = ("tb-dtypes", "ctb-input-errors.4")\n'
        'BOTH = LOCAL + ("tb-keys",)\n\n'
        "@pytest.mark.clause(*SHARED)\n"
        "def test_imported(backend):\n"
        "    check(ok, 'x', clause='ctb-shift')\n\n"
        "@pytest.mark.clause(*BOTH, *RENAMED, 'tb-shapes')\n"
        "def test_local(backend):\n"
        "    check(ok, 'x', clause='ctb-input-errors.4')\n"
        "    check(ok, 'x', clause='ctb-positions')\n"
        "    check(ok, 'x', clause=LOCAL)\n"
        "    check(ok, 'x', clause='ctb-padding-mask')\n"
    )
    problems = tag_problems(Path("test_planted.py"), text, KNOWN, root=tmp_path)
    assert problems == [
        "test_planted.py:8: test_imported: mark [ctb-no-such-clause] is not a clause id",
        "test_planted.py:16: test_local: tag [ctb-padding-mask] is not among the test's marks "
        "['ctb-input-errors', 'ctb-positions', 'tb-dtypes', 'tb-keys', 'tb-shapes']",
    ], problems


def test_the_lint_fails_on_a_mark_it_cannot_resolve_but_not_on_a_parametrize_row(tmp_path):
    text = (
        "import pytest\n\n"
        'JOINED = "ctb-shift, ctb-positions"\n'
        "ROWS = {'a': ('ctb-shift',)}\n\n"
        "@pytest.mark.clause(*JOINED.split(', '))\n"
        "def test_split(backend):\n"
        "    pass\n\n"
        "@pytest.mark.clause(*NOT_DEFINED)\n"
        "def test_undefined(backend):\n"
        "    pass\n\n"
        "@pytest.mark.parametrize('row', [pytest.param(n, marks=pytest.mark.clause(*c)) for n, c in ROWS.items()])\n"
        "def test_rows(backend, row):\n"
        "    check(ok, 'x', clause='ctb-padding-mask')\n"
    )
    problems = tag_problems(Path("test_planted.py"), text, KNOWN, root=tmp_path)
    assert len(problems) == 2, problems
    assert problems[0].startswith("test_planted.py:7: test_split: cannot resolve the clause mark argument")
    assert "\"*JOINED.split(', ')\"" in problems[0]
    assert problems[1].startswith(
        "test_planted.py:11: test_undefined: cannot resolve the clause mark argument '*NOT_DEFINED'"
    )
