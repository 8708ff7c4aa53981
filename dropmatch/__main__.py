"""Entry point for `python -m dropmatch`."""

import sys

from dropmatch.cli import main

sys.exit(main())
