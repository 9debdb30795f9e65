"""Row-level DML on row-tracking tables without data evolution (issue 36): ``t.delete``, ``t.update`` and an
Arrow ``t.merge`` keep every surviving row's ``_ROW_ID``, copy-on-write (each run of following ids one file whose
first row id is the run's) and with deletion vectors; updated rows get the change's snapshot as
``_SEQUENCE_NUMBER``, untouched rows keep theirs. pypaimon reading the result is
``tests/interop/test_interop_row_tracking.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.metadata.manifests.manifest import FILE_SOURCE_APPEND, KIND_ADD

TRACKED = {"read.row-tracking-columns": "true"}


@pytest.fixture(params=[False, True], ids=["copy-on-write", "deletion-vectors"])
def table(tmp_path: Path, request: Any) -> Table:
    """Row ids 0-3 (ids 1-4, snapshot 1), 4-5 (ids 5-6, snapshot 2)."""
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    options = {"row-tracking.enabled": "true", "deletion-vectors.enabled": str(request.param).lower()}
    t = catalog.create_table("db.t", "id int, v string", options=options)
    t.write_arrow(pa.table({"id": pa.array([1, 2, 3, 4], pa.int32()), "v": ["a", "b", "c", "d"]}))
    t.refresh().write_arrow(pa.table({"id": pa.array([5, 6], pa.int32()), "v": ["e", "f"]}))
    return t.refresh()


def _by_row_id(t: Table) -> dict[int, tuple[Any, ...]]:
    rows = t.refresh().scan(read_options=TRACKED).to_arrow().to_pylist()
    return {r["_ROW_ID"]: (r["id"], r["v"], r["_SEQUENCE_NUMBER"]) for r in rows}


def test_delete_keeps_the_ids_of_the_surviving_rows(table: Table) -> None:
    result = table.delete("id = 2 or id = 5")
    assert result.deleted == 2 and result.snapshot_id == 3
    assert _by_row_id(table) == {0: (1, "a", 1), 2: (3, "c", 1), 3: (4, "d", 1), 5: (6, "f", 2)}
    snapshot = table.refresh().latest_snapshot()
    assert snapshot is not None and snapshot.next_row_id == 6  # no id handed out again
    if not table.schema.core_options.deletion_vectors_enabled:
        # Each run of following ids is one file whose first row id is the run's (every reader computes the same).
        files = [e.file for e in table.store.live_entries(snapshot) if e.kind == KIND_ADD]
        assert sorted((f.first_row_id, f.row_count) for f in files) == [(0, 1), (2, 2), (5, 1)]
        assert all(f.file_source == FILE_SOURCE_APPEND and f.write_cols is None for f in files)
    table.refresh().write_arrow(pa.table({"id": pa.array([7], pa.int32()), "v": ["g"]}))
    assert _by_row_id(table)[6] == (7, "g", 4)


def test_update_keeps_ids_and_gives_updated_rows_the_new_sequence_number(table: Table) -> None:
    result = table.update({"v": "upper(v)"}, "id in (2, 3, 6)")
    assert result.updated == 3 and result.snapshot_id == 3
    assert _by_row_id(table) == {
        0: (1, "a", 1),
        1: (2, "B", 3),
        2: (3, "C", 3),
        3: (4, "d", 1),
        4: (5, "e", 2),
        5: (6, "F", 3),
    }
    assert table.refresh().latest_snapshot().next_row_id == 6  # type: ignore[union-attr]


def test_merge_keeps_ids_and_appends_new_rows_with_new_ones(table: Table) -> None:
    source = pa.table({"id": pa.array([1, 4, 9], pa.int32()), "v": ["x", "del", "z"]})
    result = (
        table.merge(source, on="id")
        .when_matched_delete("source.v = 'del'")
        .when_matched_update({"v": "source.v"})
        .when_not_matched_insert_all()
        .execute()
    )
    assert (result.updated, result.deleted, result.inserted) == (1, 1, 1)
    assert _by_row_id(table) == {
        0: (1, "x", 3),
        1: (2, "b", 1),
        2: (3, "c", 1),
        4: (5, "e", 2),
        5: (6, "f", 2),
        6: (9, "z", 3),
    }
