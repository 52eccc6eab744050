"""Benchmarks of executorch-espnn: `python benchmarks/run.py` (see docs/benchmarks.md)."""
