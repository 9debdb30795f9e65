"""VARIANT values in Arrow for Python code: build a VARIANT column to write, look at one that was read.

Spark makes VARIANT values itself (``parse_json``, ``variant_get``); without Spark, ``t.write_arrow`` takes a VARIANT
column as the Arrow struct of its ``value`` and ``metadata`` binaries and ``t.scan()`` returns one (docs/variant.md).
These helpers convert between that struct and Python values or JSON text::

    from pyspark_paimon.variant import variant_array, variant_values
    t.write_arrow(pa.table({"id": [1, 2], "payload": variant_array(['{"a": 1}', "[true, null]"], json=True)}))
    variant_values(t.scan().to_arrow().column("payload"))   # [{'a': 1}, [True, None]]
"""

from __future__ import annotations

from typing import Any, Iterable

import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.metadata.types.arrow import VARIANT_METADATA, VARIANT_VALUE, variant_arrow_type
from pyspark_paimon.metadata.variant.binary import from_python, parse_json, to_json, to_python

__all__ = ["variant_array", "variant_json", "variant_values"]


def variant_array(values: Iterable[Any], *, json: bool = False) -> pa.StructArray:
    """A VARIANT column of ``values``: Python values (dict, list, str, int, float, Decimal, bool, bytes, date,
    datetime, None as a VARIANT null) or, with ``json=True``, JSON texts parsed as Spark's ``parse_json`` parses
    them. A Python ``None`` (a JSON text ``None``) is a SQL NULL; the JSON text ``'null'`` is a VARIANT null."""
    encoded: list[tuple[bytes, bytes] | None] = []
    for v in values:
        if v is None:
            encoded.append(None)
        else:
            encoded.append(parse_json(v) if json else from_python(v))
    value = pa.array([b"" if e is None else e[0] for e in encoded], pa.binary())
    metadata = pa.array([b"" if e is None else e[1] for e in encoded], pa.binary())
    mask = pa.array([e is None for e in encoded], pa.bool_())
    return pa.StructArray.from_arrays([value, metadata], fields=list(variant_arrow_type()), mask=mask)


def _pairs(column: pa.Array | pa.ChunkedArray) -> Iterable[tuple[bytes, bytes] | None]:
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    values = pc.struct_field(arr, VARIANT_VALUE).to_pylist()
    metadata = pc.struct_field(arr, VARIANT_METADATA).to_pylist()
    for valid, v, m in zip(arr.is_valid().to_pylist(), values, metadata):
        yield (v, m) if valid else None


def variant_values(column: pa.Array | pa.ChunkedArray) -> list[Any]:
    """The values of a VARIANT column as Python (objects as dicts, arrays as lists; SQL NULL and VARIANT null are
    both None)."""
    return [None if p is None else to_python(*p) for p in _pairs(column)]


def variant_json(column: pa.Array | pa.ChunkedArray) -> list[str | None]:
    """The values of a VARIANT column as JSON text, as Spark's ``to_json`` spells them (None for SQL NULL)."""
    return [None if p is None else to_json(*p) for p in _pairs(column)]
