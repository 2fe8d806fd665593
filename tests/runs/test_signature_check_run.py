"""The suite's signature check on a run (the run of ``tests/unit/test_signature_check.py``): a
planted backend whose ``collate_datums`` takes its options positionally fails
[collate-keyword-only] and [api-signatures], and nothing else.
"""

from __future__ import annotations

import os

from _suite import run_conformance


def test_the_suite_blames_the_signature_clause_of_a_planted_backend(tmp_path):
    module = tmp_path / "positional_collate.py"
    module.write_text(
        "from batchspec.reference import *  # noqa: F403\n"
        "from batchspec.reference import BATCHSPEC_CAPABILITIES, BATCHSPEC_SPEC_VERSION  # noqa: F401\n"
        "from batchspec import reference\n\n"
        "def collate_datums(datums, packed=False, pad_seq_len_divisible=None, ignore_index=-100):\n"
        "    return reference.collate_datums(datums, packed=packed, pad_seq_len_divisible=pad_seq_len_divisible,\n"
        "                                    ignore_index=ignore_index)\n",
        encoding="utf-8",
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    run = run_conformance(tmp_path, "conformance/test_contract_signatures.py", "--backend=positional_collate", env=env)
    assert run.returncode == 1, run.output[-3000:]
    statuses = {cid: row["status"] for cid, row in run.report["clauses"].items()}
    assert statuses["collate-keyword-only"] == "FAIL" and statuses["api-signatures"] == "FAIL", statuses
    assert statuses["datum-to-features"] == "pass", statuses
