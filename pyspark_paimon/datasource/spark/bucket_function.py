"""The ``paimon_bucket`` SQL function: Paimon's bucket of a row's bucket key, for the JVM write path.

``t.write_spark`` (``datasource/write/jvm_write.py``) lets Spark's own writer move the bytes, but a fixed-bucket
table's bucket must be computed exactly as Java computes it (a Murmur3 hash of the key's BinaryRow), which no Spark
expression does. So :func:`register` (``pyspark_paimon.register``) registers this Arrow UDF in the session, and the
engine, which never imports pyspark, calls it by name in SQL text: only the key columns (one struct) cross into
Python, and :func:`~pyspark_paimon.metadata.rows.bucket.bucket_ids` computes the buckets vectorised.
Arrow UDFs exist from Spark 4.1; on 4.0 nothing is registered and the JVM path refuses fixed-bucket tables.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pyarrow as pa

from pyspark_paimon.datasource.write.jvm_write import BUCKET_FUNCTION
from pyspark_paimon.metadata.rows.bucket import bucket_ids
from pyspark_paimon.metadata.types.json_codec import parse_type
from pyspark_paimon.metadata.types.model import DataType

__all__ = ["register_bucket_function"]


@functools.lru_cache(maxsize=64)
def _key_types(text: str) -> tuple[DataType, ...]:
    return tuple(parse_type(t) for t in json.loads(text))


def paimon_bucket(keys: pa.Array, num_buckets: pa.Array, key_types: pa.Array) -> pa.Array:
    """Buckets of a batch: ``keys`` is a struct of the bucket-key columns, the other two are constants (the
    bucket count and the key types as Paimon's JSON list)."""
    if len(keys) == 0:
        return pa.array([], pa.int32())
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    struct = keys.flatten() if isinstance(keys, pa.StructArray) else [keys]
    types = _key_types(str(key_types[0].as_py()))
    return pa.array(bucket_ids(list(struct), list(types), int(num_buckets[0].as_py())), pa.int32())


def register_bucket_function(spark: Any) -> bool:
    """Register ``paimon_bucket`` in ``spark`` (classic or Connect); False on Spark 4.0 (no Arrow UDFs)."""
    try:
        from pyspark.sql.functions import arrow_udf  # noqa: PLC0415 - Spark 4.1+
    except ImportError:
        return False
    # the kind (scalar, Arrays to Array) comes from paimon_bucket's type hints, as pyspark prefers; its stubs
    # only type the form that names the kind
    spark.udf.register(BUCKET_FUNCTION, arrow_udf(paimon_bucket, "int"))  # type: ignore[call-overload]
    return True
