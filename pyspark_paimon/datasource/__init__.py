"""The Spark-free data plane: what executors run (read, merge and write Arrow data files) and the driver-side
jobs around it (plan a read, prepare and commit a write, chain-table operations, system tables).

Nothing in this package imports pyspark (``tests/test_structure.py`` checks it): the Spark classes in
:mod:`pyspark_paimon.datasource` only adapt it, and the Python ``Table`` API uses it directly.
"""
