import sys

from treeview.push.cli import main

sys.exit(main())
