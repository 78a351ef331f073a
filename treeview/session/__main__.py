"""Entry point of ``python -m treeview.session``."""

import sys

from .cli import main

sys.exit(main())
