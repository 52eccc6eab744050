"""Run ExecuTorch's shared backend test suite against ``EspNNDelegateBackend``.

* ``tester.EspNNTester``: the suite's ``Tester`` with our quantizer, partitioner and host runtime;
* ``flow.make_flow()``: the ``espnn`` ``TestFlow``;
* ``suite_plugin``: the pytest plugin (``-p executorch_espnn.testing.suite_plugin``) that
  registers the flow with the suite and records the results;
* ``compare``: the pass criterion (<= 1 LSB of the output quantization, exact top-1).

Importing this package imports ExecuTorch's test harness; see docs/backend-suite.md.
"""
