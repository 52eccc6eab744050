"""Which zoo models the benchmarks run (devkit/zoo.py defines them; no downloads)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BenchModel:
    key: str  # devkit.zoo.ZOO key
    title: str
    pio_example: str | None = None  # an examples/ project that builds this model


MODELS: tuple[BenchModel, ...] = (
    BenchModel("mobilenet_v2_0.35_96", "MobileNetV2 0.35 96x96"),
    BenchModel("mobilenet_v2_1.0_224", "MobileNetV2 1.0 224x224"),
    BenchModel("mobilenet_v1_0.25_96_gray", "MobileNetV1 0.25 96x96 gray"),
    BenchModel("ds_cnn_kws", "DS-CNN KWS 49x10"),
    BenchModel("resnet8", "ResNet-8 32x32x3"),
    BenchModel("dense_autoencoder", "Dense autoencoder 640"),
    BenchModel("tiny_vit", "Tiny ViT"),
    BenchModel("gru_rows", "GRU 8x8 -> 32, 8 steps"),
    BenchModel("lstm_rows", "LSTM 8x8 -> 32, 8 steps"),
)

# the --quick subset (the CI smoke test): small, and between them every figure's code path
# (convolutions and depthwise, fully connected, a CPU-fallback program)
QUICK: tuple[str, ...] = ("ds_cnn_kws",)
PIO_EXAMPLE_FULL = "keyword_spotting"
PIO_EXAMPLE_QUICK = "hello_world"

# MobileNetV2 carries the dispatch-overhead target
OVERHEAD_TARGET_MODELS: tuple[str, ...] = ("mobilenet_v2_0.35_96", "mobilenet_v2_1.0_224")


def select(quick: bool, only: list[str] | None) -> list[BenchModel]:
    by_key = {m.key: m for m in MODELS}
    if only:
        unknown = [k for k in only if k not in by_key]
        if unknown:
            raise SystemExit(f"unknown model(s) {unknown}; choose from {sorted(by_key)}")
        return [by_key[k] for k in only]
    if quick:
        return [by_key[k] for k in QUICK]
    return list(MODELS)
