"""`python -m cclab` is the `cclab` command."""

import sys

from cclab.cli import main

sys.exit(main())
