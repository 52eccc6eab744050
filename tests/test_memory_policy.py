"""The memory policy for each Kconfig configuration.

The real ESP-IDF world file (memory/espnn_mem_idf.c) and the shared decision logic are built on
the host against a stand-in for heap_caps_* with scripted capacities, configured through the
component's Kconfig exactly as ESP-IDF would (kconfiglib -> sdkconfig.h); the host world file is
built the same way.  Each case checks the memory chosen, the fallback, and the failure message.
The ESP-IDF world runs twice: as ESP-IDF 5.x (esp_psram, heap_caps_free) and as ESP-IDF 4.4,
Arduino-ESP32 2.0.x's (no esp_psram.h; the stand-in heap aborts if aligned memory is freed with
heap_caps_free there).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from executorch_espnn import component_sources
from tests.component_helpers import IDF_VERSIONS, build_mem_driver, run_driver

KB = 1024
Build = Callable[..., Path]


@pytest.fixture(scope="module", params=IDF_VERSIONS, ids=[f"idf{v}" for v in IDF_VERSIONS])
def driver(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Build:
    idf_version: str = request.param
    cache: dict[tuple[str, tuple[tuple[str, str], ...], bool], Path] = {}

    def build(world: str = "idf", spiram: bool = False, **options: str) -> Path:
        if world == "host" and idf_version != IDF_VERSIONS[0]:
            pytest.skip("the host world has no ESP-IDF version")
        key = (world, tuple(sorted(options.items())), spiram)
        if key not in cache:
            tmp = tmp_path_factory.mktemp(f"mem-{world}")
            cache[key] = build_mem_driver(tmp, world, options, spiram, idf_version)
        return cache[key]

    return build


def script(internal: tuple[int, int], psram: tuple[int, int, int] | None = None) -> list[str]:
    cmds = [f"internal {internal[0]} {internal[1]}"]
    cmds.append(f"psram {psram[0]} {psram[1]} {psram[2]}" if psram else "psram 0 0 0")
    return cmds


def run(exe: Path, cmds: list[str]) -> list[str]:
    return [line for line in run_driver(exe, cmds) if line != "scripted"]


def config_line(exe: Path) -> Mapping[str, str]:
    (line,) = run(exe, ["config"])
    return dict(kv.split("=") for kv in line.split()[1:])


# --- Kconfig -> policy mapping -------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "spiram", "expected"),
    [
        ({}, False, {"arena": "0", "planned": "0", "weights": "0", "cap": "0", "spiram": "0"}),
        ({}, True, {"arena": "0", "planned": "0", "weights": "0", "cap": "0", "spiram": "1"}),
        (
            {
                "ESPNN_ET_ARENA_IN_INTERNAL": "y",
                "ESPNN_ET_PLANNED_IN_PSRAM": "y",
                "ESPNN_ET_WEIGHTS_TO_PSRAM": "y",
                "ESPNN_ET_INTERNAL_RAM_CAP": "65536",
            },
            True,
            {"arena": "1", "planned": "2", "weights": "2", "cap": "65536", "spiram": "1"},
        ),
        (
            {"ESPNN_ET_ARENA_IN_PSRAM": "y", "ESPNN_ET_WEIGHTS_TO_INTERNAL": "y"},
            True,
            {"arena": "2", "planned": "0", "weights": "1", "cap": "0", "spiram": "1"},
        ),
    ],
)
def test_config_compiled_from_kconfig(
    driver: Build, options: dict[str, str], spiram: bool, expected: dict[str, str]
) -> None:
    assert config_line(driver(spiram=spiram, **options)) == expected


# --- automatic (the default) -----------------------------------------------------------------


def test_auto_prefers_internal_then_falls_back_to_psram(driver: Build) -> None:
    exe = driver(spiram=True)
    out = run(
        exe,
        [
            *script((100 * KB, 60 * KB), (4096 * KB, 4000 * KB, 1)),
            "alloc arena 40960 16 arena of delegate 0",
            "alloc arena 40960 16 arena of delegate 1",  # 20 KB left in the block
            "alloc planned 8192 64 planned buffers",
            "inuse",
        ],
    )
    assert out[0] == "ok 0 internal 40960 1"
    assert out[1] == "ok 1 psram 40960 1"
    assert out[2] == "ok 2 internal 8192 1"
    assert out[3] == f"inuse {40960 + 8192}"


def test_auto_without_psram_is_internal_only_and_fails_clearly(driver: Build) -> None:
    exe = driver(spiram=False)
    out = run(
        exe,
        [
            *script((100_000, 60_000)),
            "alloc arena 200000 16 arena of delegate 0",
            "alloc arena 50000 16 arena of delegate 0",
        ],
    )
    assert out[0] == (
        "fail arena of delegate 0: 200000 bytes do not fit in internal RAM (largest free block "
        "60000, free 100000); this build has no PSRAM support (CONFIG_SPIRAM): shrink the model "
        "or use a board with PSRAM and enable it"
    )
    assert out[1] == "ok 0 internal 50000 1"


def test_auto_when_both_memories_are_full_names_both(driver: Build) -> None:
    exe = driver(spiram=True)
    out = run(
        exe,
        [
            *script((90_000, 70_000), (2_000_000, 1_500_000, 1)),
            "alloc planned 1600000 16 planned buffers",
        ],
    )
    assert out == [
        "fail planned buffers: 1600000 bytes do not fit in internal RAM (largest free block "
        "70000, free 90000) and do not fit in PSRAM (largest free block 1500000, free 2000000); "
        "free memory before loading the model, or shrink the model"
    ]


def test_auto_with_psram_enabled_but_missing_at_boot(driver: Build) -> None:
    exe = driver(spiram=True)
    out = run(
        exe,
        [
            *script((50_000, 40_000), (0, 0, 0)),
            "alloc arena 45000 16 arena",
            "alloc arena 30000 16 arena",
        ],
    )
    assert out[0] == (
        "fail arena: 45000 bytes do not fit in internal RAM (largest free block 40000, free "
        "50000) and cannot use PSRAM: none was found at boot; check the board's PSRAM, or "
        "shrink the model"
    )
    assert out[1] == "ok 0 internal 30000 1"


# --- internal only / PSRAM only -----------------------------------------------------------


def test_internal_only_never_uses_psram(driver: Build) -> None:
    exe = driver(spiram=True, ESPNN_ET_ARENA_IN_INTERNAL="y")
    out = run(
        exe,
        [
            *script((64 * KB, 32 * KB), (4096 * KB, 4096 * KB, 1)),
            "alloc arena 40000 16 arena of delegate 0",
            "alloc planned 40000 16 planned buffers",  # planned stays automatic
            "alloc state 1000 16 delegate state",
        ],
    )
    assert out[0] == (
        "fail arena of delegate 0: 40000 bytes do not fit in internal RAM (largest free block "
        "32768, free 65536); let it go to PSRAM with CONFIG_ESPNN_ET_ARENA_IN_AUTO=y or "
        "CONFIG_ESPNN_ET_ARENA_IN_PSRAM=y"
    )
    assert out[1] == "ok 0 psram 40000 1"
    assert out[2] == "ok 1 internal 1000 1"  # state follows the arena's placement


def test_psram_only_leaves_internal_ram_alone(driver: Build) -> None:
    exe = driver(spiram=True, ESPNN_ET_ARENA_IN_PSRAM="y", ESPNN_ET_PLANNED_IN_PSRAM="y")
    out = run(
        exe,
        [
            *script((300 * KB, 200 * KB), (100_000, 80_000, 1)),
            "alloc arena 1000 16 arena",
            "alloc planned 1000 16 planned",
            "inuse",
            "alloc arena 90000 16 arena of delegate 1",
        ],
    )
    assert out[:3] == ["ok 0 psram 1000 1", "ok 1 psram 1000 1", "inuse 0"]
    assert out[3] == (
        "fail arena of delegate 1: 90000 bytes do not fit in PSRAM (largest free block 78000, "
        "free 98000); choose CONFIG_ESPNN_ET_ARENA_IN_AUTO=y to use internal RAM too, or a "
        "board with more PSRAM"
    )


def test_psram_only_when_psram_missing_at_boot(driver: Build) -> None:
    exe = driver(spiram=True, ESPNN_ET_PLANNED_IN_PSRAM="y")
    out = run(exe, [*script((300 * KB, 200 * KB), (0, 0, 0)), "alloc planned 1000 16 planned"])
    assert out == [
        "fail planned: 1000 bytes cannot use PSRAM: none was found at boot; choose "
        "CONFIG_ESPNN_ET_PLANNED_IN_AUTO=y to use internal RAM too, or a board with more PSRAM"
    ]


# --- the internal RAM cap -------------------------------------------------------------------


def test_cap_sends_auto_buffers_to_psram(driver: Build) -> None:
    exe = driver(spiram=True, ESPNN_ET_INTERNAL_RAM_CAP="50000")
    out = run(
        exe,
        [
            *script((300 * KB, 200 * KB), (4096 * KB, 4096 * KB, 1)),
            "alloc arena 30000 16 arena of delegate 0",
            "alloc planned 30000 16 planned buffers",
            "inuse",
            "free 0",
            "inuse",
            "alloc planned 30000 16 planned buffers",
            "inuse",
        ],
    )
    assert out == [
        "ok 0 internal 30000 1",
        "ok 1 psram 30000 1",
        "inuse 30000",
        "freed",
        "inuse 0",
        "ok 2 internal 30000 1",
        "inuse 30000",
    ]


def test_cap_makes_internal_only_fail_with_the_cap_named(driver: Build) -> None:
    exe = driver(spiram=False, ESPNN_ET_ARENA_IN_INTERNAL="y", ESPNN_ET_INTERNAL_RAM_CAP="50000")
    out = run(
        exe,
        [
            *script((300 * KB, 200 * KB)),
            "alloc arena 30000 16 arena of delegate 0",
            "alloc arena 30000 16 arena of delegate 1",
        ],
    )
    assert out[0] == "ok 0 internal 30000 1"
    assert out[1] == (
        "fail arena of delegate 1: 30000 bytes would take the models' internal RAM over the cap "
        "(CONFIG_ESPNN_ET_INTERNAL_RAM_CAP=50000, 30000 already held); this build has no PSRAM "
        "support (CONFIG_SPIRAM): shrink the model or use a board with PSRAM, or raise "
        "CONFIG_ESPNN_ET_INTERNAL_RAM_CAP"
    )


# --- weights ---------------------------------------------------------------------------------


def test_weights_in_place_allocate_nothing(driver: Build) -> None:
    exe = driver(spiram=True)
    out = run(
        exe,
        [
            *script((300 * KB, 200 * KB), (4096 * KB, 4096 * KB, 1)),
            "alloc weights 1000 16 weights of delegate 0",
        ],
    )
    assert out == [
        "fail weights of delegate 0: the weights are used in place from flash "
        "(CONFIG_ESPNN_ET_WEIGHTS_IN_FLASH): nothing to allocate"
    ]


def test_weights_copied_to_internal_count_against_the_cap(driver: Build) -> None:
    exe = driver(spiram=True, ESPNN_ET_WEIGHTS_TO_INTERNAL="y", ESPNN_ET_INTERNAL_RAM_CAP="20000")
    out = run(
        exe,
        [
            *script((300 * KB, 200 * KB), (4096 * KB, 4096 * KB, 1)),
            "alloc weights 16000 16 weights of delegate 0",
            "alloc weights 16000 16 weights of delegate 1",
        ],
    )
    assert out[0] == "ok 0 internal 16000 1"
    assert out[1] == (
        "fail weights of delegate 1: 16000 bytes would take the models' internal RAM over the "
        "cap (CONFIG_ESPNN_ET_INTERNAL_RAM_CAP=20000, 16000 already held); use the weights in "
        "place from flash (CONFIG_ESPNN_ET_WEIGHTS_IN_FLASH=y), or raise "
        "CONFIG_ESPNN_ET_INTERNAL_RAM_CAP"
    )


def test_weights_copied_to_psram(driver: Build) -> None:
    exe = driver(spiram=True, ESPNN_ET_WEIGHTS_TO_PSRAM="y")
    out = run(
        exe,
        [
            *script((300 * KB, 200 * KB), (4096 * KB, 4096 * KB, 1)),
            "alloc weights 16000 16 weights",
            "inuse",
        ],
    )
    assert out == ["ok 0 psram 16000 1", "inuse 0"]


# --- API details ------------------------------------------------------------------------------


def test_alignment_zero_bytes_and_bad_alignment(driver: Build) -> None:
    exe = driver(spiram=False)
    out = run(
        exe,
        [
            *script((300 * KB, 200 * KB)),
            "alloc arena 100 128 arena",
            "alloc arena 0 0 empty",
            "alloc arena 100 24 arena",
            "inuse",
        ],
    )
    assert out[0] == "ok 0 internal 100 1"
    assert out[1] == "ok 1 internal 1 1"
    assert out[2] == "fail arena: alignment 24 is not a power of two"
    assert out[3] == "inuse 101"


def test_malloc_release_pair_tracks_exact_bytes_and_logs_failures(driver: Build) -> None:
    exe = driver(spiram=False)
    out = run(
        exe,
        [
            *script((10_000, 8_000)),
            "malloc state 1000 et_pal_allocate",
            "inuse",
            "malloc state 9000 et_pal_allocate",
            "release 0",
            "inuse",
            "live",
        ],
    )
    assert out[0] == "ok 0 - 1000 1"
    assert out[1] == "inuse 1016"  # the 16-byte header that remembers the block
    assert out[2].startswith("E (espnn_mem) et_pal_allocate: 9000 bytes do not fit in internal RAM")
    assert out[3] == "fail"
    assert out[4:] == ["freed", "inuse 0", "live 0"]


def test_everything_freed_returns_the_heap(driver: Build) -> None:
    exe = driver(spiram=True, ESPNN_ET_INTERNAL_RAM_CAP="100000")
    cmds = [*script((300 * KB, 200 * KB), (4096 * KB, 4096 * KB, 1))]
    cmds += [
        f"alloc {use} 30000 16 b{i}" for i, use in enumerate(["arena", "planned", "state", "arena"])
    ]
    cmds += [f"free {i}" for i in range(4)] + ["inuse", "live"]
    out = run(exe, cmds)
    assert out[:4] == [
        "ok 0 internal 30000 1",
        "ok 1 internal 30000 1",
        "ok 2 internal 30000 1",
        "ok 3 psram 30000 1",
    ]
    assert out[-2:] == ["inuse 0", "live 0"]


def test_longest_message_fits_the_documented_buffer(driver: Build) -> None:
    exe = driver(spiram=True, ESPNN_ET_INTERNAL_RAM_CAP="16777216")
    what = "planned buffers of method forward, memory id 1"
    out = run(
        exe,
        [
            *script((4_294_967_295 - 1, 4_294_967_295 - 1), (4_294_967_294, 4_294_967_294, 1)),
            f"alloc planned 4294967295 16 {what}",
        ],
    )
    assert out[0].startswith(f"fail {what}: 4294967295 bytes would take")
    assert out[0].endswith("or raise CONFIG_ESPNN_ET_INTERNAL_RAM_CAP")  # not truncated


# --- the host world ----------------------------------------------------------------------------


def test_host_world_uses_the_process_heap_and_honours_the_cap(driver: Build) -> None:
    exe = driver(world="host", ESPNN_ET_INTERNAL_RAM_CAP="4096")
    out = run(
        exe,
        [
            "config",
            "alloc arena 4000 64 arena",
            "alloc planned 200 16 planned",
            "free 0",
            "alloc planned 200 16 planned",
            "inuse",
        ],
    )
    assert out[0] == "config arena=0 planned=0 weights=0 cap=4096 spiram=0"
    assert out[1] == "ok 0 host 4000 1"
    assert out[2] == (
        "fail planned: 200 bytes would take the models' internal RAM over the cap "
        "(CONFIG_ESPNN_ET_INTERNAL_RAM_CAP=4096, 4000 already held); this build has no PSRAM "
        "support (CONFIG_SPIRAM): shrink the model or use a board with PSRAM and enable it, or "
        "raise CONFIG_ESPNN_ET_INTERNAL_RAM_CAP"
    )
    assert out[3:] == ["freed", "ok 1 host 200 1", "inuse 200"]


def test_host_world_without_any_configuration_uses_the_kconfig_defaults(tmp_path: Path) -> None:
    from tests.component_helpers import CDIR, COMPONENT, compile_c

    mem = COMPONENT / "memory"
    exe = compile_c(
        tmp_path / "drv",
        [*component_sources.load(COMPONENT).mem_host_sources, CDIR / "mem_policy_driver.c"],
        [COMPONENT / "include", mem, CDIR],
    )
    assert run(exe, ["config", "malloc planned 10 x", "release 0", "inuse"]) == [
        "config arena=0 planned=0 weights=0 cap=0 spiram=0",
        "ok 0 - 10 1",
        "freed",
        "inuse 0",
    ]


def test_32_bit_size_t_arithmetic_does_not_wrap(tmp_path: Path) -> None:
    # On the chip size_t is 32 bits: the malloc header and the cap check must not wrap.
    from tests.component_helpers import CDIR, COMPONENT, STANDIN, compile_c, write_sdkconfig

    write_sdkconfig(tmp_path, {"ESPNN_ET_INTERNAL_RAM_CAP": "16777216"}, spiram=False)
    mem = COMPONENT / "memory"
    exe = compile_c(
        tmp_path / "drv32",
        [*component_sources.load(COMPONENT).mem_idf_sources, CDIR / "heap_caps_standin.c",
         CDIR / "esp_log_standin.c", CDIR / "mem_policy_driver.c"],
        [tmp_path / "include", COMPONENT / "include", mem, CDIR, STANDIN],
        ["ESP_PLATFORM", "ESPNN_TEST_IDF"],
        extra=["-m32"],
    )  # fmt: skip
    out = run(exe, [*script((100_000, 50_000)), "malloc state 4294967290 et_pal_allocate",
                    "alloc arena 4294967295 16 arena", "alloc arena 16777000 16 arena",
                    "alloc arena 1000 16 arena", "inuse"])  # fmt: skip
    assert (
        out[0] == "E (espnn_mem) et_pal_allocate: 4294967290 bytes is more than any memory can hold"
    )
    assert out[1] == "fail"
    assert out[2].startswith(
        "fail arena: 4294967295 bytes would take the models' internal RAM over the cap"
    )
    assert out[3].startswith("fail arena: 16777000 bytes do not fit in internal RAM")
    assert out[4:] == ["ok 0 internal 1000 1", "inuse 1000"]
