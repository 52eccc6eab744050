"""benchmarks/vs_tflm.py's inputs: the trees it is named and the ops it can register (the
figures themselves come from running it, docs/benchmarks.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import tflm_firmware as tf


def test_unset_trees_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(tf.TFLM_ENV, raising=False)
    monkeypatch.setenv(tf.ESP_NN_ENV, "/nowhere")
    assert tf.find_trees() == f"{tf.TFLM_ENV} not set"


def test_a_tree_that_is_not_esp_tflite_micro_is_refused_naming_the_fix(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(tf.TFLM_ENV, str(tmp_path))
    monkeypatch.setenv(tf.ESP_NN_ENV, str(tmp_path))
    with pytest.raises(tf.TflmTreeError, match="espressif/esp-tflite-micro checkout"):
        tf.find_trees()
    kernels = tmp_path / "tensorflow/lite/micro/kernels/esp_nn"
    kernels.mkdir(parents=True)
    (kernels / "conv.cc").write_text("")
    with pytest.raises(tf.TflmTreeError, match=f"{tf.ESP_NN_ENV}=.*espressif/esp-nn checkout"):
        tf.find_trees()


def test_an_op_without_a_resolver_method_is_named(tmp_path: Path) -> None:
    with pytest.raises(tf.TflmTreeError, match=r"\['GATHER'\].*RESOLVER"):
        tf.firmware(tf.Trees(tmp_path, tmp_path), tmp_path, ["CONV_2D", "GATHER"], True)
