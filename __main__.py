"""`python -m relay` is the `relay` command line."""

import sys

from .cli import main

sys.exit(main())
