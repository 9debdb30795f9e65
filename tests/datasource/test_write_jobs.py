"""WriteJob.commit tells the truth about a failure: whether the data landed (do not retry) or not."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog
from pyspark_paimon.datasource import jobs
from pyspark_paimon.errors import CommitError, CommitStateUnknownError


def _table(catalog: Catalog) -> Any:
    t = catalog.create_table("db.t", "id bigint, v string", primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "v": ["a"]}))
    return t


def test_failure_after_the_commit_landed_says_do_not_retry(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table(catalog)
    real = jobs.commit_with_chain_rules

    def commit_then_fail(*args: Any, **kwargs: Any) -> Any:
        real(*args, **kwargs)
        raise RuntimeError("post-commit step broke")

    monkeypatch.setattr(jobs, "commit_with_chain_rules", commit_then_fail)
    with pytest.raises(CommitError, match=r"committed as snapshot 2 .*post-commit step broke.*do not retry"):
        t.write_arrow(pa.table({"id": [2], "v": ["b"]}))
    monkeypatch.undo()
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [1, 2]  # the data is there, as the error said


def test_failure_before_the_commit_keeps_the_original_error(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table(catalog)

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("store unreachable")

    monkeypatch.setattr(jobs, "commit_with_chain_rules", fail)
    with pytest.raises(RuntimeError, match="store unreachable"):
        t.write_arrow(pa.table({"id": [2], "v": ["b"]}))
    monkeypatch.undo()
    assert [s.id for s in t.snapshots()] == [1]


def test_unknown_state_when_the_check_itself_fails(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table(catalog)

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("connection reset")

    def cannot_list(self: Any, *args: Any) -> Any:
        raise OSError("listing failed")

    monkeypatch.setattr(jobs, "commit_with_chain_rules", fail)
    monkeypatch.setattr("pyspark_paimon.metadata.snapshots.snapshot.SnapshotManager.commit_of", cannot_list)
    with pytest.raises(CommitStateUnknownError, match=r"connection reset.*listing failed.*\$snapshots"):
        t.write_arrow(pa.table({"id": [2], "v": ["b"]}))
