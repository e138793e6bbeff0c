"""The only code that touches jaxlib's MLIR: loading and printing modules
(``mlir.py``), the import walk that builds the graph (``importer.py``), the
rewrite that writes layouts and copies back (``rewrite.py``), the marks read
from XLA's HLO text (``marks.py``, ``metadata.py``)."""
