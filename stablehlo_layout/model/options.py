"""The entry-layout modes the command, the pass and the API accept, in one place.

``default`` pins every entry layout the input leaves unstated to XLA's
row-major default, as JAX and PJRT do; ``free`` lets propagation choose them
and writes the choice back (DESIGN §5).
"""

from __future__ import annotations

from stablehlo_layout.model.errors import PassError

ENTRY_MODES = ("default", "free")


def check_entry_mode(mode: str) -> str:
    """``mode`` if it is one of ``ENTRY_MODES``; a one-line ``PassError`` otherwise."""
    if mode not in ENTRY_MODES:
        raise PassError(f"unknown entry layout mode {mode!r} (expected {' or '.join(ENTRY_MODES)})")
    return mode
