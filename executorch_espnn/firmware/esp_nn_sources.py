"""What an Arduino build compiles of ESP-NN for each chip, and which ESP-NN releases the engine
accepts.

The table mirrors ESP-NN's own build, `CMakeLists.txt` of espressif/esp-nn at the pinned commit
(sources.ESPNN_COMMIT, 1.2.3): `c_srcs` (the ANSI reference kernels plus the generic optimised
C, `*_opt.c`) on every chip, `s3_srcs` (assembly) added under CONFIG_IDF_TARGET_ESP32S3,
`p4_srcs` under CONFIG_IDF_TARGET_ESP32P4, include dirs `include` and `src/common`, and its
compile options (`-O2 -Wno-unused-function`, plus `-mlongcalls -fno-unroll-loops` on S3).
ESP-NN's `esp_nn.h` then maps each public name to the chip's kernel when CONFIG_NN_OPTIMIZED is
set (S3 and P4 their own, every other chip the generic optimised C).  tests/test_esp_nn_api.py
compares this table with a checkout's CMakeLists.txt (ESPNN_ESP_NN_DIR).

ESP-NN's sources read CONFIG_IDF_TARGET_* (e.g. `CONFIG_IDF_TARGET_ARCH_XTENSA` picks the
`clamps`/`nsau` instructions) without including sdkconfig.h, so an Arduino build compiles them
with `-include sdkconfig.h` (the framework's), as the values an ESP-IDF build sees.  SKIP_NUDGE
(CONFIG_NN_SKIP_NUDGE) is never set: it is not bit-exact.
"""

from __future__ import annotations

import re
from pathlib import Path

COMPONENT_MANIFEST = Path(__file__).resolve().parents[2] / "espnn_component" / "idf_component.yml"

COMMON_SRCS = (
    "src/activation_functions/esp_nn_relu_ansi.c",
    "src/activation_functions/esp_nn_hard_swish_ansi.c",
    "src/common/esp_nn_mean_ansi.c",
    "src/basic_math/esp_nn_add_ansi.c",
    "src/basic_math/esp_nn_mul_ansi.c",
    "src/convolution/esp_nn_conv_ansi.c",
    "src/convolution/esp_nn_conv_opt.c",
    "src/convolution/esp_nn_depthwise_conv_ansi.c",
    "src/convolution/esp_nn_depthwise_conv_opt.c",
    "src/fully_connected/esp_nn_fully_connected_ansi.c",
    "src/softmax/esp_nn_softmax_ansi.c",
    "src/softmax/esp_nn_softmax_opt.c",
    "src/logistic/esp_nn_logistic_ansi.c",
    "src/pooling/esp_nn_avg_pool_ansi.c",
    "src/pooling/esp_nn_max_pool_ansi.c",
)

CHIP_SRCS: dict[str, tuple[str, ...]] = {
    "esp32s3": (
        "src/common/esp_nn_common_functions_esp32s3.S",
        "src/common/esp_nn_dot_s8_esp32s3.S",
        "src/common/esp_nn_multiply_by_quantized_mult_esp32s3.S",
        "src/common/esp_nn_multiply_by_quantized_mult_ver1_esp32s3.S",
        "src/activation_functions/esp_nn_relu_s8_esp32s3.S",
        "src/activation_functions/esp_nn_hard_swish_s8_esp32s3.c",
        "src/common/esp_nn_mean_s8_esp32s3.c",
        "src/basic_math/esp_nn_add_s8_esp32s3.S",
        "src/basic_math/esp_nn_mul_s8_esp32s3.S",
        "src/basic_math/esp_nn_mul_broadcast_s8_esp32s3.S",
        "src/convolution/esp_nn_conv_esp32s3.c",
        "src/convolution/esp_nn_conv_s8_1x1_esp32s3.c",
        "src/convolution/esp_nn_conv_s8_3x3_opt_esp32s3.c",
        "src/convolution/esp_nn_depthwise_conv_s8_esp32s3.c",
        "src/convolution/esp_nn_conv_s16_mult8_esp32s3.S",
        "src/convolution/esp_nn_conv_s8_mult8_1x1_esp32s3.S",
        "src/convolution/esp_nn_conv_s16_mult4_1x1_esp32s3.S",
        "src/convolution/esp_nn_conv_s8_filter_aligned_input_padded_esp32s3.S",
        "src/convolution/esp_nn_depthwise_conv_s8_mult1_3x3_padded_esp32s3.S",
        "src/convolution/esp_nn_depthwise_conv_s16_mult1_esp32s3.S",
        "src/convolution/esp_nn_depthwise_conv_s16_mult1_3x3_esp32s3.S",
        "src/convolution/esp_nn_depthwise_conv_s16_mult1_3x3_no_pad_esp32s3.S",
        "src/convolution/esp_nn_depthwise_conv_s16_mult8_3x3_esp32s3.S",
        "src/convolution/esp_nn_depthwise_conv_s16_mult4_esp32s3.S",
        "src/convolution/esp_nn_depthwise_conv_s16_mult8_esp32s3.S",
        "src/fully_connected/esp_nn_fully_connected_esp32s3.c",
        "src/fully_connected/esp_nn_fc_s8_mac16_esp32s3.S",
        "src/fully_connected/esp_nn_fully_connected_s8_esp32s3.S",
        "src/fully_connected/esp_nn_fully_connected_per_ch_s8_esp32s3.S",
        "src/pooling/esp_nn_max_pool_s8_esp32s3.S",
        "src/pooling/esp_nn_avg_pool_s8_esp32s3.c",
        "src/pooling/esp_nn_avg_pool_s8_esp32s3.S",
        "src/softmax/esp_nn_softmax_s8_esp32s3.c",
    ),
    "esp32p4": (
        "src/common/esp_nn_mean_s8_esp32p4.c",
        "src/common/esp_nn_multiply_by_quantized_mult_esp32p4.S",
        "src/activation_functions/esp_nn_hard_swish_s8_esp32p4.c",
        "src/activation_functions/esp_nn_relu_s8_esp32p4.c",
        "src/basic_math/esp_nn_add_s8_esp32p4.c",
        "src/basic_math/esp_nn_mul_s8_esp32p4.c",
        "src/convolution/esp_nn_conv_esp32p4.c",
        "src/convolution/esp_nn_depthwise_conv_esp32p4.c",
        "src/fully_connected/esp_nn_fully_connected_s8_esp32p4.c",
        "src/pooling/esp_nn_avg_pool_s8_esp32p4.c",
        "src/pooling/esp_nn_max_pool_s8_esp32p4.c",
        "src/softmax/esp_nn_softmax_s8_esp32p4.c",
    ),
}

INCLUDE_DIRS = ("include", "src/common")
PUBLIC_INCLUDE_DIR = "include"  # what the engine includes (esp_nn.h); src/common is ESP-NN's own
COMMON_FLAGS = ("-O2", "-Wno-unused-function")
CHIP_FLAGS: dict[str, tuple[str, ...]] = {"esp32s3": ("-mlongcalls", "-fno-unroll-loops")}
# The chips ESP-NN serves; those without an entry in CHIP_SRCS get its generic optimised C.
CHIPS = ("esp32", "esp32s2", "esp32s3", "esp32c3", "esp32c6", "esp32p4")
# What makes esp_nn.h pick the optimised kernels (ESP-NN's Kconfig default, NN_OPTIMIZED).
DEFINES = (("CONFIG_NN_OPTIMIZED", "1"),)


class EspNNTableError(Exception):
    """The chip or the tree does not fit the table; str() is one line."""


def sources_for(mcu: str) -> tuple[str, ...]:
    chip = mcu.strip().lower()
    if chip not in CHIPS:
        raise EspNNTableError(f"ESP-NN serves {', '.join(CHIPS)}, not '{mcu}'")
    return COMMON_SRCS + CHIP_SRCS.get(chip, ())


def flags_for(mcu: str) -> tuple[str, ...]:
    return COMMON_FLAGS + CHIP_FLAGS.get(mcu.strip().lower(), ())


def missing_sources(root: Path, mcu: str) -> list[str]:
    return [s for s in sources_for(mcu) if not (root / s).is_file()]


# --- versions ---------------------------------------------------------------------------------

_RANGE_RE = re.compile(r"^\s*espressif/esp-nn:\s*\n\s*version:\s*[\"']([^\"']+)[\"']", re.M)
_VERSION_RE = re.compile(r"^version:\s*[\"']?([0-9][^\"'\s]*)[\"']?", re.M)


def declared_range(manifest: Path = COMPONENT_MANIFEST) -> str:
    """The espressif/esp-nn range of the component's idf_component.yml (the one home of it)."""
    m = _RANGE_RE.search(manifest.read_text(encoding="utf8"))
    if m is None:
        raise EspNNTableError(f"{manifest} declares no espressif/esp-nn version")
    return m.group(1)


def tree_version(root: Path) -> str | None:
    """The version an ESP-NN tree says it is (its idf_component.yml), if it says."""
    manifest = root / "idf_component.yml"
    if not manifest.is_file():
        return None
    m = _VERSION_RE.search(manifest.read_text(encoding="utf8", errors="replace"))
    return m.group(1) if m else None


def in_range(version: str, spec: str) -> bool:
    import semantic_version  # PlatformIO's; the IDF component manager's too

    base = re.sub(r"~\d+$", "", version.strip())  # "1.2.0~1": the registry's revision 1 of 1.2.0
    try:
        return bool(semantic_version.SimpleSpec(spec).match(semantic_version.Version.coerce(base)))
    except ValueError:
        return False


def version_problem(root: Path, manifest: Path = COMPONENT_MANIFEST) -> str | None:
    """Why the ESP-NN tree at `root` does not fit the declared range, or None."""
    spec = declared_range(manifest)
    version = tree_version(root)
    if version is None:
        return f"{root} does not say its ESP-NN version (no version in idf_component.yml)"
    if not in_range(version, spec):
        return (f"{root} is ESP-NN {version}, outside the range the engine is checked against "
                f"({spec}, espnn_component/idf_component.yml)")
    return None
