"""``python -m batchspec``: the same as the ``batchspec`` command (``batchspec.cli``)."""

import sys

from batchspec.cli import main

sys.exit(main())
