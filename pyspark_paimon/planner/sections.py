"""Key-overlap sections of a primary-key bucket (Java's ``IntervalPartition``).

Files whose [min_key, max_key] ranges overlap must be merged together; files in different sections are
independent merge units. Planning uses this to split buckets by key range, and readers to merge one section
at a time in bounded memory.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from pyspark_paimon.errors import PaimonError
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.rows.binary_row import deserialize_row


def sortable_key(values: Iterable[Any]) -> tuple:
    """A decoded key that compares safely: NULL (never expected in keys) sorts first, away from values."""
    return tuple((v is not None, v) for v in values)


def decoded_key_range(f: DataFileMeta, types: Sequence[Any]) -> tuple[tuple, tuple]:
    return sortable_key(deserialize_row(f.min_key, types)), sortable_key(deserialize_row(f.max_key, types))


def key_sections(
    files: Sequence[DataFileMeta], key_range: Callable[[DataFileMeta], tuple[tuple, tuple]]
) -> list[list[DataFileMeta]]:
    """Files grouped by overlapping key ranges, in key order (files within a section by min key).

    ``key_range(file)`` returns the file's comparable (min, max) key. If a key cannot be decoded, all files
    form one section: always correct, only slower.
    """
    if len(files) <= 1:
        return [list(files)]
    try:
        ranged = sorted(((*key_range(f), pos, f) for pos, f in enumerate(files)), key=lambda r: (r[0], r[1], r[2]))
    except (PaimonError, TypeError, ValueError, KeyError):
        return [list(files)]
    sections: list[list[DataFileMeta]] = []
    bound: tuple | None = None
    for lo, hi, _, f in ranged:
        if sections and bound is not None and lo <= bound:
            sections[-1].append(f)
            bound = max(bound, hi)
        else:
            sections.append([f])
            bound = hi
    return sections
