"""Small helpers shared by the Spark tests: read, write, compare, and force pushdown for one test."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from pyspark_paimon import register


def load(spark: Any, target: str, **options: str) -> Any:
    return spark.read.format("paimon").options(**options).load(target)


def save(df: Any, target: str, mode: str = "append", **options: str) -> None:
    df.write.format("paimon").mode(mode).options(**options).save(target)


def sorted_rows(df: Any) -> list[tuple]:
    """All rows as tuples in a stable order (None sorts first)."""
    return sorted((tuple(r) for r in df.collect()), key=lambda t: tuple((v is not None, v) for v in t))


@contextlib.contextmanager
def pushdown_forced(spark: Any) -> Iterator[Any]:
    """Filter pushdown on for the block (load fresh DataFrames inside); default registration restored after."""
    register(spark, pushdown=True)
    try:
        yield spark
    finally:
        register(spark)
