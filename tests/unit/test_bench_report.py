"""``bench/report.py`` turns pytest-benchmark JSON into a Markdown report whose cells hold the
right numbers (medians, throughput, speed-ups, floor ratios, bytes/token), and into PNG plots."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from _suite import ROOT

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _load_report_module():
    spec = importlib.util.spec_from_file_location("batchspec_bench_report", ROOT / "bench" / "report.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


report = _load_report_module()

BANDWIDTH = 10e9  # bytes/s: 10 GB/s
CONVERT_A = "convert/document_ids+metadata/8x8192/pipeline"
CONVERT_B = "convert/block_causal/4x4096/tensor"
KINDS = {"reference": "backend", "vectorized": "backend"}


def _bench(workload: str, family: str, implementation: str, median_s: float, **extra) -> dict:
    return {
        "group": workload,
        "name": f"test_{family}[{workload}-{implementation}]",
        "fullname": f"bench/test_{family}.py::test_{family}[{workload}-{implementation}]",
        "params": {"workload": workload, "implementation": implementation},
        "stats": {
            "min": median_s * 0.9,
            "max": median_s * 1.5,
            "mean": median_s * 1.05,
            "stddev": median_s * 0.1,
            "median": median_s,
            "rounds": 20,
        },
        "extra_info": {
            "workload": workload,
            "family": family,
            "implementation": implementation,
            "kind": KINDS.get(implementation, "comparator"),
            **extra,
        },
    }


def _results() -> dict:
    benchmarks = []
    # workload A: 65536 tokens, floor 10 MB -> 1 ms at 10 GB/s
    a = {"tokens": 65536, "shape": "8x8192", "payload": "pipeline", "floor_bytes": 10_000_000}
    benchmarks += [
        _bench(CONVERT_A, "convert", "upstream", 0.020, ops=300, bytes_materialised=65536 * 40, **a),
        _bench(CONVERT_A, "convert", "vectorized", 0.0025, ops=7, bytes_materialised=65536 * 12, **a),
        _bench(CONVERT_A, "convert", "zephon.to_training", 0.005, ops=None, bytes_materialised=None, **a),
        _bench(CONVERT_A, "convert", "reference", 0.010, ops=120, bytes_materialised=65536 * 24, **a),
    ]
    # workload B: block_causal, a 64 MiB dense mask, no floor recorded, no zephon comparator
    b = {
        "tokens": 16384,
        "shape": "4x4096",
        "route": "block_causal",
        "payload": "tensor",
        "mask_bytes": 4 * 4096 * 4096,
    }
    benchmarks += [
        _bench(CONVERT_B, "convert", "reference", 0.003, ops=50, **b),
        _bench(CONVERT_B, "convert", "vectorized", 0.0012, ops=9, **b),
        _bench(CONVERT_B, "convert", "upstream", 0.009, ops=80, **b),
    ]
    # docs_per_row: ids sort differently as text ("d=1024" < "d=4") and by value
    for docs, ref_s, vec_s in ((4, 0.004, 0.001), (64, 0.008, 0.001), (1024, 0.05, 0.0011)):
        workload = f"docs_per_row/8x8192/d={docs}/pipeline"
        extra = {"tokens": 65536, "shape": "8x8192", "payload": "pipeline", "documents_per_row": docs}
        benchmarks += [
            _bench(workload, "docs_per_row", "vectorized", vec_s, **extra),
            _bench(workload, "docs_per_row", "reference", ref_s, **extra),
        ]
    # collate: items (rollouts) instead of tokens
    benchmarks += [
        _bench("collate/32 rollouts", "collate", "reference", 0.004, tokens=None, items=32),
        _bench("collate/32 rollouts", "collate", "hf.DataCollatorWithFlattening", 0.008, tokens=None, items=32),
    ]
    return {
        "machine_info": {
            "node": "vm",
            "python_version": "3.11.7",
            "cpu": {"brand_raw": "Intel(R) Xeon(R) Processor", "count": 2},
            "batchspec": {
                "copy_bandwidth_bytes_per_s": BANDWIDTH,
                "device": "cpu",
                "torch_threads": 2,
                "torch": "2.5.1+cpu",
                "cpu": "Test CPU 9000",
                "command": ["pytest", "bench", "--benchmark-json=results.json"],
            },
        },
        "commit_info": {"id": "abc123", "dirty": True},
        "benchmarks": benchmarks,
        "datetime": "2026-05-09T07:35:25.000000+00:00",
        "version": "5.3.1",
    }


def _tables(markdown: str) -> dict[str, list[dict[str, str]]]:
    """The report's tables: family -> rows, each row a dict header -> cell text."""
    tables: dict[str, list[dict[str, str]]] = {}
    family, headers = None, None
    for line in markdown.splitlines():
        if line.startswith("## "):
            family, headers = line[3:].strip(), None
            tables[family] = []
        elif line.startswith("|") and family is not None:
            cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
            if headers is None:
                headers = cells
            elif not set(line) <= set("|-: "):
                assert len(cells) == len(headers), line
                tables[family].append(dict(zip(headers, cells)))
    return tables


def _row(rows: list[dict[str, str]], workload: str, implementation: str) -> dict[str, str]:
    found = [
        row
        for row in rows
        if row["workload"].startswith(f"`{workload}`") and row["implementation"] == f"`{implementation}`"
    ]
    assert len(found) == 1, (workload, implementation, rows)
    return found[0]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> tuple[list[Path], str, dict[str, list[dict[str, str]]]]:
    out_dir = tmp_path_factory.mktemp("report")
    paths = report.render(_results(), out_dir)
    markdown = (out_dir / "report.md").read_text(encoding="utf-8")
    return paths, markdown, _tables(markdown)


def test_render_writes_report_and_both_pngs(rendered):
    paths, _, _ = rendered
    names = sorted(path.name for path in paths)
    assert names == ["documents_per_row.png", "report.md", "throughput.png"]
    for path in paths:
        assert path.is_file() and path.stat().st_size > 0
        if path.suffix == ".png":
            assert path.read_bytes()[:8] == PNG_MAGIC
            assert path.stat().st_size > 5000  # a drawn chart, not an empty canvas


def test_header_names_the_machine(rendered):
    _, markdown, _ = rendered
    head = markdown.split("## ")[0]
    assert "Test CPU 9000 (2 cores)" in head
    assert "**device**: cpu" in head
    assert "**torch**: 2.5.1+cpu" in head
    assert "**torch threads**: 2" in head
    assert "**copy bandwidth**: 10.0 GB/s" in head
    assert "2026-05-09T07:35:25" in head
    assert "abc123 (dirty)" in head
    assert "`pytest bench --benchmark-json=results.json`" in head
    assert "![throughput](throughput.png)" in head and "![documents_per_row](documents_per_row.png)" in head


def test_families_in_order_and_rows_sorted(rendered):
    _, markdown, tables = rendered
    assert list(tables) == ["convert", "docs_per_row", "collate"]
    convert = [(row["workload"].split("`")[1], row["implementation"].strip("`")) for row in tables["convert"]]
    assert convert == [
        (CONVERT_B, "reference"),
        (CONVERT_B, "vectorized"),
        (CONVERT_B, "upstream"),
        (CONVERT_A, "reference"),
        (CONVERT_A, "vectorized"),
        (CONVERT_A, "upstream"),
        (CONVERT_A, "zephon.to_training"),
    ]
    docs = [row["docs/row"] for row in tables["docs_per_row"]]
    assert docs == ["4", "4", "64", "64", "1024", "1024"]  # by value, not as text
    collate = [row["implementation"] for row in tables["collate"]]
    assert collate == ["`reference`", "`hf.DataCollatorWithFlattening`"]


def test_convert_cells_hold_the_computed_values(rendered):
    _, _, tables = rendered
    rows = tables["convert"]
    vec = _row(rows, CONVERT_A, "vectorized")
    assert vec["median (ms)"] == "2.50"
    assert vec["tokens/s"] == "26.2M"  # 65536 / 0.0025 = 26 214 400
    assert vec["× reference"] == report.fmt_ratio(0.010 / 0.0025) == "4.00×"
    assert vec["× upstream"] == "8.00×"  # 0.020 / 0.0025
    assert vec["× zephon"] == "2.00×"  # 0.005 / 0.0025
    assert vec["× floor"] == "2.50×"  # 2.5 ms over 10 MB / 10 GB/s = 1 ms
    assert vec["ops"] == "7"
    assert vec["bytes/token"] == "12.0"
    assert vec["mask bytes"] == ""

    ref = _row(rows, CONVERT_A, "reference")
    assert (ref["median (ms)"], ref["× reference"], ref["× upstream"], ref["× floor"]) == (
        "10.0",
        "1.00×",
        "2.00×",
        "10.0×",
    )
    assert ref["bytes/token"] == "24.0"

    zephon = _row(rows, CONVERT_A, "zephon.to_training")
    assert zephon["× reference"] == "2.00×" and zephon["× zephon"] == "1.00×"
    assert zephon["ops"] == "" and zephon["bytes/token"] == ""  # None -> blank

    up = _row(rows, CONVERT_A, "upstream")
    assert up["× reference"] == "0.500×" and up["× floor"] == "20.0×"

    block = _row(rows, CONVERT_B, "vectorized")
    assert block["workload"] == f"`{CONVERT_B}`"  # shape, route and payload are already in the id
    assert block["× reference"] == "2.50×"  # 0.003 / 0.0012
    assert block["× upstream"] == "7.50×"  # 0.009 / 0.0012
    assert block["× zephon"] == ""  # no zephon comparator on this workload
    assert block["× floor"] == ""  # no floor bytes
    assert block["mask bytes"] == "64.0 MiB"


def test_docs_per_row_and_items_tables(rendered):
    _, _, tables = rendered
    big = _row(tables["docs_per_row"], "docs_per_row/8x8192/d=1024/pipeline", "vectorized")
    assert big["median (ms)"] == "1.10" and big["× reference"] == "45.5×"  # 0.05 / 0.0011
    assert big["× upstream"] == "" and big["× floor"] == "" and big["bytes/token"] == ""

    collate = tables["collate"]
    hf = _row(collate, "collate/32 rollouts", "hf.DataCollatorWithFlattening")
    assert "items/s" in hf and "bytes/item" in hf and "tokens/s" not in hf
    assert hf["items/s"] == "4.00k"  # 32 / 0.008
    assert hf["× reference"] == "0.500×"


def test_missing_fields_and_no_plot_data(tmp_path):
    results = {
        "machine_info": {},
        "benchmarks": [
            {"name": "test_bare", "stats": {"median": 0.002}},
            {
                "name": "test_partial",
                "extra_info": {"workload": "unpad/x", "family": "unpad", "ops": "n/a"},
                "stats": {},
            },
        ],
    }
    paths = report.render(results, tmp_path)
    assert [path.name for path in paths] == ["report.md"]  # nothing to plot: no convert, no docs_per_row
    tables = _tables((tmp_path / "report.md").read_text(encoding="utf-8"))
    assert list(tables) == ["unpad", "other"]
    assert tables["other"][0]["median (ms)"] == "2.00"
    assert tables["unpad"][0]["median (ms)"] == "" and tables["unpad"][0]["ops"] == ""
    assert "**copy bandwidth**" not in (tmp_path / "report.md").read_text(encoding="utf-8")


def test_command_line_defaults_to_the_json_folder(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_results()), encoding="utf-8")
    assert report.main([str(path)]) == 0
    assert (tmp_path / "report.md").is_file() and (tmp_path / "throughput.png").is_file()
    assert report.main([str(path), "--out", str(tmp_path / "elsewhere")]) == 0
    assert (tmp_path / "elsewhere" / "documents_per_row.png").read_bytes()[:8] == PNG_MAGIC


@pytest.mark.parametrize(
    ("value", "text"),
    [(1234.5, "1230"), (0.0012345, "0.00123"), (4, "4.00"), (9.996, "10.0"), (999.6, "1000"), (0, "0.00"), (None, "")],
)
def test_fmt_sig(value, text):
    assert report.fmt_sig(value) == text


def test_the_loader_table_shows_the_conversion_share(tmp_path):
    workload = "loader/corpus/8x8192/8batches"
    results = {
        "machine_info": {},
        "benchmarks": [_bench(workload, "loader", "vectorized", 1.2, items=8, tokens=8 * 65536, conversion_share=0.25)],
    }
    report.render(results, tmp_path)
    row = _tables((tmp_path / "report.md").read_text(encoding="utf-8"))["loader"][0]
    assert row["conversion share"] == "25%" and row["median (ms)"] == "1200"


def test_the_benchmarks_page_shows_the_summary_of_the_committed_results():
    """docs/benchmarks.md's tables are ``report.py --summary`` of ``bench/results/cpu.json``,
    and ``--summary --backend=native`` and ``--targets`` of ``bench/results/native/cpu.json``
    (the native backend's run, beside ``vectorized``)."""
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    results = json.loads((ROOT / "bench" / "results" / "cpu.json").read_text(encoding="utf-8"))
    table = report.summary_table(results)
    assert table.count("\n") >= 10  # a header, its rule and the rows that ran
    assert table in page
    native_results = json.loads((ROOT / "bench" / "results" / "native" / "cpu.json").read_text(encoding="utf-8"))
    native = report.summary_table(native_results, "native")
    assert native.count("\n") >= 10 and native in page
    targets = report.targets_table(native_results)
    assert targets.count("\n") == 1 + len(report.TARGETS) and "|  |" not in targets and targets in page


def _target_results() -> dict:
    """native and vectorized on the targets' workloads (10 GB/s: 10 MB of floor bytes is 1 ms)."""
    pipeline, tensor = "convert/document_ids+metadata/8x8192/pipeline", "convert/document_ids+metadata/8x8192/tensor"
    benchmarks = [
        _bench(pipeline, "convert", "native", 0.0012),
        _bench(pipeline, "convert", "vectorized", 0.004),
        _bench(pipeline, "convert", "ingest", 0.001),
        _bench(pipeline, "convert", "zephon.to_training", 0.0048),
        _bench(tensor, "convert", "native", 0.0019, floor_bytes=10_000_000),
        _bench(tensor, "convert", "vectorized", 0.0025, floor_bytes=10_000_000),
    ]
    for documents, native_s in ((10, 0.0001), (40, 0.0001), (200, 0.0001), (1000, 0.00013)):
        workload = f"docs_per_row/build_packed_sequence_metadata/{documents:04d}"
        benchmarks += [
            _bench(workload, "docs_per_row", "native", native_s),
            _bench(workload, "docs_per_row", "vectorized", 0.0005),
        ]
    benchmarks.append(_bench("docs_per_row/build_packed_sequence_metadata/0200", "docs_per_row", "upstream", 0.03))
    return {"machine_info": {"batchspec": {"copy_bandwidth_bytes_per_s": BANDWIDTH}}, "benchmarks": benchmarks}


def test_the_targets_table_holds_each_backends_ratio_and_verdict():
    rows = report.targets_table(_target_results()).splitlines()
    assert rows[0] == "| target | goal | native | vectorized |"
    cells = [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows[2:]]
    assert [row[1:] for row in cells] == [
        ["≤ 1.30×", "1.20× (met)", "4.00× (missed)"],  # convert / ingest
        ["≥ 3.00×", "4.00× (met)", "1.20× (missed)"],  # zephon / convert
        ["≤ 2.00×", "1.90× (met)", "2.50× (missed)"],  # convert / floor (1 ms)
        ["≥ 200×", "300× (met)", "60.0× (missed)"],  # upstream / backend at 200 documents per row
        ["≤ 1.25×", "1.30× (missed)", "1.00× (met)"],  # slowest / fastest from 10 to 1000
    ]


def test_a_target_without_its_medians_is_left_blank():
    results = _target_results()
    results["benchmarks"] = [b for b in results["benchmarks"] if b["extra_info"]["implementation"] != "ingest"]
    results["benchmarks"] = [b for b in results["benchmarks"] if not b["group"].endswith("/1000")]
    assert report.target_ratio(results, report.TARGETS[0], "native") is None
    assert report.target_ratio(results, report.TARGETS[4], "native") is None
    row = report.targets_table(results).splitlines()[2]
    assert row.endswith("| ≤ 1.30× |  |  |"), row
