"""What the tests, benchmarks/, fuzz/ and emulated/ share: the golden payload cases
(``payload_factory``), the model zoo (``zoo``, lowered once per process: ``lowered_zoo``), the offline PlatformIO driver and its stand-in
platforms (``pio_helpers``), stand-in source trees and archives for ESP builds
(``source_helpers``) and a model's generated files outside PlatformIO (``model_files``).

A development package of the checkout, not part of the wheel: it needs the checkout's builder
and PlatformIO stand-ins, and these fixtures are not an API for users (``executorch_espnn.testing``
is the backend-suite harness that ships).  Tests import it as the other tools do, so no tool
depends on ``tests/``.
"""
