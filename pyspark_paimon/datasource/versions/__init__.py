"""Comparing and combining versions of a table: diffs and three-way branch merges."""
