"""CHANGELOG.md, the suite's changelog, is in step with the suite and its version: replaying
its releases (listed newest first) from the oldest (the checks of the first release, then each release's new, changed
and removed checks) gives exactly the conformance tests collected now, each with the clauses it
cites, and the golden cases stored now; its top release is the version in pyproject.toml.

The suite is collected once for the module (never run); the planted changelogs reuse it.
"""

from __future__ import annotations

import re
import tomllib

import pytest
from _suite import ROOT

from batchspec.conformance.run.spec import split_citation
from batchspec.conformance.tools.clause_index import check_citations

CHANGELOG = ROOT / "CHANGELOG.md"
_RELEASE = re.compile(r"^## (\d+\.\d+\.\d+) — \d{4}-\d{2}-\d{2} \(SPEC \d+\.\d+\)$")
_LIST = re.compile(r"^### (Checks|New checks|Changed checks|Removed checks)$")
_TEST = re.compile(r"^- `(conformance/[^`]+::[A-Za-z0-9_]+)` \[([a-z0-9, -]+)\]")
_GOLDEN = re.compile(r"^- `golden:(test_[A-Za-z0-9_]+)`")


def parse(text: str) -> list[tuple[str, list[tuple[str, str, frozenset[str] | None]]]]:
    """The releases of a changelog, in the file's order (newest first): ``(version, entries)``, each entry ``(list,
    check, clauses)``: ``list`` one of ``Checks``, ``New checks``, ``Changed checks``, ``Removed
    checks``; ``check`` a test's ``path::name`` or ``golden:<case>``; ``clauses`` a test's clause
    ids (``None`` for a golden case). The first release's golden cases are names in a
    ```` ```golden-cases ```` block. Raises ValueError on an entry outside a list."""
    releases: list[tuple[str, list[tuple[str, str, frozenset[str] | None]]]] = []
    section, in_golden_block = None, False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("## "):
            match = _RELEASE.match(line)
            if not match:
                raise ValueError(
                    f"CHANGELOG.md:{number}: a release heading is '## X.Y.Z — YYYY-MM-DD (SPEC A.B)': {line!r}"
                )
            releases.append((match.group(1), []))
            section = None
            continue
        if match := _LIST.match(line):
            section = match.group(1)
            continue
        if line.startswith("```golden-cases"):
            in_golden_block = True
            continue
        if in_golden_block:
            if line.startswith("```"):
                in_golden_block = False
            else:
                releases[-1][1].extend((section or "", f"golden:{name}", None) for name in line.split())
            continue
        test, golden = _TEST.match(line), _GOLDEN.match(line)
        if (test or golden) and (section is None or not releases):
            raise ValueError(f"CHANGELOG.md:{number}: a check listed outside a ### list: {line!r}")
        if test:
            clauses = frozenset(c.strip() for c in test.group(2).split(","))
            releases[-1][1].append((section or "", test.group(1), clauses))
        elif golden:
            releases[-1][1].append((section or "", f"golden:{golden.group(1)}", None))
    return releases


def replay(releases) -> tuple[dict[str, frozenset[str] | None], list[str]]:
    """The checks the changelog says the newest release has (check -> clauses), and the
    inconsistencies it holds (a new check that already existed, a changed or removed one that
    did not), replaying ``releases`` (as ``parse`` gives them) from the oldest version."""
    checks: dict[str, frozenset[str] | None] = {}
    problems = []
    for version, entries in sorted(releases, key=lambda release: _version_key(release[0])):
        for section, check, clauses in entries:
            if section in ("Checks", "New checks"):
                if check in checks:
                    problems.append(f"{version}: {check} is listed as new but exists already")
                checks[check] = clauses
            elif section == "Changed checks":
                if check not in checks:
                    problems.append(f"{version}: {check} is listed as changed but does not exist")
                checks[check] = clauses
            elif section == "Removed checks":
                if checks.pop(check, "absent") == "absent":
                    problems.append(f"{version}: {check} is listed as removed but does not exist")
    return checks, problems


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def line_of(check: str, clauses: frozenset[str] | None) -> str:
    """The changelog line that lists ``check``."""
    return f"- `{check}`" + (f" [{', '.join(sorted(clauses))}]" if clauses is not None else "")


def differences(listed: dict[str, frozenset[str] | None], now: dict[str, frozenset[str] | None]) -> list[str]:
    """What the newest release of the changelog must say to match the suite ``now``."""
    out = [f"New checks: {line_of(c, now[c])}" for c in sorted(now.keys() - listed.keys())]
    out += [f"Removed checks: {line_of(c, listed[c])}" for c in sorted(listed.keys() - now.keys())]
    out += [
        f"Changed checks: {line_of(c, now[c])} (listed {sorted(listed[c] or ())})"
        for c in sorted(now.keys() & listed.keys())
        if now[c] != listed[c]
    ]
    return out


@pytest.fixture(scope="module")
def checks_now() -> dict[str, frozenset[str] | None]:
    """Every conformance test collected now (the golden runner left out) -> the clause ids it
    cites, and every golden case -> None (one collection of the suite)."""
    found: dict[str, set[str]] = {}
    for citation, names in check_citations(ROOT).items():
        for name in names:
            found.setdefault(name, set()).add(split_citation(citation)[0])
    return {name: None if name.startswith("golden:") else frozenset(c) for name, c in found.items()}


def test_the_changelog_replays_to_the_suite_as_collected(checks_now):
    listed, problems = replay(parse(CHANGELOG.read_text(encoding="utf-8")))
    assert not problems, "CHANGELOG.md contradicts itself:\n" + "\n".join(problems)
    missing = differences(listed, checks_now)
    assert not missing, "CHANGELOG.md's newest release must list (under the ### list named):\n" + "\n".join(missing)


def test_the_top_release_is_the_suite_version():
    releases = parse(CHANGELOG.read_text(encoding="utf-8"))
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert releases, "CHANGELOG.md has no release heading"
    versions = [release[0] for release in releases]
    assert versions == sorted(versions, key=_version_key, reverse=True), f"CHANGELOG.md lists {versions}: newest first"
    assert versions[0] == version, f"CHANGELOG.md's top release is {versions[0]}, pyproject.toml's version is {version}"


def test_a_planted_new_check_and_a_planted_clause_change_are_named(checks_now):
    listed, _ = replay(parse(CHANGELOG.read_text(encoding="utf-8")))
    some_test = next(c for c in sorted(checks_now) if not c.startswith("golden:"))
    planted = dict(checks_now)
    planted["conformance/test_convert.py::test_planted"] = frozenset({"ctb-shift"})
    planted[some_test] = frozenset({"planted-clause"})
    removed = next(c for c in sorted(checks_now) if c.startswith("golden:"))
    del planted[removed]
    assert differences(listed, planted) == [
        "New checks: - `conformance/test_convert.py::test_planted` [ctb-shift]",
        f"Removed checks: - `{removed}`",
        f"Changed checks: - `{some_test}` [planted-clause] (listed {sorted(listed[some_test] or ())})",
    ]


def test_a_planted_changelog_that_removes_an_absent_check_or_lists_outside_a_list_is_refused():
    text = (
        "## 0.2.0 — 2026-01-02 (SPEC 1.0)\n### Removed checks\n- `conformance/test_b.py::test_b` [ctb-shift]\n"
        "### New checks\n- `golden:test_new`\n"
        "## 0.1.0 — 2026-01-01 (SPEC 1.0)\n### Checks\n- `conformance/test_a.py::test_a` [ctb-shift]\n"
    )
    checks, problems = replay(parse(text))
    assert checks == {"conformance/test_a.py::test_a": frozenset({"ctb-shift"}), "golden:test_new": None}
    assert problems == ["0.2.0: conformance/test_b.py::test_b is listed as removed but does not exist"]
    with pytest.raises(ValueError, match="outside a ### list"):
        parse("## 0.1.0 — 2026-01-01 (SPEC 1.0)\n- `golden:test_x`\n")
    with pytest.raises(ValueError, match="release heading"):
        parse("## next\n")
