"""Ctrl-C while the `cclab` command starts: the imports of numpy, pandas, pyarrow and the Rust
core take a second or two, and a KeyboardInterrupt raised inside one of them is a traceback (or,
inside the core's first use of numpy, a panic). For the command only, this module makes SIGINT
end the process quietly with status 130 until `quiet_start_done()` (called by the CLI's `main`
once it has parsed its arguments) hands Ctrl-C back to Python. From `quiet_end()` (the command has
returned, its work is written) to the exit, Ctrl-C is ignored: the interpreter's shutdown resets
Python-level handlers to the default, so a late Ctrl-C would otherwise kill the process by SIGINT
after it succeeded. A program that imports cclab as a
library keeps Python's own handling throughout.

Imported first by `cclab/__init__.py`; must import nothing of cclab.
"""

from __future__ import annotations

import os
import signal
import sys
from contextlib import suppress
from pathlib import Path

#: What `cclab` exits with when interrupted: 128 + SIGINT, as a shell reports it.
EXIT_INTERRUPTED = 130


def _is_cclab_command() -> bool:
    main = sys.modules.get("__main__")
    script = Path(getattr(main, "__file__", "") or (sys.argv[0] if sys.argv else "")).name
    return script in ("cclab", "cclab.exe", "__main__.py") and not sys.flags.interactive


def _quit(signum: int, frame: object) -> None:
    os.write(2, b"interrupted\n")
    os._exit(EXIT_INTERRUPTED)


def quiet_start() -> None:
    """Ctrl-C ends the process with status 130 from here until `quiet_start_done()`."""
    with suppress(ValueError):  # not the main thread
        signal.signal(signal.SIGINT, _quit)


def quiet_start_done() -> None:
    """Ctrl-C raises KeyboardInterrupt again, as Python does by default."""
    with suppress(ValueError):
        if signal.getsignal(signal.SIGINT) is _quit:
            signal.signal(signal.SIGINT, signal.default_int_handler)


if _is_cclab_command():
    quiet_start()


def quiet_end() -> None:
    """The command has returned: a Ctrl-C from here to the exit is ignored (SIG_IGN survives the
    interpreter's shutdown; a Python handler does not)."""
    if _is_cclab_command():
        with suppress(ValueError):
            signal.signal(signal.SIGINT, signal.SIG_IGN)
