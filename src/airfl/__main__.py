"""`python -m airfl <stage> ...`, the same as the `airfl` command."""

import sys

from airfl.cli import main

sys.exit(main())
