"""``Scan.to_spark``: one planned read as a Spark DataFrame, merge-free splits read by Spark's own file readers.

:mod:`pyspark_paimon.datasource.read.routing` sends each split of the plan to a reader. The JVM half reads the files of
the merge-free splits with Spark's built-in Parquet/ORC reader, one ``spark.read`` per (branch, schema id, format)
so that each call sees one physical schema, and maps every group onto the read schema by field id the way
:func:`pyspark_paimon.datasource.read.read.read_split` does: renamed columns aliased, widened ones cast, added ones
NULL, dropped ones and the system columns (``_KEY_*``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``) not selected;
files with deletion vectors lose the rows whose ``_metadata.row_index`` their vector names (an anti-join against
the positions, read on the driver and shipped as a small local relation). The
Python half is the ``paimon`` source pinned to the plan's snapshot and restricted to the other splits (the
internal ``pyspark-paimon.only-splits`` read option). Both halves are unioned by name; the ``filter`` and the
``columns`` are then Spark's, so pushdown and pruning reach the JVM reader.

Everything here is SQL text and DataFrame methods of the session it is given: nothing imports pyspark, so it
runs on classic Spark and on Spark Connect alike, and the Python API offers it without the Spark adapters.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

import numpy as np
import pyarrow as pa

from pyspark_paimon.datasource.jobs import ReadJob
from pyspark_paimon.datasource.read.file_read import format_of
from pyspark_paimon.datasource.read.read_context import ReadContext
from pyspark_paimon.datasource.read.routing import Routing, split_key
from pyspark_paimon.errors import UnsupportedTypeError
from pyspark_paimon.metadata.manifests.deletion_vectors import read_deletion_vector
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.types.ddl import quote_ident, to_spark_ddl, to_spark_type_ddl
from pyspark_paimon.metadata.types.model import AtomicType, DataField
from pyspark_paimon.planner.read_options import FILTER_KEY, ONLY_SPLITS_KEY, ReadOptions
from pyspark_paimon.planner.split import DataSplit

SNAPSHOT_ID_KEY = "scan.snapshot-id"
# Deletion-vector files: the columns the anti-join against their deleted positions matches on.
_FILE_COLUMN = "__paimon_file"
_POSITION_COLUMN = "__paimon_pos"
# Characters Hadoop's glob expansion treats specially (escaped by a backslash).
_GLOB_CHARS = frozenset("\\{}[]*?")
# Paimon writes dates and timestamps in the proleptic Gregorian calendar, which Spark calls CORRECTED; without
# these options Spark refuses ancient values in files that no Spark wrote.
_FILE_OPTIONS = {"datetimeRebaseMode": "CORRECTED", "int96RebaseMode": "CORRECTED"}

# A value of each type that stands in for NULL in a column that is NOT NULL anyway: ``coalesce(col, literal)``
# tells Spark the column is not nullable, as the table (and the Python source's schema) says.
_NOT_NULL_LITERALS = {
    "BOOLEAN": "false",
    "TINYINT": "0Y",
    "SMALLINT": "0S",
    "INT": "0",
    "BIGINT": "0L",
    "FLOAT": "0.0F",
    "DOUBLE": "0.0D",
    "DATE": "DATE'1970-01-01'",
    "CHAR": "''",
    "VARCHAR": "''",
    "BINARY": "X''",
    "VARBINARY": "X''",
    "TIMESTAMP": "TIMESTAMP_NTZ'1970-01-01 00:00:00'",
    "TIMESTAMP_LTZ": "TIMESTAMP_LTZ'1970-01-01 00:00:00'",
}


def spark_frame(
    session: Any,
    job: ReadJob,
    routing: Routing,
    *,
    table_uri: str,
    branch: str,
    read_options: Mapping[str, str],
    columns: Sequence[str] | None,
    storage_options: Mapping[str, Any],
) -> Any:
    """The DataFrame of ``job`` (a Spark DataFrame of ``session``): ``routing.jvm`` through Spark's file readers,
    ``routing.python`` through the ``paimon`` source, unioned, then ``filter`` and ``columns`` applied."""
    schema = job.planned.schema
    names = list(columns) if columns is not None else schema.field_names
    frames = []
    if routing.jvm:
        frames.append(jvm_splits_frame(session, job.context, schema, routing.jvm, read_options.get(FILTER_KEY), names))
    if routing.python or not frames:
        frames.append(_python_frame(session, job, routing, table_uri, branch, read_options, names, storage_options))
    out = frames[0]
    for other in frames[1:]:
        out = out.unionByName(other)
    return out


def jvm_splits_frame(
    session: Any,
    ctx: ReadContext,
    schema: TableSchema,
    splits: Sequence[DataSplit],
    filter_text: str | None,
    names: Sequence[str],
) -> Any:
    """The rows of ``splits`` (each routed to the JVM: :mod:`pyspark_paimon.datasource.read.routing`) read by
    Spark's file readers as ``schema``'s columns, ``filter_text`` (SQL) applied, ``names`` selected."""
    options = ctx.core_options()
    # one spark.read per physical schema (and per relabelled partition: chain splits carry their logical one)
    # and per "has deletion vectors": those files carry their file name and row positions for the anti-join)
    groups: dict[tuple[str, int, str, tuple | None, bool], tuple[TableSchema, list[str]]] = {}
    vector_files: list[pa.Array] = []
    positions: list[np.ndarray] = []
    for split in splits:
        relabel = tuple(split.partition_values) if split.relabel_partition else None
        for f in split.files:
            branch = split.file_branches.get(f.file_name, ctx.branch)
            dfile = split.deletion_files.get(f.file_name)
            key = (branch, f.schema_id, format_of(f, options), relabel, dfile is not None)
            if key not in groups:
                groups[key] = (ctx.file_schema(split, f), [])
            groups[key][1].append(_no_glob(ctx.fileio.uri(split.file_path(f))))
            if dfile is not None:
                deleted = read_deletion_vector(ctx.fileio, dfile, f.file_name)
                vector_files.append(pa.repeat(pa.scalar(f.file_name), len(deleted)))
                positions.append(np.asarray(deleted, dtype=np.int64))
    frame = None
    for (_, _, fmt, relabel, vectors), (written, paths) in groups.items():
        override = dict(zip(schema.partition_keys, relabel)) if relabel is not None else {}
        part = _file_group(session, schema, written, fmt, paths, override, vectors)
        if vectors and positions:
            deleted_rows = pa.table(
                {_FILE_COLUMN: pa.concat_arrays(vector_files), _POSITION_COLUMN: pa.array(np.concatenate(positions))}
            )
            part = part.join(
                session.createDataFrame(deleted_rows), on=[_FILE_COLUMN, _POSITION_COLUMN], how="left_anti"
            )
        if vectors:
            part = part.drop(_FILE_COLUMN, _POSITION_COLUMN)
        frame = part if frame is None else frame.unionByName(part)
    assert frame is not None
    required = [f for f in schema.fields if not f.type.nullable]
    if required:
        frame = frame.selectExpr(
            *(_not_null_expr(f) if not f.type.nullable else quote_ident(f.name) for f in schema.fields)
        )
    if filter_text:
        frame = frame.filter(filter_text)
    return frame.select(*(quote_ident(n) for n in names))


def _file_group(
    session: Any,
    read: TableSchema,
    written: TableSchema,
    fmt: str,
    paths: list[str],
    override: Mapping[str, Any],
    positions: bool = False,
) -> Any:
    """The files ``paths`` (all written under ``written``, in format ``fmt``) as the read schema's columns;
    ``override`` replaces partition columns by constants (a chain split's logical partition). With
    ``positions`` each row also carries its file's name and its position in the file (Spark's Parquet
    ``_metadata.row_index``, file-global whatever row groups are skipped), for the deletion-vector anti-join."""
    by_id = {f.id: f for f in written.fields}
    stored: list[DataField] = []
    exprs = []
    for target in read.fields:
        source = by_id.get(target.id)
        target_type = to_spark_type_ddl(target.type, target.name)
        if target.name in override:
            exprs.append(f"{_literal(override[target.name], target_type)} AS {quote_ident(target.name)}")
            continue
        if source is None:
            exprs.append(f"CAST(NULL AS {target_type}) AS {quote_ident(target.name)}")
            continue
        stored.append(DataField(source.id, source.name, source.type.copy(nullable=True)))
        column = quote_ident(source.name)
        if to_spark_type_ddl(source.type, source.name) != target_type:
            column = f"CAST({column} AS {target_type})"
        exprs.append(f"{column} AS {quote_ident(target.name)}")
    if positions:
        exprs += [f"_metadata.file_name AS {_FILE_COLUMN}", f"_metadata.row_index AS {_POSITION_COLUMN}"]
    reader = session.read.format(fmt).schema(to_spark_ddl(stored))
    if fmt == "parquet":
        reader = reader.options(**_FILE_OPTIONS)
    return reader.load(paths).selectExpr(*exprs)


def _no_glob(path: str) -> str:
    """``path`` with Hadoop's glob characters escaped: Spark expands every path it loads as a glob, so a table
    under ``/data/t[1]`` would otherwise match ``/data/t1`` (or nothing) instead of itself."""
    return "".join("\\" + c if c in _GLOB_CHARS else c for c in path)


def _literal(value: Any, spark_type: str) -> str:
    """``value`` (a partition value of a type routing.py allows) as a Spark SQL expression of ``spark_type``."""
    if value is None:
        return f"CAST(NULL AS {spark_type})"
    text = str(value).replace("\\", "\\\\").replace("'", "\\'")
    return f"CAST('{text}' AS {spark_type})"


def _not_null_expr(f: DataField) -> str:
    if not isinstance(f.type, AtomicType):
        raise UnsupportedTypeError(f"Column '{f.name}' is a NOT NULL {f.type}; route its read to the Python source.")
    if f.type.root == "DECIMAL":
        literal = f"CAST({'0.' + '0' * f.type.scale if f.type.scale else '0'}BD AS {to_spark_type_ddl(f.type)})"
    else:
        literal = _NOT_NULL_LITERALS[f.type.root]
    return f"coalesce({quote_ident(f.name)}, {literal}) AS {quote_ident(f.name)}"


def _python_frame(
    session: Any,
    job: ReadJob,
    routing: Routing,
    table_uri: str,
    branch: str,
    read_options: Mapping[str, str],
    names: list[str],
    storage_options: Mapping[str, Any],
) -> Any:
    """The ``paimon`` source reading only ``routing.python``, of the very snapshot ``job`` planned."""
    opts = {str(k): str(v) for k, v in read_options.items()}
    planned = job.planned
    if planned.kind == "plain" and not ReadOptions.from_options(opts).time_travel and planned.plan.snapshot:
        opts[SNAPSHOT_ID_KEY] = str(planned.plan.snapshot.id)  # a commit after planning must not change the read
    opts.setdefault("branch", branch)
    primary = bool(planned.schema.primary_keys)
    opts[ONLY_SPLITS_KEY] = json.dumps(sorted(split_key(s, primary) for s in routing.python))
    for key, value in storage_options.items():
        opts[f"fs.{key}"] = value if isinstance(value, str) else json.dumps(value)
    fields = [planned.schema.field(n) for n in names]
    return session.read.format("paimon").options(**opts).schema(to_spark_ddl(fields)).load(table_uri)


__all__ = ["jvm_splits_frame", "spark_frame"]
