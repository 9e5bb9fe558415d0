"""The `cclab` command. Each subcommand lives in its own module; see `cclab.cli.main`."""

from cclab.cli.main import main

__all__ = ["main"]
