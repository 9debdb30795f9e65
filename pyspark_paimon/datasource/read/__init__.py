"""Reading: the executor-side Arrow read of data files and merged sections, and which reader (Python or Spark's JVM)
serves each split."""
