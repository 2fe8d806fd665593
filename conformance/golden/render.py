"""SPEC rendering: SPEC.md's ``<!-- golden:NAME -->`` blocks, each rendered from a canon case
(its options, inputs and expected values), so the worked examples and the goldens never drift."""

from __future__ import annotations

import json
import re
from typing import Any

import torch

from batchspec.conformance.golden.api import Case
from batchspec.conformance.golden.errors import GoldenError
from batchspec.conformance.helpers.storage import tensors_in
from batchspec.conformance.run.package_data import REGENERATE

__all__ = ["BLOCK", "render_case", "render_spec"]

BLOCK = re.compile(r"<!-- golden:(test_[a-z0-9_]+) -->\n.*?<!-- /golden -->", re.DOTALL)


def _render_value(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        if value.dtype == torch.bool:
            text = json.dumps(value.tolist()).replace("true", "T").replace("false", "F")
        else:
            text = json.dumps(value.tolist())
        text = text.replace(" ", "")
        dtype = str(value.dtype).removeprefix("torch.")
        return f"{dtype} `{text}`"
    return f"`{json.dumps(value)}`"


def render_case(case: Case) -> str:
    """The Markdown of a canon case: options, then one bullet per expected key."""
    if case.kind != "canon" or case.expected is None:
        raise GoldenError(f"SPEC.md may only render canon cases with expected values; {case.name} is not one")
    opts = ", ".join(f"{k}={json.dumps(v)}" for k, v in case.options.items())
    lines = [
        f"<!-- golden:{case.name} -->",
        f"*Rendered from golden case `{case.name}` ({case.generator}); edit the case, then run "
        f"`{REGENERATE} --render-spec`.* `{case.function}({opts})` →",
        "",
    ]
    for path, value in tensors_in(case.inputs).items():
        lines.append(f"- input `{path}` {_render_value(value)}")
    for index, row in enumerate(case.inputs.get("rows", [])):
        lines.append(f"- input `rows.{index}.padding_length` `{json.dumps(row['padding_length'])}`")
    for key, value in case.expected.items():
        if isinstance(value, torch.Tensor) and value.dim() == 4:
            lines.append(
                f"- `{key}` {str(value.dtype).removeprefix('torch.')} {list(value.shape)}, rows per query: "
                + "; ".join(
                    "`" + " ".join("".join("1" if x else "." for x in q) for q in b[0].tolist()) + "`" for b in value
                )
            )
        else:
            lines.append(f"- `{key}` {_render_value(value)}")
    lines.append("<!-- /golden -->")
    return "\n".join(lines)


def render_spec(text: str, cases: list[Case]) -> str:
    """``text`` (SPEC.md) with every golden block re-rendered from its case."""
    by_name = {c.name: c for c in cases}

    def replace(match: re.Match) -> str:
        name = match.group(1)
        if name not in by_name:
            raise GoldenError(f"SPEC.md renders golden case {name!r}, which no golden/cases/*.py defines")
        return render_case(by_name[name])

    return BLOCK.sub(replace, text)
