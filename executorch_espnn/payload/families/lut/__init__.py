"""The lut family's two Python twins of its engine op(s): ``check`` (``prepare``'s rules)
and ``reference`` (``eval``, bit-exact)."""
