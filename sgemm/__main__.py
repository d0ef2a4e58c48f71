"""``python -m sgemm ...`` runs the ``sgemm`` command (sgemm/cli.py)."""
import sys

from .cli import main

sys.exit(main())
