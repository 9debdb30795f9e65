"""Manifests and manifest lists (metadata/manifests/manifest.py, metadata/io/avro.py; Java's `ManifestFile`,
`ManifestList`).

Interop in both directions: our Avro files are read by *plain* fastavro in the oracle venv (its codec comes
from the ``zstandard`` library, not from our pyarrow-backed codec), and the manifests pypaimon writes for a
partitioned primary-key table are folded by our reader into exactly the live files pypaimon itself reports.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastavro
import pytest

from pyspark_paimon.errors import CorruptMetadataError
from pyspark_paimon.metadata.io.avro import read_avro, write_avro
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.manifest import (
    EMPTY_ROW,
    KIND_ADD,
    KIND_DELETE,
    MANIFEST_ENTRY_SCHEMA,
    MANIFEST_FILE_META_SCHEMA,
    DataFileMeta,
    ManifestEntry,
    ManifestFileMeta,
    ManifestStore,
    SimpleStats,
    entry_from_avro,
    entry_to_avro,
    live_files,
    merge_entries,
    meta_to_avro,
)
from pyspark_paimon.metadata.rows.binary_row import deserialize_row, serialize_row
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.types.model import AtomicType, string_type
from tests.oracle import require_oracle_python

GEN_PK_TABLE = Path(__file__).parent / "fixtures" / "pypaimon" / "gen_pk_table.py"
STR = [string_type()]


oracle_python = require_oracle_python  # fails (never skips) without the oracle venv; CI installs it


def run_oracle(script: str, *args: str) -> Any:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    proc = subprocess.run([oracle_python(), "-c", script, *args], capture_output=True, text=True, timeout=180, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def part(value: str | None) -> bytes:
    return serialize_row([value], STR)


def data_file(name: str, rows: int = 10, level: int = 0, **kw: Any) -> DataFileMeta:
    return DataFileMeta(file_name=name, file_size=1000 + rows, row_count=rows, level=level, **kw)


def add(
    name: str, partition: bytes = EMPTY_ROW, bucket: int = 0, level: int = 0, rows: int = 10, **kw: Any
) -> ManifestEntry:
    return ManifestEntry(KIND_ADD, partition, bucket, 2, data_file(name, rows, level, **kw))


def delete(
    name: str, partition: bytes = EMPTY_ROW, bucket: int = 0, level: int = 0, rows: int = 10, **kw: Any
) -> ManifestEntry:
    return ManifestEntry(KIND_DELETE, partition, bucket, 2, data_file(name, rows, level, **kw))


def rich_entries() -> list[ManifestEntry]:
    """Entries exercising every DataFileMeta field, including null and non-null optional ones."""
    key_types = [AtomicType("BIGINT", nullable=False)]
    full = DataFileMeta(
        file_name="data-aaaa-0.parquet",
        file_size=4321,
        row_count=77,
        min_key=serialize_row([1], key_types),
        max_key=serialize_row([99], key_types),
        key_stats=SimpleStats(serialize_row([1], key_types), serialize_row([99], key_types), (0,)),
        value_stats=SimpleStats(serialize_row(["a", None], STR * 2), serialize_row(["z", None], STR * 2), (3, None)),
        min_sequence_number=5,
        max_sequence_number=81,
        schema_id=2,
        level=3,
        extra_files=("extra-1", "extra-2"),
        creation_time_millis=1795256648745,
        delete_row_count=4,
        embedded_index=b"\x01\x02idx",
        file_source=1,
        value_stats_cols=("v", "w"),
        external_path="s3://bucket/elsewhere/data-aaaa-0.parquet",
        first_row_id=1000,
        write_cols=("k", "v"),
    )
    minimal = DataFileMeta(
        file_name="data-bbbb-0.parquet",
        file_size=10,
        row_count=1,
        creation_time_millis=None,
        delete_row_count=None,
        file_source=None,
        value_stats_cols=None,
        key_stats=SimpleStats(EMPTY_ROW, EMPTY_ROW, None),
    )
    return [
        ManifestEntry(KIND_ADD, part("2024-01-01"), 1, 4, full),
        ManifestEntry(KIND_DELETE, part(None), 0, -1, minimal),
        ManifestEntry(KIND_ADD, EMPTY_ROW, -2, -2, data_file("data-cccc-0.parquet")),
    ]


@pytest.fixture
def store(tmp_path: Path) -> ManifestStore:
    fio, path = FileIO.for_uri(str(tmp_path / "t"))
    return ManifestStore(fio, path)


# --------------------------------------------------------------------------------------------- our files
def test_manifest_round_trip_every_field(store: ManifestStore) -> None:
    entries = rich_entries()
    meta = store.write_manifest(entries, schema_id=2, partition_stats=SimpleStats.empty())
    assert meta.file_name.startswith("manifest-") and meta.file_name.endswith("-0")
    assert meta.file_size == os.path.getsize(store.path(meta.file_name)), "_FILE_SIZE is the exact byte size"
    assert (meta.num_added_files, meta.num_deleted_files) == (2, 1)
    assert (meta.min_bucket, meta.max_bucket, meta.min_level, meta.max_level) == (-2, 1, 0, 3)
    assert meta.schema_id == 2
    fresh = ManifestStore(store.fileio, store.table_path)  # no cache: really parse the file
    assert fresh.read_manifest(meta.file_name) == entries


def test_manifest_list_round_trip(store: ManifestStore) -> None:
    stats = SimpleStats(part("a"), part("z"), (0,))
    m1 = store.write_manifest([add("f1", part("a")), add("f2", part("z"), bucket=1)], 0, stats)
    m2 = store.write_manifest([delete("f1", part("a"))], 1, SimpleStats(part("a"), part("a"), (0,)))
    m3 = ManifestFileMeta("manifest-old-0", 5, 1, 0, SimpleStats.empty(), 0)  # pre-2025 list: no bucket/level
    name, size = store.write_list([m1, m2, m3])
    assert name.startswith("manifest-list-") and size == os.path.getsize(store.path(name))
    fresh = ManifestStore(store.fileio, store.table_path)
    assert fresh.read_list(name) == [m1, m2, m3]
    assert fresh.read_entries([m1, m2]) == [
        add("f1", part("a")),
        add("f2", part("z"), bucket=1),
        delete("f1", part("a")),
    ]
    empty_name, empty_size = store.write_list([])
    assert ManifestStore(store.fileio, store.table_path).read_list(empty_name) == []
    assert empty_size == os.path.getsize(store.path(empty_name)), "the first snapshot's base list is a valid empty file"


def test_avro_container_header(store: ManifestStore) -> None:
    meta = store.write_manifest(rich_entries(), 0, SimpleStats.empty())
    name, _ = store.write_list([meta])
    for file_name, record_name in (
        (meta.file_name, "org.apache.paimon.avro.generated.record"),
        (name, "org.apache.paimon.avro.generated.record"),
    ):
        with open(store.path(file_name), "rb") as f:
            reader = fastavro.reader(f)
            assert reader.metadata["avro.codec"] == "zstandard"
            assert reader.writer_schema["name"] == record_name
            records = list(reader)
        assert records and all(r["_VERSION"] == 2 for r in records), "_VERSION is the format identifier 2"
    file_schema = MANIFEST_ENTRY_SCHEMA["fields"][-1]["type"]
    assert file_schema["name"] == "record__FILE", "nested records follow Java's <parent>_<field> naming"
    assert [f["name"] for f in file_schema["fields"]][:3] == ["_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT"]


ORACLE_READ_AVRO = textwrap.dedent("""
    import datetime, json, sys
    import fastavro
    def conv(o):
        if isinstance(o, bytes):
            return o.hex()
        if isinstance(o, datetime.datetime):
            return int(o.timestamp() * 1000)
        raise TypeError(type(o))
    out = {}
    for path in sys.argv[1:]:
        with open(path, "rb") as f:
            r = fastavro.reader(f)
            out[path] = {"codec": r.codec, "records": list(r)}
    print(json.dumps({"fastavro": fastavro.__version__, "files": out}, default=conv))
""")


def normalize(record: dict) -> Any:
    def conv(o: Any) -> Any:
        if isinstance(o, bytes):
            return o.hex()
        if isinstance(o, dt.datetime):
            return int(o.timestamp() * 1000)
        raise TypeError(type(o))

    return json.loads(json.dumps(record, default=conv))


@pytest.mark.interop
def test_plain_fastavro_in_oracle_venv_reads_our_files(store: ManifestStore) -> None:
    entries = rich_entries() + [add(f"data-{i}.parquet", part(f"p{i % 3}"), bucket=i % 4, rows=i) for i in range(200)]
    meta = store.write_manifest(entries, 0, SimpleStats(part("2024-01-01"), part("p2"), (1,)))
    name, _ = store.write_list([meta, ManifestFileMeta("manifest-x-0", 7, 0, 3, SimpleStats.empty(), 4)])
    manifest_path, list_path = store.path(meta.file_name), store.path(name)
    got = run_oracle(ORACLE_READ_AVRO, manifest_path, list_path)["files"]
    assert got[manifest_path]["codec"] == "zstandard" and got[list_path]["codec"] == "zstandard"
    assert got[manifest_path]["records"] == [normalize(entry_to_avro(e)) for e in entries]
    assert got[list_path]["records"] == [normalize(meta_to_avro(m)) for m in store.read_list(name)]


# --------------------------------------------------------------------------------------------- pypaimon's files
@pytest.fixture(scope="module")
def pypaimon_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[FileStore, dict]:
    """A PK table (partitioned by dt, 2 buckets) written by pypaimon in 3 commits, incl. an overwrite."""
    warehouse = tmp_path_factory.mktemp("pypaimon-wh")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    proc = subprocess.run(
        [oracle_python(), str(GEN_PK_TABLE), str(warehouse)], capture_output=True, text=True, timeout=180, env=env
    )
    assert proc.returncode == 0, proc.stderr
    view = json.loads(proc.stdout.strip().splitlines()[-1])
    fio, path = FileIO.for_uri(str(warehouse / "default.db" / "t"))
    return FileStore(fio, path), view


def describe(store: FileStore, entries: list[ManifestEntry]) -> list[tuple]:
    types = [f.type for f in store.schema().partition_fields]
    return sorted(
        (
            f"dt={deserialize_row(e.partition, types)[0]}",
            e.bucket,
            e.file.file_name,
            e.file.level,
            e.file.row_count,
            e.file.file_size,
        )
        for e in entries
    )


@pytest.mark.interop
def test_live_entries_of_pypaimon_table_match_its_files_table(pypaimon_table: tuple[FileStore, dict]) -> None:
    store, view = pypaimon_table
    latest = store.snapshots.latest()
    assert latest.id == 3 and latest.commit_kind == "OVERWRITE"
    live = store.live_entries(latest)
    expected = sorted(
        (
            r["partition"],
            r["bucket"],
            r["file_path"].rsplit("/", 1)[-1],
            r["level"],
            r["record_count"],
            r["file_size_in_bytes"],
        )
        for r in view["files"]
    )
    assert describe(store, live) == expected
    assert latest.total_record_count == sum(e.file.row_count for e in live) == 11
    assert all(e.kind == KIND_ADD and e.total_buckets == 2 for e in live)
    schema = store.schema()
    for e in live:  # every live file exists where the layout (Java's `FileStorePathFactory`) says it is
        values = deserialize_row(e.partition, [f.type for f in schema.partition_fields])
        assert store.fileio.exists(f"{store.bucket_path(schema, values, e.bucket)}/{e.file.file_name}")


@pytest.mark.interop
def test_every_pypaimon_snapshot_folds_to_its_record_count(pypaimon_table: tuple[FileStore, dict]) -> None:
    store, view = pypaimon_table
    assert [(s["id"], s["commit_kind"]) for s in view["snapshots"]] == [(1, "APPEND"), (2, "APPEND"), (3, "OVERWRITE")]
    for snap in store.snapshots.snapshots():
        live = store.live_entries(snap)
        assert snap.total_record_count == sum(e.file.row_count for e in live)
        delta_metas = store.manifests.read_list(snap.delta_manifest_list)
        delta = store.manifests.read_entries(delta_metas)
        assert snap.delta_record_count == sum(e.file.row_count * (1 if e.kind == KIND_ADD else -1) for e in delta)
        # the manifest list's counters and sizes describe the manifests exactly
        for m in store.manifests.read_list(snap.base_manifest_list) + delta_metas:
            entries = store.manifests.read_manifest(m.file_name)
            assert m.num_added_files == sum(e.kind == KIND_ADD for e in entries)
            assert m.num_deleted_files == sum(e.kind == KIND_DELETE for e in entries)
            assert m.file_size == store.fileio.size(store.manifests.path(m.file_name))
    s3 = store.snapshots.snapshot(3)
    delta = store.manifests.read_entries(store.manifests.read_list(s3.delta_manifest_list))
    types = [f.type for f in store.schema().partition_fields]
    parts = {(e.kind, deserialize_row(e.partition, types)[0]) for e in delta}
    assert parts == {(KIND_DELETE, "a"), (KIND_ADD, "a")}, "the overwrite touched only partition dt=a"
    before = {
        e.file.file_name
        for e in store.live_entries(store.snapshots.snapshot(2))
        if deserialize_row(e.partition, types)[0] == "a"
    }
    assert {e.file.file_name for e in delta if e.kind == KIND_DELETE} == before


@pytest.mark.interop
def test_pypaimon_manifest_list_partition_stats(pypaimon_table: tuple[FileStore, dict]) -> None:
    store, _ = pypaimon_table
    types = [f.type for f in store.schema().partition_fields]
    s2 = store.snapshots.snapshot(2)
    (meta,) = store.manifests.read_list(s2.delta_manifest_list)
    assert deserialize_row(meta.partition_stats.min_values, types) == ("b",)
    assert deserialize_row(meta.partition_stats.max_values, types) == ("c",)
    assert meta.partition_stats.null_counts == (0,)


# --------------------------------------------------------------------------------------------- merge_entries
def test_add_then_delete_cancels() -> None:
    assert merge_entries([add("f1"), add("f2"), delete("f1")]) == [add("f2")]


def test_delete_without_add_is_kept() -> None:
    merged = merge_entries([delete("f9"), add("f2")])
    assert merged == [delete("f9"), add("f2")]
    with pytest.raises(CorruptMetadataError, match="snapshot 7.*f9"):
        live_files([delete("f9"), add("f2")], "snapshot 7")


def test_double_add_raises() -> None:
    with pytest.raises(CorruptMetadataError, match="f1.*added twice"):
        merge_entries([add("f1"), add("f1")])
    with pytest.raises(CorruptMetadataError):
        merge_entries([add("f1", rows=1), add("f2"), add("f1", rows=2)])  # identity ignores the row count


def test_readd_after_delete_is_allowed() -> None:
    assert merge_entries([add("f1"), delete("f1"), add("f1", rows=3)]) == [add("f1", rows=3)]


def test_identifier_components() -> None:
    """(partition, bucket, level, name, extra files, embedded index, external path) identify a file."""
    same_name = [
        add("f", part("a")),
        add("f", part("b")),
        add("f", bucket=1),
        add("f", level=1),
        add("f", extra_files=("x",)),
        add("f", embedded_index=b"i"),
        add("f", external_path="/o/f"),
    ]
    assert merge_entries(same_name) == same_name, "all distinct, none collides"
    # a level upgrade is a DELETE at the old level plus an ADD at the new one
    assert merge_entries([add("f", level=0), delete("f", level=0), add("f", level=5)]) == [add("f", level=5)]
    # a DELETE at another level does not remove the file
    assert merge_entries([add("f", level=0), delete("f", level=1)]) == [add("f", level=0), delete("f", level=1)]


def test_merge_keeps_first_seen_order() -> None:
    entries = [add(f"f{i}") for i in range(10)] + [delete("f3"), delete("f7")]
    assert [e.file.file_name for e in merge_entries(entries)] == ["f0", "f1", "f2", "f4", "f5", "f6", "f8", "f9"]


# --------------------------------------------------------------------------------------------- corruption
def test_truncated_manifest_raises_corrupt_metadata(store: ManifestStore) -> None:
    entries = [add(f"data-{i}.parquet", part("p"), rows=i) for i in range(25)]
    meta = store.write_manifest(entries, 0, SimpleStats.empty())
    data = store.fileio.read_bytes(store.path(meta.file_name))
    header_only = None
    for cut in [*range(0, len(data) - 40, 3), *range(len(data) - 40, len(data) - 1)]:
        store.fileio.write_bytes(store.path("manifest-cut-0"), data[:cut])
        try:
            got = ManifestStore(store.fileio, store.table_path).read_manifest("manifest-cut-0")
        except CorruptMetadataError as e:
            assert store.path("manifest-cut-0") in str(e)
            continue
        # The only undetectable cut is right after the header: a valid, empty container file.
        assert got == [] and header_only is None, f"cut at {cut} read {len(got)} entries silently"
        header_only = cut


def test_truncated_manifest_list_raises_corrupt_metadata(store: ManifestStore) -> None:
    metas = [store.write_manifest([add(f"f{i}")], 0, SimpleStats.empty()) for i in range(5)]
    name, _ = store.write_list(metas)
    data = store.fileio.read_bytes(store.path(name))
    block_start = len(data) - 16 - 1  # somewhere inside the last (only) block
    for cut in range(block_start - 40, len(data) - 1):
        store.fileio.write_bytes(store.path("manifest-list-cut-0"), data[:cut])
        with pytest.raises(CorruptMetadataError, match="manifest-list-cut-0"):
            ManifestStore(store.fileio, store.table_path).read_list("manifest-list-cut-0")


@pytest.mark.parametrize("content", [b"", b"garbage that is not avro", b"Obj\x01"])
def test_non_avro_file(store: ManifestStore, content: bytes) -> None:
    store.fileio.write_bytes(store.path("manifest-bad-0"), content)
    with pytest.raises(CorruptMetadataError, match="manifest-bad-0"):
        store.read_manifest("manifest-bad-0")


def test_missing_manifest_is_named(store: ManifestStore) -> None:
    with pytest.raises(CorruptMetadataError, match="manifest-gone-0 is missing"):
        store.read_manifest("manifest-gone-0")
    with pytest.raises(CorruptMetadataError, match="Manifest list .*manifest-list-gone-0 is missing"):
        store.read_list("manifest-list-gone-0")


def test_unsupported_format_version(store: ManifestStore) -> None:
    record = entry_to_avro(add("f1"))
    record["_VERSION"] = 1
    store.fileio.write_bytes(store.path("manifest-v1-0"), write_avro(MANIFEST_ENTRY_SCHEMA, [record]))
    with pytest.raises(CorruptMetadataError, match="format version 1"):
        store.read_manifest("manifest-v1-0")


def test_record_missing_required_field(store: ManifestStore) -> None:
    """A manifest from a foreign writer lacking a required field is corrupt metadata, not a KeyError."""
    schema = json.loads(json.dumps(MANIFEST_ENTRY_SCHEMA))
    schema["fields"] = [f for f in schema["fields"] if f["name"] != "_TOTAL_BUCKETS"]
    record = entry_to_avro(add("f1"))
    del record["_TOTAL_BUCKETS"]
    store.fileio.write_bytes(store.path("manifest-odd-0"), write_avro(schema, [record]))
    with pytest.raises(CorruptMetadataError, match="manifest-odd-0.*_TOTAL_BUCKETS"):
        store.read_manifest("manifest-odd-0")


def _zigzag_varint(data: bytes, pos: int) -> tuple[int, int]:
    """An Avro long at ``pos``: (value, position after it)."""
    shift = acc = 0
    while True:
        b = data[pos]
        pos += 1
        acc |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return (acc >> 1) ^ -(acc & 1), pos


def _avro_fields(schema: Any) -> Iterator[dict[str, Any]]:
    """Every field of every record in an Avro schema."""
    if isinstance(schema, list):
        for branch in schema:
            yield from _avro_fields(branch)
    elif isinstance(schema, dict):
        for f in schema.get("fields", ()):
            yield f
            yield from _avro_fields(f["type"])
        if "items" in schema:
            yield from _avro_fields(schema["items"])


def _differences(original: Any, got: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """The leaves (dataclass fields, tuple items) where ``got`` differs from ``original``."""
    if original == got:
        return []
    if dataclasses.is_dataclass(original) and type(original) is type(got):
        return [
            d
            for f in dataclasses.fields(original)
            for d in _differences(getattr(original, f.name), getattr(got, f.name), f"{path}.{f.name}")
        ]
    return [(path, original, got)]


def test_bit_flips_are_detected_or_lie_where_avro_has_no_check(store: ManifestStore) -> None:
    """Every single-bit flip raises CorruptMetadataError, reads the original entries, or lies in one of the two
    places an Avro container file does not protect (it has no checksum), with exactly the effect that allows:

    * the writer schema's JSON in the header: a flipped letter renames a field, and the reader treats an
      optional field it no longer finds as absent (as in files of older writers), so the damage reads as that one
      field being null in every entry;
    * a data block's zstd payload (Java's Avro writer emits frames without a content checksum, and so do we): a
      flipped literal changes decoded values, but the block's record count sits in the uncompressed block
      header, so the file still reads as the same number of entries.

    Anywhere else (magic, metadata keys, codec name, sync markers, block counts and sizes) a flip is detected
    or harmless. Never a KeyError or another non-Paimon error.
    """
    import random

    original = [add(f"data-{i}.parquet", part("p"), rows=i) for i in range(20)]
    meta = store.write_manifest(original, 0, SimpleStats.empty())
    data = store.fileio.read_bytes(store.path(meta.file_name))
    sync = data[-16:]  # every Avro container file ends with its sync marker
    header_end = data.index(sync) + 16
    schema_len, schema_start = _zigzag_varint(data, data.index(b"avro.schema") + len(b"avro.schema"))
    schema_end = schema_start + schema_len
    written_schema = json.loads(data[schema_start:schema_end])
    optional = {f["name"] for f in _avro_fields(written_schema) if "null" in f["type"]}
    assert "_DELETE_ROW_COUNT" in optional and "_TOTAL_BUCKETS" not in optional
    count, pos = _zigzag_varint(data, header_end)
    size, payload_start = _zigzag_varint(data, pos)
    assert count == len(original) and data[payload_start + size :] == sync  # one block, then the sync marker
    payload = range(payload_start, payload_start + size)

    outcomes = {"raised": 0, "equal": 0, "schema": 0, "payload": 0}
    rng = random.Random(1234)
    for _ in range(400):
        damaged = bytearray(data)
        at = rng.randrange(len(damaged))
        damaged[at] ^= 1 << rng.randrange(8)
        store.fileio.write_bytes(store.path("manifest-flip-0"), bytes(damaged))
        try:
            got = ManifestStore(store.fileio, store.table_path).read_manifest("manifest-flip-0")
        except CorruptMetadataError as e:
            assert "manifest-flip-0" in str(e)
            outcomes["raised"] += 1
            continue
        if got == original:
            outcomes["equal"] += 1
        elif schema_start <= at < schema_end:
            diffs = [d for a, b in zip(original, got, strict=True) for d in _differences(a, b)]
            assert len(got) == len(original), f"schema flip at {at} changed the entry count"
            assert {path for path, _, _ in diffs} == {diffs[0][0]}, f"schema flip at {at} changed {diffs}"
            assert all(value is None for _, _, value in diffs), f"schema flip at {at} changed {diffs}"
            field = "_" + diffs[0][0].rsplit(".", 1)[-1].upper()  # .file.delete_row_count: _DELETE_ROW_COUNT
            assert field in optional, f"schema flip at {at} dropped the required field {field}"
            outcomes["schema"] += 1
        else:
            assert at in payload, f"flip at byte {at} (outside the schema and the payload) read {got}"
            assert len(got) == len(original) and all(isinstance(e, ManifestEntry) for e in got)
            outcomes["payload"] += 1
    # The sample exercises every outcome (a fixed seed: the counts are stable).
    assert all(outcomes.values()), outcomes


def test_read_avro_names_source() -> None:
    data = write_avro(MANIFEST_FILE_META_SCHEMA, [meta_to_avro(ManifestFileMeta("m", 1, 1, 0, SimpleStats.empty(), 0))])
    assert [r["_FILE_NAME"] for r in read_avro(data, "x")] == ["m"]
    with pytest.raises(CorruptMetadataError, match="Cannot read Avro file /some/where"):
        list(read_avro(data[: len(data) // 2], "/some/where"))


def test_zstd_frames_without_content_size_decode() -> None:
    """Java's Avro writer emits streaming zstd frames that do not declare their decompressed size."""
    import fastavro._write as fastavro_write
    import pyarrow as pa

    from pyspark_paimon.metadata.io import avro as avro_module

    frames: list[bytes] = []

    def streaming_block_writer(fo: Any, block_bytes: bytes, compression_level: Any) -> None:
        sink = pa.BufferOutputStream()
        with pa.CompressedOutputStream(sink, "zstd") as out:
            out.write(block_bytes)
        frame = sink.getvalue().to_pybytes()
        frames.append(frame)
        avro_module._write_long(fo, len(frame))
        fo.write(frame)

    ours = fastavro_write.BLOCK_WRITERS["zstandard"]
    fastavro_write.BLOCK_WRITERS["zstandard"] = streaming_block_writer
    try:
        entries = [add(f"f{i}", part("p")) for i in range(30)]
        data = write_avro(MANIFEST_ENTRY_SCHEMA, [entry_to_avro(e) for e in entries])
    finally:
        fastavro_write.BLOCK_WRITERS["zstandard"] = ours
    assert frames and frames[0][:4] == b"\x28\xb5\x2f\xfd"
    descriptor = frames[0][4]
    assert descriptor >> 6 == 0 and not descriptor & 0x20, "the frame really has no content size"
    assert [entry_from_avro(r, "x") for r in read_avro(data, "x")] == entries
