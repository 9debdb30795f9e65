"""A data-evolution read bounded by a filter on ``_ROW_ID`` reads only the rows of those ids from each file
(``file_read._read_window``): the Parquet row groups that hold them, sliced to the exact positions."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyspark_paimon.datasource.read import file_read
from pyspark_paimon.metadata.io.fileio import FileIO


@pytest.mark.parametrize(
    ("window", "groups"),
    [((3, 7), [1, 2, 3]), ((0, 2), [0]), ((9, 10), [4]), ((4, 4), []), ((0, 10), [0, 1, 2, 3, 4])],
)
def test_a_window_decodes_only_its_row_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: tuple[int, int], groups: list[int]
) -> None:
    path = str(tmp_path / "f.parquet")
    pq.write_table(pa.table({"v": pa.array(range(10), pa.int64())}), path, row_group_size=2)  # 5 groups of 2 rows
    read_groups: list[list[int] | None] = []
    original = file_read._FileReader.read

    def spy(self: file_read._FileReader, columns: list[str], row_groups: list[int] | None = None) -> pa.Table:
        read_groups.append(row_groups)
        return original(self, columns, row_groups)

    monkeypatch.setattr(file_read._FileReader, "read", spy)
    fileio, local = FileIO.for_uri(path, {})
    with file_read._FileReader(fileio, local, "parquet", "f.parquet") as reader:
        rows = file_read._read_window(reader, ["v"], window)
    assert rows.column("v").to_pylist() == list(range(*window))
    assert read_groups == ([groups] if groups else [])  # an empty window decodes nothing
