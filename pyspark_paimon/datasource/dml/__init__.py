"""Row-level changes: delete, update and merge on any branch, one commit each, with Arrow or Spark DataFrame sources."""
