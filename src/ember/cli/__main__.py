"""``python -m ember.cli``: the ``ember`` command without the installed script."""

import sys

from . import main

sys.exit(main())
