"""`python -m controller.daemon`: tablectld."""

import sys

from controller.daemon.main import main

sys.exit(main())
