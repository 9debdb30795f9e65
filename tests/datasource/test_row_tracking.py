"""Row tracking written and read here (issue 36), without the oracles: ids assigned at commit (the files' first row
ids, the snapshot's next row id, the manifests' row-id bounds), read back through the read option and
``$row_tracking``; the rules that group a data-evolution bucket's files by row id; and what stays refused.
pypaimon's side (it reads our ids; we read its data-evolution tables) is ``tests/interop/test_interop_row_tracking.py``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.datasource.compact.bucket_rewrite import id_runs
from pyspark_paimon.datasource.read.file_read import with_tracking_columns
from pyspark_paimon.errors import CompactionError, CorruptMetadataError, OptionError
from pyspark_paimon.metadata.manifests.manifest import (
    EMPTY_ROW,
    FILE_SOURCE_COMPACT,
    KIND_ADD,
    KIND_DELETE,
    DataFileMeta,
    ManifestEntry,
)
from pyspark_paimon.metadata.snapshots.row_ids import assign_row_ids
from pyspark_paimon.planner.row_ranges import row_id_groups

TRACKED = {"read.row-tracking-columns": "true"}


def _file(name: str, rows: int, first: int | None = None, seq: int = 0, **kw: object) -> DataFileMeta:
    return DataFileMeta(
        file_name=name,
        file_size=100,
        row_count=rows,
        first_row_id=first,
        min_sequence_number=seq,
        max_sequence_number=seq,
        **kw,  # type: ignore[arg-type]
    )


def _add(f: DataFileMeta) -> ManifestEntry:
    return ManifestEntry(KIND_ADD, EMPTY_ROW, 0, -1, f)


@pytest.fixture
def table(tmp_path: Path) -> Table:
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    t = catalog.create_table(
        "db.t", "id int, dt string, v string", partition_keys=["dt"], options={"row-tracking.enabled": "true"}
    )
    t.write_arrow(pa.table({"id": pa.array([1, 2, 3], pa.int32()), "dt": ["a", "b", "a"], "v": ["x", "y", "z"]}))
    t = t.refresh()
    t.write_arrow(pa.table({"id": pa.array([4], pa.int32()), "dt": ["b"], "v": ["w"]}))
    return t.refresh()


def test_commits_number_new_rows_from_the_snapshots_next_row_id(table: Table) -> None:
    got = table.scan(read_options=TRACKED).to_arrow()
    assert got.column_names == ["id", "dt", "v", "_ROW_ID", "_SEQUENCE_NUMBER"]
    ids = {r["id"]: (r["_ROW_ID"], r["_SEQUENCE_NUMBER"]) for r in got.to_pylist()}
    assert sorted(v[0] for v in ids.values()) == [0, 1, 2, 3]  # each row one id, no gap
    assert ids[4] == (3, 2)  # the second commit continues at 3; its sequence number is its snapshot id
    assert {ids[i][1] for i in (1, 2, 3)} == {1}
    assert [s["next_row_id"] for s in table.inspect.snapshots().to_pylist()] == [3, 4]
    entries = table.store.live_entries(table.latest_snapshot())
    ranges = sorted((e.file.first_row_id, e.file.row_count) for e in entries)
    starts = [0]
    for first, count in ranges:  # the files' ranges tile 0..3 without gap or overlap
        assert first == starts[-1]
        starts.append(first + count)
    assert starts[-1] == 4
    assert table.inspect.row_tracking().sort_by("id").equals(got.sort_by("id"))
    picked = table.scan(filter="_ROW_ID >= 3", read_options=TRACKED).to_arrow()
    assert picked.column("id").to_pylist() == [4]
    plain = table.scan().to_arrow()
    assert plain.column_names == ["id", "dt", "v"]


def test_manifests_carry_row_id_bounds(table: Table) -> None:
    metas = table.store.data_manifests(table.latest_snapshot())
    bounds = sorted((m.min_row_id, m.max_row_id) for m in metas)
    assert bounds == [(0, 2), (3, 3)]


def test_an_overwrite_numbers_its_rows_after_the_latest(table: Table) -> None:
    table.write_arrow(
        pa.table({"id": pa.array([5], pa.int32()), "dt": ["b"], "v": ["o"]}),
        mode="overwrite",
        overwrite_partition={"dt": "b"},
    )
    got = table.refresh().scan(read_options=TRACKED).to_arrow()
    assert dict(zip(got.column("id").to_pylist(), got.column("_ROW_ID").to_pylist()))[5] == 4


def test_assignment_skips_what_already_has_ids() -> None:
    entries = [
        _add(_file("a", 3)),
        ManifestEntry(KIND_DELETE, EMPTY_ROW, 0, -1, _file("old", 2, first=0, seq=1)),
        _add(_file("c", 4, first=9, seq=7, file_source=FILE_SOURCE_COMPACT)),
        _add(_file("d", 2, write_cols=("id", "_ROW_ID", "_SEQUENCE_NUMBER"))),
        _add(_file("e", 5)),
        _add(_file("u", 3, first=0, write_cols=("v",))),  # a data-evolution update of rows 0..2
    ]
    done = assign_row_ids(entries, 10, 4)
    assert done.next_row_id == 18
    assert [(e.file.first_row_id, e.file.min_sequence_number, e.file.max_sequence_number) for e in done.entries] == [
        (10, 4, 4),
        (0, 1, 1),
        (9, 7, 7),
        (None, 4, 4),  # stores its own ids; sequence numbers 0 are a new file's, as in Java
        (13, 4, 4),
        (0, 4, 4),  # keeps its range, becomes its newest file
    ]


def test_row_id_groups_put_one_range_together_newest_first() -> None:
    base = _file("base", 3, first=0, seq=1)
    update = _file("upd", 3, first=0, seq=3, write_cols=("v",))
    other = _file("other", 2, first=3, seq=2)
    groups = row_id_groups([other, base, update], "t")
    assert [[f.file_name for f in g] for g in groups] == [["upd", "base"], ["other"]]
    with pytest.raises(CorruptMetadataError, match="do not cover the same rows"):
        row_id_groups([base, replace(update, row_count=2)], "t")
    with pytest.raises(CorruptMetadataError, match="no first row id"):
        row_id_groups([_file("x", 1)], "t")


def test_what_stays_refused(table: Table, tmp_path: Path) -> None:
    with pytest.raises(CompactionError, match="tracks rows"):
        table.maintenance.compact(order_strategy="zorder", order_by=["id", "v"])
    with pytest.raises(OptionError, match="applies to reads of one version"):
        table.scan(read_options={**TRACKED, "incremental-between": "1,2"}).to_arrow()
    catalog = Catalog(str(tmp_path))
    plain = catalog.create_table("db.plain", "id int")
    with pytest.raises(OptionError, match="does not track rows"):
        plain.scan(read_options=TRACKED).to_arrow()
    with pytest.raises(OptionError, match="needs an append table"):
        catalog.create_table(
            "db.pk", "id int not null, v string", primary_keys=["id"], options={"row-tracking.enabled": "true"}
        )
    with pytest.raises(OptionError, match="needs 'bucket' = -1"):
        catalog.create_table(
            "db.b", "id int, v string", options={"row-tracking.enabled": "true", "bucket": "2", "bucket-key": "id"}
        )
    with pytest.raises(OptionError, match="needs 'row-tracking.enabled'"):
        catalog.create_table("db.de", "id int", options={"data-evolution.enabled": "true"})


def test_ids_a_file_stores_win_over_computed_ones() -> None:
    """Java's compactions write ``_ROW_ID`` / ``_SEQUENCE_NUMBER`` into the file and leave first_row_id unset."""
    data = pa.table({"id": [1, 2], "_ROW_ID": pa.nulls(2, pa.int64()), "_SEQUENCE_NUMBER": pa.nulls(2, pa.int64())})
    stored = pa.table({"_ROW_ID": pa.array([7, 8], pa.int64()), "_SEQUENCE_NUMBER": pa.array([3, 5], pa.int64())})
    compacted = _file("c", 2, seq=9, file_source=FILE_SOURCE_COMPACT)
    got = with_tracking_columns(data, compacted, np.arange(2), stored)
    assert got.column("_ROW_ID").to_pylist() == [7, 8] and got.column("_SEQUENCE_NUMBER").to_pylist() == [3, 5]
    partial = pa.table({"_ROW_ID": pa.array([7, None], pa.int64())})
    got = with_tracking_columns(data, _file("p", 2, first=20, seq=4), np.array([0, 5]), partial)
    assert got.column("_ROW_ID").to_pylist() == [7, 25] and got.column("_SEQUENCE_NUMBER").to_pylist() == [4, 4]
    with pytest.raises(CorruptMetadataError, match="no first row id"):
        with_tracking_columns(data, compacted, np.arange(2), partial)


def test_compaction_keeps_every_rows_id(tmp_path: Path) -> None:
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    t = catalog.create_table("db.c", "id int, v string", options={"row-tracking.enabled": "true"})
    for i in range(6):  # compaction.min.file-num = 5
        t.write_arrow(pa.table({"id": pa.array([2 * i, 2 * i + 1], pa.int32()), "v": ["a", "b"]}))
    before = t.refresh().scan(read_options=TRACKED).to_arrow().sort_by("id")
    result = t.refresh().maintenance.compact(full=True)
    assert result.files_before == 6 and result.files_after == 1
    t = t.refresh()
    assert t.scan(read_options=TRACKED).to_arrow().sort_by("id").equals(before)  # ids and sequence numbers kept
    (entry,) = t.store.live_entries(t.latest_snapshot())
    assert entry.file.first_row_id == 0 and entry.file.value_stats_cols == ("id", "v")
    t.write_arrow(pa.table({"id": pa.array([99], pa.int32()), "v": ["n"]}))
    new = t.refresh().scan(filter="id = 99", read_options=TRACKED).to_arrow()
    assert new.column("_ROW_ID").to_pylist() == [12]  # the compaction handed out no id


def test_only_runs_of_consecutive_ids_are_compacted() -> None:
    a, b, c = _file("a", 2, first=0), _file("b", 3, first=2), _file("c", 1, first=9)
    stored = _file("s", 4, file_source=FILE_SOURCE_COMPACT)
    runs = id_runs([c, b, stored, a, _file("d", 1, first=10)], {})
    assert [[f.file_name for f in r] for r in runs] == [["a", "b"], ["c", "d"], ["s"]]
    assert [[f.file_name for f in r] for r in id_runs([a, b], {"b": object()})] == [["a"], ["b"]]
