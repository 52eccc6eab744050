"""The ``espnn`` TestFlow of ExecuTorch's backend test suite, and what it expects.

``FLOW_NAME`` is the flow's name: select its tests with ``-m flow_espnn``.  The flow is
registered by ``executorch_espnn.testing.suite_plugin`` (see docs/backend-suite.md).

``is_delegated=False`` on purpose: with ``True`` the suite stops a test whose program
delegates nothing before running it ("success, undelegated").  A CPU fallback only counts
for us when the program that fell back still produced the right numbers, so every program
is run and compared, and the flow's own record says whether it was delegated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from executorch.backends.test.suite.flow import TestFlow

from .tester import DEFAULT_TARGET, EspNNQuantize, EspNNTester

FLOW_NAME = "espnn"
BACKEND_NAME = "espnn"

#: Tests (by function name, as the suite's xfail_patterns match them) that fail for a
#: reason outside our backend, with that reason.  They still run; the suite marks them
#: xfail(strict=True), so one that starts passing is reported.
KNOWN_FAILURES: dict[str, str] = {}


def make_flow(
    tester_factory: Callable[..., EspNNTester] | None = None,
    name: str = FLOW_NAME,
    target: str = DEFAULT_TARGET,
) -> TestFlow:
    """The TestFlow; ``tester_factory(module, inputs, **kw)`` defaults to ``EspNNTester``."""

    def default_factory(module: torch.nn.Module, inputs: Any, **kwargs: Any) -> EspNNTester:
        return EspNNTester(module, inputs, target=target, **kwargs)

    return TestFlow(
        name,
        backend=BACKEND_NAME,
        tester_factory=tester_factory or default_factory,
        quantize=True,
        quantize_stage_factory=EspNNQuantize,
        is_delegated=False,
        xfail_patterns=list(KNOWN_FAILURES),
    )
