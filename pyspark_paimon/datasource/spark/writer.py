"""Spark writer: executors write data files, the driver commits once.

``writer()`` runs on the driver: it creates the table when it does not exist (Python sources cannot
receive ``partitionBy``, so keys and table options come from write options), evolves it to the DataFrame's columns
with ``write.merge-schema``, checks the DataFrame's schema against the table's, and captures what executors need
(sequence-number bases per bucket). ``write()`` runs per Spark partition and returns the files it wrote;
``commit()`` makes them one snapshot.

Failure handling follows Spark's protocol: ``abort()`` receives the messages of successful tasks. It deletes
their files only after checking that no snapshot of this job exists, because ``abort`` also runs when
``commit`` raised, possibly after the snapshot landed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Iterator, Sequence

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from pyspark_paimon.datasource.jobs import WriteJob, overwrite_spec, prepare_write
from pyspark_paimon.datasource.schema_changes import merge_data_schema
from pyspark_paimon.datasource.spark.types import from_spark_type, to_spark_type
from pyspark_paimon.datasource.table_ref import TableRef, route_to_audit_branch
from pyspark_paimon.datasource.write.store_assignment import assignment_problem
from pyspark_paimon.datasource.write.write import TableWriter
from pyspark_paimon.errors import (
    CommitError,
    OptionError,
    PaimonError,
    SchemaMismatchError,
    StorageError,
    TableNotFoundError,
)
from pyspark_paimon.metadata.catalog.metastore import NewTable
from pyspark_paimon.metadata.effects import records_effects
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.rows.partition import parse_partition_spec
from pyspark_paimon.metadata.schema.options import (
    BUCKET_KEY,
    ROWKIND_FIELD,
    SEQUENCE_FIELD,
    WRITE_MERGE_SCHEMA,
    validate_table_options,
)
from pyspark_paimon.metadata.schema.options import get as table_option
from pyspark_paimon.metadata.schema.schema_merge import MERGE_SCHEMA_KEYS, SchemaMerge
from pyspark_paimon.metadata.schema.table_schema import SchemaManager, TableSchema
from pyspark_paimon.metadata.snapshots.commit import CommitMessage, OverwriteSpec
from pyspark_paimon.metadata.snapshots.snapshot import MAIN_BRANCH
from pyspark_paimon.metadata.types.arrow import to_arrow_type

log = logging.getLogger(__name__)

# Write options that are not table options.
WRITE_KEYS = {
    "path",
    "paths",
    "warehouse",
    "branch",
    "audit-branch",
    "partitionoverwritemode",
    "overwrite-partition",
    "primary-key",
    "partition",
    "comment",
    *MERGE_SCHEMA_KEYS,  # a write's schema evolution, not stored with a table the write creates
}


# A table option Java engines read when they overwrite; a Spark write chooses with partitionOverwriteMode.
_DYNAMIC_OVERWRITE_TABLE_OPTION = "dynamic-partition-overwrite"

# Table options whose values name columns (Spark lower-cases what users wrote).
_COLUMN_LIST_KEYS = (SEQUENCE_FIELD.key, BUCKET_KEY.key, ROWKIND_FIELD.key)


# Spark's session conf for how INSERT OVERWRITE / mode("overwrite") replaces partitions ('static' by default).
SESSION_OVERWRITE_CONF = "spark.sql.sources.partitionOverwriteMode"


@dataclass(frozen=True)
class TaskRefusal:
    """A :class:`PaimonError` a write task raised (a value the table refuses, such as a NULL in a NOT NULL column),
    carried to the driver's ``commit`` instead of failing the task.

    A failed task makes Spark log its Python and Java stack traces (the task, the executor, the task set), retry
    it where ``spark.task.maxFailures`` allows (a refusal is the same every time) and only then raise, so our
    message came after three stack traces. A task that returns its refusal succeeds; ``commit`` raises the
    error on the driver (``abort`` then deletes the files the other tasks wrote), so the write fails with our
    message first and once. The error travels as its class (pickled by reference) and message: errors whose
    constructor takes more than a message are raised as a plain :class:`PaimonError` naming their class.
    """

    error_class: type[PaimonError]
    message: str
    task: str

    def error(self, more: int = 0) -> PaimonError:
        """The error to raise on the driver; ``more``: how many other tasks refused rows too."""
        message = self.message + (f" ({more} other write task(s) refused rows too.)" if more else "")
        if self.error_class.__init__ is PaimonError.__init__:
            return self.error_class(message)
        return PaimonError(f"{self.error_class.__name__}: {message}")


@dataclass
class PaimonCommitMessage(WriterCommitMessage):
    messages: tuple[CommitMessage, ...]
    # The session's partitionOverwriteMode as the task saw it (only for overwrites that defer to the session).
    session_overwrite_mode: str | None = None
    refusal: TaskRefusal | None = None


def write_task(
    writer: TableWriter, task_id: str, batches: Iterator[pa.RecordBatch], mode: str | None = None
) -> PaimonCommitMessage:
    """One Spark task's write (batch or micro-batch): its files as a commit message, or its refusal
    (:class:`TaskRefusal`) with its files deleted. Anything but a :class:`PaimonError` (a killed task), and a
    :class:`StorageError` (an I/O failure), fails the task as usual, so Spark retries it."""
    try:
        for batch in batches:
            writer.write(batch)
        return PaimonCommitMessage(tuple(writer.prepare_commit()), mode)
    except StorageError as e:
        # A storage failure is no refusal: failing the task lets Spark retry it (a busy store answers again).
        e.outcome, e.safe_to_retry = "not applied", True
        e.args = (f"{e.args[0]} The table is unchanged: a write job commits once every task succeeded.",)
        raise
    except PaimonError as e:
        writer.abort()
        return PaimonCommitMessage((), mode, TaskRefusal(type(e), str(e), task_id))
    except BaseException:
        writer.abort()
        raise


def raise_refusals(messages: Sequence[WriterCommitMessage | None]) -> None:
    """Raise the first task's refusal, if any task refused its rows (nothing is committed then)."""
    refusals = [m.refusal for m in messages if isinstance(m, PaimonCommitMessage) and m.refusal is not None]
    if refusals:
        raise refusals[0].error(more=len(refusals) - 1)


def session_overwrite_mode() -> str:
    """The session's ``spark.sql.sources.partitionOverwriteMode`` as seen by a write task ('static' if unset).

    Spark starts ``writer()`` and ``commit()`` in Python workers that receive no session conf, but every SQL
    execution copies the session's explicitly set ``spark.*`` confs into the job's local properties, which
    tasks read through ``TaskContext`` (Spark classic and Connect alike). So the tasks read it and their commit
    messages carry it to ``commit()``.
    """
    ctx = TaskContext.get()
    value = ctx.getLocalProperty(SESSION_OVERWRITE_CONF) if ctx is not None else None
    return (value or "static").strip().lower()


def _table_options(options: dict[str, str]) -> dict[str, str]:
    """Write options that configure a new table (everything but the write's own keys and storage ``fs.*``).

    Spark lower-cases option keys; Paimon option keys are lower case already, except per-field options,
    whose column names we restore from the DataFrame schema when the table is created.
    """
    return {k: v for k, v in options.items() if k not in WRITE_KEYS and not k.startswith("fs.")}


def _split_keys(text: str | None) -> list[str]:
    return [k.strip() for k in (text or "").split(",") if k.strip()]


def _restore_case(options: dict[str, str], columns: Sequence[str]) -> dict[str, str]:
    by_lower = {c.lower(): c for c in columns}
    out = {}
    for k, v in options.items():
        if k.startswith("fields."):
            parts = k.split(".")
            if len(parts) >= 3 and parts[1] in by_lower:
                k = ".".join([parts[0], by_lower[parts[1]], *parts[2:]])
        if k in _COLUMN_LIST_KEYS:
            v = ",".join(by_lower.get(c.strip().lower(), c.strip()) for c in v.split(","))
        out[k] = v
    return out


def ensure_table(ref: TableRef, schema: StructType) -> TableSchema:
    """The table's latest schema, creating the table from the DataFrame schema and options if needed."""
    store = ref.store()
    existing = store.schemas.latest()
    if existing is not None:
        check_write_options(ref, existing)
        return existing
    if ref.branch != MAIN_BRANCH:
        store.schema()  # raises BranchNotFoundError / TableNotFoundError with guidance
    if not ref.fileio.exists(ref.path.rsplit("/", 1)[0]):
        ref.fileio.mkdirs(ref.path.rsplit("/", 1)[0])
    columns = [f.name for f in schema.fields]
    by_lower = {c.lower(): c for c in columns}
    pks = [by_lower.get(k.lower(), k) for k in _split_keys(ref.options.get("primary-key"))]
    parts = [by_lower.get(k.lower(), k) for k in _split_keys(ref.options.get("partition"))]
    opts = _restore_case(_table_options(ref.options), columns)
    validate_table_options(opts, creating=True, table=ref.path)
    fields = [(f.name, from_spark_type(f.dataType, f.nullable, f.name)) for f in schema.fields]
    try:
        created = ref.create_in_catalog(NewTable(fields, parts, pks, opts, ref.options.get("comment")))
        if created is not None:  # a JDBC or REST catalog's table: made through the catalog
            return created
        return SchemaManager(ref.fileio, ref.path).create_table(fields, parts, pks, opts, ref.options.get("comment"))
    except Exception:
        latest = store.schemas.latest()  # created concurrently by another writer: use it
        if latest is None:
            raise
        return latest


def check_write_options(ref: TableRef, table: TableSchema) -> None:
    """Table-defining write options given for an existing table must agree with it.

    They only take effect when the write creates the table. Ignoring them silently would hide a typo
    (``bukcet``) or let the user believe the table changed (``bucket`` = 4 on a 2-bucket table).
    """
    given = _restore_case(_table_options(ref.options), table.field_names)
    validate_table_options(given, creating=True, table=ref.path)  # unknown keys, with a suggestion
    stored = table.options_with_defaults()
    differing = []
    for key, value in given.items():
        have = table_option(stored, key)
        if have is None or str(have).strip().lower() != str(value).strip().lower():
            differing.append(f"'{key}' = '{value}' (table: {'unset' if have is None else repr(have)})")
    for key, keys in (("primary-key", table.primary_keys), ("partition", table.partition_keys)):
        if key in ref.options and [k.lower() for k in _split_keys(ref.options[key])] != [k.lower() for k in keys]:
            differing.append(f"'{key}' = '{ref.options[key]}' (table: {','.join(keys) or 'none'})")
    if differing:
        raise OptionError(
            f"Table {ref.path} already exists, and write options that define a table only apply when the write "
            f"creates it. These differ from the table: {'; '.join(differing)}. Drop them from the write, or change "
            "the table first (Table.update_schema().set_options; keys and partitioning cannot change)."
        )


def merge_for_write(ref: TableRef, df_schema: StructType, table: TableSchema) -> tuple[TableSchema, dict[str, str]]:
    """With ``write.merge-schema`` (a write option or a table option): the table evolved to the DataFrame's columns
    before any task writes (``datasource/schema_changes.py``), and the options the write's tasks need (a column the
    DataFrame lacks is written NULL). Without it: the table and no options."""
    merge = SchemaMerge.of(table.options, ref.options)
    if merge is None:
        return table, {}
    incoming = [(f.name, from_spark_type(f.dataType, f.nullable, f.name)) for f in df_schema.fields]
    return merge_data_schema(ref.store(), merge, incoming, ref.path), {WRITE_MERGE_SCHEMA.key: "true"}


def check_write_schema(df_schema: StructType, table: TableSchema, fill_missing: bool = False) -> None:
    """The DataFrame must carry the table's columns (any order; with ``fill_missing``, nullable ones may be
    absent) with compatible types, and no other."""
    df_cols = {f.name: f for f in df_schema.fields}
    missing = [c for c in table.field_names if c not in df_cols and not (fill_missing and table.field(c).type.nullable)]
    extra = [c for c in df_cols if not table.has_field(c)]
    if missing or extra:
        raise SchemaMismatchError(
            f"The DataFrame's columns do not match the table's. Missing: {missing or 'none'}; not in the table: "
            f"{extra or 'none'}. Table columns: {table.field_names}. Select/rename columns to match, evolve the "
            "table first (Table.update_schema().add_column), or let the write add them: .option('write.merge-schema', "
            "'true')."
        )
    for f in table.fields:
        if f.name not in df_cols:
            continue  # written as NULL (write.merge-schema)
        want = to_spark_type(f.type, f.name)
        got = df_cols[f.name].dataType
        if _fits(got, want):
            continue
        if _fits(_nullable(got), _nullable(want)):
            raise SchemaMismatchError(
                f"Column '{f.name}' is {got.simpleString()} with nested values that may be NULL (array elements, map "
                f"values or struct fields), but the table declares them NOT NULL. Make them non-null first, e.g. "
                f"with coalesce inside transform()/struct()."
            )
        problem = _assignment_problem(got, want) or "the types differ"
        raise SchemaMismatchError(
            f"Column '{f.name}' is {got.simpleString()} in the DataFrame but {want.simpleString()} in the table, and "
            f"Spark's store assignment (ANSI) does not write one into the other: {problem}. Cast it first if that is "
            f"meant, e.g. df.withColumn('{f.name}', col('{f.name}').cast('{want.simpleString()}'))."
        )


def _fits(got: T.DataType, want: T.DataType) -> bool:
    """Whether values of Spark type ``got`` can be written to a column of type ``want``.

    Nested nullability only has to be as strict as the table's: Spark often marks nested values NOT NULL
    (``array(1, 2)``, ``struct(...)`` of non-null columns), and such data fits nullable table fields. The other
    direction is refused, because the Arrow cast would not check for NULLs.
    """
    if isinstance(got, T.ArrayType) and isinstance(want, T.ArrayType):
        return (want.containsNull or not got.containsNull) and _fits(got.elementType, want.elementType)
    if isinstance(got, T.MapType) and isinstance(want, T.MapType):
        return (
            (want.valueContainsNull or not got.valueContainsNull)
            and _fits(got.keyType, want.keyType)
            and _fits(got.valueType, want.valueType)
        )
    if isinstance(got, T.StructType) and isinstance(want, T.StructType):
        return [g.name for g in got.fields] == [w.name for w in want.fields] and all(
            (w.nullable or not g.nullable) and _fits(g.dataType, w.dataType) for g, w in zip(got.fields, want.fields)
        )
    return got == want or _castable(got, want)


def _nullable(t: T.DataType) -> T.DataType:
    """``t`` with every nested value nullable (to tell a nullability mismatch from a type mismatch)."""
    if isinstance(t, T.ArrayType):
        return T.ArrayType(_nullable(t.elementType), True)
    if isinstance(t, T.MapType):
        return T.MapType(_nullable(t.keyType), _nullable(t.valueType), True)
    if isinstance(t, T.StructType):
        return T.StructType([T.StructField(f.name, _nullable(f.dataType), True) for f in t.fields])
    return t


def _arrow(t: T.DataType) -> pa.DataType:
    return to_arrow_type(from_spark_type(t, True, "value"), "value")


def _assignment_problem(got: T.DataType, want: T.DataType) -> str | None:
    """Spark's ANSI store assignment (the one set of rules, shared with the executors' casts): checked on the
    driver so that a refused write fails before any task runs; values are checked as they are cast."""
    try:
        return assignment_problem(_arrow(got), _arrow(want))
    except PaimonError as e:  # a Spark type with no Paimon counterpart: only an identical type fits
        return str(e)


def _castable(got: T.DataType, want: T.DataType) -> bool:
    return _assignment_problem(got, want) is None


class PaimonWriter(DataSourceArrowWriter):
    def __init__(self, ref: TableRef, schema: StructType, overwrite: bool):
        self.ref = ref
        if _DYNAMIC_OVERWRITE_TABLE_OPTION in ref.options:
            # Paimon's Spark writer decides per write too; silently storing the option instead would turn an
            # intended partition overwrite into a whole-table one.
            raise OptionError(
                f"The table option '{_DYNAMIC_OVERWRITE_TABLE_OPTION}' does not choose how a Spark "
                "write overwrites: use .option('partitionOverwriteMode', 'dynamic') (or 'static'). To "
                "store the option for other engines, use Table.update_schema().set_options."
            )
        ref = self.ref = route_to_audit_branch(ref)
        table, write_options = merge_for_write(ref, schema, ensure_table(ref, schema))
        check_write_schema(schema, table, fill_missing=bool(write_options))
        mode = ref.options.get("partitionoverwritemode")
        static = ref.options.get("overwrite-partition")
        if not overwrite and (mode or static):
            raise OptionError("'partitionOverwriteMode' and 'overwrite-partition' need .mode('overwrite').")
        if mode and static:
            raise OptionError("Give either 'partitionOverwriteMode' or 'overwrite-partition', not both.")
        # An overwrite of a partitioned table without a mode of its own follows the session's
        # partitionOverwriteMode, which only the tasks can see (session_overwrite_mode); until then the job keeps
        # the partitions' bucket counts, which a dynamic overwrite needs.
        self.session_mode = bool(overwrite and not mode and not static and table.partition_keys)
        spec: OverwriteSpec | None
        if self.session_mode:
            spec = overwrite_spec(table, "dynamic", None)
        else:
            spec = (
                overwrite_spec(table, mode.lower() if mode else None, parse_partition_spec(static) if static else None)
                if overwrite
                else None
            )
        self.job: WriteJob = prepare_write(ref.store(), spec, write_options)

    def _session_job(self, mode: str) -> WriteJob:
        """The job overwriting as the session's mode says (Spark only lets 'static' or 'dynamic' be set)."""
        return self.job.with_overwrite(overwrite_spec(self.job.schema, mode, None))

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PaimonCommitMessage:
        ctx = TaskContext.get()
        task_id = f"{ctx.partitionId()}-{ctx.attemptNumber()}" if ctx else "0"
        mode = session_overwrite_mode() if self.session_mode else None
        job = self._session_job(mode) if mode is not None else self.job
        return write_task(job.new_writer(task_id), task_id, iterator, mode)

    @records_effects("Spark write commit")
    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        raise_refusals(messages)
        ours = [msg for msg in messages if isinstance(msg, PaimonCommitMessage)]
        flat = [m for msg in ours for m in msg.messages]
        job = self.job
        if self.session_mode:
            modes = {msg.session_overwrite_mode for msg in ours}
            if len(modes) != 1 or None in modes:
                raise CommitError(
                    f"The overwrite of {self.ref.path} follows Spark's {SESSION_OVERWRITE_CONF}, but its tasks saw "
                    f"{sorted(map(str, modes)) or 'no value'}, so what to replace is unclear; nothing was committed. "
                    "Give .option('partitionOverwriteMode', 'static' or 'dynamic') to the write."
                )
            job = self._session_job(modes.pop() or "static")
        job.commit(flat)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        try:
            landed = self.job.landed()
        except TableNotFoundError:
            return
        if landed is not None:  # e.g. the driver's commit landed and a later step (or a worker) failed
            log.warning(
                "Spark aborts the write to %s, but its commit landed as snapshot %s of branch '%s' (commit "
                "user '%s'): the data is in the table, keeping its files. Do not retry the write.",
                self.ref.path,
                landed.id,
                self.job.store.branch,
                self.job.commit_user,
            )
            return
        delete_written_files(self.job, messages)


def delete_written_files(job: WriteJob, messages: Sequence[WriterCommitMessage | None]) -> None:
    """Delete the data files tasks wrote for messages that no snapshot took (an aborted or skipped write)."""
    for msg in messages:
        if not isinstance(msg, PaimonCommitMessage):
            continue
        for m in msg.messages:
            bucket_dir = job.store.bucket_path(job.schema, _values(job.schema, m.partition), m.bucket)
            for f in (*m.new_files, *m.changelog_files):
                job.store.fileio.delete(f"{bucket_dir}/{f.file_name}")


def _values(schema: TableSchema, partition: bytes) -> tuple:
    return tuple(deserialize_row(partition, [f.type for f in schema.partition_fields]))
