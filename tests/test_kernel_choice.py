"""RAM-first kernels (``lower(..., optimize="ram")``, ``custom_executorch_optimize = ram``,
executorch_espnn/kernel_choice.py): the decision against an independent simulation of the
arena, the bound and report that follow it, the options' errors, and a lowered model whose S3
arena becomes the esp32 one (whose kernels take no scratch)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from executorch_espnn.errors import LoweringError
from executorch_espnn.kernel_choice import ansi_ops, banded_ops, check_optimize, choose_ram_first
from executorch_espnn.payload import Opcode, decode
from executorch_espnn.payload_peak import band_rows, kernel_scratch, op_scratch, partition_peak
from tests.test_ram_bill import _s3_chain, _simulated_peak


def test_the_choice_takes_exactly_the_scratch_that_sets_the_peak() -> None:
    """After the choice no kept kernel's scratch reaches above the final peak, and every op
    moved to ANSI would: checked with the reference-counting simulation of test_ram_bill."""
    p = _s3_chain()
    before = [op.scratch_size for op in p.ops]
    assert any(before), "the chain has S3 scratch"
    speed_peak, _ = _simulated_peak(p, before)
    chosen = choose_ram_first(p)
    after = [op.scratch_size for op in p.ops]
    assert chosen and all(after[i] == 0 and before[i] > 0 for i in chosen)
    final, _ = _simulated_peak(p, after)
    assert final < speed_peak
    # the final peak is set by activations alone; putting back any moved op's scratch raises it
    assert final == _simulated_peak(p, [0] * len(p.ops))[0]
    for i in chosen:
        back = list(after)
        back[i] = before[i]
        assert _simulated_peak(p, back)[0] > final, i
    # kept kernels keep their scratch; ansi_ops names the moved ones with what they saved
    assert [i for i, s in enumerate(after) if s] == [i for i, s in enumerate(before) if s and i not in chosen]
    assert [(c.op, c.saved_bytes) for c in ansi_ops(p)] == sorted((i, before[i]) for i in chosen)
    # the bound's scratch follows the payload: none for the moved ops, the rule for the others
    assert [op_scratch(p, i) for i in range(len(p.ops))] == after
    assert [kernel_scratch(p, i) for i in chosen] == [before[i] for i in chosen]
    assert partition_peak(0, p).bytes == final


def test_speed_is_the_default_and_a_wrong_value_names_both_choices() -> None:
    assert check_optimize("speed") == "speed" and check_optimize("ram") == "ram"
    with pytest.raises(LoweringError) as e:
        check_optimize("small")
    assert str(e.value).startswith("optimize='small' is not a choice: use optimize=\"speed\" (the default")
    assert 'optimize="ram"' in str(e.value)


def test_lower_refuses_a_wrong_optimize_before_any_work() -> None:
    import torch

    import executorch_espnn as ee

    with pytest.raises(LoweringError, match=r"^optimize='fast' is not a choice"):
        ee.lower(torch.nn.Linear(4, 2), (torch.randn(1, 4),), optimize="fast")


MODEL_PY = "def model():\n    pass\n\ndef example_inputs():\n    pass\n"


def _parse(tmp_path: Path, model: str, **options: str) -> Any:
    from executorch_espnn.firmware.options import parse_env_options

    return parse_env_options({"custom_executorch_model": model, **options}, tmp_path, "esp32s3")


def test_platformio_optimize_option(tmp_path: Path) -> None:
    from executorch_espnn.firmware.job import ArtifactJob
    from executorch_espnn.firmware.options import OptionError

    (tmp_path / "model.py").write_text(MODEL_PY)
    (tmp_path / "model.pte").write_bytes(b"\0" * 16)
    default = _parse(tmp_path, "model.py")
    chosen = _parse(tmp_path, "model.py", custom_executorch_optimize="RAM")
    assert (default.optimize, chosen.optimize) == ("speed", "ram")
    # part of the lowering's cache key when set; the default keeps earlier builds' keys
    assert "optimize" not in default.cache_fields() and chosen.cache_fields()["optimize"] == "ram"
    assert ArtifactJob.from_options(chosen, tmp_path / "out").optimize == "ram"
    with pytest.raises(OptionError) as e:
        _parse(tmp_path, "model.py", custom_executorch_optimize="size")
    assert str(e.value).startswith("custom_executorch_optimize = size: unknown value; use "
                                   "`custom_executorch_optimize = speed`")
    assert "`custom_executorch_optimize = ram`" in str(e.value)
    with pytest.raises(OptionError, match=r"^custom_executorch_optimize = ram: a ready \.pte's kernels are fixed"):
        _parse(tmp_path, "model.pte", custom_executorch_optimize="ram")


@pytest.mark.slow
def test_ds_cnn_on_the_s3_needs_the_esp32_arena_with_ram_first_kernels(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DS-CNN for the ESP32-S3 with optimize="ram": its arena is what the esp32 lowering (whose
    kernels take no scratch) plans, the report names each moved layer, what it saved and what
    it costs (the package's measured figures, with an empty user cache; a user's own figure
    wins), and the program computes what the speed program does (host.run).  With the default
    (speed) its depthwise layers run in bands of one output row, and the report says so."""
    import numpy as np

    import executorch_espnn as ee
    from devkit.zoo import ZOO
    from executorch_espnn import host
    from executorch_espnn.kernel_cost import KernelCost, cost_key, record, shipped
    from executorch_espnn.pte import delegate_payloads
    from executorch_espnn.report import build_report

    monkeypatch.setenv("ESPNN_CACHE_DIR", str(tmp_path))

    z = ZOO["ds_cnn_kws"]
    cal = z.calibration_data(2)
    lowered = {key: ee.lower(z.model(), z.example_inputs(), calibration=cal, target=target, io="int8",
                             optimize=opt)
               for key, target, opt in (("esp32", "esp32", "speed"), ("s3", "esp32s3", "speed"),
                                        ("s3_ram", "esp32s3", "ram"))}
    arena = {k: lm.report.arena_bytes for k, lm in lowered.items()}
    assert arena["s3_ram"] == arena["esp32"] < arena["s3"]
    (p,) = (decode(d) for d in delegate_payloads(lowered["s3_ram"].pte))
    moved = ansi_ops(p)
    assert moved and {c.opcode for c in moved} <= {"CONV2D", "DEPTHWISE_CONV2D"}
    (fast,) = (decode(d) for d in delegate_payloads(lowered["s3"].pte))
    # saved: what the two plans differ by (the speed plan runs the depthwise ones in bands)
    assert all(fast.ops[c.op].scratch_size == c.saved_bytes > 0 for c in moved)
    bands = banded_ops(fast)
    assert [b.op for b in bands] == [i for i, op in enumerate(fast.ops) if op.opcode == Opcode.DEPTHWISE_CONV2D]
    assert {c.op for c in moved} >= {b.op for b in bands}
    # the speed plan's peak: the esp32 arena plus one row's band (3 padded rows of 7x64, the
    # 3x3x64 filter copy), where the whole map's 12,688 B scratch would have set it
    assert all((b.rows, fast.ops[b.op].scratch_size) == (1, 7 * 3 * 64 + 9 * 64) for b in bands)
    assert arena["s3"] == arena["esp32"] + 7 * 3 * 64 + 9 * 64 == partition_peak(0, fast).bytes
    for b in bands:
        assert (f"partition 0 op {b.op} DEPTHWISE_CONV2D: ESP-NN's fast kernel in bands of 1 output row, "
                f"1,920 B of scratch instead of 12,688") in str(lowered["s3"].report)
    assert lowered["s3"].report.to_dict()["partitions"][0]["banded_ops"][0]["rows"] == 1
    assert not banded_ops(p)  # optimize="ram" takes the ANSI kernel instead
    # the ops not moved keep the fast kernel's scratch
    kept = [i for i, op in enumerate(p.ops) if op.opcode in (Opcode.CONV2D, Opcode.DEPTHWISE_CONV2D)
            and i not in {c.op for c in moved}]
    assert all(p.ops[i].scratch_size == fast.ops[i].scratch_size for i in kept)
    text = str(lowered["s3_ram"].report)
    for c in moved:
        assert (f"partition 0 op {c.op} {c.opcode}: ESP-NN's ANSI kernel (optimize = ram), "
                f"{c.saved_bytes:,} B of scratch saved") in text
    assert lowered["s3_ram"].report.to_dict()["partitions"][0]["ansi_ops"][0]["saved_bytes"] == moved[0].saved_bytes
    assert "ANSI kernel" not in str(lowered["s3"].report)
    table = shipped()
    for a in lowered["s3_ram"].report.partitions[0].ansi_ops:
        entry = table[cost_key(p, a.op)]
        assert a.instructions == (entry["fast_instructions"], entry["ansi_instructions"])
        assert a.cost_source.startswith("emulated esp32s3") and "ESP-NN 1.2.3" in a.cost_source
    first = moved[0].op
    record(cost_key(p, first), KernelCost(1000, 9600, "my board"))
    mine = build_report(lowered["s3_ram"].pte).partitions[0].ansi_ops[0]
    assert (mine.instructions, mine.cost_source) == ((1000, 9600), "my board")
    for x in z.test_inputs(2):
        xq = lowered["s3"].inputs[0]
        q = np.clip(np.round(x[0].numpy() / xq.scale) + xq.zero_point, -128, 127).astype(np.int8)
        np.testing.assert_array_equal(host.run(lowered["s3_ram"].pte, [q])[0], host.run(lowered["s3"].pte, [q])[0])


def test_the_shipped_cost_figures_are_measurements_with_their_layer_and_source() -> None:
    """executorch_espnn/kernel_costs.json (written by benchmarks/ram_first_cost.py --ship): one
    entry per geometry key, each a pair of instruction counts where the ANSI kernel costs more,
    the layer it was measured on and how; an unreadable table reads as empty (the report then
    says "not measured"), never as an error."""
    import json
    import re

    from executorch_espnn import kernel_cost

    table = kernel_cost.shipped()
    assert table, "no shipped figures"
    for key, entry in table.items():
        assert re.fullmatch(r"[0-9a-f]{64}", key)
        cost = kernel_cost.lookup(key)
        assert cost is not None and 0 < cost.fast_instructions < cost.ansi_instructions
        assert re.search(r" \([\w.]+ op \d+\)$", str(entry["layer"])), entry  # zoo names have dots
        assert "emulated esp32s3" in cost.source and "ram_first_cost.py" in cost.source
    assert json.loads(kernel_cost.SHIPPED.read_text(encoding="utf-8")) == dict(sorted(table.items()))


def test_an_unreadable_cost_table_reads_as_empty(tmp_path: Path) -> None:
    from executorch_espnn import kernel_cost

    bad = tmp_path / "kernel_costs.json"
    for text in ("{not json", "[1, 2]"):
        bad.write_text(text, encoding="utf-8")
        assert kernel_cost.shipped(bad) == {}
    assert kernel_cost.shipped(tmp_path / "missing.json") == {}
    n = kernel_cost.ship({"ab" * 32: (kernel_cost.KernelCost(10, 20, "t"), "l (m op 1)")}, bad)
    assert n == 1 and kernel_cost.shipped(bad)["ab" * 32]["ansi_instructions"] == 20
    # read once per version of the file; a copy each time, and a rewrite is read again
    kernel_cost.shipped(bad).clear()
    assert kernel_cost.shipped(bad)["ab" * 32]["fast_instructions"] == 10
    kernel_cost.ship({"cd" * 32: (kernel_cost.KernelCost(1, 2, "t"), "l (m op 2)")}, bad)
    assert sorted(kernel_cost.shipped(bad)) == ["ab" * 32, "cd" * 32]
    with mock.patch.object(Path, "read_text", side_effect=AssertionError("read again")):
        assert len(kernel_cost.shipped(bad)) == 2


def test_the_report_names_each_moved_layer_its_kernels_and_the_scratch_both_plans_differ_by(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 3x3 depthwise layer over 16x16x64 on the S3: its s16 input copy (the fast kernel's
    scratch) sets the arena's peak, so optimize="ram" moves it.  The report names the layer as
    the model defines it, both kernels, the bytes the two plans' scratch differ by, and the
    instruction cost only when the cost cache holds a measurement for that op."""
    import torch

    import executorch_espnn as ee
    from executorch_espnn.kernel_cost import NOT_MEASURED, KernelCost, cost_key, record
    from executorch_espnn.pte import delegate_payloads
    from executorch_espnn.report import build_report

    m = torch.nn.Sequential(torch.nn.Conv2d(64, 64, 3, padding=1, groups=64), torch.nn.ReLU()).eval()
    x = (torch.zeros(1, 64, 16, 16),)
    cal = [(torch.rand(1, 64, 16, 16) * 2 - 1,) for _ in range(4)]
    monkeypatch.setenv("ESPNN_CACHE_DIR", str(tmp_path))  # an empty cost cache (no host run here)
    speed, ram = (ee.lower(m, x, cal, target="esp32s3", io="int8", optimize=o) for o in ("speed", "ram"))
    (fast,), (lean,) = ([decode(d) for d in delegate_payloads(lm.pte)] for lm in (speed, ram))
    (a,) = ram.report.partitions[0].ansi_ops
    assert (a.opcode, a.layer, a.shape) == ("DEPTHWISE_CONV2D", "depthwise 3x3/1", "16x16x64 -> 16x16x64")
    assert (a.kernel, a.instead_of) == ("ESP-NN ANSI C", "ESP-NN ESP32-S3 SIMD")
    assert a.saved_bytes == fast.ops[a.op].scratch_size - lean.ops[a.op].scratch_size > 0
    assert lean.ops[a.op].scratch_size == 0 and not speed.report.partitions[0].ansi_ops
    assert (a.instructions, a.cost_source) == (None, NOT_MEASURED)
    text, page = str(ram.report), ram.report.html()
    assert (f"partition 0 op {a.op} DEPTHWISE_CONV2D: ESP-NN's ANSI kernel (optimize = ram), "
            f"{a.saved_bytes:,} B of scratch saved; layer depthwise 3x3/1 16x16x64 -> 16x16x64, ESP-NN ANSI C "
            "instead of ESP-NN ESP32-S3 SIMD; instructions per invoke: not measured") in text
    assert 'id="ram-first-layers"' in page and "depthwise 3x3/1" in page
    assert "RAM-first kernels" not in speed.report.html()
    entry = ram.report.to_dict()["partitions"][0]["ansi_ops"][0]
    assert entry["fast_instructions"] is None and entry["layer"] == "depthwise 3x3/1"
    # a measurement of exactly this op (by content: target, opcode, params, operand dims)
    # reaches the report with its source; the speed payload's op has the same key
    assert cost_key(lean, a.op) == cost_key(fast, a.op)
    record(cost_key(lean, a.op), KernelCost(1000, 9600, "test figure"))
    (b,) = build_report(ram.pte).partitions[0].ansi_ops
    assert (b.instructions, b.cost_source) == ((1000, 9600), "test figure")
    assert "instructions per invoke: 1,000 -> 9,600 (9.6x; test figure)" in str(build_report(ram.pte))


def test_the_cost_benchmark_cuts_each_moved_layer_out_of_both_plans() -> None:
    """benchmarks/ram_first_cost.py's host half (the emulator run is gated on its variables):
    each DS-CNN layer optimize="ram" moves becomes two single-op payloads, the speed plan's op
    with its scratch (the S3 SIMD kernel) and the ram plan's without (ANSI), whose reference
    outputs agree, under the cache key the report looks the op up by."""
    from benchmarks.ram_first_cost import layer_pairs
    from executorch_espnn.kernel_cost import cost_key

    pairs = layer_pairs("ds_cnn_kws")
    assert pairs and len({p.key for p in pairs}) >= 1
    for pair in pairs:
        fast, ansi = decode(pair.fast.payload), decode(pair.ansi.payload)  # type: ignore[attr-defined]
        assert len(fast.ops) == len(ansi.ops) == 1 and fast.ops[0].opcode == ansi.ops[0].opcode
        assert fast.ops[0].scratch_size > 0 and ansi.ops[0].scratch_size == 0
        assert pair.fast.inputs == pair.ansi.inputs  # type: ignore[attr-defined]
        assert pair.fast.expected == pair.ansi.expected  # type: ignore[attr-defined]
        assert cost_key(ansi, 0) == cost_key(fast, 0) == pair.key


def test_the_cost_key_is_the_layers_geometry_not_its_quantization() -> None:
    """A figure serves every layer of the same geometry (operand dims, strides, padding), whatever
    its offsets and clamps; another stride is another key."""
    from devkit.payload_factory import all_cases
    from executorch_espnn.kernel_cost import cost_key

    p = next(q for q in (decode(c.payload) for c in all_cases(0))
             if any(op.opcode == Opcode.DEPTHWISE_CONV2D for op in q.ops))
    i = next(i for i, op in enumerate(p.ops) if op.opcode == Opcode.DEPTHWISE_CONV2D)
    key = cost_key(p, i)
    p.ops[i].params.update(in_offset=p.ops[i].params["in_offset"] + 3, act_min=-100)
    assert cost_key(p, i) == key
    p.ops[i].params["stride_h"] += 1
    assert cost_key(p, i) != key



def test_the_bands_benchmark_pairs_each_banded_layer_with_its_whole_map_twin() -> None:
    """benchmarks/s3_bands.py's host half (the emulator run is gated on its variables): each
    DS-CNN layer the speed lowering bands becomes two single-op payloads, as lowered (a band's
    scratch: the engine runs it in bands) and with the whole map's scratch (one kernel call),
    whose reference outputs agree."""
    from benchmarks.s3_bands import layer_pairs

    pairs = layer_pairs("ds_cnn_kws")
    assert len(pairs) == 4  # the four 25x5x64 depthwise layers
    for pair in pairs:
        banded, whole = decode(pair.banded.payload), decode(pair.whole.payload)  # type: ignore[attr-defined]
        assert len(banded.ops) == len(whole.ops) == 1
        assert band_rows(banded, 0) == pair.rows == 1 and band_rows(whole, 0) == 0
        assert (banded.ops[0].scratch_size, whole.ops[0].scratch_size) == (pair.band_scratch, pair.whole_scratch)
        assert pair.band_scratch < pair.whole_scratch == kernel_scratch(banded, 0)
        assert whole.arena_size >= whole.ops[0].scratch_offset + pair.whole_scratch
        assert pair.banded.inputs == pair.whole.inputs  # type: ignore[attr-defined]
        assert pair.banded.expected == pair.whole.expected  # type: ignore[attr-defined]
