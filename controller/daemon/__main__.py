"""`python -m controller.daemon`: tablectld, by its entry point (controller/daemon/entry.py)."""

import sys

from controller.daemon.entry import main

sys.exit(main())
