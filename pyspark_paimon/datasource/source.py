"""The ``paimon`` Spark data source (Python Data Source API, Spark 4.1+).

Two classes exist because of how Spark treats filter pushdown: a reader that implements ``pushFilters``
makes every read fail while ``spark.sql.python.filterPushdown.enabled`` is off. :class:`PaimonDataSource`
(exported as ``DefaultSource`` for Spark's auto-registration) therefore never pushes filters, and
:func:`register` turns the conf on and registers :class:`PaimonPushdownDataSource` under the same name.
"""

from __future__ import annotations

import logging
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, DataSourceStreamWriter
from pyspark.sql.types import StructType

from pyspark_paimon.datasource.engine.ref import TableRef, resolve_table_ref
from pyspark_paimon.datasource.reader import PaimonPushdownReader, PaimonReader, spark_schema
from pyspark_paimon.datasource.stream import PaimonStreamReader, PaimonStreamWriter
from pyspark_paimon.datasource.writer import PaimonWriter
from pyspark_paimon.errors import OptionError, PaimonError

log = logging.getLogger(__name__)

FORMAT_NAME = "paimon"
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


class PaimonDataSource(DataSource):
    """``spark.read.format("paimon")`` / ``df.write.format("paimon")`` (and ``readStream`` / ``writeStream``)
    over Paimon tables.

    Name: ``paimon``. Read options: ``branch``, ``scan.snapshot-id`` / ``versionAsOf``, ``scan.tag-name``,
    ``scan.timestamp-millis`` / ``timestampAsOf``, ``scan.version``, ``source.split.target-size``...;
    see the README's option reference. Unknown options are errors.
    """

    pushdown = False

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> StructType:
        return spark_schema(spark_table_ref(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        cls = PaimonPushdownReader if self.pushdown else PaimonReader
        return cls(spark_table_ref(self.options), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802 (Spark's name)
        return PaimonStreamReader(spark_table_ref(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:  # noqa: N802
        ref = spark_table_ref(self.options)
        if ref.system_table:
            raise PaimonError(f"System table ${ref.system_table} is read-only.")
        return PaimonStreamWriter(ref, schema, overwrite)

    def writer(self, schema: StructType, overwrite: bool) -> Any:
        ref = spark_table_ref(self.options)
        if ref.system_table:
            raise PaimonError(f"System table ${ref.system_table} is read-only.")
        return PaimonWriter(ref, schema, overwrite)


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
            "only through the Python API (Catalog/Table) in the process that created the table.")
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
    """
    if pushdown is None:
        pushdown = pushdown_is_safe(str(spark.version))
    elif pushdown and not pushdown_is_safe(str(spark.version)):
        log.warning(
            "Filter pushdown is on for Spark %s: a DataFrame loaded once and queried twice (first with a filter, "
            "then without) can return the first query's filtered rows (Spark keeps the pushed-down plan on the "
            "shared data source). Load a fresh DataFrame per query.", spark.version)
    spark.conf.set(PUSHDOWN_CONF, "true" if pushdown else "false")
    spark.dataSource.register(PaimonPushdownDataSource if pushdown else PaimonDataSource)
