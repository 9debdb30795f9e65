"""Hypothesis strategies for Paimon types, shared by the JSON-codec and Spark-DDL round-trip properties."""

from __future__ import annotations

from hypothesis import strategies as st

from pyspark_paimon.metadata.types.model import (
    ArrayType,
    AtomicType,
    DataField,
    DataType,
    MapType,
    MultisetType,
    RowType,
    bytes_type,
    string_type,
)


def atomic_strategy(spark_only: bool) -> st.SearchStrategy[AtomicType]:
    nullable = st.booleans()
    plain = st.sampled_from(
        ["BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE", "VARIANT"]
        + ([] if spark_only else ["BLOB"])
    )
    opts = [
        st.builds(AtomicType, plain, nullable),
        st.builds(lambda n: string_type(n), nullable),
        st.builds(lambda n: bytes_type(n), nullable),
        st.builds(
            lambda name, n, ln: AtomicType(name, n, length=ln),
            st.sampled_from(["CHAR", "VARCHAR"]),
            nullable,
            st.integers(1, 1000),
        ),
        st.builds(
            lambda p, s, n: AtomicType("DECIMAL", n, precision=p, scale=min(s, p)),
            st.integers(1, 38),
            st.integers(0, 38),
            nullable,
        ),
        st.builds(
            lambda name, p, n: AtomicType(name, n, precision=p),
            st.sampled_from(["TIMESTAMP", "TIMESTAMP_LTZ"]),
            st.integers(0, 9),
            nullable,
        ),
    ]
    if not spark_only:
        opts.append(
            st.builds(
                lambda name, n, ln: AtomicType(name, n, length=ln),
                st.sampled_from(["BINARY", "VARBINARY"]),
                nullable,
                st.integers(1, 1000),
            )
        )
        opts.append(st.builds(lambda p, n: AtomicType("TIME", n, precision=p), st.integers(0, 9), nullable))
    return st.one_of(*opts)


_names = st.text(alphabet="abcXYZ_` 1é", min_size=1, max_size=6)


def type_strategy(spark_only: bool) -> st.SearchStrategy[DataType]:
    def extend(children: st.SearchStrategy[DataType]) -> st.SearchStrategy[DataType]:
        row = st.lists(
            st.tuples(_names, children, st.one_of(st.none(), st.text(max_size=5))), max_size=3, unique_by=lambda x: x[0]
        ).map(lambda ms: RowType(tuple(DataField(-1, n, t, d) for n, t, d in ms)))
        key_types = atomic_strategy(spark_only).map(lambda t: t.copy(nullable=False))
        out = [
            st.builds(lambda e: ArrayType(e), children),
            st.builds(lambda k, v: MapType(k, v), key_types, children),
            row,
        ]
        if not spark_only:
            out.append(st.builds(lambda e, n: MultisetType(e, n), children, st.booleans()))
            out.append(st.builds(lambda e, n: ArrayType(e, n), children, st.booleans()))
        return st.one_of(*out)

    return st.recursive(atomic_strategy(spark_only), extend, max_leaves=6)
