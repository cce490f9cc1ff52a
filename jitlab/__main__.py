"""`python -m jitlab` is the `jitlab` command."""

import sys

from jitlab.cli import main

sys.exit(main())
