"""XLA's LayoutAssignment over the graph: the state and its setters (``state.py``),
the run (``driver.py``), one room per part of XLA's pass, and the one seam to the
compiled core (``core.py``).  The engine never prints and never touches MLIR."""
