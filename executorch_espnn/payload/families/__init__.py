"""Each op family's two Python twins of the C engine, kept together: ``<family>/check.py`` (the
validator check, the rules of the ``prepare`` of ``engine/ops/*.c``) and ``<family>/reference.py``
(the bit-exact reference kernel, its ``eval``), with their registries (``check_registry``,
``kernel_registry``) and the kernels' shared helpers (``kernel_common``).

This package imports nothing: ``payload.checks`` imports the checks (the reader validates with
them), ``reference`` imports the kernels, so importing the payload never loads a kernel.
"""
