"""The shared model zoo: deterministic, and every model lowers (CPU fallback where expected)."""

from __future__ import annotations

import pytest
import torch

from devkit.zoo import ZOO


@pytest.mark.parametrize("name", ["ds_cnn_kws", "cumsum_net", "tiny_vit"])
def test_deterministic(name: str) -> None:
    z = ZOO[name]
    a, b = z.model(), z.model()
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert ka == kb and torch.equal(va, vb), ka
    ex = z.example_inputs()
    assert all(torch.equal(x, y) for x, y in zip(ex, z.example_inputs(), strict=True))
    cal = z.calibration_data(3)
    assert len(cal) == 3 and all(c[0].shape == ex[0].shape for c in cal)
    assert not torch.equal(cal[0][0], ex[0]) and not torch.equal(cal[0][0], cal[1][0])
    assert all(torch.equal(c[0], d[0]) for c, d in zip(cal, z.calibration_data(3), strict=True))
    # building a model leaves the global RNG alone
    state = torch.get_rng_state()
    z.model()
    assert torch.equal(state, torch.get_rng_state())
    with torch.no_grad():
        assert torch.equal(a(*ex), b(*ex))


def test_shapes() -> None:
    assert ZOO["ds_cnn_kws"].input_shapes == ((1, 1, 49, 10),)
    assert ZOO["mobilenet_v1_0.25_96_gray"].input_shapes == ((1, 1, 96, 96),)
    assert ZOO["resnet8"].input_shapes == ((1, 3, 32, 32),)
    assert ZOO["dense_autoencoder"].input_shapes == ((1, 640),)
    with torch.no_grad():
        assert ZOO["ds_cnn_kws"].model()(*ZOO["ds_cnn_kws"].example_inputs()).shape == (1, 12)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n, z in ZOO.items() if not z.large])
def test_every_model_lowers(name: str) -> None:
    from devkit.lowered_zoo import lowered_zoo

    z = ZOO[name]
    lm = lowered_zoo(name)
    rep = lm.report
    assert rep.partitions, str(rep)
    assert bool(rep.cpu_ops) == z.cpu_fallback, str(rep)
    for part in rep.partitions:
        assert part.arena_lower_bound <= part.arena_bytes <= 1.01 * part.arena_lower_bound + 16
    print(f"\n{name}: {len(rep.delegated_ops)} delegated / {len(rep.cpu_ops)} CPU ops, "
          f"{len(rep.partitions)} partition(s), arena {rep.arena_bytes} "
          f"(peak {max(p.arena_lower_bound for p in rep.partitions)}), "
          f"CPU: {sorted({e.operator for e in rep.cpu_ops})}")
