"""The per-layer profiler (issue 28): custom_executorch_profile / lower(profile=True), the
engine's compile-time switch, EspnnModel::profile()'s lines on the host, and
`executorch-espnn profile LOG --report ...`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

import executorch_espnn as ee
from executorch_espnn import component_sources
from executorch_espnn.firmware.options import OptionError, parse_env_options
from executorch_espnn.report.profile import ProfileLogError, check_against, parse_log

ROOT = Path(__file__).resolve().parents[1]
COMPONENT = ROOT / "espnn_component"
LINE = re.compile(r"espnn-profile (\w+) ")


# --- the option --------------------------------------------------------------------------------

def _model_py(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text("def model():\n    pass\n\ndef example_inputs():\n    pass\n")


def test_option_defaults_off_and_keeps_the_cache_key(tmp_path: Path) -> None:
    _model_py(tmp_path)
    off = parse_env_options({"custom_executorch_model": "model.py"}, tmp_path, "esp32s3")
    on = parse_env_options({"custom_executorch_model": "model.py", "custom_executorch_profile": "yes"},
                           tmp_path, "esp32s3")
    no = parse_env_options({"custom_executorch_model": "model.py", "custom_executorch_profile": "no"},
                           tmp_path, "esp32s3")
    assert off is not None and on is not None and no is not None
    assert not off.profile and on.profile and not no.profile
    assert "profile" not in off.cache_fields() and off.cache_fields() == no.cache_fields()
    assert on.cache_fields()["profile"] == "yes"


def test_option_errors_name_the_option_and_the_fix(tmp_path: Path) -> None:
    _model_py(tmp_path)
    with pytest.raises(OptionError, match=r"^custom_executorch_profile = maybe: unknown value; use "
                                          r"`custom_executorch_profile = yes` or `custom_executorch_profile = no`$"):
        parse_env_options({"custom_executorch_model": "model.py", "custom_executorch_profile": "maybe"},
                          tmp_path, "esp32s3")
    (tmp_path / "m.pte").write_bytes(b"x")
    with pytest.raises(OptionError, match=r"custom_executorch_profile = yes: a ready \.pte carries no layer names"):
        parse_env_options({"custom_executorch_model": "m.pte", "custom_executorch_profile": "yes"},
                          tmp_path, "esp32s3")
    with pytest.raises(OptionError, match="custom_executorch_profile is set but custom_executorch_model is not"):
        parse_env_options({"custom_executorch_profile": "yes"}, tmp_path, "esp32s3")


def test_profile_and_a_model_partition_are_refused_together() -> None:
    from executorch_espnn.firmware.options import storage_choice

    def get(name: str) -> str | None:
        return "partition" if name == "custom_executorch_storage" else None

    assert storage_choice(get).is_partition
    with pytest.raises(OptionError, match=r"^custom_executorch_profile = yes: the layer table belongs to one model, "
                                          r"and with custom_executorch_storage = partition"):
        storage_choice(get, profile=True)


def test_kconfig_override_only_when_profiling(tmp_path: Path) -> None:
    import sys

    from builder.espnn_pio.kconfig_glue import KconfigSetup

    def setup(profile: bool) -> KconfigSetup:
        return KconfigSetup(COMPONENT / "Kconfig", tmp_path, tmp_path / "sdkconfig.host",
                            tmp_path / "sdkconfig.defaults", False, ROOT, sys.executable, profile=profile)

    assert "ESPNN_ET_PROFILE=y" not in setup(False).command("header")
    assert setup(True).command("header")[-2:] == ["--set", "ESPNN_ET_PROFILE=y"]
    header = setup(True).write_header()
    assert "#define CONFIG_ESPNN_ET_PROFILE 1" in header.read_text()


# --- the engine's switch -----------------------------------------------------------------------

def _engine_object(tmp_path: Path, *flags: str, name: str = "engine.o") -> str:
    lists = component_sources.load(COMPONENT)
    inc = [x for d in (*lists.engine_include_dirs, *lists.engine_priv_include_dirs, *lists.host_kernel_include_dirs)
           for x in ("-I", str(d))]
    obj = tmp_path / name
    subprocess.run(["gcc", "-std=c11", "-pedantic", "-Wall", "-Wextra", "-Werror", "-O2", *flags, *inc, "-c",
                    str(COMPONENT / "engine" / "src" / "engine.c"), "-o", str(obj)], check=True)
    return subprocess.run(["nm", str(obj)], check=True, capture_output=True, text=True).stdout


def test_engine_off_has_no_profiling_code_and_on_has_the_api(tmp_path: Path) -> None:
    off = _engine_object(tmp_path)
    assert "espnn_invoke" in off
    for sym in ("espnn_invoke_profiled", "espnn_profile_now", "espnn_profile_unit", "clock_gettime"):
        assert sym not in off
    # the same through the Kconfig header a host/Arduino build puts on the include path
    kc = tmp_path / "kc"
    kc.mkdir()
    (kc / "espnn_sdkconfig.h").write_text("#define CONFIG_ESPNN_ET_PROFILE 1\n")
    for syms in (_engine_object(tmp_path, "-DESPNN_PROFILE=1", name="on.o"),
                 _engine_object(tmp_path, f"-I{kc}", name="kc.o"),
                 _engine_object(tmp_path, f"-I{kc}", "-m32", name="kc32.o")):
        for sym in ("espnn_invoke_profiled", "espnn_profile_now", "espnn_profile_unit", "clock_gettime"):
            assert sym in syms


# --- the log parser (lines in the documented format) ------------------------------------------

def _table(n_layers: int = 3) -> dict[str, Any]:
    layers = [{"index": i, "partition": 0 if i < 2 else 1, "op": i if i < 2 else 0, "family": "CONV2D",
               "name": f"aten_convolution_default_{i}", "location": f"m.py:{i + 3} in forward"}
              for i in range(n_layers)]
    return {"line_format": 1, "layers": layers, "cpu_stretches": [[], ["aten.flip.default"], []]}


def _log(table: dict[str, Any], prefix: str = "I (812) app: ") -> str:
    lines = [f"espnn-profile begin layers={len(table['layers'])} partitions=2 unit=cycles"]
    for ly in table["layers"]:
        lines.append(f"espnn-profile layer {ly['index']} ticks=100 share=25.00% part={ly['partition']} op={ly['op']} "
                     f"family={ly['family']} name=\"{ly['name']}\" at=\"{ly['location']}\"")
    lines += ["espnn-profile delegate 0 ticks=10 share=2.50% ops=2", "espnn-profile delegate 1 ticks=10 share=2.50% ops=1",
              'espnn-profile cpu 0 ticks=5 share=1.25% ops=""', 'espnn-profile cpu 1 ticks=70 share=17.50% ops="aten.flip.default"',
              'espnn-profile cpu 2 ticks=5 share=1.25% ops=""',
              "espnn-profile total ticks=400 layers=300 delegates=20 cpu=80 unit=cycles end"]
    return "boot\n" + "\n".join(prefix + ln for ln in lines) + "\n"


def test_parse_reads_the_lines_behind_a_console_prefix() -> None:
    table = _table()
    p = parse_log(_log(table))
    assert p.unit == "cycles" and p.total == 400
    assert [x.name for x in p.layers] == [x["name"] for x in table["layers"]]
    assert p.layers[0].location == "m.py:3 in forward"
    assert [c.detail for c in p.cpu] == ["", "aten.flip.default", ""]
    check_against(p, {"profile": table})


def test_a_log_without_profile_lines_is_refused() -> None:
    with pytest.raises(ProfileLogError, match=r"log.txt holds no espnn-profile lines; build the firmware with "
                                              r"custom_executorch_profile = yes"):
        parse_log("boot\nhello\n", "log.txt")
    # the firmware's own error line is quoted
    with pytest.raises(ProfileLogError, match="the firmware said: this firmware was built without the profiler"):
        parse_log("espnn-profile error: this firmware was built without the profiler; set ...\n", "log.txt")


def test_a_truncated_line_is_refused_with_its_line_number() -> None:
    text = _log(_table())
    cut = text.replace('at="m.py:4 in forward"', 'at="m.py:4 in', 1)
    with pytest.raises(ProfileLogError, match=r"^log.txt line 4: `espnn-profile layer 1 ticks=100 .*` is not a whole "
                                              r"layer line: a line cut short"):
        parse_log(cut, "log.txt")
    head = text[:text.index("espnn-profile delegate 0")]
    with pytest.raises(ProfileLogError, match=r"the profile is cut short after `espnn-profile layer 2"):
        parse_log(head, "log.txt")


def test_a_layer_count_that_does_not_match_the_report_is_refused() -> None:
    p = parse_log(_log(_table(3)), "log.txt")
    with pytest.raises(ProfileLogError, match=r"^log.txt profiles 3 layers, the report lists 4: the log and the "
                                              r"report come from different builds"):
        check_against(p, {"profile": _table(4)}, "log.txt")
    with pytest.raises(ProfileLogError, match="the report has no layer table"):
        check_against(p, {"profile": None}, "log.txt")


# --- end to end on the host: lower(profile=True), EspnnModel::profile(), the CLI -------------


@pytest.fixture(scope="module")
def digits() -> tuple[ee.LoweredModel, ee.LoweredModel]:
    from devkit.report_example import DigitsNet

    torch.manual_seed(0)
    model = DigitsNet().eval()
    ex = (torch.randn(1, 1, 8, 8),)
    calib = [(torch.randn(1, 1, 8, 8),) for _ in range(4)]
    return ee.lower(model, ex, calib), ee.lower(model, ex, calib, profile=True)


def _runner(build: Path, model_dir: Path, kconfig_dir: Path | None) -> Path:
    from executorch_espnn import host

    tc = host.find_toolchain()
    flags = f"-I{kconfig_dir}" if kconfig_dir is not None else ""
    subprocess.run(
        [str(tc.cmake), "-S", str(COMPONENT), "-B", str(build), "-G", tc.generator, "-DCMAKE_BUILD_TYPE=Release",
         f"-DCMAKE_PREFIX_PATH={host.executorch_dir()}", f"-DESPNN_MODEL_DIR={model_dir}",
         f"-DCMAKE_C_FLAGS={flags}", f"-DCMAKE_CXX_FLAGS={flags}"],
        check=True, capture_output=True, text=True,
    )
    proc = subprocess.run([str(tc.cmake), "--build", str(build), "--target", "espnn_runner", "--parallel", "2"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return build / "espnn_runner"


@pytest.mark.slow
def test_profile_on_the_host_names_every_layer_and_changes_no_output(
        digits: tuple[ee.LoweredModel, ee.LoweredModel], tmp_path_factory: pytest.TempPathFactory) -> None:
    from devkit.model_files import render_model

    plain, prof = digits
    assert prof.profile is not None and plain.profile is None
    assert prof.pte == plain.pte  # profiling is the firmware's switch, never the program's
    report = prof.report.to_dict()
    assert plain.report.to_dict()["profile"] is None and report["profile"] == prof.profile.to_dict()
    n_ops = sum(len(p["ops"]) for p in report["partitions"])
    table = prof.profile.layers
    assert [(ly.partition, ly.op, ly.family) for ly in table] == [
        (p["index"], i, op) for p in report["partitions"] for i, op in enumerate(p["ops"])]
    graph = {g["node"]: g["location"] for g in report["graph"]}
    for ly in table:  # each layer is a graph operator of the report (or the program input it quantizes)
        assert ly.name in graph or ly.name in [t["name"] for t in report["inputs"]], ly
        assert ly.location == (graph.get(ly.name) or "")
    assert next(ly.name for ly in table if ly.family == "CONV2D") == "aten_relu_default"  # conv+bn+relu fused

    gen_off = render_model(plain.pte, tmp_path_factory.mktemp("gen-off"))
    gen_on = render_model(prof.pte, tmp_path_factory.mktemp("gen-on"), profile=prof.profile.to_dict())
    kc = tmp_path_factory.mktemp("kconfig")
    (kc / "espnn_sdkconfig.h").write_text("#define CONFIG_ESPNN_ET_PROFILE 1\n")
    off = _runner(tmp_path_factory.mktemp("build-off"), gen_off, None)
    on = _runner(tmp_path_factory.mktemp("build-on"), gen_on, kc)

    r_off = subprocess.run([str(off), "--repeat", "3", "--profile"], capture_output=True, text=True, check=False)
    r_on = subprocess.run([str(on), "--repeat", "3", "--profile"], capture_output=True, text=True, check=False)
    assert r_on.returncode == 0, r_on.stdout + r_on.stderr
    outputs = [ln for ln in r_on.stdout.splitlines() if ln.startswith("output ")]
    assert outputs and outputs == [ln for ln in r_off.stdout.splitlines() if ln.startswith("output ")]
    # the unprofiled firmware says why it has no profile
    assert r_off.returncode == 3
    assert "espnn-profile error: this firmware was built without the profiler" in r_off.stdout

    lines = [ln for ln in r_on.stdout.splitlines() if ln.startswith("espnn-profile")]
    kinds = [LINE.match(ln).group(1) for ln in lines]  # type: ignore[union-attr]
    assert kinds == ["begin", *["layer"] * n_ops, "delegate", "delegate", "cpu", "cpu", "cpu", "total"]
    parsed = parse_log(r_on.stdout)
    check_against(parsed, report)
    assert parsed.unit == "ns"
    assert all(x.ticks > 0 for x in parsed.layers)
    shares = [x.share for x in (*parsed.layers, *parsed.delegates, *parsed.cpu)]
    assert 99.0 <= sum(shares) <= 100.0  # each share is rounded down to 0.01 %
    ticks = sum(x.ticks for x in (*parsed.layers, *parsed.delegates, *parsed.cpu))
    assert ticks == parsed.total
    assert parsed.cpu[1].detail == "aten.flip.default"

    # the CLI merges the saved log into report.html
    out = tmp_path_factory.mktemp("report")
    (out / "report.json").write_text(json.dumps(report))
    log = out / "serial.log"
    log.write_text("".join(f"I (1) app: {ln}\n" for ln in r_on.stdout.splitlines()))
    cli = subprocess.run([sys.executable, "-m", "executorch_espnn", "profile", str(log), "--report", str(out / "report.html")],
                         capture_output=True, text=True, check=False, cwd=ROOT)
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.startswith(f"Profile: {parsed.total:,} ns per inference")
    page = (out / "report.html").read_text()
    slowest = max(parsed.layers, key=lambda x: x.ticks)
    assert 'id="profile-layers"' in page and f"<td>{slowest.name}</td><td class=\"num\">{slowest.ticks:,}</td>" in page
    conv = next(x for x in parsed.layers if x.family == "CONV2D")
    assert f'<td class="num">{conv.ticks:,}</td><td class="num">{conv.share:.2f}%</td></tr>' in page
