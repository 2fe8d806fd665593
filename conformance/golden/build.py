"""Generation: a case's files from the reference. A canon case's hand-written expectation (or
error) is checked against the reference, never replaced by it; a generated case's expected
value is the reference's output, refused when the reference raised or mutated its inputs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from batchspec.conformance.golden.adapters import adapter, call, capabilities_of
from batchspec.conformance.golden.api import Case
from batchspec.conformance.golden.discovery import all_cases
from batchspec.conformance.golden.errors import GoldenError, error_record, error_type
from batchspec.conformance.golden.file_format import case_files, index_bytes, plain, split
from batchspec.conformance.helpers.asserts import assert_equal, assert_keys, assert_raises
from batchspec.conformance.run.spec import spec_version

__all__ = ["all_files", "build_files", "raised_outcomes"]


def raised_outcomes(output: Any, path: str = "output") -> list[str]:
    """Where a scripted output (``ZephonDataLoader``, ``ZephonDataLoader.state``) records a
    raised error (``{"raised": ...}``)."""
    if isinstance(output, Mapping):
        if "raised" in output:
            return [f"{path}: {output['raised']}"]
        return [hit for key, value in output.items() for hit in raised_outcomes(value, f"{path}.{key}")]
    if isinstance(output, (list, tuple)):
        return [hit for i, value in enumerate(output) for hit in raised_outcomes(value, f"{path}[{i}]")]
    return []


def _expected(case: Case, reference: Any, where: str) -> tuple[Any, list[str] | None]:
    """The expected tree and pinned keys to store: the canon expectation once the reference
    agrees with it, or the reference's output for a generated case."""
    call_text = f"{case.function}(golden case {case.name})"
    if case.error is not None:
        try:
            assert_raises(
                error_type(case.error[0]),
                tuple(case.error[1]),
                lambda: call(reference, case.function, case.inputs, case.options),
                clause="golden",
            )
        except AssertionError as error:
            raise GoldenError(f"canon case {where}: the reference disagrees: {error}") from None
        return None, None
    try:
        output, mutated = call(reference, case.function, case.inputs, case.options)
    except Exception as error:
        raise GoldenError(
            f"case {where}: the reference raised {type(error).__name__}: {error} (a call that must raise is a "
            "canon case with error=(type, facts); a scripted case records errors only when it declares "
            "expects_error=True)"
        ) from None
    if mutated:
        raise GoldenError(f"case {where}: the reference mutated its inputs: {mutated}")
    if case.expected is not None:
        keys = list(case.keys) if case.keys else None
        try:
            assert_equal(output, case.expected, clause="canon", call=call_text)
            if keys is not None:
                ordered = adapter(case.function).ordered_keys
                assert_keys(output, keys, clause="canon", call=call_text, ordered=ordered)
        except AssertionError as error:
            raise GoldenError(
                f"canon case {where}: the reference disagrees with the hand-written expectation, so nothing "
                f"was written (canon is never regenerated; fix the reference or the case): {error}"
            ) from None
        return plain(case.expected), keys
    raised = raised_outcomes(output)
    if raised and not case.expects_error:
        raise GoldenError(
            f"generated case {where}: the reference raised ({'; '.join(raised)}), but the case does not "
            "declare expects_error=True: a generated case that silently records an error tests nothing it "
            "claims to; fix its inputs, or declare the error it expects"
        )
    if case.expects_error and not raised:
        raise GoldenError(f"generated case {where}: declares expects_error=True, but the reference raised nothing")
    return plain(output), (list(output) if isinstance(output, Mapping) else None)


def build_files(case: Case, version: str, reference: Any = None) -> dict[str, bytes]:
    """The three files of ``case`` (relative to golden/). Canon: the reference must agree with
    the hand-written expectation, else ``GoldenError``; generated: the reference's output."""
    if reference is None:
        from batchspec import reference as reference_module

        reference = reference_module
    expected_tree, keys = _expected(case, reference, f"{case.generator} ({case.name})")
    input_tensors: dict[str, torch.Tensor] = {}
    expected_tensors: dict[str, torch.Tensor] = {}
    record = {
        "case": case.name,
        "kind": case.kind,
        "function": case.function,
        "clauses": list(case.clauses),
        "capabilities": list(capabilities_of(case.function, case.options)),
        "description": case.description,
        "generator": case.generator,
        **({"source": case.source} if case.source is not None else {}),  # only cases with a source carry it
        "spec_version": version,
        "options": split(dict(case.options), "options", {}),
        "inputs": split(dict(case.inputs), "", input_tensors),
        "expected": split(expected_tree, "", expected_tensors),
        "keys": keys,
        "error": error_record(case.error),
    }
    return case_files(case.name, record, input_tensors, expected_tensors)


def all_files(cases: list[Case] | None = None) -> dict[str, bytes]:
    """Every case's files and ``index.json``, by path relative to golden/."""
    version = spec_version()
    files: dict[str, bytes] = {}
    for case in cases if cases is not None else all_cases():
        files.update(build_files(case, version))
    files["index.json"] = index_bytes(files, version)
    return files
