"""``python -m pyspark_paimon <procedure> ...``: the same command line as the ``pyspark-paimon`` script."""

from __future__ import annotations

import sys

from pyspark_paimon.cli import main

if __name__ == "__main__":
    sys.exit(main())
