"""How jitlab starts its own Python worker processes (`python -m jitlab...`).

`python -m` puts the working directory first on `sys.path`, so a user's file in that folder named as
a standard module (`copy.py`, `types.py`, `profile.py`) replaces that module inside the worker, and
jitlab's own imports then fail there with an error that names jitlab, not the file ("partially
initialized module 'jitlab' has no attribute 'Workload'", seen with a workload file `copy.py` run
from its folder). Python 3.11's `-P` leaves the working directory out of the worker's path only (not
out of the processes the user's code starts, as the `PYTHONSAFEPATH` variable would); a workload
file's own folder is still put on the path when it is imported (`jitlab.userfiles.import_file`), as
`python FILE` does. On Python 3.10 the working directory stays first.
"""

from __future__ import annotations

import sys

#: `-P` (Python 3.11+): no working directory on the module path
_SAFE_PATH = ["-P"] if sys.version_info >= (3, 11) else []


def module_argv(module: str, *args: str) -> list[str]:
    """The command line that runs `module` with this Python, the working directory off its path."""
    return [sys.executable, *_SAFE_PATH, "-m", module, *args]
