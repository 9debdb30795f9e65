"""Any Arrow data a user hands ``Table.write_arrow`` or ``Table.merge``, as one ``pyarrow.RecordBatchReader``.

delta-rs and pyiceberg take any Arrow stream, and so does this package: a ``pa.Table`` or ``RecordBatch``, a
``RecordBatchReader``, any object with ``__arrow_c_stream__`` (the Arrow PyCapsule protocol: polars, DuckDB
results, nanoarrow, ...), an iterable of ``RecordBatch`` es, or a pandas DataFrame. Nothing is collected here: a
writer reads the stream batch by batch, so a write larger than memory flushes as it goes.
"""

from __future__ import annotations

import itertools
import sys
from typing import Any, Iterable, Iterator, Protocol, Union

import pyarrow as pa

from pyspark_paimon.errors import SchemaMismatchError


class ArrowStreamExportable(Protocol):
    """An object that exports an Arrow stream through the Arrow PyCapsule protocol (polars and pandas
    DataFrames, DuckDB results, nanoarrow streams, a ``Scan``)."""

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...


ArrowData = Union[pa.Table, pa.RecordBatch, pa.RecordBatchReader, ArrowStreamExportable, Iterable[pa.RecordBatch]]
"""What ``Table.write_arrow`` and ``Table.merge`` take: a pyarrow ``Table``, ``RecordBatch`` or
``RecordBatchReader``, any object with ``__arrow_c_stream__`` (polars, DuckDB results...), an iterable of
``RecordBatch`` es, or a pandas DataFrame (pandas 2.2+ exports ``__arrow_c_stream__`` too; older ones are
converted with ``pyarrow.Table.from_pandas``)."""


def arrow_stream(data: Any, empty_schema: pa.Schema, what: str = "write_arrow") -> pa.RecordBatchReader:
    """``data`` as a stream of record batches; ``empty_schema`` is the schema of an empty iterable of batches
    (which has none of its own). ``what`` names the call in the error a non-Arrow value gets."""
    if isinstance(data, pa.RecordBatchReader):
        return data
    if isinstance(data, pa.Table):
        return data.to_reader()
    if isinstance(data, pa.RecordBatch):
        return pa.RecordBatchReader.from_batches(data.schema, [data])
    pandas = sys.modules.get("pandas")  # a pandas DataFrame exists only once pandas is imported
    if pandas is not None and isinstance(data, pandas.DataFrame):
        # pyarrow's own conversion: a RangeIndex stays metadata, a named index becomes that column
        return pa.Table.from_pandas(data).to_reader()
    if hasattr(data, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(data)
    if isinstance(data, Iterable) and not isinstance(data, (str, bytes, dict)):
        batches = iter(data)
        first = next(batches, None)
        if first is None:
            return pa.RecordBatchReader.from_batches(empty_schema, [])
        if isinstance(first, pa.RecordBatch):
            return pa.RecordBatchReader.from_batches(first.schema, _only_batches(first, batches, what))
    raise SchemaMismatchError(
        f"{what} takes Arrow data (a pyarrow Table, RecordBatch or RecordBatchReader, an object with "
        "__arrow_c_stream__ such as a polars DataFrame, an iterable of RecordBatches, or a pandas DataFrame), got "
        f"{_shown(data)}. A Spark DataFrame is written with df.write.format('paimon')."
    )


def read_whole(data: Any, empty_schema: pa.Schema, what: str) -> pa.Table:
    """``data`` (see :func:`arrow_stream`) read into one table, for a caller that needs all of it at once (a
    merge joins its whole source). View types (polars' strings) become their plain forms, which every Arrow
    kernel takes (pyarrow has no ``take`` for ``string_view``)."""
    table = data if isinstance(data, pa.Table) else arrow_stream(data, empty_schema, what).read_all()
    plain = pa.schema([f.with_type(_plain(f.type)) for f in table.schema], metadata=table.schema.metadata)
    return table if plain == table.schema else table.cast(plain)


def _plain(t: pa.DataType) -> pa.DataType:
    if pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        field = t.value_field.with_type(_plain(t.value_type))
        return pa.list_(field) if pa.types.is_list(t) else pa.large_list(field)
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_plain(t.field(i).type)) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_plain(t.key_type)), t.item_field.with_type(_plain(t.item_type)))
    return t


def _only_batches(first: pa.RecordBatch, rest: Iterator[Any], what: str) -> Iterator[pa.RecordBatch]:
    for batch in itertools.chain([first], rest):
        if not isinstance(batch, pa.RecordBatch):
            raise SchemaMismatchError(
                f"{what} got an iterable whose items are not all pyarrow RecordBatches (one is {_shown(batch)})."
            )
        yield batch


def _shown(value: Any) -> str:
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else kind.__qualname__


__all__ = ["arrow_stream", "read_whole"]
