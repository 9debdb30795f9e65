"""Writing: the executor-side table writer (conformance, bucket routing, file writing, statistics) and the write-time
rules of each bucket mode."""
