"""Several models in one firmware (custom_executorch_model as `name = path` lines): the option's
one-line errors, the named headers (two included in one C and one C++ file), the summary and
RAM figures with a shared arena, and, end to end on the host board (slow), a program running two
models with and without the shared arena, bit-exact with ExecuTorch's Python runtime running
each model's .pte (`executorch_espnn.host.run`)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from devkit import pio_helpers as h
from devkit.model_files import model_info_from
from executorch_espnn.firmware import render
from executorch_espnn.firmware import step as model_step
from executorch_espnn.firmware import summary as report
from executorch_espnn.firmware.model_info import ModelInfo
from executorch_espnn.firmware.options import OptionError, parse_env_models
from executorch_espnn.payload import decode
from executorch_espnn.pte import delegate_payloads

MODEL = "custom_executorch_model"
MODEL_PY = "def model():\n    pass\n\ndef example_inputs():\n    pass\n"


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(MODEL_PY)
    (tmp_path / "c.npz").write_bytes(b"")
    return tmp_path


def test_one_unnamed_model_keeps_its_files_and_symbols(proj: Path) -> None:
    (one,) = parse_env_models({MODEL: "a.py"}, proj, "esp32")
    assert one.name == "" and "name" not in one.cache_fields()
    paths = model_step.paths_for(proj / "executorch", one)
    assert paths.out == proj / "executorch"
    assert (paths.header.name, paths.source.name, paths.gen.name) == ("model_pte.h", "model_pte_data.S",
                                                                      "espnn_model")


def test_named_models_get_their_own_folders_options_and_cache_keys(proj: Path) -> None:
    models = parse_env_models({MODEL: "\nkws = a.py\nvision = b.py",
                               "custom_executorch_calibration": "kws = c.npz",
                               "custom_executorch_selftest": "2",
                               "custom_executorch_strict": "yes"}, proj, "esp32s3")
    assert [m.name for m in models] == ["kws", "vision"]
    assert [m.calibration for m in models] == [proj / "c.npz", None]  # only where named
    assert [m.selftest for m in models] == [2, 2]  # a plain number: every model
    assert all(m.strict and m.target == "esp32s3" for m in models)  # build-wide options
    assert models[0].cache_fields()["name"] == "kws"
    paths = [model_step.paths_for(proj / "executorch", m) for m in models]
    assert [p.out for p in paths] == [proj / "executorch" / "models" / n for n in ("kws", "vision")]
    assert [p.header.name for p in paths] == ["model_kws_pte.h", "model_vision_pte.h"]
    assert paths[1].gen.name == "espnn_model_vision"  # its own ESP-IDF component


@pytest.mark.parametrize(("options", "expected"), [
    ({MODEL: "a.py\nb.py"},
     "custom_executorch_model: 2 models without names; give one `name = path` per line"),
    ({MODEL: "kws = a.py\nb.py"},
     "custom_executorch_model: `b.py` has no name while other models have one; write it as `name = b.py`"),
    ({MODEL: "2kws = a.py\nv = b.py"},
     "custom_executorch_model: model name `2kws` is not a C identifier; use letters, digits and _"),
    ({MODEL: "kws = a.py\nKWS = b.py"},
     "custom_executorch_model: model name `KWS` is used twice (as `kws`; names must differ even ignoring "
     "case); give each model its own name"),
    ({MODEL: "kws = a.py\nv = missing.py"},
     "custom_executorch_model = missing.py: file not found"),
    ({MODEL: "kws = a.py\nv ="},
     "custom_executorch_model: model `v` has no path; write `v = path/to/model.py`"),
    ({MODEL: "kws = a.py\nv = b.py", "custom_executorch_calibration": "c.npz"},
     "custom_executorch_calibration = c.npz: with several models, say which model it is for: one "
     "`name = value` per line"),
    ({MODEL: "kws = a.py\nv = b.py", "custom_executorch_validation": "x = c.npz"},
     "custom_executorch_validation: `x` is not a model of custom_executorch_model (its models: kws, v); "
     "use one of those names"),
    ({MODEL: "kws = a.py\nv = b.py", "custom_executorch_selftest": "kws = 2\nkws = 3"},
     "custom_executorch_selftest: model `kws` is given twice; keep one `kws = ...` line"),
    ({MODEL: "a.py", "custom_executorch_shared_arena": "yes"},
     "custom_executorch_shared_arena: one model has nothing to share its arena with; remove "
     "custom_executorch_shared_arena or name several models"),
    ({MODEL: "kws = a.py", "custom_executorch_shared_arena": "yes"},
     "custom_executorch_shared_arena: one model has nothing to share its arena with"),
    ({MODEL: "kws = a.py\nv = b.py", "custom_executorch_shared_arena": "maybe"},
     "custom_executorch_shared_arena = maybe: unknown value; use `custom_executorch_shared_arena = yes`"),
    ({"custom_executorch_shared_arena": "yes"},
     "custom_executorch_shared_arena is set but custom_executorch_model is not"),
])
def test_bad_model_lists_stop_with_one_line_naming_the_option_and_the_fix(
    proj: Path, options: dict[str, str], expected: str
) -> None:
    with pytest.raises(OptionError) as err:
        parse_env_models(options, proj, "esp32")
    assert str(err.value).startswith(expected), str(err.value)
    assert "\n" not in str(err.value)


def _info(arena: int, partitions: int = 1, n_in: int = 8, n_out: int = 4) -> ModelInfo:
    def tensor(n: int) -> dict:
        return {"name": "x", "dtype": 5, "dtype_name": "float32", "dims": [1, n], "numel": n,
                "nbytes": 4 * n, "scale": 0.0, "zero_point": 0}

    return model_info_from({
        "pte": {"size": 64, "sha256": "0" * 64, "method": "forward", "planned_bytes": 64,
                "planned_buffers": [64], "delegates": ["EspNNDelegateBackend"], "inputs": [tensor(n_in)],
                "outputs": [tensor(n_out)]},
        "sizes": {"arena_bytes": arena, "state_bytes": 600, "weights_bytes": 300, "planned_bytes": 64,
                  "method_allocator_bytes": 360, "temp_allocator_bytes": 0, "pointer_bytes": 8},
        "versions": {"executorch": "1.5.1", "package": "0.1.0", "format_major": "2", "format_minor": "0"},
        "ops": {"delegated": 3, "cpu": 0, "cpu_list": [], "partitions": partitions},
        "warnings": [],
    })


@pytest.mark.parametrize(("compiler", "std", "suffix"), [("gcc", "-std=c11", "c"), ("g++", "-std=c++17", "cpp")])
def test_two_named_headers_compile_together_in_c_and_cpp(tmp_path: Path, compiler: str, std: str,
                                                         suffix: str) -> None:
    """Every symbol of a named header carries its name: kws and vision (and the unnamed model)
    in one translation unit, warning-free, each descriptor pointing at its own bytes."""
    objs, data = [], {}
    for name, n_in, n_out in (("kws", 8, 4), ("vision", 12, 3), ("", 5, 2)):
        out = tmp_path / (name or "plain")
        out.mkdir()
        data[name] = bytes((i * 7 + len(name)) & 0xFF for i in range(64))
        (out / "model.pte").write_bytes(data[name])
        render.write_all(_info(32, 1, n_in, n_out), out, name=name)
        gen = out / render.generated_subdir(name)
        objs.append((gen, gen / render.named("model_pte_data.S", name)))
    main = tmp_path / f"main.{suffix}"
    main.write_text(
        '#include <stdio.h>\n#include "model_kws_pte.h"\n#include "model_vision_pte.h"\n#include "model_pte.h"\n'
        "int main(void) {\n"
        '    printf("%u %u %u %u %u %u\\n", (unsigned)model_kws_pte.data[5], (unsigned)model_vision_pte.data[5],\n'
        "           (unsigned)model_pte.data[5], (unsigned)ESPNN_MODEL_KWS_INPUT0_NUMEL,\n"
        "           (unsigned)ESPNN_MODEL_VISION_INPUT0_NUMEL, (unsigned)ESPNN_MODEL_OUTPUT0_NUMEL);\n"
        "    return 0;\n}\n")
    exe = tmp_path / "m"
    cmd = [compiler, std, "-Wall", "-Wextra", "-Werror", *(f"-I{g}" for g, _ in objs),
           f"-I{h.ROOT / 'espnn_component' / 'include'}", str(main), *(str(s) for _, s in objs), "-o", str(exe)]
    subprocess.run(cmd, check=True)
    got = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()
    assert got == [str(data["kws"][5]), str(data["vision"][5]), str(data[""][5]), "8", "12", "2"]
    kws_header = (tmp_path / "kws" / "espnn_model_kws" / "model_kws_pte.h").read_text()
    assert not re.search(r"(?<![A-Za-z0-9_])(ESPNN_MODEL_(?!KWS_)|espnn_model_(?!kws_)|model_pte\b)", kws_header)


def test_summary_and_ram_count_a_shared_arena_once() -> None:
    a, b = _info(4000, partitions=1), _info(9000, partitions=3)
    need_a = 4000 + 600 + 64 + 360
    need_b = 9000 + 600 + 64 + 360
    shared_b = 9000  # the largest model's arena: a model's delegates all start at its base
    assert report.models_ram_needed([a, b], shared=False) == need_a + need_b
    assert report.models_ram_needed([a, b], shared=True) == need_a + need_b - 4000 - 9000 + shared_b
    budget = report.RamBudget(report.models_ram_needed([a, b], True), 300_000, "board esp32dev", "auto")
    lines = report.models_summary_lines([("kws", a, True), ("vision", b, False)], budget, shared=True)
    assert lines[0].startswith("ExecuTorch model kws: ")
    assert not [ln for ln in lines if ln.startswith("ExecuTorch model vision")]  # up to date: no section
    assert f"  shared arena {shared_b} B instead of 13000 B, saves {13000 - shared_b} B" in "\n".join(lines)
    assert [ln for ln in lines if ln.startswith("  RAM: ") and "needed by all models, fits in" in ln]


# --- end to end on the host board -------------------------------------------------------------

# Two delegates around a CPU operator: both use one arena from its start, the model's own
# (arena_bytes: the larger partition's) or the shared one (espnn_arena_lease.h).
ISLAND = """
import torch


class Island(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 8)
        self.b = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.b(torch.cumsum(torch.relu(self.a(x)), dim=1))


def model():
    torch.manual_seed(0)
    return Island().eval()


def example_inputs():
    return (torch.randn(1, 4),)


def calibration_data():
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(1, 4, generator=g),) for _ in range(8)]
"""

PROGRAM = r"""
#include <Arduino.h>
#include <executorch_espnn.h>

#include "espnn_models.h"

static const float kX[3][4] = {{-1.0f, -0.25f, 0.5f, 1.0f}, {0.2f, 0.2f, 0.2f, 0.2f}, {0.9f, 0.3f, -0.3f, -0.7f}};
#ifdef ESPNN_SHARED_ARENA_BYTES
static EspnnSharedArena arena(ESPNN_SHARED_ARENA_BYTES);
EspnnModel trend(model_trend_pte, arena);
EspnnModel island(model_island_pte, arena);
#else
EspnnModel trend(model_trend_pte);
EspnnModel island(model_island_pte);
#endif

static void run(EspnnModel &m, const char *name, int k) {
    float *x = m.input<float>(0);
    for (int i = 0; i < 4; ++i) x[i] = kX[k][i];
    if (!m.invoke()) { printf("error %s: %s\n", name, m.error()); return; }
    const float *y = m.output<float>(0);
    printf("out %s %d", name, k);
    for (size_t i = 0; i < m.output_numel(0); ++i) printf(" %a", (double)y[i]);
    printf("\n");
}

void setup() {
    if (!trend.begin() || !island.begin()) { printf("error begin: %s%s\n", trend.error(), island.error()); return; }
    executorch_espnn_memory_stats_t st;
    executorch_espnn_get_memory_stats(&st);
    printf("delegates %u own arenas %u\n", (unsigned)st.delegates, (unsigned)st.arena_bytes);
    for (int k = 0; k < 3; ++k) { run(trend, "trend", k); run(island, "island", k); }
#ifdef ESPNN_SHARED_ARENA_BYTES
    int app = 0;
    arena.acquire(&app);  /* the application holds the arena: a model must not run */
    printf("while held: %s: %s\n", trend.invoke() ? "ran" : "refused", trend.error());
    arena.release(&app);
    run(trend, "trend", 0);
    EspnnSharedArena tiny(4);
    EspnnModel small(model_trend_pte, tiny);
    printf("tiny: %s\n", small.begin() ? "began" : small.error());
#endif
}

void loop() {}
"""


@pytest.fixture(scope="module")
def two_models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """One project, two host envs (shared arena and not): hello_world's model and ISLAND."""
    work = tmp_path_factory.mktemp("two")
    core = work / "core"
    h.seed_core(core)
    trend = h.example_dir("hello_world") / "model" / "mlp.py"
    proj = h.write_project(work / "p", f"""
        [env]
        platform = {h.platform_spec()}
        board = host
        framework = arduino
        custom_executorch_model =
            trend = {trend}
            island = island.py

        [env:shared]
        custom_executorch_shared_arena = yes

        [env:separate]
        """, {"src/main.cpp": PROGRAM, "island.py": ISLAND})
    outputs = {}
    for env in ("shared", "separate"):
        r = h.pio(core, proj, "run", "-e", env, "-t", "exec", timeout=1500).check()
        outputs[env] = r.stdout
    return proj, outputs


def _printed(stdout: str) -> dict[tuple[str, int], np.ndarray]:
    got = {}
    for ln in stdout.splitlines():
        if ln.startswith("out "):
            _, name, k, *vals = ln.split()
            got[(name, int(k))] = np.array([float.fromhex(v) for v in vals], dtype=np.float32)
    return got


@pytest.mark.slow
@pytest.mark.parametrize("env", ["shared", "separate"])
def test_two_models_run_bit_exact_with_each_pte_on_the_python_runtime(
    two_models: tuple[Path, dict[str, str]], env: str
) -> None:
    from executorch_espnn import host

    proj, outputs = two_models
    models = proj / ".pio" / "build" / env / "executorch" / "models"
    printed = _printed(outputs[env])
    x = np.array([[-1.0, -0.25, 0.5, 1.0], [0.2, 0.2, 0.2, 0.2], [0.9, 0.3, -0.3, -0.7]], dtype=np.float32)
    assert len(printed) == 6, outputs[env][-3000:]
    for name in ("trend", "island"):
        pte = (models / name / "model.pte").read_bytes()
        for k in range(3):
            want = np.asarray(host.run(pte, [x[k : k + 1]])[0], dtype=np.float32).reshape(-1)
            np.testing.assert_array_equal(printed[(name, k)], want)
    infos = [json.loads((models / n / "model_info.json").read_text()) for n in ("trend", "island")]
    assert infos[1]["ops"]["partitions"] == 2 and infos[1]["ops"]["cpu"] >= 1  # two delegates
    # the island's header asks for its larger partition's arena, less than the two together: the
    # model began and ran bit-exact, so both delegates used the same bytes in turn
    payload_arenas = [decode(d).arena_size for d in delegate_payloads((models / "island" / "model.pte").read_bytes())]
    assert min(payload_arenas) > 0 and infos[1]["sizes"]["arena_bytes"] == max(payload_arenas) < sum(payload_arenas)
    own = re.search(r"delegates (\d+) own arenas (\d+)", outputs[env])
    assert own is not None and int(own.group(1)) == sum(i["ops"]["partitions"] for i in infos)
    # the delegates allocate no arena of their own: EspnnModel lends them its own or the shared one
    assert int(own.group(2)) == 0


@pytest.mark.slow
def test_shared_arena_is_sized_stated_and_guarded(two_models: tuple[Path, dict[str, str]]) -> None:
    proj, outputs = two_models
    models = proj / ".pio" / "build" / "shared" / "executorch" / "models"
    infos = [json.loads((models / n / "model_info.json").read_text()) for n in ("trend", "island")]
    arenas = [i["sizes"]["arena_bytes"] for i in infos]
    shared = max(arenas)
    header = (models.parent / "espnn_models" / "espnn_models.h").read_text()
    assert f"#define ESPNN_SHARED_ARENA_BYTES {shared}u" in header
    assert '#include "model_trend_pte.h"' in header and '#include "model_island_pte.h"' in header
    assert "ESPNN_SHARED_ARENA_BYTES" not in (proj / ".pio" / "build" / "separate" / "executorch"
                                              / "espnn_models" / "espnn_models.h").read_text()
    out = outputs["shared"]
    assert ("while held: refused: invoke: the shared arena is in use by another model's invoke() (or the "
            "application): models sharing an EspnnSharedArena must never run at the same time") in out
    assert (f"tiny: the model's delegate arena of {arenas[0]} bytes exceeds the shared arena of 4 bytes: size "
            "the EspnnSharedArena with ESPNN_SHARED_ARENA_BYTES") in out
    assert len([ln for ln in out.splitlines() if ln.startswith("out trend 0 ")]) == 2  # ran again after release
