"""The merge engines: how the versions of one primary key combine (deduplicate, partial-update, aggregation,
first-row), shared by reads, writes and compaction."""
