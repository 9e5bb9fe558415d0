"""Importers: logs collected with the incumbents' tools turned into cclab runs, analysed by the
same Rust metrics kernel as simulator runs (so reports and the archive work on them too).

- `import_mahimahi(LOG)`: an mm-link uplink or downlink log → one run;
- `import_pantheon(DIR)`: a Pantheon data directory → one experiment of its runs.
"""

from cclab.importers.link_log import LogFormatError
from cclab.importers.mahimahi import import_mahimahi
from cclab.importers.pantheon import import_pantheon

__all__ = ["LogFormatError", "import_mahimahi", "import_pantheon"]
