"""``python -m ding_lite`` runs the command line."""
import sys

from ding_lite.cli import main

sys.exit(main())
