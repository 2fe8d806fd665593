"""``batchspec check-model``: the model-level equivalence check on your model configuration.

    batchspec check-model --config PATH [--backend NAME] [--attention sdpa,eager]
                          [--routes block_causal,...] [--device cpu] [--dtype float64]
                          [--kernel emulated] [--seed 0]

``PATH`` is a transformers configuration: a ``config.json`` or a local model directory holding
one (nothing is downloaded; weights are never read: the model is built from the configuration
with fixed-seed random weights as sharp as the tiny models', whatever its ``initializer_range``,
so that a wrong key or position shows). The backend's batches of the corpus go through the model on
every route it declares, under each ``--attention`` implementation for the mask routes and the
varlen kernel (``--kernel``: ``emulated`` on any device, ``torch_varlen`` for torch's flash
varlen kernel on CUDA) for the metadata and THD routes; the table says per route and
implementation whether every document trains as alone, with the largest difference, or where
it does not. On the CPU a configuration larger than ``models.CPU_LIMITS`` is shrunk (fewer
layers, a narrower width) and the command says what it changed. The mRoPE routes run when the
configuration has mRoPE (an ``mrope_section``), the absolute-positions route when its model
learns absolute position embeddings (GPT-2); else they are listed as not applicable.

Exit status: 0 when every route run is equivalent, 1 when one is not, 2 on a usage error or
when the check itself cannot run (the reference's own keys fail the forward pass).
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="batchspec check-model",
        description="Check that a backend's packed batches train your model exactly as each document alone.",
    )
    parser.add_argument("--config", required=True, help="a transformers config.json, or a model directory holding one")
    parser.add_argument("--backend", default="reference", help="the backend whose batches are fed (default reference)")
    parser.add_argument("--attention", default="sdpa,eager", help="attention implementations of the mask routes")
    parser.add_argument("--routes", default="", help="routes to run, comma-separated (default: every declared one)")
    parser.add_argument("--device", default="cpu", help="where the model runs (cpu, cuda)")
    parser.add_argument("--dtype", default=None, help="float64 (default on cpu), float32, bfloat16 (default elsewhere)")
    parser.add_argument("--kernel", default="emulated", help="the varlen kernel: emulated, torch_varlen (CUDA)")
    parser.add_argument("--seed", type=int, default=0, help="the weights' random seed")
    return parser


def _cell(result) -> str:
    if result is None:
        return "-"
    if result.equivalent:
        return f"equivalent ({result.largest:.1e})"
    return f"NOT equivalent ({len(result.mismatches)})"


class _UsageError(Exception):
    """A usage error, or a check that cannot run: printed, exit status 2."""


def main(argv: list[str] | None = None) -> int:
    """Run the check and print the table; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        return _check(args)
    except _UsageError as error:
        print(f"batchspec check-model: {error}", file=sys.stderr)
        return 2


def _check(args: argparse.Namespace) -> int:
    """The check of ``main``: raises ``_UsageError`` for exit status 2."""
    from batchspec.conformance.model.models import build_model, fit_for_cpu, load_config, position_kind
    from batchspec.conformance.run.backends import BackendError, load_backend

    try:
        config = load_config(args.config)
        backend = load_backend(args.backend)
    except (ValueError, BackendError) as error:
        raise _UsageError(str(error)) from error
    dtype = _dtype(args)
    implementations, wanted = _selection(args, dtype)
    changes: list[str] = []
    if args.device == "cpu":
        config, changes = fit_for_cpu(config)
    config, spread, sharpened = _sharpened(config)
    try:
        model = build_model(config, seed=args.seed, dtype=dtype, device=args.device)
    except ValueError as error:
        raise _UsageError(str(error)) from error
    kind = position_kind(config)
    print(
        f"batchspec check-model: {config['model_type']} from {args.config}, backend {backend.name} "
        f"{backend.version}, {str(dtype).removeprefix('torch.')} on {args.device}, seed {args.seed}"
    )
    if changes:
        print("  too large for a CPU check; shrunk to: " + ", ".join(changes))
    if sharpened:
        print(
            f"  random weights of std {spread} (initializer_range): sharp attention, so a wrong key or position shows"
        )
    columns = [*implementations, f"varlen ({args.kernel})"]
    started = time.monotonic()
    rows, failures = _run_routes(backend, model, kind, wanted, columns, args.kernel)
    _print_table(rows, columns)
    print(f"  ({time.monotonic() - started:.1f} s; differences relative to max(1, |logit|) of each document)")
    if failures:
        print(f"\n{len(failures)} differences; the first:")
        for mismatch in failures[:10]:
            print(f"  {mismatch}")
        print("verdict: NOT equivalent")
        return 1
    print("verdict: every route run is equivalent")
    return 0


def _dtype(args: argparse.Namespace) -> torch.dtype:
    """``--dtype`` (float64 on the CPU, else bfloat16 by default), checked with ``--kernel``."""
    from batchspec.conformance.model import wiring
    from batchspec.conformance.model.evaluation import TOLERANCES

    dtypes = {str(d).removeprefix("torch."): d for d, _ in TOLERANCES}
    dtype = dtypes.get(args.dtype or ("float64" if args.device == "cpu" else "bfloat16"))
    if dtype is None:
        raise _UsageError(f"--dtype {args.dtype!r}: one of {sorted(dtypes)}")
    if args.kernel not in wiring.KERNELS:
        raise _UsageError(f"--kernel {args.kernel!r}: one of {sorted(wiring.KERNELS)}")
    if args.kernel == "torch_varlen" and (not args.device.startswith("cuda") or dtype not in (torch.bfloat16,)):
        raise _UsageError("--kernel torch_varlen is a flash kernel: --device cuda --dtype bfloat16")
    return dtype


def _selection(args: argparse.Namespace, dtype: torch.dtype) -> tuple[list[str], list[str]]:
    """``(attention implementations, wanted routes)`` of ``--attention`` and ``--routes``, each known."""
    from batchspec.conformance.model.evaluation import TOLERANCES
    from batchspec.conformance.model.routes import ROUTES

    implementations = [a for a in args.attention.split(",") if a]
    wanted = [r for r in args.routes.split(",") if r]
    unknown = sorted(set(wanted) - {r.name for r in ROUTES})
    if unknown or any((dtype, a) not in TOLERANCES for a in implementations):
        known = sorted({a for d, a in TOLERANCES if d == dtype})
        raise _UsageError(
            f"unknown routes {unknown} (known: {[r.name for r in ROUTES]}), "
            f"or an attention implementation without a {dtype} tolerance (known: {known})"
        )
    return implementations, wanted


def _sharpened(config: dict) -> tuple[dict, float, bool]:
    """``config`` with random weights as sharp as the tiny models' (their spread, scaled to this
    width): attention far from uniform, so a wrong key or position shows. Returns ``(config,
    spread, whether the spread changed)``."""
    from batchspec.conformance.model.models import tiny_llama_config

    tiny = tiny_llama_config()
    spread = round(tiny["initializer_range"] * (tiny["hidden_size"] / int(config["hidden_size"])) ** 0.5, 4)
    sharpened = config.get("initializer_range") != spread
    return {**config, "initializer_range": spread}, spread, sharpened


def _run_routes(backend, model, kind: str, wanted: list[str], columns: list[str], kernel: str):
    """Per route: its name and each column's cell (a result, a note, or None: the column does not
    apply), and every mismatch found. The last column is the varlen kernel's."""
    from batchspec.conformance.helpers.asserts import SuiteError
    from batchspec.conformance.model.equivalence import RouteResult, check_route
    from batchspec.conformance.model.evaluation import Mismatch
    from batchspec.conformance.model.routes import ROUTES

    varlen = columns[-1]
    rows: list[tuple[str, dict[str, RouteResult | str | None]]] = []
    failures: list[Mismatch] = []
    for route in ROUTES:
        if wanted and route.name not in wanted:
            continue
        missing = [c for c in route.requires if not backend.supports(c)]
        if missing:
            rows.append((route.name, {c: "not declared" for c in columns}))
            continue
        if route.model not in ("rope", kind):
            # the plain routes run on any model; these need the positions of their own kind
            rows.append((route.name, {c: f"n/a (not {route.model})" for c in columns}))
            continue
        cells: dict[str, RouteResult | str | None] = {}
        for column in columns:
            if (route.feed == "mask") != (column != varlen):
                cells[column] = None
                continue
            implementation = route.implementations[0] if column == varlen else column
            try:
                result = check_route(backend, route, model, implementation, kernel=kernel)
            except SuiteError as error:
                raise _UsageError(f"route {route.name} ({implementation}): {error}") from error
            cells[column] = result
            failures.extend(result.mismatches)
        rows.append((route.name, cells))
    return rows, failures


def _print_table(rows, columns) -> None:
    text = [["route", *columns]]
    for name, cells in rows:
        text.append([name, *(c if isinstance(c, str) else _cell(c) for c in (cells.get(k) for k in columns))])
    widths = [max(len(r[i]) for r in text) for i in range(len(columns) + 1)]
    for k, row in enumerate(text):
        print("  " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths)))
        if k == 0:
            print("  " + "-|-".join("-" * w for w in widths))


if __name__ == "__main__":
    raise SystemExit(main())
