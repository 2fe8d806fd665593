"""``vectorized``'s fast paths really run on the suite's inputs, and only its named delegations
(backends/vectorized/README.md) hand a call to the reference (issue 32: a fast path that
crashed or delegated silently would keep the output right and make the cost the reference's).

The counts come from the session's vectorized run (tests/conftest.py sets
``BATCHSPEC_VECTORIZED_PATHS`` for it; backends/vectorized/paths.py writes them): no extra run.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VECTORIZED = ROOT / "backends" / "vectorized"

# function with a fast path -> the least share of its calls in the suite that must take it
FAST_SHARE = {"default_collater": 0.9, "packed_sequence_thd_collater": 0.9, "collate_datums": 0.85}


def _readme_names() -> set[str]:
    """The delegation names of the README's table (its second column)."""
    text = (VECTORIZED / "README.md").read_text(encoding="utf-8")
    return set(re.findall(r"^\|[^|]*\| `([a-z0-9-]+)` \|", text, flags=re.MULTILINE))


def _source_names() -> set[str]:
    """Every name a fast path raises ``Delegate`` with."""
    names: set[str] = set()
    for path in VECTORIZED.glob("*.py"):
        names |= set(re.findall(r'Delegate\(\s*"([a-z0-9-]+)"', path.read_text(encoding="utf-8")))
    return names


def counts(folder: Path) -> Counter[str]:
    """``function:path`` -> calls, summed over the run's processes."""
    total: Counter[str] = Counter()
    for line in (folder / "paths.jsonl").read_text(encoding="utf-8").splitlines():
        total.update(json.loads(line))
    return total


def test_every_delegation_is_named_in_the_readme():
    assert _source_names(), "no Delegate(...) found: the pattern no longer reads the code"
    assert _source_names() == _readme_names()


def test_the_fast_paths_run_on_most_of_the_suites_inputs(vectorized_run):
    assert vectorized_run.returncode == 0, vectorized_run.output[-3000:]
    assert vectorized_run.folder is not None
    found = counts(vectorized_run.folder)
    named = _readme_names()
    for key in found:
        function, path = key.split(":")
        assert function in FAST_SHARE, key
        assert path == "fast" or path in named, f"{key}: not a delegation README.md names"
    for function, least in FAST_SHARE.items():
        calls = sum(n for key, n in found.items() if key.startswith(f"{function}:"))
        fast = found[f"{function}:fast"]
        assert calls >= 100, f"{function}: only {calls} calls in the suite's run"
        assert fast / calls >= least, f"{function}: fast path on {fast}/{calls} calls, {dict(found)}"


def test_the_reader_counts_a_planted_file(tmp_path):
    (tmp_path / "paths.jsonl").write_text('{"collate_datums:fast": 3}\n{"collate_datums:fast": 2, "x:y": 1}\n')
    assert counts(tmp_path) == Counter({"collate_datums:fast": 5, "x:y": 1})
