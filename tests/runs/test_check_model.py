"""``batchspec check-model`` (conformance/model/cli.py): the table, the verdict's exit status, a
failure that names the route, row and span, the shrinking of a configuration too large for a CPU,
and its usage errors. In-process (``cli.main``), on a few routes, to stay quick."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from batchspec.conformance.model.cli import main
from batchspec.conformance.model.models import CPU_LIMITS, fit_for_cpu, tiny_llama_config

MUTANTS = Path(__file__).resolve().parents[1] / "mutants"


@pytest.fixture
def tiny(tmp_path) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(tiny_llama_config()), encoding="utf-8")
    return path


def test_a_tiny_llama_is_equivalent_on_every_route_it_runs(tiny, capsys):
    status = main(
        ["--config", str(tiny), "--backend", "reference", "--routes", "block_causal,metadata,mrope,absolute_positions"]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    lines = {line.split("|")[0].strip(): line for line in out.splitlines() if "|" in line}
    assert "equivalent (" in lines["block_causal"] and "NOT" not in lines["block_causal"]
    assert lines["block_causal"].count("equivalent") == 2, "sdpa and eager"
    assert "equivalent (" in lines["metadata"]
    assert "n/a (not mrope)" in lines["mrope"], "a Llama has no mRoPE: the routes are listed as not applicable"
    assert "n/a (not absolute)" in lines["absolute_positions"], "nor learned absolute position embeddings"
    assert "shrunk" not in out and "verdict: every route run is equivalent" in out


def test_a_backend_that_breaks_meaning_fails_naming_route_row_and_span(tiny, capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(MUTANTS))
    status = main(
        ["--config", str(tiny), "--backend", "m_ctb_packed_token_indices_row_shift:BACKEND", "--routes", "metadata"]
    )
    out = capsys.readouterr().out
    assert status == 1, out
    assert "NOT equivalent" in out and "verdict: NOT equivalent" in out
    failure = next(line for line in out.splitlines() if line.strip().startswith("route metadata"))
    assert "row 1" in failure and "document tokens" in failure and "[batched-metadata]" in failure
    sys.modules.pop("m_ctb_packed_token_indices_row_shift", None)


def test_a_configuration_too_large_for_a_cpu_is_shrunk_and_says_so():
    big = {**tiny_llama_config(), "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8}
    big.update(num_hidden_layers=32, intermediate_size=14336, vocab_size=128256, bos_token_id=128000)
    fitted, changes = fit_for_cpu(big)
    assert all(int(fitted[key]) <= limit for key, limit in CPU_LIMITS.items())
    assert fitted["num_attention_heads"] // fitted["num_key_value_heads"] == 4, "GQA keeps its ratio"
    assert fitted["bos_token_id"] is None, "a special id outside the shrunk vocabulary is dropped"
    assert "hidden_size 4096 -> 64" in changes and "num_hidden_layers 32 -> 2" in changes
    assert fit_for_cpu(tiny_llama_config()) == (tiny_llama_config(), [])


def test_usage_errors_exit_2(tmp_path, tiny, capsys):
    assert main(["--config", str(tmp_path / "missing.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{}", encoding="utf-8")
    assert main(["--config", str(tmp_path / "bad.json")]) == 2
    assert "model_type" in capsys.readouterr().err
    assert main(["--config", str(tiny), "--routes", "no_such_route"]) == 2
    assert "no_such_route" in capsys.readouterr().err
    assert main(["--config", str(tiny), "--kernel", "torch_varlen"]) == 2, "a flash kernel needs CUDA and bfloat16"
    assert "torch_varlen" in capsys.readouterr().err
    assert main(["--config", str(tiny), "--dtype", "int8"]) == 2
    assert "bfloat16" in capsys.readouterr().err
