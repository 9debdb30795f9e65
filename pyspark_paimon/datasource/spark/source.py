"""The ``paimon`` Spark data source (Python Data Source API, Spark 4.1+).

Two classes exist because of how Spark treats filter pushdown: a reader that implements ``pushFilters``
makes every read fail while ``spark.sql.python.filterPushdown.enabled`` is off. :class:`PaimonDataSource`
(exported as ``DefaultSource`` for Spark's auto-registration) therefore never pushes filters, and
:func:`register` turns the conf on and registers :class:`PaimonPushdownDataSource` under the same name.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, DataSourceStreamWriter
from pyspark.sql.types import StructField, StructType

from pyspark_paimon.datasource.spark.bucket_function import register_bucket_function
from pyspark_paimon.datasource.spark.reader import PaimonPushdownReader, PaimonReader, spark_schema
from pyspark_paimon.datasource.spark.streaming import (
    OFFSETS_SCHEMA,
    PaimonOffsetStreamReader,
    PaimonStreamBatchReader,
    PaimonStreamReader,
    PaimonStreamWriter,
)
from pyspark_paimon.datasource.spark.worker_python import use_driver_python
from pyspark_paimon.datasource.spark.writer import PaimonWriter
from pyspark_paimon.datasource.stream.stream_frames import (
    BATCH_KEY,
    OFFSETS_KEY,
    BatchRange,
    initial_offset,
    without_internal,
)
from pyspark_paimon.datasource.table_ref import TableRef, resolve_table_ref
from pyspark_paimon.errors import OptionError, PaimonError

log = logging.getLogger(__name__)

FORMAT_NAME = "paimon"
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


class PaimonDataSource(DataSource):
    """``spark.read.format("paimon")`` / ``df.write.format("paimon")`` (and ``readStream`` / ``writeStream``)
    over Paimon tables.

    Name: ``paimon``. Read options: ``branch``, ``scan.snapshot-id`` / ``versionAsOf``, ``scan.tag-name``,
    ``scan.timestamp-millis`` / ``timestampAsOf``, ``scan.version``, ``source.split.target-size``...;
    see the option reference (docs/reference/options.md). Unknown options are errors.
    """

    pushdown = False

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> StructType:
        if _internal(self.options, OFFSETS_KEY) is not None:
            return OFFSETS_SCHEMA
        options, creating = without_create_keys(self.options)
        schema = spark_schema(spark_table_ref(options))
        return remember_table(schema, options) if creating else schema

    def reader(self, schema: StructType) -> DataSourceReader:
        batch = _internal(self.options, BATCH_KEY)
        if batch is not None:
            return PaimonStreamBatchReader(
                spark_table_ref(without_internal(dict(self.options))), schema, BatchRange.from_json(batch)
            )
        cls = PaimonPushdownReader if self.pushdown else PaimonReader
        options = dict(self.options)
        if not names_a_table(options):
            options = {**remembered_table(schema), **options}
        return cls(spark_table_ref(options), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802 (Spark's name)
        options = dict(self.options)
        initial = _internal(options, OFFSETS_KEY)
        if initial is not None:  # the JVM stream path (pyspark_paimon.jvm_stream)
            ref = spark_table_ref(without_internal(options))
            return PaimonOffsetStreamReader(ref, spark_schema(ref), initial_offset(initial))
        if not names_a_table(options):  # spark.readStream.table(t) of a CREATE TABLE ... LOCATION table
            options = {**remembered_table(schema), **options}
        return PaimonStreamReader(spark_table_ref(options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:  # noqa: N802
        ref = spark_table_ref(self.options)
        if ref.system_table:
            raise PaimonError(f"System table ${ref.system_table} is read-only.")
        return PaimonStreamWriter(ref, schema, overwrite)

    def writer(self, schema: StructType, overwrite: bool) -> Any:
        if not names_a_table(self.options):
            # The DataFrame being written may carry another table's remembered location (remember_table), so it
            # is never used for writes.
            raise OptionError(
                "Spark gave the write no table: it passes a catalog table's LOCATION and OPTIONS to Python data "
                "sources only when the table is created, so an INSERT INTO / CREATE TABLE ... AS SELECT / "
                "saveAsTable of a 'paimon' catalog table cannot know where to write. Name the table per write: "
                "INSERT INTO t WITH ('path' = '<table location>') SELECT ..., df.writeTo('t').option('path', "
                "'<table location>').append(), df.write.format('paimon').save('<table location>'), or a "
                "CREATE TEMPORARY VIEW v USING paimon OPTIONS (path '<table location>') and INSERT INTO v."
            )
        ref = spark_table_ref(self.options)
        if ref.system_table:
            raise PaimonError(f"System table ${ref.system_table} is read-only.")
        return PaimonWriter(ref, schema, overwrite)


# ------------------------------------------------------------------------------------------------------
# Catalog tables: CREATE TABLE t USING paimon LOCATION '...' [OPTIONS (...)]
# ------------------------------------------------------------------------------------------------------
# Keys Spark adds to the options of a CREATE TABLE ... USING paimon (besides the user's OPTIONS and TBLPROPERTIES,
# which it also repeats as 'option.<key>'), as Spark 4's ``CreateTable`` passes them to a Python data source.
_CREATE_KEYS = ("owner", "provider", "location")
_TABLE_KEYS = ("path", "paths", "warehouse")
# Field metadata of the schema a CREATE TABLE stores in Spark's catalog: the table's location and the OPTIONS
# given at creation (JSON), which Spark never passes to a Python data source again.
LOCATION_METADATA = "paimon.location"
OPTIONS_METADATA = "paimon.options"


def _internal(options: Any, key: str) -> str | None:
    """The value of one of the JVM stream path's internal options (``stream_frames``), if given."""
    for k, v in options.items():
        if str(k).lower() == key:
            return str(v)
    return None


def names_a_table(options: Any) -> bool:
    return any(str(k).lower() in _TABLE_KEYS for k in options)


def without_create_keys(options: Any) -> tuple[dict[str, str], bool]:
    """Spark's options minus what Spark itself adds to a CREATE TABLE (``owner``, ``provider``, ``location``
    and the ``option.<key>`` copies of OPTIONS), and whether this is a CREATE TABLE. User keys stay, so an
    unknown one is still an error."""
    opts = {str(k).lower(): str(v) for k, v in options.items()}
    if opts.get("provider", "").lower() != FORMAT_NAME:
        return opts, False
    location = opts.get("location")
    out = {k: v for k, v in opts.items() if k not in _CREATE_KEYS}
    for key in [k for k in out if k.startswith("option.")]:
        if out.get(key[len("option.") :]) == out[key]:
            del out[key]
    if location and not names_a_table(out):
        out["path"] = location
    return out, True


def remember_table(schema: StructType, options: dict[str, str]) -> StructType:
    """``schema`` with the table's location and creation options in every field's metadata.

    Spark keeps a catalog table's LOCATION and OPTIONS from Python data sources after ``CREATE TABLE``: later
    reads get no options at all, but they do get the schema stored in the catalog, field metadata included. So
    ``spark.table('t')`` and ``SELECT ... FROM t`` find the table again (see :meth:`PaimonDataSource.reader`).
    """
    stored = {k: v for k, v in options.items() if k not in ("path", "paths")}  # 'warehouse' stays with the path
    meta = {LOCATION_METADATA: options.get("path", ""), OPTIONS_METADATA: json.dumps(stored, sort_keys=True)}
    return StructType(
        [StructField(f.name, f.dataType, f.nullable, {**(f.metadata or {}), **meta}) for f in schema.fields]
    )


def remembered_table(schema: StructType) -> dict[str, str]:
    """The options :func:`remember_table` stored in ``schema`` (a catalog table's), else a clear error."""
    for f in schema.fields:
        location = (f.metadata or {}).get(LOCATION_METADATA)
        if location:
            return {**json.loads(f.metadata.get(OPTIONS_METADATA) or "{}"), "path": location}
    raise OptionError(
        "No table given (no path or warehouse option). Use .load('/warehouse/db.db/table'). If this is a catalog "
        "table: one made with CREATE TABLE ... USING paimon and a column list (or by saveAsTable / CREATE TABLE AS "
        "SELECT) does not record where its Paimon table is, because Spark passes LOCATION and OPTIONS to Python "
        "data sources only at creation. Create it from the existing Paimon "
        "table without a column list (CREATE TABLE t USING paimon LOCATION '<table location>'), or name the table "
        "per read: SELECT * FROM t WITH ('path' = '<table location>'), spark.read.option('path', '<table "
        "location>').table('t'), or spark.read.format('paimon').load('<table location>')."
    )


def spark_table_ref(options: Any) -> TableRef:
    """The table a Spark read or write points at, refused early when Spark cannot reach it.

    ``memory://`` is fsspec's in-process file system: each Python process has its own, empty one. Spark runs
    this data source in its own Python workers (for the schema, the planning and every task), so a memory://
    table is never there and the read or write would fail later with a misleading "No Paimon table". The
    Python API (``Catalog``/``Table``) keeps supporting memory:// in the process that created the table.
    """
    ref = resolve_table_ref(options)
    if ref.fileio.protocol == "memory":
        raise OptionError(
            f"Cannot use {ref.fileio.uri(ref.path)} with Spark: memory:// tables live in the memory of one Python "
            "process, and Spark reads and writes through separate worker processes that cannot see it. Use a "
            "local path or object storage (e.g. /data/warehouse, file:///..., s3://...) for Spark; memory:// works "
            "only through the Python API (Catalog/Table) in the process that created the table."
        )
    return ref


class PaimonPushdownDataSource(PaimonDataSource):
    """The same source with filter pushdown; registered by :func:`register` once the conf is on."""

    pushdown = True


def pushdown_is_safe(spark_version: str) -> bool:
    """Whether this Spark keeps a pushed-down read plan to the query that pushed it.

    Spark 4.1-4.3 store the read plan produced by filter pushdown on the data source object that all queries
    of one loaded DataFrame share. A later query on that DataFrame without pushable filters (``df.count()``
    after ``df.where(...).show()``) then silently reuses the first query's pruned plan and returns its
    filtered rows. Spark 5 keeps the plan on the scan. We only turn pushdown on by default where it is safe.
    """
    try:
        major = int(spark_version.split(".")[0])
    except ValueError:
        return False
    return major >= 5


def register(spark: Any, pushdown: bool | None = None) -> None:
    """Register the ``paimon`` format on ``spark`` (classic or Connect).

    ``pushdown=None`` turns filter pushdown on where Spark handles it safely (5.0+); on Spark 4.x it stays off
    because of the read-plan reuse described in :func:`pushdown_is_safe`. ``pushdown=True`` forces it on:
    faster selective reads, but then load a fresh DataFrame for each query instead of reusing one.
    Without any call Spark auto-registers :class:`PaimonDataSource` (no pushdown) on first use.

    On a classic session with a ``local`` master and no ``PYSPARK_PYTHON`` / ``spark.pyspark.python`` set,
    Spark's Python workers (and UDFs defined afterwards) run the driver's interpreter from here on, so a driver
    started with a virtualenv's python works without activating it (:func:`use_driver_python`).
    """
    use_driver_python(spark)
    if pushdown is None:
        pushdown = pushdown_is_safe(str(spark.version))
    elif pushdown and not pushdown_is_safe(str(spark.version)):
        log.warning(
            "Filter pushdown is on for Spark %s: a DataFrame loaded once and queried twice (first with a filter, "
            "then without) can return the first query's filtered rows (Spark keeps the pushed-down plan on the "
            "shared data source). Load a fresh DataFrame per query.",
            spark.version,
        )
    spark.conf.set(PUSHDOWN_CONF, "true" if pushdown else "false")
    spark.dataSource.register(PaimonPushdownDataSource if pushdown else PaimonDataSource)
    register_bucket_function(spark)  # t.write_spark's buckets of fixed-bucket tables
