"""The whole RAM bill and its lower bound (executorch_espnn/report/ram.py): the bound against an
independent event-by-event simulation of hand-built payloads, the bill against the header's
figures, and the report's keys and text."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from devkit.payload_factory import (
    DType,
    Opcode,
    PayloadBuilder,
    QParams,
    all_cases,
    float_conv_chain_case,
    inplace_add_case,
    inplace_lut_reshape_fc_case,
    mobilenet_v2_graph,
)
from executorch_espnn.payload import Payload, Storage, Target, decode
from executorch_espnn.payload.format import NO_HOME
from executorch_espnn.payload_peak import op_scratch, partition_peak
from executorch_espnn.report import LoweringReport, TensorSpec, analyse_payload
from executorch_espnn.report.ram import HeldIO, held_io, io_view_bytes, with_measured
from executorch_espnn.scratch import ConvGeometry, conv_scratch, depthwise_scratch
from tests.report_helpers import small_net

ROOT = Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------------------------------------
# the independent computation: walk the ops as a runtime would, with reference counts


def _simulated_peak(p: Payload, scratch: list[int]) -> tuple[int, int]:
    """(peak bytes, op) of a reference-counting allocator that runs the op list: before op i
    its output is allocated (or, for ADD/MUL/LUT/RESHAPE, takes over an input of its byte size
    whose last reader is op i, as the format allows), the bytes held plus op i's scratch are
    recorded, then every input whose readers are all done is freed.  A delegate input with an
    io home (payload 2.4) is held from the start, an output with one from its writer to the end."""
    homes = {t for t, h in zip(p.inputs + p.outputs, p.io_homes or [], strict=False) if h != NO_HOME}
    readers: dict[int, int] = {}
    for op in p.ops:
        for t in set(op.inputs):
            if t is not None and (p.tensors[t].storage == Storage.ARENA or t in homes):
                readers[t] = readers.get(t, 0) + 1
    held: dict[int, int] = {t: p.tensors[t].nbytes for t in homes if p.tensors[t].storage == Storage.INPUT}
    slots = {Opcode.ADD: (0, 1), Opcode.MUL: (0, 1), Opcode.LUT: (0,), Opcode.RESHAPE: (0,)}
    peak, at = 0, -1
    for i, op in enumerate(p.ops):
        out = p.tensors[op.output]
        if out.storage == Storage.ARENA or op.output in homes:
            shared = None
            for s in slots.get(op.opcode, ()):
                t = op.inputs[s]
                if (t is not None and t in held and p.tensors[t].storage == Storage.ARENA and readers[t] == 1
                        and op.inputs.count(t) == 1
                        and p.tensors[t].nbytes == out.nbytes
                        and (op.opcode == Opcode.RESHAPE or p.tensors[t].dims == out.dims)):
                    shared = t
                    break
            # an in-place output takes over its input's bytes; any other gets its own
            held[op.output] = held.pop(shared) if shared is not None and out.storage == Storage.ARENA else out.nbytes
        now = sum(held.values()) + scratch[i]
        if now > peak:
            peak, at = now, i
        for t in set(op.inputs):
            if t is not None and t in readers:
                readers[t] -= 1
                if readers[t] == 0:
                    held.pop(t, None)
        if op.output in held and readers.get(op.output, 0) == 0 and op.output not in homes:
            held.pop(op.output)  # written, never read
    return peak, at


def _s3_chain() -> Payload:
    """float input -> QUANTIZE -> conv 3x3 (8->16, pad 1) -> depthwise 3x3 -> ADD in place
    -> conv 1x1 (16->32) -> RESHAPE in place -> FC -> int8 output, for the ESP32-S3, with each
    conv's scratch reserved from executorch_espnn.scratch and the arena planned by the planner."""
    b = PayloadBuilder(Target.ESP32S3)
    qp = QParams(0.05, 0)
    x = b.input(DType.FLOAT32, (1, 8, 6, 6))
    q = b.planned(DType.INT8, (1, 6, 6, 8), qp)
    b.op(Opcode.QUANTIZE, [x], q, perm0=0, perm1=2, perm2=3, perm3=1)

    def conv(x_t: int, cout: int, k: int, depthwise: bool = False) -> int:
        n, h, w, cin = b.tensors[x_t].dims
        pad = k // 2
        y = b.planned(DType.INT8, (n, h, w, cout), qp)
        filt = b.const(np.ones((1, k, k, cout) if depthwise else (cout, k, k, cin), np.int8))
        consts = [b.const(np.zeros(cout, np.int32)), b.const(np.full(cout, 1 << 30, np.int32)),
                  b.const(np.full(cout, -8, np.int32))]
        params = dict(stride_h=1, stride_w=1, pad_top=pad, pad_left=pad, pad_bottom=pad, pad_right=pad,
                      dilation_h=1, dilation_w=1, in_offset=0, out_offset=0, act_min=-128, act_max=127)
        geom = ConvGeometry(w, h, cin, k, k, w, h, cout, pad, pad, 1, 1)
        if depthwise:
            op = b.op(Opcode.DEPTHWISE_CONV2D, [x_t, filt, *consts], y, ch_mult=1, **params)
            b.scratch(op, depthwise_scratch(Target.ESP32S3, geom))
        else:
            op = b.op(Opcode.CONV2D, [x_t, filt, *consts], y, groups=1, **params)
            b.scratch(op, conv_scratch(Target.ESP32S3, geom))
        return y

    c1 = conv(q, 16, 3)
    d1 = conv(c1, 16, 3, depthwise=True)
    s = b.planned(DType.INT8, (1, 6, 6, 16), qp, inplace_of=d1)
    b.op(Opcode.ADD, [d1, c1], s, a_offset=0, b_offset=0, a_mult=1 << 30, a_shift=-1, b_mult=1 << 30,
         b_shift=-1, left_shift=20, out_mult=1 << 30, out_shift=-19, out_offset=0, act_min=-128, act_max=127)
    c2 = conv(s, 32, 1)
    flat = b.planned(DType.INT8, (1, 6 * 6 * 32), qp, inplace_of=c2)
    b.op(Opcode.RESHAPE, [c2], flat)
    out = b.output(DType.INT8, (1, 4), qp)
    b.op(Opcode.FULLY_CONNECTED, [flat, b.const(np.ones((4, 6 * 6 * 32), np.int8)), None,
                                  b.const(np.full(4, 1 << 30, np.int32)), b.const(np.full(4, -8, np.int32))],
         out, in_offset=0, out_offset=0, act_min=-128, act_max=127)
    return decode(b.build())


def _mobilenet_s3() -> Payload:
    g = mobilenet_v2_graph(0.35, 64, 10)
    g.b.target = Target.ESP32S3  # the S3's scratch sizes for every conv (the case reserves none)
    return decode(g.case("m").payload)


HAND = {
    "s3_chain": _s3_chain,
    "inplace_add": lambda: decode(inplace_add_case("a").payload),
    "inplace_lut_reshape_fc": lambda: decode(inplace_lut_reshape_fc_case("l").payload),
    "float_conv_chain": lambda: decode(float_conv_chain_case("f").payload),
    "mobilenet_v2_s3": _mobilenet_s3,
}


@pytest.mark.parametrize("name", list(HAND))
def test_bound_matches_a_reference_counting_simulation(name: str) -> None:
    p = HAND[name]()
    peak = partition_peak(0, p)
    scratch = [op_scratch(p, i) for i in range(len(p.ops))]
    assert (peak.bytes, peak.op) == _simulated_peak(p, scratch)
    assert peak.scratch_bytes == scratch[peak.op]
    assert peak.activation_bytes == sum(t.nbytes for t in peak.tensors)


def test_bound_by_hand() -> None:
    # inplace_add: RESHAPE input -> A (1x4x5x6 = 120 B), ADD over A, RESHAPE to the output: 120
    assert partition_peak(0, decode(inplace_add_case("a").payload)).bytes == 120
    # PAD -> 48 B, LUT and RESHAPE in place, FC to the output: 48 at every op
    assert partition_peak(0, decode(inplace_lut_reshape_fc_case("l").payload)).bytes == 48
    # QUANTIZE -> 9x11x3 = 297 B, conv -> 5x6x8 = 240 B; generic target: ANSI kernels, no scratch
    pk = partition_peak(0, decode(float_conv_chain_case("f").payload))
    assert (pk.bytes, pk.op, pk.opcode, pk.scratch_bytes) == (537, 1, "CONV2D", 0)
    assert [t.shape for t in pk.tensors] == [(1, 9, 11, 3), (1, 5, 6, 8)]
    # S3 chain: at the 3x3 conv 8->16 (padded): q 288 + c1 576 + its scratch
    p = _s3_chain()
    s3 = conv_scratch(Target.ESP32S3, ConvGeometry(6, 6, 8, 3, 3, 6, 6, 16, 1, 1, 1, 1))
    # ... at the depthwise: c1 576 + d1 576 + its scratch; at the ADD over d1: c1 + d1 (the sum
    # takes d1's bytes); at the 1x1 conv 16->32: s 576 + c2 1152 + its scratch; RESHAPE over c2
    # and the FC: 1152
    sd = depthwise_scratch(Target.ESP32S3, ConvGeometry(6, 6, 16, 3, 3, 6, 6, 16, 1, 1, 1, 1))
    s1 = conv_scratch(Target.ESP32S3, ConvGeometry(6, 6, 16, 1, 1, 6, 6, 32, 0, 0, 1, 1))
    pk = partition_peak(0, p)
    assert pk.bytes == max(288 + 576 + s3, 1152 + sd, 1152, 576 + 1152 + s1, 1152)
    assert "partition 0 op" in pk.setter() and pk.opcode in pk.setter()


def test_bound_never_exceeds_the_arena_over_the_golden_suite() -> None:
    for case in all_cases():
        p = decode(case.payload)
        pk = partition_peak(0, p)
        assert pk.bytes <= p.arena_size, (case.name, pk.setter(), p.arena_size)
    p = _s3_chain()
    assert partition_peak(0, p).bytes <= p.arena_size


def test_io_views_mirror_espnn_model() -> None:
    # EspnnModel::view: a float tensor's int8 view is numel bytes, an int8 one's float view 4 x numel,
    # and nothing without a quantization to convert with
    assert io_view_bytes("float32", 1000, 0.1) == 1000
    assert io_view_bytes("int8", 1000, 0.1) == 4000
    assert io_view_bytes("float32", 1000, None) == 0
    assert io_view_bytes("int8", 1000, 0.0) == 0


def _report_with_bound() -> LoweringReport:
    from tests.test_report import _hand_made

    rep = _hand_made()
    data, _ = small_net().build()
    _, _, p = analyse_payload(0, data)
    return replace(rep, peaks=[partition_peak(0, p)], state_bytes=500,
                   held_io=HeldIO(3 * 10 * 10 * 4 + 10 * 4, "delegate 0's inputs and outputs"),
                   inputs=[TensorSpec("x", (1, 3, 10, 10), "float32", 0.05, -3, "delegate")],
                   outputs=[TensorSpec("output0", (1, 10), "float32")])


def test_held_io_of_a_program() -> None:
    from executorch_espnn.pte import read_program
    from tests.test_report import _program

    pte, _ = _program()  # Linear(8, 4) then abs on the CPU: input 2x8, output 2x4, float32
    assert held_io(read_program(pte)) == HeldIO(2 * 8 * 4, "the program's inputs")


def test_report_json_has_the_bill_and_the_bound() -> None:
    d = json.loads(json.dumps(_report_with_bound().to_dict()))
    ram = d["ram"]
    assert d["schema"] == 5
    assert set(ram) >= {"arena_bytes", "planned_bytes", "state_bytes", "method_allocator_bytes",
                        "temp_allocator_bytes", "total_bytes", "io_views", "io_view_bytes", "bound", "ratio",
                        "arena_ratio", "measured"}
    assert ram["measured"] is False and ram["method_allocator_bytes"] is None and ram["total_bytes"] is None
    b = ram["bound"]
    io = 3 * 10 * 10 * 4 + 10 * 4  # float32 program input and output
    assert b["io_bytes"] == io and b["io_held"] == "delegate 0's inputs and outputs"
    assert b["bytes"] == b["activation_bytes"] + b["scratch_bytes"] + io
    assert ram["io_view_bytes"] == 300  # the quantized float input's int8 view; the output has no scale
    assert b["partitions"][0]["tensors"] and b["setter"].startswith("partition 0 op ")
    measured = with_measured(ram, {"arena_bytes": d["arena_bytes"], "state_bytes": 700, "planned_bytes": 1234,
                                   "method_allocator_bytes": 400, "temp_allocator_bytes": 16})
    assert measured["total_bytes"] == d["arena_bytes"] + 700 + 1234 + 400 + 16
    assert measured["ratio"] == pytest.approx(measured["total_bytes"] / b["bytes"])


def test_report_text_shows_the_bill() -> None:
    text = str(_report_with_bound())
    for needle in ("RAM bill and its lower bound", "whole RAM", "measured by the build", "lower bound",
                   "I/O views", "arena / (activations + scratch)", "peak set by partition 0 op"):
        assert needle in text, needle


def test_report_html_shows_the_bill() -> None:
    rep = _report_with_bound()
    page = rep.html()
    b = rep.to_dict()["ram"]["bound"]
    assert '<p id="ram-bill">' in page and "measured by the build" in page
    assert f"Lower bound {b['bytes']:,} bytes" in page


def test_build_summary_prints_the_bill() -> None:
    from executorch_espnn.firmware.summary import ram_lines

    ram = _report_with_bound().to_dict()["ram"]
    assert ram_lines(ram) == []  # not measured: the build prints nothing it does not know
    sizes = {"arena_bytes": ram["arena_bytes"], "state_bytes": 700, "planned_bytes": 1234,
             "method_allocator_bytes": 400, "temp_allocator_bytes": 16}
    lines = ram_lines(with_measured(ram, sizes))
    assert lines[0].startswith("  RAM bill: ") and "lower bound" in lines[0]
    assert "peak set by partition 0 op" in lines[1]


@pytest.mark.slow
def test_bill_equals_the_header_and_scratch_matches_the_lowering() -> None:
    from devkit.lowered_zoo import lowered_zoo
    from devkit.model_files import model_info_from
    from executorch_espnn import host
    from executorch_espnn.firmware.summary import ram_needed
    from executorch_espnn.pte import delegate_payloads

    lm = lowered_zoo("ds_cnn_kws")
    sizes = host.measure(lm.pte).header_sizes()
    ram = with_measured(lm.report.to_dict()["ram"], sizes)
    assert ram["total_bytes"] == sum(sizes.values()) == ram_needed(model_info_from({"sizes": sizes}))
    assert ram["bound"]["bytes"] <= ram["total_bytes"] and ram["arena_ratio"] >= 1.0
    # one delegate reads the float 1x1x49x10 input and writes the float 1x12 output, both in its
    # arena (io_arena): ExecuTorch plans nothing, the bound's I/O is in its activation part
    assert ram["planned_bytes"] == 0 and ram["bound"]["io_bytes"] == 0
    for data in delegate_payloads(lm.pte):
        p = decode(data)
        assert p.io_homes is not None and NO_HOME not in p.io_homes
        assert partition_peak(0, p).bytes == _simulated_peak(p, [op.scratch_size for op in p.ops])[0]
        # the bound's scratch, from the payload's operands, is what the lowering reserved from
        # the model's shapes
        assert [op_scratch(p, i) for i in range(len(p.ops))] == [op.scratch_size for op in p.ops]
        assert partition_peak(0, p).bytes <= p.arena_size


def test_tflm_compare_skips_without_tensorflow(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import tflm_compare

    # the project's venv has neither TensorFlow nor tflite-micro: the script says so and exits 0
    assert "cannot import TensorFlow and tflite-micro" in tflm_compare.tflm_available(sys.executable)
    assert tflm_compare.main(["--tflm-python", "/nonexistent/python"]) == 0
    out = capsys.readouterr().out
    assert "skipped: /nonexistent/python does not exist" in out and "see the top of benchmarks/tflm_compare.py" in out


@pytest.mark.slow
def test_partitions_share_one_arena_in_the_bill_the_bound_and_the_header() -> None:
    """island_net: two delegates around a CPU operator.  They use ONE arena, each from its start
    (espnn_component/adapter/espnn_arena_lease.h), so the report's arena, the header's measured
    arena and the bound's arena part are the largest partition's, never the sum."""
    from devkit.lowered_zoo import lowered_zoo
    from executorch_espnn import host
    from executorch_espnn.pte import delegate_payloads

    lm = lowered_zoo("island_net")
    payloads = [decode(d) for d in delegate_payloads(lm.pte)]
    arenas = [p.arena_size for p in payloads]
    assert len(arenas) == 2 and min(arenas) > 0  # two arenas: max and sum differ
    assert lm.report.arena_bytes == max(arenas) < sum(arenas)
    assert host.measure(lm.pte).delegate_arena_bytes == max(arenas)
    # the bound's arena part against the independent simulation of each payload
    peaks = [_simulated_peak(p, [op.scratch_size for op in p.ops])[0] for p in payloads]
    b = lm.report.to_dict()["ram"]["bound"]
    assert b["activation_bytes"] + b["scratch_bytes"] == max(peaks)
    assert b["bytes"] == max(peaks) + b["io_bytes"]
    assert [q["bytes"] for q in b["partitions"]] == peaks
