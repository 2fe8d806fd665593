"""SPEC.md as data: its version and its clause ids, parsed in one place.

``spec_version()`` reads the ``Spec version: **X.Y**`` line; ``spec_clauses()`` maps every
clause id (``**[id]** MUST`` / ``**[id]** SHOULD``) to its level. The suite, the golden index
and the conformance report all take the version from here.
"""

from __future__ import annotations

import re
from pathlib import Path

from batchspec.conformance.run.package_data import SPEC as SPEC_PATH

__all__ = [
    "CLAUSE_PATTERN",
    "SPEC_PATH",
    "major",
    "spec_clause_items",
    "spec_clauses",
    "spec_field_clauses",
    "spec_profile_covers",
    "spec_profiles",
    "spec_raising_clauses",
    "spec_signatures",
    "spec_version",
    "split_citation",
]

CLAUSE_PATTERN = re.compile(r"\*\*\[([a-z0-9-]+)\]\*\*\s+(MUST|SHOULD)")
VERSION_PATTERN = re.compile(r"^Spec version: \*\*(\d+\.\d+)\*\*", re.M)


def spec_clauses(path: Path = SPEC_PATH) -> dict[str, str]:
    """Clause id -> level (``"MUST"`` or ``"SHOULD"``), in SPEC order."""
    return {m.group(1): m.group(2) for m in CLAUSE_PATTERN.finditer(path.read_text(encoding="utf-8"))}


def spec_version(path: Path = SPEC_PATH) -> str:
    """The SPEC's version, e.g. ``"1.0"``.

    Raises:
        ValueError: SPEC.md has no ``Spec version: **X.Y**`` line.
    """
    match = VERSION_PATTERN.search(path.read_text(encoding="utf-8"))
    if match is None:
        raise ValueError(f"{path}: no 'Spec version: **X.Y**' line")
    return match.group(1)


def major(version: str) -> int:
    """The major number of an ``X.Y`` version string (``"1.0"`` -> 1).

    Raises:
        ValueError: ``version`` is not of the form ``X.Y`` with integer parts.
    """
    head, dot, tail = str(version).partition(".")
    if not (head.isdigit() and dot and tail.isdigit()):
        raise ValueError(f"a spec version is 'MAJOR.MINOR' (e.g. '1.0'), got {version!r}")
    return int(head)


PROFILE_ROW = re.compile(r"^\| `([a-z0-9_]+)` \| ([^|]+) \| ((?:\[[a-z0-9-]+\](?:, )?)+) \|$", re.M)


def spec_profiles(path: Path = SPEC_PATH) -> dict[str, list[str]]:
    """Profile name -> the clause ids it lists, from the Conformance section's table
    (``| `name` | what it covers | [id], [id] |``). The profile names are the capability names
    a backend declares in ``BATCHSPEC_CAPABILITIES``."""
    text = path.read_text(encoding="utf-8")
    return {m.group(1): re.findall(r"\[([a-z0-9-]+)\]", m.group(3)) for m in PROFILE_ROW.finditer(text)}


def spec_profile_covers(path: Path = SPEC_PATH) -> dict[str, str]:
    """Profile name -> what it covers, in the Conformance section's table order: the table's
    second column with its code marks dropped (``"get_unpad_data"``, ``"convert_text_batch(output_format=\"thd\")"``)."""
    text = path.read_text(encoding="utf-8")
    return {m.group(1): m.group(2).strip().replace("`", "") for m in PROFILE_ROW.finditer(text)}


FIELD_ROW = re.compile(r"^\| `([a-z_]+)` \|(?:[^|]*\|){4} ((?:\[[a-z0-9-]+\](?: \([0-9a-z]+\))?(?:, )?)+) \|$", re.M)


def spec_field_clauses(path: Path = SPEC_PATH) -> dict[str, dict[str, str | None]]:
    """``TrainingBatch`` field -> {clause id: the condition it applies under (a dtype such as
    ``bool``, or ``xdoc`` / ``unpacked``), or None for always}, from the last column of section
    3's field table (``[batched-block-causal] (bool)``): the clauses that define the field's
    values, on which the suite blames a field that differs."""
    text = path.read_text(encoding="utf-8")
    return {
        m.group(1): {c: dtype or None for c, dtype in re.findall(r"\[([a-z0-9-]+)\](?: \(([0-9a-z]+)\))?", m.group(2))}
        for m in FIELD_ROW.finditer(text)
    }


ITEM_PATTERN = re.compile(r"(?:^[ \t]*|[:;][ \t]+)(\d+)\. ", re.M)


def spec_clause_items(path: Path = SPEC_PATH) -> dict[str, set[int]]:
    """Clause id -> the numbers of its enumerated items (``1. …``, ``2. …``; empty when the
    clause is not a list). A check cites an item as ``"ctb-input-errors.3"``."""
    text = path.read_text(encoding="utf-8")
    starts = list(CLAUSE_PATTERN.finditer(text))
    items: dict[str, set[int]] = {}
    for index, match in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else len(text)
        body = text[match.end() : end].split("\n\n")[0]  # the clause's own paragraph(s) of list items
        body = re.split(r"\n- |\n#", body)[0]
        numbers = {int(n) for n in ITEM_PATTERN.findall(body)}
        items[match.group(1)] = numbers if numbers == set(range(1, len(numbers) + 1)) else set()
    return items


def split_citation(citation: str) -> tuple[str, int | None]:
    """``"ctb-input-errors.3"`` -> ``("ctb-input-errors", 3)``; ``"ctb-shift"`` -> ``("ctb-shift", None)``."""
    clause, dot, item = citation.partition(".")
    return clause, (int(item) if dot and item.isdigit() else None)


SIGNATURE_ROW = re.compile(r"^  \| `([A-Za-z_.]+)` \| `(\(.*\))` \| `([a-z_]+)` \|$", re.M)


def spec_signatures(path: Path = SPEC_PATH) -> dict[str, tuple[str, str]]:
    """Name -> (signature text, profile), from the table of [api-signatures]
    (``| `name` | `(a, b=1, *, c)` | `profile` |``)."""
    text = path.read_text(encoding="utf-8")
    return {m.group(1): (m.group(2), m.group(3)) for m in SIGNATURE_ROW.finditer(text)}


RAISING_PARAGRAPH = re.compile(r"^\*\*Raising on a valid input\.\*\*(.*?)(?:\n\n)", re.M | re.S)
RAISING_PAIR = re.compile(r"\[([a-z0-9-]+)\]\s+\(`([A-Za-z_.]+)`\)")


def spec_raising_clauses(path: Path = SPEC_PATH) -> dict[str, str]:
    """Function -> the clause that lists every fault it raises for, from the Conformance
    section's paragraph "Raising on a valid input" (``[unpad-errors] (`get_unpad_data`)``): an
    exception the function raises on an input with none of those faults is blamed on it.

    Raises:
        ValueError: SPEC.md has no such paragraph, or it pairs no clause with a function.
    """
    match = RAISING_PARAGRAPH.search(path.read_text(encoding="utf-8"))
    pairs = RAISING_PAIR.findall(match.group(1)) if match else []
    if not pairs:
        raise ValueError(f"{path}: no '**Raising on a valid input.**' paragraph pairing [clause] (`function`)")
    return {function: clause for clause, function in pairs}
