"""Running XLA itself: its pipeline up to layout assignment with the pass's
dumps (``pipeline.py``, ``dumps.py``) and XLA:GPU's deviceless compiler
(``gpu_deviceless.py``).  Only ``--as-compiled`` and verification reach here."""
