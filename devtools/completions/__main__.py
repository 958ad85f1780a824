"""``python -m devtools.completions``: see :mod:`devtools.completions`."""

import sys

from . import main

sys.exit(main())
