"""libFuzzer target, seed corpus and replay driver for the engine."""
