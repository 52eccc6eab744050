"""report.html: the lowering report as one self-contained page (inline CSS, JavaScript and
SVG; nothing fetched, so it opens offline), rendered from templates/report/report.html.j2 out of
the report's JSON form, as report.txt is.

The page draws the graph with each operator coloured by placement (ESP-NN, or CPU with its
reason), the layers' MACs and fast-path status, each partition's arena over the op list (which
tensors are live at each op, where the peak is) and, with validation data, the accuracy section
and the layer-wise error.  The static parts (tables) are rendered here; the graph and the arena
charts are drawn by the page's script from the embedded JSON.
"""

from __future__ import annotations

import json
from typing import Any

from .. import rendering
from . import text

Report = dict[str, Any]  # LoweringReport.to_dict()


def _script_json(value: Any) -> str:
    """JSON safe inside a <script> element (no "</script>", no "<!--")."""
    return json.dumps(value, sort_keys=True).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _e(value: object) -> str:
    """HTML-escaped text (the environment does not autoescape: it renders C too)."""
    return (str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#39;"))


def report_html(r: Report, measured: dict[str, Any] | None = None) -> str:
    """The page; ``measured``: a profile read back from the target (``report.profile.Profile.to_dict()``,
    ``executorch-espnn profile``), which adds each layer's time and share to the layers table and
    the "Profile on the target" section."""
    fast = r["fast_path"]["layers"]
    max_macs = max((f["macs"] for f in fast), default=0) or 1
    acc = r.get("accuracy")
    return rendering.render(
        "report/report.html.j2", r=r, e=_e, data=_script_json(r), summary=text.summary(r).splitlines(),
        macs=text.macs, b=text.number, max_macs=max_macs, acc=acc, titles=text.MODEL_TITLES, db=text.db,
        percent=text.percent, lsb=text.lsb_line,
        accuracy_outputs=[text.accuracy_output_table(o) for o in acc["outputs"]] if acc else [],
        measured=measured,
        times={(x["partition"], x["op"]): x for x in measured["layers"]} if measured else {},
        max_ticks=max((x["ticks"] for x in measured["layers"]), default=0) or 1 if measured else 1,
    )
