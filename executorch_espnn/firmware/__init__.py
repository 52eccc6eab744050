"""The firmware side of the package: what a build (PlatformIO's builder or the idf.py route)
needs from it besides the lowering.

- ``options``: the ``custom_executorch_*`` options of platformio.ini, read and typed (the one
  home of their names and choices);
- ``job``/``artifact``/``model_info``: the model-artifact step, ``build_artifacts(job) ->
  ModelInfo`` (run as ``python -m executorch_espnn.firmware --job job.json``), with
  ``pte_meta`` and ``render`` (the generated model component);
- ``step``: its content-keyed cache and child process; ``kernels``/``kernel_driver``: the
  kernel step; ``summary``: the build's short report and RAM check;
- ``sources``/``esp_nn_sources``: the pinned source trees of an ESP build.

Importing this package or ``options``, ``job``, ``model_info``, ``render``, ``step``,
``kernels``, ``summary``, ``sources`` or ``esp_nn_sources`` costs the standard library only:
the SCons process imports them on every build.
"""
