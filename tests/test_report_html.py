"""report.html in a real browser: Debian's Chromium, headless, loads the file the CLI writes and
dumps the DOM after the page's script ran; the tests check what the page shows against the
report's JSON form and that no script error occurred (the page writes window.onerror's message
into <html data-script-error>, and marks <html data-rendered> when its drawing is done)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from executorch_espnn.report import LoweringReport, OpEntry, analyse_payload, html
from tests.report_helpers import small_net

SVG_NS = "http://www.w3.org/2000/svg"


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("chromium is not installed (Debian package chromium; .ci/run installs it)")
    return exe


def dump_dom(page: Path, profile: Path) -> str:
    """The DOM of ``page`` after load, as headless Chromium serialises it (network off)."""
    proc = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={profile}", "--host-resolver-rules=MAP * ~NOTFOUND",
         "--virtual-time-budget=10000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=180, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "<html" in proc.stdout, proc.stderr[-2000:]
    return proc.stdout


def _html_attrs(dom: str) -> dict[str, str]:
    tag = re.search(r"<html([^>]*)>", dom)
    assert tag is not None
    return dict(re.findall(r'([\w-]+)="([^"]*)"', tag.group(1)))


class Net(nn.Module):
    """Two ESP-NN partitions around a CPU operator (flip), a residual add, a folded batch norm."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(1, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.pw = nn.Conv2d(16, 16, 1)
        self.fc1 = nn.Linear(256, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = torch.relu(self.bn(self.c1(x)))
        b = torch.relu(self.pw(self.dw(a))) + a
        h = torch.relu(self.fc1(nn.functional.max_pool2d(b, 2).flatten(1)))
        return self.fc2(torch.flip(h, [1]))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`python -m executorch_espnn build` of Net with validation data (labels included)."""
    from executorch_espnn import cli

    d = tmp_path_factory.mktemp("html")
    torch.manual_seed(0)
    m = Net().eval()
    ex = (torch.randn(1, 1, 8, 8),)
    torch.export.save(torch.export.export(m, ex), d / "net.pt2")
    g = np.random.default_rng(0)
    np.savez(d / "cal.npz", input0=g.normal(size=(16, 1, 1, 8, 8)).astype(np.float32))
    np.savez(d / "val.npz", input0=g.normal(size=(12, 1, 1, 8, 8)).astype(np.float32),
             labels=g.integers(0, 10, 12))
    out = d / "out"
    assert cli.main(["build", str(d / "net.pt2"), "--out", str(out), "--calibration", str(d / "cal.npz"),
                     "--validation", str(d / "val.npz"), "--quiet"]) == 0
    return out


def test_the_page_needs_no_network_and_escapes_what_it_shows() -> None:
    r: dict[str, Any] = json.loads(json.dumps(_sample_report()))
    r["cpu_ops"][0]["location"] = "<img src=x onerror=alert(1)> & co"
    page = html.report_html(r)
    urls = set(re.findall(r"(?:https?:)?//[\w.-]+[^\s\"'<>)]*", page))
    assert urls <= {SVG_NS, "//www.w3.org/2000/svg"}, urls  # the SVG namespace name, never fetched
    assert "<link" not in page and " src=" not in page.replace("src=x", "")
    assert "&lt;img src=x onerror=alert(1)&gt; &amp; co" in page and "<img" not in page


def _sample_report() -> dict[str, Any]:
    data, _ = small_net().build()
    part, layers, _ = analyse_payload(0, data)
    rep = LoweringReport("esp32s3", [OpEntry("aten.convolution.default", None, "", 0, "conv")],
                         [OpEntry("aten.cumsum.default", "net.py:1 in forward", "no kernel")], [part],
                         part.arena_bytes, 0, part.weights_bytes, None, 100, [], [], layers, [])
    return rep.to_dict()


@pytest.mark.slow  # a whole lowering with validation data, then Chromium (~15 s)
def test_chromium_renders_the_report_of_a_build(built: Path, tmp_path: Path) -> None:
    r = json.loads((built / "report.json").read_text())
    dom = dump_dom(built / "report.html", tmp_path / "profile")
    attrs = _html_attrs(dom)
    assert "data-script-error" not in attrs, attrs["data-script-error"]

    # the script drew every operator, every program input, every partition's arena and tensor
    n_inputs = len({i for g in r["graph"] for i in g["inputs"] if i.startswith("input:")})
    n_tensors = sum(len(p["arena"]["tensors"]) for p in r["partitions"])
    assert attrs["data-rendered"] == f"graph:{len(r['graph']) + n_inputs} arenas:{len(r['partitions'])} " \
                                     f"tensors:{n_tensors}"
    assert len(r["partitions"]) == 2 and r["n_cpu_ops"] == 1
    assert dom.count('class="op espnn"') == r["n_delegated_ops"]
    assert dom.count('class="op cpu"') == 1
    assert dom.count('class="edge"') == sum(len(g["inputs"]) for g in r["graph"])
    cpu = r["cpu_ops"][0]
    assert cpu["operator"] == "aten.flip.default"
    title = re.search(r'<g class="op cpu"[^>]*><title>([^<]*)</title>', dom)
    assert title is not None and f"CPU: {cpu['reason']}" in title.group(1)
    assert dom.count('class="tensor"') == n_tensors

    # the peak of each arena, where the report's figures put it
    for p in r["partitions"]:
        live = p["arena"]["live_bytes"]
        peak = live.index(max(live))
        assert max(live) == p["arena_lower_bound"]
        assert f'id="peak-{p["index"]}">{max(live):,} bytes live at op {peak} ({p["ops"][peak]})' in dom

    # the layers' MACs and the accuracy section with its layer-wise error table
    for f in r["fast_path"]["layers"]:
        assert f"<td>{f['layer']}</td><td>{f['shape']}</td>".replace("->", "-&gt;") in dom
    acc = r["accuracy"]
    assert acc["labelled"] and len(acc["layers"]) >= 5
    table = dom.split('id="layer-error"')[1].split("</table>")[0]
    assert table.count("<tr>") == len(acc["layers"]) + 1
    assert f"<td>{acc['layers'][0]['node']}</td>" in table.split("<tr>")[2]  # worst first
    assert "top-1 accuracy: float <b>" in dom


@pytest.mark.slow  # Chromium (~3 s)
def test_a_script_error_is_visible_in_the_dom(built: Path, tmp_path: Path) -> None:
    """The negative control: the page with broken data reports the error instead of hiding it."""
    page = (built / "report.html").read_text()
    start = page.index('<script type="application/json" id="report-data">')
    end = page.index("</script>", start)
    broken = page[:start] + '<script type="application/json" id="report-data">{"graph": 1}' + page[end:]
    (tmp_path / "broken.html").write_text(broken)
    attrs = _html_attrs(dump_dom(tmp_path / "broken.html", tmp_path / "profile"))
    assert "data-script-error" in attrs and "data-rendered" not in attrs


@pytest.mark.slow  # Chromium (~3 s)
def test_the_page_of_a_ready_pte_draws_its_arenas_and_says_there_is_no_graph(built: Path, tmp_path: Path) -> None:
    from executorch_espnn import cli

    assert cli.main(["build", str(built / "model.pte"), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    r = json.loads((tmp_path / "o" / "report.json").read_text())
    assert r["graph"] == [] and r["accuracy"] is None
    dom = dump_dom(tmp_path / "o" / "report.html", tmp_path / "profile")
    attrs = _html_attrs(dom)
    assert "data-script-error" not in attrs
    n_tensors = sum(len(p["arena"]["tensors"]) for p in r["partitions"])
    assert attrs["data-rendered"] == f"graph:0 arenas:{len(r['partitions'])} tensors:{n_tensors}"
    assert 'id="graph-none">a ready .pte carries no graph' in dom and 'id="accuracy"' not in dom
