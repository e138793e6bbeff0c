"""What a user reads: copy reports, chains and fixes (``explain.py``), the trace
page (``html.py`` and ``trace_page/``), and safe output files (``output.py``)."""
