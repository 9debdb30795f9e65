"""Deletion-vector positions are file-global: mapping them onto the rows a read returns when row groups are
skipped (``_keep_mask``), checked against a brute-force model. End-to-end reads of Java-written tables are in
tests/interop/test_java.py."""

from __future__ import annotations

import numpy as np
import pytest

from pyspark_paimon.datasource.read.file_read import _keep_mask
from pyspark_paimon.errors import CorruptMetadataError


@pytest.mark.parametrize("seed", range(20))
def test_keep_mask_matches_a_model(seed: int) -> None:
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, 50, size=rng.integers(1, 8)).astype(np.int64)
    total = int(groups.sum())
    deleted = np.unique(rng.integers(0, max(total, 1), size=rng.integers(0, 40))) if total else np.empty(0, np.int64)
    selected = sorted(rng.choice(len(groups), size=rng.integers(0, len(groups) + 1), replace=False).tolist())
    starts = np.concatenate([[0], np.cumsum(groups)])
    rows = np.concatenate([np.arange(starts[g], starts[g + 1]) for g in selected] or [np.empty(0, np.int64)])
    expected = ~np.isin(rows, deleted)
    np.testing.assert_array_equal(_keep_mask(deleted.astype(np.int64), groups, selected, "f"), expected)
    everything = ~np.isin(np.arange(total), deleted)
    np.testing.assert_array_equal(_keep_mask(deleted.astype(np.int64), groups, None, "f"), everything)


def test_position_beyond_the_file_is_corrupt() -> None:
    with pytest.raises(CorruptMetadataError, match="names row position 10, but the file has 10 rows"):
        _keep_mask(np.array([1, 10], dtype=np.int64), np.array([4, 6], dtype=np.int64), None, "data-1.parquet")
