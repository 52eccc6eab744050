"""Buffer-lifetime sequences for planner tests and benchmarks, built from op lists that look
like the networks we lower (chains of convolutions with residual adds, scratch per kernel)."""

from __future__ import annotations

from dataclasses import dataclass, field

from executorch_espnn.planner import ArenaPlan, PlanBuffer


@dataclass
class SeqBuilder:
    """Records ops in execution order and derives each tensor's lifetime from its uses."""

    sizes: dict[int, int] = field(default_factory=dict)
    first: dict[int, int] = field(default_factory=dict)
    last: dict[int, int] = field(default_factory=dict)
    inplace: dict[int, int] = field(default_factory=dict)
    scratch: list[tuple[int, int]] = field(default_factory=list)  # (op index, bytes)
    n_ops: int = 0
    _next: int = 0

    def op(self, inputs: list[int], out_bytes: int, scratch: int = 0, inplace_of: int | None = None) -> int:
        i = self.n_ops
        self.n_ops += 1
        for t in inputs:
            self.last[t] = i
        tid = self._next
        self._next += 1
        self.sizes[tid] = out_bytes
        self.first[tid] = i
        self.last[tid] = i
        if inplace_of is not None:
            self.inplace[tid] = inplace_of
        if scratch:
            self.scratch.append((i, scratch))
        return tid

    def buffers(self, keep: tuple[int, ...] = ()) -> list[PlanBuffer]:
        """Tensors (``keep`` stay live to the end, like a delegate output) and scratch."""
        end = self.n_ops - 1
        out = [
            PlanBuffer(t, n, self.first[t], end if t in keep else self.last[t], self.inplace.get(t))
            for t, n in self.sizes.items()
        ]
        out += [PlanBuffer(-1 - k, n, i, i) for k, (i, n) in enumerate(self.scratch)]
        return out


def conv_scratch(cin: int, k: int) -> int:
    # shaped like ESP-NN's S3 conv scratch: an im2col row buffer plus slack
    return 0 if k == 1 and cin % 8 == 0 else 2 * cin * k * k + 64


def mobilenet_v2_seq(width: float, size: int) -> list[PlanBuffer]:
    def ch(c: int) -> int:
        return max(8, int(c * width + 4) // 8 * 8)

    s = SeqBuilder()
    h = size // 2
    c = ch(32)
    x = s.op([], size * size * 3)  # quantize of the input
    x = s.op([x], h * h * c, scratch=conv_scratch(3, 3))
    cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
    for t, cout, n, stride in cfg:
        for i in range(n):
            st = stride if i == 0 else 1
            hid = c * t
            inp = x
            y = x
            if t != 1:
                y = s.op([y], h * h * hid, scratch=conv_scratch(c, 1))
            h2 = (h + st - 1) // st
            y = s.op([y], h2 * h2 * hid, scratch=hid * 9 + 64)  # depthwise
            co = ch(cout)
            y = s.op([y], h2 * h2 * co, scratch=conv_scratch(hid, 1))
            if st == 1 and c == co:
                y = s.op([inp, y], h2 * h2 * co, inplace_of=y)  # residual add
            x, c, h = y, co, h2
    last = 1280 if width <= 1.0 else ch(1280)
    x = s.op([x], h * h * last, scratch=conv_scratch(c, 1))
    x = s.op([x], last)  # mean
    x = s.op([x], last, inplace_of=x)  # reshape (flatten)
    x = s.op([x], 1000, scratch=0)  # fully connected
    return s.buffers()


def resnet8_seq() -> list[PlanBuffer]:
    s = SeqBuilder()
    x = s.op([], 32 * 32 * 3)
    x = s.op([x], 32 * 32 * 16, scratch=conv_scratch(3, 3))
    h, c = 32, 16
    for co, st in ((16, 1), (32, 2), (64, 2)):
        inp = x
        h2 = h // st
        y = s.op([x], h2 * h2 * co, scratch=conv_scratch(c, 3))
        y = s.op([y], h2 * h2 * co, scratch=conv_scratch(co, 3))
        sc = inp if st == 1 and c == co else s.op([inp], h2 * h2 * co, scratch=conv_scratch(c, 1))
        y = s.op([sc, y], h2 * h2 * co, inplace_of=y)
        y = s.op([y], h2 * h2 * co, inplace_of=y)  # relu LUT
        x, h, c = y, h2, co
    x = s.op([x], c)
    x = s.op([x], 10)
    return s.buffers()


def dscnn_seq() -> list[PlanBuffer]:
    s = SeqBuilder()
    x = s.op([], 49 * 10)
    x = s.op([x], 25 * 5 * 64, scratch=conv_scratch(1, 10))
    for _ in range(4):
        x = s.op([x], 25 * 5 * 64, scratch=64 * 9 + 64)
        x = s.op([x], 25 * 5 * 64, scratch=0)
    x = s.op([x], 64)
    x = s.op([x], 12)
    x = s.op([x], 12)  # softmax
    return s.buffers()


def check_plan(buffers: list[PlanBuffer], plan: ArenaPlan, align: int = 16) -> None:
    """Independent check: aligned, inside the arena, in-place honoured, no live overlap."""
    by_id = {b.id: b for b in buffers}
    assert set(plan.offsets) == set(by_id)
    for b in buffers:
        off = plan.offsets[b.id]
        assert off % align == 0, (b, off)
        assert off + b.nbytes <= plan.size, (b, off, plan.size)
        if b.inplace_of is not None:
            assert off == plan.offsets[b.inplace_of], b
    # pairs sharing bytes by an in-place chain are allowed to overlap only with each other
    group: dict[int, int] = {}

    def root(i: int) -> int:
        b = by_id[i]
        while b.inplace_of is not None:
            b = by_id[b.inplace_of]
        return b.id

    for b in buffers:
        group[b.id] = root(b.id)
    for i, a in enumerate(buffers):
        for b in buffers[i + 1 :]:
            if a.nbytes == 0 or b.nbytes == 0 or group[a.id] == group[b.id]:
                continue
            live_together = a.first <= b.last and b.first <= a.last
            if not live_together:
                continue
            oa, ob = plan.offsets[a.id], plan.offsets[b.id]
            assert oa + a.nbytes <= ob or ob + b.nbytes <= oa, (a, oa, b, ob)
