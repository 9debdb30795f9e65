"""Streaming reads: what executors read for each planned stream split."""
