"""pyspark-paimon: read and write Apache Paimon tables from PySpark 4, no JVM jar needed.

``from pyspark_paimon import Catalog, register``. Importing this package does not import pyspark's SQL
machinery until the Spark pieces are used, so the metadata API stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark_paimon.datasource.spark.worker_python import refuse_unfit_worker
from pyspark_paimon.errors import PaimonError

__version__ = "0.2.0"

# Every Spark Python worker that runs our code imports this package first: one lacking a dependency fails here,
# naming its interpreter and what to set, instead of with a bare ModuleNotFoundError deep in an executor. True
# only in Spark's auto-registration worker, which then finds no DefaultSource (see refuse_unfit_worker).
_UNFIT_WORKER = refuse_unfit_worker()

if TYPE_CHECKING:  # pragma: no cover
    from pyspark_paimon.api_types import ArrowData, Duration, Instant, OnConflict, TimestampRule, WriteMode
    from pyspark_paimon.catalog import Catalog
    from pyspark_paimon.datasource.spark.source import PaimonDataSource as DefaultSource
    from pyspark_paimon.jvm_stream import stream_spark
    from pyspark_paimon.table import Table


def __getattr__(name: str) -> Any:
    # Lazy attributes: Spark's auto-registration imports every pyspark_* module in several workers, so
    # `import pyspark_paimon` stays cheap; resolving DefaultSource (once, when Spark looks the format up)
    # loads the Spark adapters and the engine they need for the first read anyway.
    if name == "Catalog":
        from pyspark_paimon.catalog import Catalog

        return Catalog
    if name == "Table":
        from pyspark_paimon.table import Table

        return Table
    if name in ("DefaultSource", "PaimonDataSource"):
        if _UNFIT_WORKER:
            raise AttributeError(name)
        from pyspark_paimon.datasource.spark.source import PaimonDataSource

        return PaimonDataSource
    if name == "stream_spark":
        from pyspark_paimon.jvm_stream import stream_spark

        return stream_spark
    if name == "register":
        from pyspark_paimon.datasource.spark.source import register

        return register
    if name in _API_TYPES:
        from pyspark_paimon import api_types

        return getattr(api_types, name)
    raise AttributeError(name)


# The argument types of the API (pyspark_paimon/api_types.py), resolved lazily like the classes above.
_API_TYPES = ("ArrowData", "Duration", "Instant", "OnConflict", "TimestampRule", "WriteMode")

__all__ = [
    "Catalog",
    "Table",
    "DefaultSource",
    "PaimonDataSource",
    "PaimonError",
    "register",
    "stream_spark",
    "__version__",
    "ArrowData",
    "Duration",
    "Instant",
    "OnConflict",
    "TimestampRule",
    "WriteMode",
]
