"""``fix``: changes to a program that remove XLA's copies, each confirmed by compiling with XLA."""
