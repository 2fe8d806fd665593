"""Turn a pytest-benchmark JSON file into a Markdown report and PNG plots.

Usage::

    python bench/report.py RESULTS.json [--out DIR]

writes, into ``DIR`` (default: the folder of ``RESULTS.json``):

* ``report.md``: the machine the numbers come from, then one table per benchmark family with one
  row per (workload, implementation): median time, throughput, speed-up against ``reference``,
  ``upstream`` and ``zephon.to_training``, distance from the memory floor, operator count,
  bytes materialised per token and, for block_causal workloads, the bytes of the dense mask;
* ``throughput.png``: tokens/s of every implementation on every ``convert`` workload, with the
  memory floor of each workload drawn as tokens/s;
* ``documents_per_row.png``: median time against documents per row for the ``docs_per_row``
  family (a flat line means no per-document cost).

A plot without data to draw (no ``convert`` or no ``docs_per_row`` benchmarks) is not written.

The benchmarks' ``extra_info`` carries the schema the harness in ``bench/`` writes: ``workload``,
``family``, ``implementation``, ``kind`` (``backend``/``comparator``), ``tokens`` or ``items``,
``shape``, ``route``, ``payload``, ``documents_per_row``, ``ops``, ``bytes_materialised``,
``floor_bytes``, ``mask_bytes`` and ``peak_memory_bytes``; any of them may be absent or None,
which leaves its cell blank. ``machine_info["batchspec"]`` may carry the copy bandwidth
(``copy_bandwidth_bytes_per_s``) the floor time ``floor_bytes / bandwidth`` is computed from.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shlex
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

REPORT_NAME = "report.md"
THROUGHPUT_PNG = "throughput.png"
DOCS_PER_ROW_PNG = "documents_per_row.png"

#: Families in the order their tables appear; families not listed follow, sorted by name.
FAMILY_ORDER = ("convert", "docs_per_row", "metadata", "unpad", "collate", "loader")
#: Comparators in the order their rows appear (after every backend); others follow, sorted.
COMPARATOR_ORDER = ("upstream", "zephon.to_training", "hf.DataCollatorWithFlattening", "ingest")
#: Backends listed first among the backends; others follow, sorted.
BACKEND_ORDER = ("reference", "vectorized", "native")
#: Implementations each row's speed-up is computed against: (column header, implementation).
BASELINES = (("× reference", "reference"), ("× upstream", "upstream"), ("× zephon", "zephon.to_training"))
#: Keys that may hold the command line the results were produced with.
COMMAND_KEYS = ("command", "command_line", "cmdline", "argv")


# --------------------------------------------------------------------------------------------
# formatting


def _num(value: Any) -> float | None:
    """``value`` as a finite float, or None (for None, non-numbers, NaN and infinities)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def fmt_sig(value: float | None, digits: int = 3) -> str:
    """``value`` rounded to ``digits`` significant digits, in plain (not scientific) notation.

    ``fmt_sig(1234.5) == "1230"``, ``fmt_sig(0.0012345) == "0.00123"``, ``fmt_sig(4) == "4.00"``;
    None gives an empty string.
    """
    if value is None:
        return ""
    if value == 0:
        return "0" if digits <= 1 else "0." + "0" * (digits - 1)
    exponent = math.floor(math.log10(abs(value)))
    rounded = round(value, digits - 1 - exponent)
    if rounded != 0 and math.floor(math.log10(abs(rounded))) != exponent:  # 9.996 -> 10.0
        exponent += 1
    decimals = max(0, digits - 1 - exponent)
    return f"{rounded:.{decimals}f}"


def fmt_count(value: float | None) -> str:
    """A count: whole numbers as they are (``"1024"``), others to three significant digits; None -> ``""``."""
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else fmt_sig(value)


def fmt_ratio(value: float | None) -> str:
    """A ratio as ``"4.00×"`` (three significant digits); None gives an empty string."""
    return "" if value is None else fmt_sig(value) + "×"


def fmt_si(value: float | None) -> str:
    """A rate with a decimal SI prefix and three significant digits: ``"26.2M"``; None -> ``""``."""
    if value is None:
        return ""
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor * 0.9995:
            return fmt_sig(value / factor) + prefix
    return fmt_sig(value)


def fmt_bytes(value: float | None) -> str:
    """A byte count with a binary prefix and three significant digits: ``"256 MiB"``; None -> ``""``."""
    if value is None:
        return ""
    for factor, unit in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if abs(value) >= factor * 0.9995:
            return f"{fmt_sig(value / factor)} {unit}"
    return f"{int(value)} B" if float(value).is_integer() else f"{fmt_sig(value)} B"


def _cell(text: str) -> str:
    """``text`` made safe for a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _natural_key(text: str) -> tuple:
    """Sort key that orders the digit runs of ``text`` by value (``d=16`` before ``d=128``)."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text) if part)


# --------------------------------------------------------------------------------------------
# reading the results


@dataclass(frozen=True)
class Row:
    """One benchmark: a (workload, implementation) pair and what was measured of it."""

    workload: str
    family: str
    implementation: str
    kind: str
    median_s: float | None
    tokens: float | None
    items: float | None
    shape: str | None
    route: str | None
    payload: str | None
    documents_per_row: float | None
    ops: float | None
    bytes_materialised: float | None
    floor_bytes: float | None
    mask_bytes: float | None
    peak_memory_bytes: float | None
    conversion_share: float | None = None  # loader: the share of the time spent in convert_text_batch

    @property
    def units(self) -> float | None:
        """What one call processes: tokens, or items where tokens do not apply."""
        return self.tokens if self.tokens is not None else self.items

    @property
    def unit_name(self) -> str | None:
        """``"token"`` or ``"item"``: what :attr:`units` counts (None when neither is known)."""
        if self.tokens is not None:
            return "token"
        return "item" if self.items is not None else None

    @property
    def throughput(self) -> float | None:
        """Tokens (or items) per second at the median time."""
        if self.units is None or not self.median_s:
            return None
        return self.units / self.median_s

    @property
    def bytes_per_unit(self) -> float | None:
        """Bytes materialised per token (or per item)."""
        if self.bytes_materialised is None or not self.units:
            return None
        return self.bytes_materialised / self.units

    @property
    def is_block_causal(self) -> bool:
        """Whether the workload writes a dense block_causal mask."""
        return self.mask_bytes is not None or "block_causal" in f"{self.workload} {self.route or ''}"


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _kind(implementation: str, declared: Any) -> str:
    if declared in ("backend", "comparator"):
        return declared
    return "comparator" if implementation in COMPARATOR_ORDER else "backend"


def parse_rows(results: dict) -> list[Row]:
    """The benchmarks of a pytest-benchmark results dict as :class:`Row` s.

    A benchmark without the harness's ``extra_info`` still gets a row: its workload falls back to
    its group or name, its family to ``"other"`` and its implementation to its name.
    """
    rows = []
    for bench in results.get("benchmarks") or []:
        extra = bench.get("extra_info") or {}
        stats = bench.get("stats") or {}
        name = str(bench.get("name") or bench.get("fullname") or "?")
        workload = str(extra.get("workload") or bench.get("group") or name)
        implementation = str(extra.get("implementation") or name)
        rows.append(
            Row(
                workload=workload,
                family=str(extra.get("family") or (workload.split("/")[0] if "/" in workload else "other")),
                implementation=implementation,
                kind=_kind(implementation, extra.get("kind")),
                median_s=_num(stats.get("median")),
                tokens=_num(extra.get("tokens")),
                items=_num(extra.get("items")),
                shape=_str(extra.get("shape")),
                route=_str(extra.get("route")),
                payload=_str(extra.get("payload")),
                documents_per_row=_num(extra.get("documents_per_row")),
                ops=_num(extra.get("ops")),
                bytes_materialised=_num(extra.get("bytes_materialised")),
                floor_bytes=_num(extra.get("floor_bytes")),
                mask_bytes=_num(extra.get("mask_bytes")),
                peak_memory_bytes=_num(extra.get("peak_memory_bytes")),
                conversion_share=_num(extra.get("conversion_share")),
            )
        )
    return rows


def implementation_key(implementation: str, kind: str) -> tuple:
    """Sort key of implementations: backends (``reference`` first), then comparators."""
    order = BACKEND_ORDER if kind == "backend" else COMPARATOR_ORDER
    rank = order.index(implementation) if implementation in order else len(order)
    return (0 if kind == "backend" else 1, rank, implementation)


def _row_key(row: Row) -> tuple:
    return (_natural_key(row.workload), implementation_key(row.implementation, row.kind))


def _family_key(family: str) -> tuple:
    return (FAMILY_ORDER.index(family), "") if family in FAMILY_ORDER else (len(FAMILY_ORDER), family)


def bandwidth(results: dict) -> float | None:
    """The measured copy bandwidth in bytes/s from ``machine_info["batchspec"]``, or None."""
    info = (results.get("machine_info") or {}).get("batchspec") or {}
    value = _num(info.get("copy_bandwidth_bytes_per_s"))
    return value if value and value > 0 else None


def floor_seconds(row: Row, workload_floor_bytes: float | None, bandwidth_bytes_per_s: float | None) -> float | None:
    """The memory-floor time of ``row``: its floor bytes (or its workload's) over the bandwidth."""
    floor_bytes = row.floor_bytes if row.floor_bytes is not None else workload_floor_bytes
    if floor_bytes is None or not bandwidth_bytes_per_s:
        return None
    return floor_bytes / bandwidth_bytes_per_s


def _by_workload(rows: Iterable[Row]) -> dict[str, list[Row]]:
    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(row.workload, []).append(row)
    return groups


def _workload_floor_bytes(rows: Sequence[Row]) -> float | None:
    """A workload's floor bytes: the reference's if it has them, else the first row's that does."""
    ordered = sorted(rows, key=lambda row: implementation_key(row.implementation, row.kind))
    return next((row.floor_bytes for row in ordered if row.floor_bytes is not None), None)


# --------------------------------------------------------------------------------------------
# Markdown


def _command_line(results: dict) -> str | None:
    machine = results.get("machine_info") or {}
    for source in (machine.get("batchspec") or {}, machine, results.get("commit_info") or {}, results):
        for key in COMMAND_KEYS:
            value = source.get(key)
            if isinstance(value, list | tuple):
                return shlex.join(str(part) for part in value)
            if value:
                return str(value)
    return None


def header_lines(results: dict) -> list[str]:
    """The report's header: the machine, the software and when and how the numbers were taken."""
    machine = results.get("machine_info") or {}
    info = machine.get("batchspec") or {}
    cpu_info = machine.get("cpu")
    cpu_info = cpu_info if isinstance(cpu_info, dict) else {}
    cpu = info.get("cpu") or cpu_info.get("brand_raw") or machine.get("processor") or None
    cores = cpu_info.get("count")
    bw = bandwidth(results)
    commit = results.get("commit_info") or {}
    command = _command_line(results)
    facts = [
        ("CPU", f"{cpu} ({cores} cores)" if cpu and cores else cpu),
        ("device", info.get("device")),
        ("torch", info.get("torch")),
        ("torch threads", info.get("torch_threads")),
        ("copy bandwidth", f"{fmt_sig(bw / 1e9)} GB/s" if bw else None),
        ("python", machine.get("python_version")),
        ("date", results.get("datetime")),
        ("commit", (f"{commit['id']}" + (" (dirty)" if commit.get("dirty") else "")) if commit.get("id") else None),
        ("pytest-benchmark", results.get("version")),
    ]
    lines = ["# batchspec benchmarks", ""]
    lines += [f"- **{label}**: {value}" for label, value in facts if value not in (None, "")]
    if command:
        lines.append(f"- **command**: `{command}`")
    lines += [
        "",
        "Times are medians over the rounds pytest-benchmark ran. `× reference`, `× upstream` and `× zephon` are "
        "speed-ups: that implementation's median over this row's (above 1 means this row is faster). "
        "`× floor` is this row's median over the workload's memory-floor time (floor bytes / copy bandwidth): "
        "how many times slower than only reading and writing the bytes the operation must touch. "
        "`ops` counts torch operator calls per call, `bytes/token` the bytes of tensors materialised per token "
        "(per item where tokens do not apply). A blank cell is a value the benchmark did not record.",
        "",
    ]
    return lines


def _workload_cell(row: Row) -> str:
    extras = [part for part in (row.shape, row.route, row.payload) if part and part not in row.workload]
    return f"`{row.workload}`" + (f" ({', '.join(extras)})" if extras else "")


def family_table(family: str, rows: Sequence[Row], bandwidth_bytes_per_s: float | None) -> list[str]:
    """The Markdown lines of one family's table (a heading, then the table), rows in report order."""
    rows = sorted(rows, key=_row_key)
    groups = _by_workload(rows)
    units = {row.unit_name for row in rows if row.unit_name}
    unit = units.pop() if len(units) == 1 else None
    rate_header = f"{unit}s/s" if unit else "per s"
    bytes_header = f"bytes/{unit}" if unit else "bytes/unit"
    show_docs = any(row.documents_per_row is not None for row in rows)
    show_mask = any(row.is_block_causal for row in rows)
    show_peak = any(row.peak_memory_bytes is not None for row in rows)
    show_share = any(row.conversion_share is not None for row in rows)

    headers = ["workload"] + (["docs/row"] if show_docs else [])
    headers += ["implementation", "median (ms)", rate_header] + [header for header, _ in BASELINES]
    headers += ["× floor", "ops", bytes_header] + (["mask bytes"] if show_mask else [])
    headers += ["peak memory"] if show_peak else []
    headers += ["conversion share"] if show_share else []
    align = ["---" if header in ("workload", "implementation") else "---:" for header in headers]
    lines = [f"## {family}", "", "| " + " | ".join(headers) + " |", "|" + "|".join(align) + "|"]

    for row in rows:
        group = groups[row.workload]
        medians: dict[str, float | None] = {}
        for other in group:  # the first row of each implementation in the workload is its baseline
            medians.setdefault(other.implementation, other.median_s)
        floor_s = floor_seconds(row, _workload_floor_bytes(group), bandwidth_bytes_per_s)
        rate = row.throughput
        rate_text = fmt_si(rate) if unit or rate is None else f"{fmt_si(rate)} {row.unit_name}s"
        per_unit = row.bytes_per_unit
        per_unit_text = fmt_sig(per_unit) if unit or per_unit is None else f"{fmt_sig(per_unit)}/{row.unit_name}"
        cells = [_workload_cell(row)]
        cells += [fmt_count(row.documents_per_row)] if show_docs else []
        cells += [f"`{row.implementation}`", fmt_sig(row.median_s * 1e3 if row.median_s is not None else None)]
        cells.append(rate_text)
        for _, baseline in BASELINES:
            base = medians.get(baseline)
            cells.append(fmt_ratio(base / row.median_s if base and row.median_s else None))
        cells.append(fmt_ratio(row.median_s / floor_s if row.median_s and floor_s else None))
        cells.append("" if row.ops is None else str(int(row.ops)))
        cells.append(per_unit_text)
        if show_mask:
            cells.append(fmt_bytes(row.mask_bytes))
        if show_peak:
            cells.append(fmt_bytes(row.peak_memory_bytes))
        if show_share:
            share = row.conversion_share
            cells.append("" if share is None else f"{100 * share:.0f}%")
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return lines + [""]


def markdown(results: dict, plots: Sequence[Path] = ()) -> str:
    """The whole report as Markdown: the header, the plots (linked by file name), one table per family."""
    rows = parse_rows(results)
    bw = bandwidth(results)
    lines = header_lines(results)
    for plot in plots:
        lines += [f"![{plot.stem}]({plot.name})", ""]
    if not rows:
        lines += ["No benchmarks in the results.", ""]
    families: dict[str, list[Row]] = {}
    for row in rows:
        families.setdefault(row.family, []).append(row)
    for family in sorted(families, key=_family_key):
        lines += family_table(family, families[family], bw)
    return "\n".join(lines).rstrip("\n") + "\n"


# --------------------------------------------------------------------------------------------
# plots


def _colours(implementations: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """One colour per implementation, stable across plots (backends first, as in the tables)."""
    import matplotlib

    ordered = sorted(set(implementations), key=lambda pair: implementation_key(pair[0], pair[1]))
    palette = matplotlib.colormaps["tab10" if len(ordered) <= 10 else "tab20"]
    return {name: palette(index % palette.N) for index, (name, _) in enumerate(ordered)}


def _save(fig: Figure, path: Path) -> Path:
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=120)
    return path


# The shape throughput.png shows when the results hold it (report.md lists every shape).
PLOT_SHAPE = "8x8192"


def plot_throughput(rows: Sequence[Row], bandwidth_bytes_per_s: float | None, path: Path) -> Path | None:
    """Grouped bars (log y) of tokens/s per implementation for each ``convert`` workload.

    The memory floor of each workload, as tokens/s, is drawn as a dashed line across its group.
    Returns ``path``, or None (writing nothing) when no convert benchmark has a throughput.
    """
    convert = [row for row in rows if row.family == "convert" and (row.throughput or 0) > 0]
    if not convert:
        return None
    # One shape keeps the chart readable: 8x8192 (every route, both payloads) when it ran.
    shape = PLOT_SHAPE if any(row.shape == PLOT_SHAPE for row in convert) else None
    if shape is not None:
        convert = [row for row in convert if row.shape == shape]
    colours = _colours((row.implementation, row.kind) for row in rows)
    groups = _by_workload(sorted(convert, key=_row_key))
    workloads = list(groups)
    implementations = sorted(
        {(row.implementation, row.kind) for row in convert}, key=lambda pair: implementation_key(*pair)
    )
    width = 0.8 / len(implementations)
    fig = Figure(figsize=(max(8.0, 1.1 * len(workloads) * max(1, len(implementations)) / 3 + 3), 6.0))
    ax = fig.subplots()
    for index, (implementation, _) in enumerate(implementations):
        xs, ys = [], []
        for position, workload in enumerate(workloads):
            row = next((r for r in groups[workload] if r.implementation == implementation), None)
            if row is not None and row.throughput is not None:  # a row without a median draws no bar
                xs.append(position - 0.4 + width * (index + 0.5))
                ys.append(row.throughput)
        ax.bar(xs, ys, width=width, label=implementation, color=colours[implementation])
    floor_label = "memory floor"  # once: a label starting with "_" stays out of the legend
    for position, workload in enumerate(workloads):
        group = groups[workload]
        tokens = next((row.tokens for row in group if row.tokens), None)
        floor_s = floor_seconds(group[0], _workload_floor_bytes(group), bandwidth_bytes_per_s)
        if tokens and floor_s:
            ax.hlines(
                tokens / floor_s, position - 0.45, position + 0.45, colors="black", linestyles="--", label=floor_label
            )
            ax.plot([position], [tokens / floor_s], marker="v", color="black")
            floor_label = "_nolegend_"
    ax.set_yscale("log")
    ax.set_xticks(range(len(workloads)))
    ax.set_xticklabels([w.removeprefix("convert/") for w in workloads], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("tokens/s (median)")
    ax.set_title(
        f"convert{f' at {shape}' if shape else ''}: throughput per implementation (dashed: memory floor as tokens/s)"
    )
    ax.grid(axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return _save(fig, path)


def plot_documents_per_row(rows: Sequence[Row], path: Path) -> Path | None:
    """Median time (ms, log y) against documents per row (log x) for the ``docs_per_row`` family.

    One line per implementation (per implementation and shape/route/payload when the family has
    more than one of those). Returns ``path``, or None (writing nothing) without data to draw.
    """
    # (documents per row, median seconds, row) of the rows that have both
    points = [
        (row.documents_per_row, row.median_s, row)
        for row in rows
        if row.family == "docs_per_row"
        and row.documents_per_row is not None
        and row.documents_per_row > 0
        and row.median_s is not None
        and row.median_s > 0
    ]
    if not points:
        return None
    colours = _colours((row.implementation, row.kind) for row in rows)
    variants = {(row.shape, row.route, row.payload) for _, _, row in points}
    series: dict[tuple, list[tuple[float, float]]] = {}
    for documents, median_s, row in points:
        variant = (row.shape, row.route, row.payload) if len(variants) > 1 else ()
        series.setdefault((row.implementation, row.kind, variant), []).append((documents, median_s))
    styles = ["-", "--", ":", "-."]
    variant_style = {variant: styles[i % len(styles)] for i, variant in enumerate(sorted(variants, key=str))}
    fig = Figure(figsize=(8.0, 5.5))
    ax = fig.subplots()
    for implementation, kind, variant in sorted(series, key=lambda key: (implementation_key(*key[:2]), str(key[2]))):
        line = sorted(series[(implementation, kind, variant)])
        label = implementation + (f" ({'/'.join(part for part in variant if part)})" if variant else "")
        ax.plot(
            [documents for documents, _ in line],
            [median_s * 1e3 for _, median_s in line],
            marker="o",
            linestyle=variant_style.get(variant, "-"),
            color=colours[implementation],
            label=label,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("documents per row")
    ax.set_ylabel("median time (ms)")
    ax.set_title("docs_per_row: median time vs documents per row\n(flat = no per-document cost)")
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _save(fig, path)


# --------------------------------------------------------------------------------------------
# entry points


def render(results: dict, out_dir: Path) -> list[Path]:
    """Write ``report.md`` and the plots for ``results`` (a pytest-benchmark JSON dict) into ``out_dir``.

    Returns the paths written: the plots that had data to draw, then ``report.md``.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = parse_rows(results)
    bw = bandwidth(results)
    plots = [
        path
        for path in (
            plot_throughput(rows, bw, out_dir / THROUGHPUT_PNG),
            plot_documents_per_row(rows, out_dir / DOCS_PER_ROW_PNG),
        )
        if path is not None
    ]
    report = out_dir / REPORT_NAME
    report.write_text(markdown(results, plots), encoding="utf-8")
    return [*plots, report]


# docs/benchmarks.md's summary: (workload, label) rows, in this order; one column per implementation below.
SUMMARY_ROWS = (
    (
        "convert/document_ids+metadata/8x8192/pipeline",
        "`convert_text_batch`, `document_ids` + metadata, pipeline payload",
    ),
    ("convert/document_ids+metadata/8x8192/tensor", "the same, tensor payload"),
    ("convert/thd/8x8192/pipeline", "THD, pipeline payload"),
    ("convert/xdoc+metadata/8x8192/pipeline", "xdoc + metadata, pipeline payload"),
    ("convert/block_causal/8x8192/tensor", "`block_causal` (512 MiB mask), tensor payload"),
    ("convert/unpacked/8x8192/pipeline", "unpacked route (`pad_to_length`)"),
    ("convert/document_ids+metadata/1x131072/tensor", "`document_ids` + metadata, 1×131072, tensor"),
    ("docs_per_row/build_packed_sequence_metadata/0010", "`build_packed_sequence_metadata`, 10 documents per row"),
    ("docs_per_row/build_packed_sequence_metadata/0200", "the same, 200 documents per row"),
    ("docs_per_row/build_packed_sequence_metadata/1000", "the same, 1000 documents per row"),
    ("metadata/get_unpad_data/8x8192/pipeline", "`get_unpad_data`, pipeline rows"),
    ("collate/collate_datums/padded/64", "`collate_datums`, 64 rollouts, padded"),
    ("collate/collate_datums/packed/64", "`collate_datums`, 64 rollouts, packed"),
    ("collate/thd_collater/64", "`packed_sequence_thd_collater`, 64 rollouts"),
)
SUMMARY_BACKEND = "vectorized"
# (implementation, column header) of the comparison columns; "other" is the ingest or HF's collator
SUMMARY_COLUMNS = (
    ("reference", "reference"),
    ("upstream", "upstream 0.7.0"),
    ("zephon.to_training", "Zephon `to_training`"),
)
SUMMARY_OTHER = (("ingest", "ingest"), ("hf.DataCollatorWithFlattening", "HF flattening"))


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return ""
    milliseconds = seconds * 1e3
    return f"{milliseconds:.0f}" if milliseconds >= 100 else fmt_sig(milliseconds)


def summary_table(results: dict, backend: str = SUMMARY_BACKEND) -> str:
    """docs/benchmarks.md's table of ``backend`` (``SUMMARY_BACKEND`` unless named): for each of
    ``SUMMARY_ROWS`` that it ran, its median (ms), that of each ``SUMMARY_COLUMNS`` implementation
    and of the ingest or HF comparator, its distance from the memory floor and its operator count."""
    groups = _by_workload(parse_rows(results))
    bandwidth_bytes_per_s = bandwidth(results)
    # another backend's table shows SUMMARY_BACKEND's medians beside its own
    columns = SUMMARY_COLUMNS if backend == SUMMARY_BACKEND else ((SUMMARY_BACKEND, SUMMARY_BACKEND), *SUMMARY_COLUMNS)
    headers = ["workload", f"{backend} (ms)", *(h for _, h in columns), "other"]
    headers += [f"{backend} ÷ floor", f"{backend} ops"]
    lines = ["| " + " | ".join(headers) + " |", "|---|" + "---:|" * (len(headers) - 1)]
    for workload, label in SUMMARY_ROWS:
        by_implementation = {row.implementation: row for row in groups.get(workload, [])}
        measured = by_implementation.get(backend)
        if measured is None:
            continue
        cells = [label, _ms(measured.median_s)]
        cells += [_ms(getattr(by_implementation.get(name), "median_s", None)) for name, _ in columns]
        other = next(((by_implementation[n], h) for n, h in SUMMARY_OTHER if n in by_implementation), None)
        cells.append(f"{_ms(other[0].median_s)} ({other[1]})" if other else "")
        floor_s = floor_seconds(measured, _workload_floor_bytes(groups[workload]), bandwidth_bytes_per_s)
        cells.append(fmt_ratio(measured.median_s / floor_s) if floor_s and measured.median_s else "")
        cells.append("" if measured.ops is None else str(int(measured.ops)))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


@dataclass(frozen=True)
class Target:
    """A performance target of a backend (issue 32, section 3) as a ratio of two medians of one
    run: ``numerator ÷ denominator``, each an implementation name, ``"backend"`` (the backend's
    own row) or ``"floor"`` (the workload's memory-floor time), over ``workloads``; with several
    workloads (a sweep) the ratio is the backend's slowest median over its fastest."""

    label: str
    workloads: tuple[str, ...]
    numerator: str
    denominator: str
    bound: float
    at_most: bool  # True: the ratio must be <= bound; False: >= bound


PIPELINE = "convert/document_ids+metadata/8x8192/pipeline"
TARGETS = (
    Target("pipeline payload: convert ÷ the bare ingest", (PIPELINE,), "backend", "ingest", 1.3, True),
    Target(
        "pipeline payload: Zephon `to_training` ÷ convert", (PIPELINE,), "zephon.to_training", "backend", 3.0, False
    ),
    Target(
        "tensor payload: convert ÷ the memory floor",
        ("convert/document_ids+metadata/8x8192/tensor",),
        "backend",
        "floor",
        2.0,
        True,
    ),
    Target(
        "metadata, 200 documents per row: upstream 0.7.0 ÷ the backend",
        ("docs_per_row/build_packed_sequence_metadata/0200",),
        "upstream",
        "backend",
        200.0,
        False,
    ),
    Target(
        "metadata, 10 to 1000 documents per row: slowest ÷ fastest (flat)",
        tuple(f"docs_per_row/build_packed_sequence_metadata/{d:04d}" for d in (10, 40, 200, 1000)),
        "backend",
        "backend",
        1.25,
        True,
    ),
)
#: The backends the targets table puts side by side (the first is the one the targets are for).
TARGET_BACKENDS = ("native", "vectorized")


def target_ratio(results: dict, target: Target, backend: str) -> float | None:
    """``target``'s ratio for ``backend`` in ``results`` (None when a median it needs is missing)."""
    groups = _by_workload(parse_rows(results))
    bandwidth_bytes_per_s = bandwidth(results)

    def median(workload: str, name: str) -> float | None:
        rows = groups.get(workload, [])
        if name == "floor":
            own = next((row for row in rows if row.implementation == backend), None)
            return None if own is None else floor_seconds(own, _workload_floor_bytes(rows), bandwidth_bytes_per_s)
        name = backend if name == "backend" else name
        return next((row.median_s for row in rows if row.implementation == name and row.median_s), None)

    if len(target.workloads) > 1:
        medians = [median(workload, "backend") for workload in target.workloads]
        known = [value for value in medians if value is not None]
        return max(known) / min(known) if len(known) == len(medians) else None
    numerator, denominator = (median(target.workloads[0], name) for name in (target.numerator, target.denominator))
    return numerator / denominator if numerator and denominator else None


def targets_table(results: dict, backends: Sequence[str] = TARGET_BACKENDS) -> str:
    """docs/benchmarks.md's targets table: each of ``TARGETS``, its bound, and each backend's
    ratio in ``results`` with whether it meets the bound."""
    headers = ["target", "goal", *backends]
    lines = ["| " + " | ".join(headers) + " |", "|---|---:|" + "---:|" * len(backends)]
    for target in TARGETS:
        cells = [target.label, ("≤ " if target.at_most else "≥ ") + fmt_ratio(target.bound)]
        for backend in backends:
            ratio = target_ratio(results, target, backend)
            met = ratio is not None and (ratio <= target.bound if target.at_most else ratio >= target.bound)
            cells.append("" if ratio is None else f"{fmt_ratio(ratio)} ({'met' if met else 'missed'})")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``report.py RESULTS.json [--out DIR]``, prints the paths written;
    ``report.py RESULTS.json --summary [--backend NAME]`` prints docs/benchmarks.md's table of a
    backend instead, ``--targets`` its table of issue 32's targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="pytest-benchmark JSON (from --benchmark-json=PATH)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: the JSON's folder)")
    parser.add_argument(
        "--summary", action="store_true", help="print docs/benchmarks.md's summary table and write nothing"
    )
    parser.add_argument(
        "--backend", default=SUMMARY_BACKEND, help=f"the backend of --summary (default: {SUMMARY_BACKEND})"
    )
    parser.add_argument(
        "--targets", action="store_true", help="print docs/benchmarks.md's table of the targets and write nothing"
    )
    args = parser.parse_args(argv)
    results = json.loads(args.results.read_text(encoding="utf-8"))
    if args.summary:
        print(summary_table(results, args.backend))
        return 0
    if args.targets:
        print(targets_table(results))
        return 0
    for path in render(results, args.out if args.out is not None else args.results.resolve().parent):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
