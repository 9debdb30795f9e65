"""The "pyarrow floor": the least work any Python data source can do to scan, or write, Parquet files.

It reads the given Parquet files with pyarrow and yields the record batches as they come, with no metadata,
no schema evolution, no merge and no filter. The option ``groups`` is a JSON list of lists of file paths;
each inner list becomes one Spark task, so the benchmark can give it exactly the partitioning of the
``paimon`` source (or one task per file). Whatever this source costs, the Spark <-> Python Arrow transfer
costs every Python source, ``paimon`` included: it is the floor, not a competitor.

Writing (``df.write.format("bench_pyarrow_floor").mode("append").save(directory)``): each Spark task writes the
Arrow batches it receives into one Parquet file (zstd level 1, the codec and level of a Paimon data file) with
no sort, no bucketing, no statistics and no commit; that is what any Python sink pays for Spark -> Python Arrow
transfer plus Parquet encoding, the floor for the ``paimon`` writer.

Streaming (``spark.readStream.format("bench_pyarrow_floor").schema(ddl).option("groups", json).load()``): the
same files as one micro-batch, one task per group; the floor of a Python streaming source. As a streaming sink
(``writeStream.format("bench_pyarrow_floor").start(directory)``) each task writes its batches into one Parquet file
as the batch writer does, and the driver's commit does nothing: the floor of a Python streaming sink.

The batch size (65,536 rows) is the ``paimon`` reader's default ``read.batch-size``, so both sources hand
Spark batches of the same size. The benchmark registers this module for pickling by value, so Spark's
Python workers need not be able to import it.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

FLOOR_FORMAT = "bench_pyarrow_floor"
BATCH_ROWS = 65536


@dataclass(frozen=True)
class FilesPartition(InputPartition):
    files: tuple[str, ...]


class PyarrowFloorDataSource(DataSource):
    """``spark.read.format("bench_pyarrow_floor").schema(ddl).option("groups", json).load()``."""

    @classmethod
    def name(cls) -> str:
        return FLOOR_FORMAT

    def schema(self) -> str:
        return self.options.get("ddl", "id bigint, s string, d double")

    def reader(self, schema: StructType) -> DataSourceReader:
        return PyarrowFloorReader(schema, json.loads(self.options["groups"]))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        return PyarrowFloorWriter(self.options["path"])

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802 (Spark's name)
        return PyarrowFloorStreamReader(schema, json.loads(self.options["groups"]))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamArrowWriter:  # noqa: N802
        return PyarrowFloorStreamWriter(self.options["path"])


class PyarrowFloorWriter(DataSourceArrowWriter):
    def __init__(self, directory: str) -> None:
        self.directory = directory

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        os.makedirs(self.directory, exist_ok=True)
        writer = None
        path = os.path.join(self.directory, f"part-{uuid.uuid4()}.parquet")
        for batch in iterator:
            if writer is None:
                writer = pq.ParquetWriter(path, batch.schema, compression="zstd", compression_level=1)
            writer.write_batch(batch)
        if writer is not None:
            writer.close()
        return WriterCommitMessage()


class PyarrowFloorStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, directory: str) -> None:
        self.files = PyarrowFloorWriter(directory)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return self.files.write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        pass

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        pass


class PyarrowFloorReader(DataSourceReader):
    def __init__(self, schema: StructType, groups: list[list[str]]) -> None:
        self.schema = schema
        self.groups = groups

    def partitions(self) -> list[InputPartition]:
        return [FilesPartition(tuple(g)) for g in self.groups]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, FilesPartition)
        # Spark 4.2+ compares each batch's schema with this one (types and nullability, not metadata);
        # the Parquet files already hold these types, so relabelling the columns is free (no copy).
        target = to_arrow_schema(self.schema, timezone="UTC")
        names = target.names
        for path in partition.files:
            for batch in pq.ParquetFile(path).iter_batches(batch_size=BATCH_ROWS, columns=names):
                yield pa.RecordBatch.from_arrays(batch.columns, schema=target)


class PyarrowFloorStreamReader(DataSourceStreamReader):
    """The same files as one micro-batch (offset 0 -> 1), one task per group: what any Python streaming source
    pays (Spark's source runner process, offsets, the Arrow transfer) before doing any work of its own."""

    def __init__(self, schema: StructType, groups: list[list[str]]) -> None:
        self.batch_reader = PyarrowFloorReader(schema, groups)

    def initialOffset(self) -> dict:  # noqa: N802 (Spark's names)
        return {"batch": 0}

    def latestOffset(self, start: dict | None = None, limit: object = None) -> dict:  # noqa: N802
        return {"batch": 1}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        return self.batch_reader.partitions() if start["batch"] < end["batch"] else []

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return self.batch_reader.read(partition)

    def commit(self, end: dict) -> None:
        pass
