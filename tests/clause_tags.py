"""A check names its clause once: in ``clause=``, never again in its message.

``check(ok, "... [ctb-shift]", clause="ctb-shift")`` and
``ClauseFailure(f"... [tb-keys: {call}]", "tb-keys")`` write the clause twice;
``conformance/helpers/asserts.py`` renders the tag from the argument
(``check(ok, "...", clause="ctb-shift")``, ``clause_failure(f"...", clause="tb-keys", call=call)``).

    python tests/clause_tags.py            # list the sites that repeat their clause (exit 1 if any)
    python tests/clause_tags.py --fix      # rewrite those whose tag ends the message, in place

``repeats`` is the lint (tests/unit/test_clause_tags.py runs it over conformance/); ``--fix`` is
the mechanical rewrite, safe to re-run on code written the old way: it moves the tag's call
text into ``call=``, turns ``ClauseFailure(message, clause)`` into ``clause_failure(...)`` and
leaves a site it cannot rewrite (a tag inside the message, a message built by an expression)
listed, for a hand edit (``details=`` carries text after the tag).
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HELPERS = ("check", "clause_failure")


@dataclass(frozen=True)
class Site:
    """A call whose message repeats its clause argument."""

    path: Path
    line: int
    clause: str
    fixable: bool

    def __str__(self) -> str:
        how = "" if self.fixable else " (by hand: the tag is not the message's end)"
        return f"{self.path}:{self.line}: the message repeats its clause [{self.clause}]{how}"


def _name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _parts(call: ast.Call) -> tuple[ast.expr, ast.expr] | None:
    """(message, clause) of a ``check``/``clause_failure``/``ClauseFailure`` call, else None."""
    name = _name(call)
    keywords = {k.arg: k.value for k in call.keywords}
    if name == "check" and len(call.args) >= 2 and "clause" in keywords:
        return call.args[1], keywords["clause"]
    if name == "clause_failure" and call.args and "clause" in keywords:
        return call.args[0], keywords["clause"]
    if name == "ClauseFailure" and len(call.args) >= 2:
        return call.args[0], call.args[1]
    return None


def _clause_forms(clause: ast.expr, source: str) -> list[str]:
    """How a message spells the clause argument inside its tag: the literal ids, or the
    argument's expression as a replacement field (``{CLAUSE}``, ``{', '.join(ids)}``)."""
    if isinstance(clause, ast.Constant) and isinstance(clause.value, str):
        return [clause.value]
    text = ast.get_source_segment(source, clause) or ""
    return ["{" + text + "}", "{', '.join(" + text + ")}", '{", ".join(' + text + ")}"]


def _ids(clause: ast.expr) -> list[str]:
    if isinstance(clause, ast.Constant) and isinstance(clause.value, str):
        return [c.strip() for c in clause.value.split(",") if c.strip()]
    return []


def _literal_text(message: ast.expr) -> str:
    """The literal text of a message (replacement fields left out)."""
    if isinstance(message, ast.Constant) and isinstance(message.value, str):
        return message.value
    if isinstance(message, ast.JoinedStr):
        return "".join(_literal_text(v) for v in message.values if isinstance(v, ast.Constant))
    if isinstance(message, ast.BinOp):
        return _literal_text(message.left) + _literal_text(message.right)
    return ""


def _tag_start(body: str) -> int | None:
    """Index of the ``[`` that opens the tag ending ``body`` (which ends with ``]``), skipping
    brackets inside f-string replacement fields."""
    depth_brace = depth_bracket = 0
    for i in range(len(body) - 1, -1, -1):
        c = body[i]
        if c == "}":
            depth_brace += 1
        elif c == "{":
            depth_brace -= 1
        elif depth_brace == 0 and c == "]":
            depth_bracket += 1
        elif depth_brace == 0 and c == "[":
            depth_bracket -= 1
            if depth_bracket == 0:
                return i
    return None


_STRING = re.compile(r"(?P<prefix>[rRbBfFuU]*)(?P<quote>'''|\"\"\"|'|\")(?P<body>.*)(?P=quote)\Z", re.S)


@dataclass
class _Edit:
    start: int  # offsets into the source
    end: int
    text: str


class _Offsets:
    """Source offsets (characters) of ast positions (a line and a column in UTF-8 bytes)."""

    def __init__(self, source: str) -> None:
        self.lines = source.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def __call__(self, line: int, column: int) -> int:
        return self.starts[line - 1] + len(self.lines[line - 1].encode()[:column].decode())


def _rewrite(call: ast.Call, message: ast.expr, clause: ast.expr, source: str, at: _Offsets) -> list[_Edit] | None:
    """The edits that drop the tag ending ``message`` and pass its call text as ``call=``, or
    None where the site needs a hand edit."""
    if not isinstance(message, (ast.Constant, ast.JoinedStr)) or any(k.arg == "call" for k in call.keywords):
        return None
    m_start = at(message.lineno, message.col_offset)
    m_end = at(message.end_lineno, message.end_col_offset)
    text = source[m_start:m_end]
    # the message's string tokens (implicit concatenation); the last one ends the message
    tokens = list(re.finditer(r"[rRbBfFuU]*('''|\"\"\"|'|\")(?:\\.|(?!\1).)*\1", text, re.S))
    if not tokens or tokens[-1].end() != len(text):
        return None
    last = _STRING.match(tokens[-1].group(0))
    if last is None or "r" in last["prefix"].lower() or not last["body"].endswith("]"):
        return None
    body = last["body"]
    open_at = _tag_start(body)
    if open_at is None:
        return None
    inner = body[open_at + 1 : -1]
    form = next((f for f in _clause_forms(clause, source) if inner == f or inner.startswith(f + ": ")), None)
    if form is None:
        return None
    call_text = inner[len(form) + 2 :] if inner != form else ""
    is_f = "f" in last["prefix"].lower()
    if call_text and "{" in call_text and not is_f:
        return None
    rest = body[:open_at].rstrip(" ")
    edits: list[_Edit] = []
    token_start = m_start + tokens[-1].start()
    if rest or len(tokens) == 1:
        prefix = last["prefix"]
        if is_f and not re.search(r"(?<!\{)\{(?!\{)", rest.replace("{{", "")):
            prefix = prefix.replace("f", "").replace("F", "")
            rest = rest.replace("{{", "{").replace("}}", "}")
        edits.append(_Edit(token_start, m_end, f"{prefix}{last['quote']}{rest}{last['quote']}"))
    else:  # the tag was a token of its own: drop it, and the trailing spaces of the one before
        before = _STRING.match(tokens[-2].group(0))
        if before is None:
            return None
        edits.append(
            _Edit(
                m_start + tokens[-2].start(),
                m_end,
                f"{before['prefix']}{before['quote']}{before['body'].rstrip(' ')}{before['quote']}",
            )
        )
    if call_text:
        whole = re.fullmatch(r"\{([^{}!:]+)\}", call_text)
        value = whole[1] if whole else f"{'f' if '{' in call_text else ''}{last['quote']}{call_text}{last['quote']}"
        call_kw = f", call={value}"
    else:
        call_kw = ""
    c_end = at(call.end_lineno, call.end_col_offset)
    close = source.rindex(")", 0, c_end)
    inside = source[:close].rstrip()
    trailing_comma = inside.endswith(",")
    insert_at = len(inside) - 1 if trailing_comma else len(inside)
    if _name(call) == "ClauseFailure":
        # ClauseFailure(message, clause) -> clause_failure(message, clause=clause[, call=...])
        func = call.func
        f_start = at(func.lineno, func.col_offset)
        f_end = at(func.end_lineno, func.end_col_offset)
        c_start = at(clause.lineno, clause.col_offset)
        edits.append(_Edit(f_start, f_end, "clause_failure"))
        edits.append(_Edit(c_start, c_start, "clause="))
        if len(call.args) > 2 or call.keywords:
            return None
    if call_kw:
        edits.append(_Edit(insert_at, insert_at, call_kw))
    return edits


def scan(path: Path, fix: bool = False) -> list[Site]:
    """The sites of ``path`` whose message repeats its clause; with ``fix``, rewrite the fixable
    ones in place (and return only those left)."""
    source = path.read_text()
    tree = ast.parse(source)
    at = _Offsets(source)
    sites: list[Site] = []
    edits: list[_Edit] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or (parts := _parts(node)) is None:
            continue
        message, clause = parts
        shown = ast.get_source_segment(source, clause) or ""
        literal = _literal_text(message)
        source_text = ast.get_source_segment(source, message) or ""
        repeated = any(re.search(r"\[[^\]]*(?<![\w-])" + re.escape(i) + r"(?![\w-])", literal) for i in _ids(clause))
        repeated = repeated or any(
            f"[{form}" in source_text for form in _clause_forms(clause, source) if form.startswith("{")
        )
        if not repeated:
            continue
        found = _rewrite(node, message, clause, source, at)
        if fix and found:
            edits.extend(found)
            continue
        clause_text = clause.value if isinstance(clause, ast.Constant) else shown
        sites.append(Site(path, node.lineno, str(clause_text), found is not None))
    if fix and edits:
        for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
            source = source[: edit.start] + edit.text + source[edit.end :]
        if "clause_failure(" in source and not re.search(r"def clause_failure\b|import[^)]*\bclause_failure\b", source):
            source = _import_clause_failure(source)
        path.write_text(source)
    return sorted(sites, key=lambda site: site.line)


def _import_clause_failure(source: str) -> str:
    """Add ``clause_failure`` beside ``ClauseFailure`` in the module's import of it (``ruff check
    --fix`` then sorts the names and drops ``ClauseFailure`` where it is no longer used)."""
    pattern = re.compile(r"(from [\w.]*asserts import \(?[^)]*?)\bClauseFailure\b", re.S)
    if not pattern.search(source):
        raise SystemExit("no import of ClauseFailure to add clause_failure to")
    return pattern.sub(r"\1ClauseFailure, clause_failure", source, count=1)


def files(root: Path = ROOT) -> list[Path]:
    """The suite's modules a check can live in: conformance/, golden/ (its cases) and tests/."""
    found = [*root.glob("conformance/**/*.py"), *root.glob("golden/**/*.py")]
    return sorted(p for p in found if "golden/data" not in p.as_posix())


def repeats(root: Path = ROOT) -> list[Site]:
    """Every site under ``root`` whose message repeats its clause argument."""
    return [site for path in files(root) for site in scan(path)]


def main(argv: list[str]) -> int:
    fix = "--fix" in argv
    left = [site for path in files() for site in scan(path, fix=fix)]
    for site in left:
        print(site)
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
