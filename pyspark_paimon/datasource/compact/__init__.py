"""Compaction: planning and rewriting buckets, deletion-vector lookups, postpone-bucket moves and the changelog
producers that run inside compaction."""
