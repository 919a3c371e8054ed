"""``python -m gradc``: the gradc command line (see ``gradc.cli``)."""
import sys

from .cli import main

sys.exit(main())
