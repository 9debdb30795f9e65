"""A write task's refusal travels to the driver's commit (datasource/spark/writer.py ``write_task``,
``raise_refusals``); the Spark end is ``test_spark_errors.test_a_value_error_in_a_task_is_raised_first_by_the_driver``.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from pyspark_paimon.datasource.jobs import prepare_write
from pyspark_paimon.datasource.spark.writer import PaimonCommitMessage, TaskRefusal, raise_refusals, write_task
from pyspark_paimon.errors import BranchMergeConflictError, PaimonError, SchemaMismatchError, StorageError


def test_a_refusing_task_returns_its_refusal_and_deletes_its_files(catalog, warehouse) -> None:
    # A 1-byte buffer flushes every batch: the refusing task has written a file before its bad batch.
    t = catalog.create_table("db.t", "id bigint not null, v string", options={"write-buffer-size": "1 b"})
    job = prepare_write(t.store)
    good = pa.record_batch({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]})
    bad = pa.record_batch({"id": pa.array([3, None], pa.int64()), "v": ["c", "d"]})
    ok = write_task(job.new_writer("0-0"), "0-0", iter([good]))
    refused = write_task(job.new_writer("1-0"), "1-0", iter([good, bad]))
    assert ok.refusal is None and ok.messages
    assert refused.messages == () and refused.refusal is not None
    assert refused.refusal.error_class is SchemaMismatchError and refused.refusal.task == "1-0"
    files = [f for _, _, names in os.walk(t.uri) for f in names if f.endswith(".parquet")]
    assert len(files) == len([f for m in ok.messages for f in m.new_files])  # the refusing task left none

    with pytest.raises(SchemaMismatchError, match=r"NOT NULL .*1 NULL value\(s\)") as err:
        raise_refusals([ok, refused, None])
    assert "other write task" not in str(err.value)
    with pytest.raises(SchemaMismatchError, match=r"\(1 other write task\(s\) refused rows too\.\)"):
        raise_refusals([refused, ok, refused])
    raise_refusals([ok, None])  # nothing refused: nothing raised


def test_an_error_built_from_more_than_a_message_names_its_class() -> None:
    refusal = TaskRefusal(BranchMergeConflictError, "keys differ", "0-0")
    error = refusal.error()
    assert type(error) is PaimonError and str(error) == "BranchMergeConflictError: keys differ"
    with pytest.raises(PaimonError, match="BranchMergeConflictError: keys differ"):
        raise_refusals([PaimonCommitMessage((), None, refusal)])


def test_a_storage_failure_fails_the_task_so_spark_retries_it(catalog, monkeypatch) -> None:
    """A StorageError is a PaimonError but no refusal: a refusal is the same on every attempt, a busy store is
    not, so the task fails and Spark runs it again; the error says the table is unchanged."""
    t = catalog.create_table("db.s", "id bigint not null, v string", options={"write-buffer-size": "1 b"})
    job = prepare_write(t.store)
    writer = job.new_writer("0-0")

    def unavailable(*args, **kwargs):
        raise StorageError("Cannot write s3://b/t/data-0.parquet: 503 Slow Down")

    monkeypatch.setattr(writer, "write", unavailable)
    with pytest.raises(StorageError, match="Slow Down.* The table is unchanged") as err:
        write_task(writer, "0-0", iter([pa.record_batch({"id": pa.array([1], pa.int64()), "v": ["a"]})]))
    assert err.value.outcome == "not applied" and err.value.safe_to_retry is True
