"""builder/espnn_pio/runtime_build.py without SCons: the include root of a tree and the checks
`resolve` makes before a build compiles anything (each failure names the missing file or the
wrong version)."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.espnn_pio import runtime_build as rb
from devkit import source_helpers as sh
from executorch_espnn.errors import RuntimeSourcesError
from executorch_espnn.firmware import kernels as kernel_step

COMPONENT = sh.ROOT / "espnn_component"


def _kernels(tmp: Path, sources: tuple[str, ...] = ()) -> object:
    return kernel_step.Kernels(tmp, ("aten::abs.out",) if sources else (), len(sources), sources)


def test_a_tree_alone_in_its_folder_is_included_from_there(tmp_path: Path) -> None:
    """The download cache's layout (<repo>-<commit>/executorch plus a hidden marker)."""
    et = sh.executorch_tree(tmp_path / "cache" / "executorch")
    (tmp_path / "cache" / ".executorch-espnn-source.json").write_text("{}")
    fb = sh.flatbuffers_tree(tmp_path / "fb")
    rt = rb.resolve(COMPONENT, et, str(et.parent), fb / "include", tmp_path / "build", _kernels(tmp_path))
    assert rt.include_root == et.parent
    assert rt.include_dirs()[0] == et.parent
    assert not (tmp_path / "build" / rb.RUNTIME_SUBDIR / "include").exists()


def test_a_tree_next_to_other_folders_is_linked_from_the_build_folder(tmp_path: Path) -> None:
    et = sh.executorch_tree(tmp_path / "src" / "executorch")
    fb = sh.flatbuffers_tree(tmp_path / "src" / "flatbuffers")  # a sibling that must not leak
    rt = rb.resolve(COMPONENT, et, str(et.parent), fb / "include", tmp_path / "build", _kernels(tmp_path))
    stage = tmp_path / "build" / rb.RUNTIME_SUBDIR / "include"
    assert rt.include_root == stage
    assert (stage / "executorch").resolve() == et.resolve()
    assert sorted(p.name for p in stage.iterdir()) == ["executorch"]
    # a tree of another name (no include root given) is linked the same way
    other = sh.executorch_tree(tmp_path / "et-main")
    rt = rb.resolve(COMPONENT, other, "", fb / "include", tmp_path / "build2", _kernels(tmp_path))
    assert (rt.include_root / "executorch").resolve() == other.resolve()


def test_missing_sources_and_a_wrong_flatbuffers_are_named(tmp_path: Path) -> None:
    et = sh.executorch_tree(tmp_path / "executorch")
    fb = sh.flatbuffers_tree(tmp_path / "fb")
    (et / "kernels" / "portable" / "cpu" / "op_abs.cpp").unlink()
    with pytest.raises(RuntimeSourcesError, match=r"lacks kernels/portable/cpu/op_abs\.cpp"):
        rb.resolve(COMPONENT, et, "", fb / "include", tmp_path / "b",
                   _kernels(tmp_path, ("kernels/portable/cpu/op_abs.cpp",)))
    old = sh.flatbuffers_tree(tmp_path / "fb-old", "23.5.26")
    with pytest.raises(RuntimeSourcesError, match=r"are 23\.5\.26; .* need 24\.3\.25"):
        rb.resolve(COMPONENT, et, "", old / "include", tmp_path / "c", _kernels(tmp_path))


def test_every_kconfig_log_level_has_its_executorch_filter() -> None:
    """CONFIG_ESPNN_ET_LOG_LEVEL's values (the Kconfig) each map to ExecuTorch's compile-time
    filter; executorch_component.cmake maps the same four (tests/test_idf_executorch.py)."""
    import re

    kconfig = (COMPONENT / "Kconfig").read_text()
    levels = {int(v) for v in re.findall(r"default (\d) if ESPNN_ET_LOG_LEVEL_", kconfig)}
    assert levels == set(rb.LOG_DEFINES) == {0, 1, 2, 3}
    assert rb.LOG_DEFINES[0] == ("ET_LOG_ENABLED=0",)
