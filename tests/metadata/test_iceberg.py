"""Iceberg-compatible metadata (``metadata.iceberg.storage``, issue 38), read by real Iceberg readers.

Every table here is written and kept written by us; after every step DuckDB's iceberg extension, PyIceberg and
our own reader must return the same rows: an append table and a deletion-vector primary-key table through
appends, upserts, deletes, a compaction, an expiration, a tag, a branch published into main, a fast-forward and
a rollback; a primary-key table without deletion vectors shows its top-level files. The metadata is built
incrementally (a commit adds a few small files), survives a failed sync, and garbage collection never deletes
what an Iceberg snapshot references. Tables are tiny; DuckDB is one connection for the module.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pytest
from pyiceberg.table import StaticTable
from pyiceberg.table.deletion_vector import DeletionVector, _extract_vector_payload
from pyiceberg.table.puffin import PuffinFile

from pyspark_paimon import Catalog, Table
from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.iceberg import sync as iceberg_sync
from pyspark_paimon.metadata.iceberg.iceberg_manifests import ManifestWriter, read_manifest, read_manifest_list
from pyspark_paimon.metadata.iceberg.layout import iceberg_layout
from pyspark_paimon.metadata.iceberg.table_metadata import TableMetadata
from pyspark_paimon.metadata.manifests.deletion_vectors import (
    decode_deletion_vector,
    encode_deletion_vector,
    encode_roaring64,
)
from tests.iceberg_readers import current_metadata_file, duckdb_connection, duckdb_table, pyiceberg_table, rows

NOW = 10**13  # an instant after every snapshot: expiration may take anything its counts allow


@pytest.fixture(scope="module")
def duck() -> Iterator[Any]:
    con = duckdb_connection()
    yield con
    con.close()


def _metadata(location: str) -> TableMetadata:
    path = current_metadata_file(location)
    return TableMetadata.from_json(Path(path).read_bytes(), path)


def _agree(duck: Any, t: Table, location: str, key: str = "id") -> list[dict[str, Any]]:
    """DuckDB, PyIceberg and our reader return the same rows; returns them."""
    ours = rows(t.scan().to_arrow(), key)
    assert rows(duckdb_table(duck, location), key) == ours, "DuckDB"
    assert rows(pyiceberg_table(location), key) == ours, "PyIceberg"
    return ours


def _batch(ids: list[int], dt_value: str, v: str) -> pa.Table:
    return pa.table(
        {
            "p": [dt_value] * len(ids),
            "id": pa.array(ids, pa.int64()),
            "v": [f"{v}{i}" for i in ids],
            "d": pa.array([dt.date(2025, 1, 1) + dt.timedelta(days=i) for i in ids], pa.date32()),
        }
    )


def _lifecycle(duck: Any, t: Table, location: str, primary_key: bool) -> None:
    """Appends, upserts or deletes, a compaction, a tag, an expiration, a branch published into main, a
    fast-forward and a rollback, checked by all three readers after every step."""
    t.write_arrow(_batch([1, 2, 3], "a", "x"))
    _agree(duck, t, location)
    t.write_arrow(_batch([4, 5], "b", "y"))
    _agree(duck, t, location)
    # DuckDB prunes with the bounds we publish: a filter on a column's statistics still finds its rows.
    assert duck.execute(f"SELECT id FROM iceberg_scan('{location}') WHERE d = DATE '2025-01-05'").fetchall() == [(4,)]
    if primary_key:
        t.write_arrow(_batch([2], "a", "up"))  # upserts: new versions of two keys
        t.write_arrow(_batch([4], "b", "up"))
    else:
        t.update({"v": "'upd'"}, "id = 3")
    _agree(duck, t, location)
    t.delete("id = 1")
    assert [r["id"] for r in _agree(duck, t, location)] == [2, 3, 4, 5]
    t.maintenance.compact(full=True)
    _agree(duck, t, location)

    t.tags.create("v1")
    tagged = t.latest_snapshot().id
    assert _metadata(location).refs == {"v1": tagged}
    table = StaticTable.from_metadata(current_metadata_file(location))
    assert rows(table.scan(snapshot_id=table.metadata.refs["v1"].snapshot_id).to_arrow(), "id") == rows(
        t.scan().to_arrow(), "id"
    )

    before = {s.snapshot_id for s in _metadata(location).snapshots}
    result = t.maintenance.expire_snapshots(retain_max=1, retain_min=1, older_than=NOW)
    assert result.expired_snapshots
    kept = {s.snapshot_id for s in _metadata(location).snapshots}
    assert kept == set(t.store.snapshots.list_ids()) and kept < before  # Iceberg keeps what Paimon keeps
    _agree(duck, t, location)

    t.branches.create("b")
    t.on_branch("b").write_arrow(_batch([10], "c", "br"))
    t.branches.publish("b")
    assert 10 in [r["id"] for r in _agree(duck, t, location)]

    t.branches.create("ff")
    t.on_branch("ff").write_arrow(_batch([11], "c", "ff"))
    t.branches.fast_forward("ff")
    assert 11 in [r["id"] for r in _agree(duck, t, location)]

    t.maintenance.rollback_to(tag="v1")
    after = _agree(duck, t, location)
    assert not {10, 11} & {r["id"] for r in after}
    assert _metadata(location).current_snapshot_id == tagged
    versions = sorted(int(n[1:].split(".")[0]) for n in os.listdir(f"{location}/metadata") if n.endswith(".json"))
    assert versions == [tagged]  # versions above the head are gone: Hadoop tables would take them for newer
    t.write_arrow(_batch([12], "d", "z"))
    assert 12 in [r["id"] for r in _agree(duck, t, location)]


def test_append_table_through_its_life(tmp_path: Path, duck: Any) -> None:
    cat = Catalog(str(tmp_path))
    t = cat.create_table(
        "db.t",
        "p string, id bigint, v string, d date",
        partition_keys=["p"],
        options={"metadata.iceberg.storage": "hadoop-catalog"},
    )
    _lifecycle(duck, t, str(tmp_path / "iceberg" / "db" / "t"), primary_key=False)


def test_deletion_vector_primary_key_table_through_its_life(tmp_path: Path, duck: Any) -> None:
    cat = Catalog(str(tmp_path))
    t = cat.create_table(
        "db.t",
        "p string, id bigint not null, v string, d date",
        partition_keys=["p"],
        primary_keys=["p", "id"],
        options={
            "bucket": "2",
            "metadata.iceberg.storage": "table-location",
            "metadata.iceberg.format-version": "3",
            "deletion-vectors.enabled": "true",
            "deletion-vectors.bitmap64": "true",
        },
    )
    location = str(tmp_path / "db.db" / "t")
    t.write_arrow(_batch([1, 2, 3], "a", "x"))
    t.write_arrow(_batch([2], "a", "up"))  # the lookup compaction marks the old row of id 2 in a vector
    _agree(duck, t, location)
    metadata = _metadata(location)
    assert metadata.format_version == 3 and metadata.next_row_id is not None
    deletes = [m for m in read_manifest_list(_layout(t), metadata.current.manifest_list) if m.content == 1]
    assert deletes and deletes[0].live_files == 1 and deletes[0].live_rows == 1  # one vector, one row
    puffins = [n for n in os.listdir(f"{location}/metadata") if n.endswith(".puffin")]
    assert len(puffins) == 1
    PuffinFile(Path(f"{location}/metadata/{puffins[0]}").read_bytes())  # a real Puffin file
    _lifecycle(duck, t, location, primary_key=True)


def _layout(t: Table) -> Any:
    layout = iceberg_layout(t.store, t.store.schema())
    assert layout is not None
    return layout


@pytest.mark.parametrize("options", [{}, {"deletion-vectors.enabled": "true"}], ids=["plain", "dv-format-2"])
def test_primary_key_table_shows_its_top_level_files(tmp_path: Path, duck: Any, options: dict[str, str]) -> None:
    """Without deletion vectors published (none, or format version 2), Iceberg readers see only the top level,
    as Java does: nothing before the first full compaction, exactly the compacted rows after it."""
    cat = Catalog(str(tmp_path))
    t = cat.create_table(
        "db.t",
        "id bigint not null, v string",
        primary_keys=["id"],
        options={"bucket": "1", "metadata.iceberg.storage": "table-location", "write-only": "true", **options},
    )
    location = str(tmp_path / "db.db" / "t")
    t.write_arrow(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}))
    t.write_arrow(pa.table({"id": pa.array([2, 3], pa.int64()), "v": ["B", "c"]}))
    assert duckdb_table(duck, location).num_rows == 0 and pyiceberg_table(location).num_rows == 0
    t.maintenance.compact(full=True)
    top = t.store.schema().core_options.num_levels - 1
    live = t.store.live_entries(t.latest_snapshot())
    assert {e.file.level for e in live} == {top}
    table = StaticTable.from_metadata(current_metadata_file(location))
    published = {task.file.file_path.rsplit("/", 1)[-1] for task in table.scan().plan_files()}
    assert published == {e.file.file_name for e in live}
    assert _agree(duck, t, location) == [{"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 3, "v": "c"}]
    t.write_arrow(pa.table({"id": pa.array([1], pa.int64()), "v": ["A"]}))  # level 0 again: not shown yet
    assert rows(pyiceberg_table(location), "id")[0] == {"id": 1, "v": "a"}


def test_a_commit_adds_a_few_small_files_and_reuses_the_manifests(tmp_path: Path) -> None:
    """Incremental like Java: a commit writes one manifest, one manifest list and one metadata file, deletes the
    previous metadata file, and lists the earlier manifests again instead of rewriting them; small manifests are
    merged once there are many (metadata.iceberg.compaction.*), so a reader opens few."""
    cat = Catalog(str(tmp_path))
    t = cat.create_table(
        "db.t",
        "id bigint, v string",
        options={
            "metadata.iceberg.storage": "table-location",
            "snapshot.num-retained.min": "1",
            "snapshot.num-retained.max": "3",
            "snapshot.time-retained": "1 ms",
        },
    )
    location = tmp_path / "db.db" / "t"
    layout = None
    previous: list[str] = []
    for i in range(60):
        t.write_arrow(pa.table({"id": pa.array([i], pa.int64()), "v": [str(i)]}))
        layout = layout or _layout(t)
        metadata = _metadata(str(location))
        paths = [m.path for m in read_manifest_list(layout, metadata.current.manifest_list)]
        if i in (1, 2, 3):
            assert paths[:-1] == previous  # the earlier manifests are listed again, the new one appended
        assert len(paths) <= 50
        previous = paths
        # retention follows Paimon's: at most 3 snapshots, so the directory stays small
        assert len(os.listdir(location / "metadata")) <= 3 * 2 + 50 + 2
    assert len(paths) < 20  # merged at least once
    assert rows(pyiceberg_table(str(location)), "id") == rows(t.scan().to_arrow(), "id")
    assert sorted(os.listdir(location / "metadata"))[-2:] == ["v60.metadata.json", "version-hint.text"]


def test_a_failed_sync_keeps_the_write_and_the_previous_version(
    tmp_path: Path, duck: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The Paimon commit has landed when the Iceberg step runs: its failure is logged, the write succeeds, Iceberg
    readers keep the previous version, and the next commit (or sync_iceberg) catches up."""
    cat = Catalog(str(tmp_path))
    t = cat.create_table("db.t", "id bigint, v string", options={"metadata.iceberg.storage": "table-location"})
    location = str(tmp_path / "db.db" / "t")
    t.write_arrow(pa.table({"id": pa.array([1], pa.int64()), "v": ["a"]}))

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError("disk full")

    monkeypatch.setattr(ManifestWriter, "write", broken)
    with caplog.at_level(logging.WARNING):
        snapshot = t.write_arrow(pa.table({"id": pa.array([2], pa.int64()), "v": ["b"]}))
    assert snapshot.snapshot_id == 2
    assert "writing its Iceberg metadata failed: disk full" in caplog.text
    assert len(t.scan().to_arrow()) == 2
    assert rows(duckdb_table(duck, location), "id") == [{"id": 1, "v": "a"}]  # the previous, consistent version
    monkeypatch.undo()
    assert t.maintenance.sync_iceberg() == 2
    _agree(duck, t, location)
    t.write_arrow(pa.table({"id": pa.array([3], pa.int64()), "v": ["c"]}))
    assert len(_agree(duck, t, location)) == 3


def test_expiration_and_orphan_removal_never_delete_what_iceberg_references(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Expiration drops the Iceberg snapshots first (and their manifests and lists), so every file an Iceberg
    snapshot references still belongs to a Paimon snapshot. Orphan removal also keeps the files the Iceberg
    metadata references, even when Paimon alone would not (here: a rollback whose Iceberg step failed)."""
    cat = Catalog(str(tmp_path))
    t = cat.create_table("db.t", "id bigint, v string", options={"metadata.iceberg.storage": "table-location"})
    location = str(tmp_path / "db.db" / "t")
    for i in range(4):
        t.write_arrow(pa.table({"id": pa.array([i], pa.int64()), "v": [str(i)]}))
    layout = _layout(t)
    lists = {s.snapshot_id: s.manifest_list for s in _metadata(location).snapshots}
    t.maintenance.expire_snapshots(retain_max=2, retain_min=2, older_than=NOW)
    kept = _metadata(location).snapshots
    assert [s.snapshot_id for s in kept] == [3, 4]
    assert not os.path.exists(lists[1]) and not os.path.exists(lists[2]) and os.path.exists(lists[3])
    for s in kept:  # everything a kept snapshot references is still there
        for m in read_manifest_list(layout, s.manifest_list):
            assert all(os.path.exists(e.file.path) for e in read_manifest(layout, m, ()))

    monkeypatch.setattr(iceberg_sync, "resync_quietly", lambda *args: None)  # the Iceberg step of rollback fails
    t.maintenance.rollback_to(snapshot_id=3)
    monkeypatch.undo()
    newest = {e.file.file_name for e in t.store.live_entries(t.store.snapshots.snapshot(3))}
    iceberg_files = iceberg_sync.referenced_data_files(t.store)
    only_iceberg = iceberg_files - newest
    assert only_iceberg  # snapshot 4's file: Paimon no longer references it, the Iceberg metadata does
    t.maintenance.remove_orphan_files(older_than=NOW)
    assert all(any(n in f for f in _data_files(tmp_path)) for n in only_iceberg)
    assert len(pyiceberg_table(location)) == 4  # still readable
    t.maintenance.sync_iceberg()
    t.maintenance.remove_orphan_files(older_than=NOW)
    assert not any(any(n in f for f in _data_files(tmp_path)) for n in only_iceberg)
    assert len(pyiceberg_table(location)) == 3


def _data_files(root: Path) -> list[str]:
    return [str(p) for p in root.rglob("*.parquet")]


def test_storage_types_and_locations(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path))
    for storage in ("hive-catalog", "rest-catalog"):
        with pytest.raises(OptionError, match=f"'metadata.iceberg.storage' = '{storage}'"):
            cat.create_table(f"db.{storage[:4]}", "id bigint", options={"metadata.iceberg.storage": storage})
    t = cat.create_table(
        "db.h",
        "id bigint",
        options={"metadata.iceberg.storage": "hadoop-catalog", "metadata.iceberg.storage-location": "table-location"},
    )
    t.write_arrow(pa.table({"id": pa.array([1], pa.int64())}))
    assert os.path.exists(tmp_path / "db.db" / "h" / "metadata" / "version-hint.text")
    # Paimon 0.9's spelling keeps working: metadata in the table's directory
    old = cat.create_table("db.old", "id bigint", options={"metadata.iceberg-compatible": "true"})
    old.write_arrow(pa.table({"id": pa.array([1], pa.int64())}))
    assert len(pyiceberg_table(str(tmp_path / "db.db" / "old"))) == 1
    # catalog-location needs the table in a warehouse database: refused before anything is committed
    Path(tmp_path / "plain").mkdir()
    os.rename(tmp_path / "db.db" / "h", tmp_path / "plain" / "h")
    moved = Table.open(str(tmp_path / "plain" / "h"))
    moved.update_schema().set_options({"metadata.iceberg.storage-location": "catalog-location"}).commit()
    with pytest.raises(OptionError, match="'<db>.db' directory"):
        moved.write_arrow(pa.table({"id": pa.array([2], pa.int64())}))
    assert moved.latest_snapshot().id == 1


def test_64_bit_vectors_are_iceberg_deletion_vectors() -> None:
    """A 64-bit Paimon vector record is an Iceberg ``deletion-vector-v1`` blob: PyIceberg decodes ours, and ours
    decodes back; positions above 2^32 need the 64-bit layout."""
    positions = np.array([0, 5, 70000, 2**32 + 3, 2**33], dtype=np.int64)
    record, length = encode_deletion_vector(positions, bitmap64=True)
    assert length == len(record)
    assert decode_deletion_vector(record, length, "x").tolist() == positions.tolist()
    vector = DeletionVector("f", DeletionVector._deserialize_bitmap(_extract_vector_payload(record)))
    assert vector.to_vector().to_pylist() == positions.tolist()
    assert encode_roaring64(np.empty(0, np.int64)) == b"\x00" * 8
    with pytest.raises(OptionError, match="deletion-vectors.bitmap64"):
        encode_deletion_vector(positions)


def test_name_mapping_covers_every_name_a_field_had(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path))
    t = cat.create_table("db.t", "id bigint, s struct<a: int>", options={"metadata.iceberg.storage": "table-location"})
    t.write_arrow(pa.table({"id": pa.array([1], pa.int64()), "s": [{"a": 1}]}))
    t.update_schema().rename_column("id", "key").commit()
    t.write_arrow(pa.table({"key": pa.array([2], pa.int64()), "s": [{"a": 2}]}))
    mapping = json.loads(_metadata(str(tmp_path / "db.db" / "t")).properties["schema.name-mapping.default"])
    assert mapping[0]["names"] == ["id", "key"]
    assert mapping[1]["fields"][0]["names"] == ["a"]
    assert rows(pyiceberg_table(str(tmp_path / "db.db" / "t")), "key") == [
        {"key": 1, "s": {"a": 1}},
        {"key": 2, "s": {"a": 2}},
    ]


def test_append_table_with_deletion_vectors_publishes_them_or_is_refused(tmp_path: Path, duck: Any) -> None:
    """An append table's DELETE writes deletion vectors: published (format 3, 64-bit) Iceberg readers drop the
    rows too; unpublished they would not, so such a write is refused before anything is committed."""
    cat = Catalog(str(tmp_path))
    dv = {"deletion-vectors.enabled": "true", "metadata.iceberg.storage": "table-location"}
    t = cat.create_table(
        "db.t",
        "id bigint, v string",
        options={**dv, "metadata.iceberg.format-version": "3", "deletion-vectors.bitmap64": "true"},
    )
    t.write_arrow(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"]}))
    t.delete("id = 2")
    assert [r["id"] for r in _agree(duck, t, str(tmp_path / "db.db" / "t"))] == [1, 3]
    refused = cat.create_table("db.r", "id bigint", options=dv)
    with pytest.raises(OptionError, match="'metadata.iceberg.format-version' = '3'"):
        refused.write_arrow(pa.table({"id": pa.array([1], pa.int64())}))
    assert refused.latest_snapshot() is None
