"""Which committed HLO dumps the installed jaxlib can read."""

from __future__ import annotations

import re
from importlib.metadata import version


def jaxlib_reads(before_path: str) -> bool:
    """Whether the installed jaxlib parses this HLO dump: XLA 0.11+ prints tuple
    elements as operands ``%t#i``, which jaxlib 0.10's parser predates (the tool
    says so in one line; a test of the rules has nothing to compare then)."""
    if tuple(int(x) for x in version("jaxlib").split(".")[:2]) >= (0, 11):
        return True
    with open(before_path) as f:
        return re.search(r"%[\w.\-]+#\d", f.read()) is None
