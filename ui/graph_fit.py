"""A graph drawn whole in its column (issue 28): scaled to fit by default, or at its actual
size, with the scale said under it.

Graphviz lays the drawing out in the browser (``st.graphviz_chart``), so only the browser
knows how wide it is: a small script beside the chart reads the drawing's size and its
column's, scales the drawing, and writes the caption. A scale that would make the labels
smaller than MIN_LABEL_PX is not used: the drawing then keeps that size and scrolls
sideways, and the caption says so. ``design_graph`` draws a design's graph so; the
pages that show one call it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import streamlit as st

from graph.kernel.system import System
from ui import widgets

# Streamlit caps a graph's width at its column (max-width: 100%) with no word of it; the
# graph is scaled here instead (to fit, or at actual size, said in a caption),
# and a drawing wider than its box at that scale scrolls.
# Streamlit also sets every label's font size in CSS (smaller than the DOT's): the
# labels get the size the layout was made for (LABEL_PT, in the drawing's points).
GRAPH_NATURAL_SIZE = """<style>
[data-testid="stGraphVizChart"] {{ overflow-x: auto; width: 100% !important; display: block; }}
[data-testid="stGraphVizChart"] svg {{ max-width: none !important; margin: 0 auto;
  display: block; }}
[data-testid="stGraphVizChart"] svg text {{ font-size: {pt}px !important; }}
</style>"""
SIZES = ("Fit", "Actual size")
# The smallest label a class can still read on a projector at 1280 px: the drawing is
# never scaled below it (13 pt labels, 17.3 px at actual size, read at 10 px at 58 %).
MIN_LABEL_PX = 10.0

_JS = """
export default function ({ parentElement, data }) {
  const note = parentElement.querySelector('.graph-fit-note');
  const box = parentElement.closest('.st-key-' + data.box);
  if (!box || !note) return;
  // A change of size mounts a new fitter while the old one is still on the page until
  // the redraw ends: the newest owns the drawing, an older one hides and stops scaling
  // (two captions were seen, and two fitters setting the drawing's size in turn).
  const me = String(Date.now()) + Math.random();
  box.dataset.graphFitter = me;
  box.querySelectorAll('.graph-fit-note').forEach(n => { if (n !== note) n.style.display = 'none'; });
  const floor = data.min_px / data.label_px;
  // Streamlit's chart (d3-graphviz) works out, at every redraw, points every pixel along
  // each edge for an animation between drawings that it never plays (it draws with no
  // transition): on a live Run page, whose graph is drawn again as each node starts, that
  // was 40% of the browser's script time (a Chromium profile, issue 33). Its renderer
  // keeps its options on the chart's element; once it exists, the tweens are switched
  // off. The drawing is the same (they shape transitions only).
  const calm = chart => {
    const renderer = chart && chart.__graphviz__;
    if (renderer && renderer._options && renderer._options.tweenPaths) {
      renderer.tweenShapes(false);
      renderer.tweenPaths(false);
    }
  };
  const fit = () => {
    calm(box.querySelector('[data-testid="stGraphVizChart"]'));
    if (box.dataset.graphFitter !== me) {
      note.style.display = 'none';
      return;
    }
    const chart = box.querySelector('[data-testid="stGraphVizChart"]');
    const svg = chart && chart.querySelector('svg');
    if (!svg || !svg.getAttribute('width')) return;
    const px = v => parseFloat(v) * (String(v).endsWith('pt') ? 4 / 3 : 1);
    const width = px(svg.getAttribute('width')), height = px(svg.getAttribute('height'));
    const room = box.clientWidth;  // the chart's own box is only as wide as its drawing
    if (!width || !room) return;
    let scale = data.mode === 'fit' ? Math.min(1, room / width) : 1;
    const floored = scale < floor;
    if (floored) scale = floor;
    const w = (width * scale).toFixed(1) + 'px', h = (height * scale).toFixed(1) + 'px';
    if (svg.style.width !== w) svg.style.setProperty('width', w, 'important');
    if (svg.style.height !== h) svg.style.setProperty('height', h, 'important');
    svg.style.setProperty('max-width', 'none', 'important');
    const pct = Math.round(scale * 100);
    const wider = width * scale > room + 1;
    let text;
    if (data.mode !== 'fit') {
      text = wider ? 'Drawn at actual size: scroll sideways to see all of it.'
                   : 'Drawn at actual size.';
    } else if (floored) {
      text = `Drawn at ${pct} %, the smallest readable size: scroll sideways to see all of it.`;
    } else if (scale < 1) {
      text = `Drawn at ${pct} % to fit its column (Graph size: Actual size for larger labels).`;
    } else {
      text = 'Drawn at actual size: it fits its column.';
    }
    if (note.textContent !== text) note.textContent = text;
    note.dataset.scale = scale.toFixed(3);
  };
  const resized = new ResizeObserver(fit);
  resized.observe(box);
  // the chart is drawn again as the run moves on: fit each new drawing
  const redrawn = new MutationObserver(fit);
  redrawn.observe(box, { childList: true, subtree: true, attributes: true,
                         attributeFilter: ['width', 'height', 'viewBox'] });
  fit();
  return () => { resized.disconnect(); redrawn.disconnect(); };
}
"""
_CSS = """
.graph-fit-note { font-size: 0.875rem; color: rgba(49, 51, 63, 0.75); margin: 0; }
"""

_fitter = st.components.v2.component(
    "stepwise_graph_fit",
    html='<p class="graph-fit-note" data-testid="graph-fit-note"></p>',
    css=_CSS,
    js=_JS,
    isolate_styles=False,
)


SIZE_HELP = (
    "Fit: the whole graph in its column, scaled down if need be (never below "
    f"{MIN_LABEL_PX:g} px labels). Actual size: full-size labels; a wide graph then "
    "scrolls sideways. The fullscreen button shows it larger still."
)


def size_choice(key: str, place=None) -> str:
    """The "Graph size" control; kept for the session, on every page that draws a graph.
    ``place``: a heading's row to draw it in, its label folded (the heading's help then
    says ``SIZE_HELP``); the page's flow when None."""
    choice = f"{key}:graph-size"
    widgets.restore(choice, list(SIZES))
    picked = (place or st).radio(
        "Graph size",
        SIZES,
        key=choice,
        horizontal=True,
        on_change=widgets.keep,
        args=(choice,),
        help=SIZE_HELP,
        label_visibility="collapsed" if place is not None else "visible",
    )
    return picked or SIZES[0]


def fit(box: str, size: str, label_px: float) -> None:
    """Scale the graph drawn in the container keyed ``box`` as ``size`` asks, and say so."""
    mode = "fit" if size == SIZES[0] else "actual"
    _fitter(
        key=f"{box}:fit:{mode}",  # mounted anew when the size changes: its script runs again
        data={
            "box": box,
            "mode": mode,
            "min_px": MIN_LABEL_PX,
            "label_px": label_px,
        },
        height="content",
    )


def design_graph(
    compiled,
    system: System,
    *,
    key: str,
    active: str | None = None,
    taken=(),
    active_note: str = "",
    controls=None,
) -> None:
    """The graph, whole in its column by default (scaled as above); ``key`` names this
    page's "Graph size" control, drawn in ``controls`` (a container) when given."""
    from graph.kernel.render import LABEL_PT

    dot = _dot(compiled, system, active, tuple(taken), active_note)
    size = size_choice(key, controls)
    st.html(GRAPH_NATURAL_SIZE.format(pt=LABEL_PT))
    with st.container(key=f"{key}-drawing"):
        st.graphviz_chart(dot, width="content")
        fit(f"{key}-drawing", size, float(LABEL_PT) * 4 / 3)


DOTS_KEPT = 32  # drawings kept: a few runs' graphs at a few moments each
_dots: OrderedDict[tuple, tuple[object, object, str]] = OrderedDict()
_dots_lock = threading.Lock()


def _dot(compiled, system: System, active: str | None, taken: tuple, active_note: str) -> str:
    """``to_dot`` of a graph, kept while the same graph is drawn at the same moment of a
    run: a live Run page redraws it twice a second and the node and edges marked change
    only when a node starts. Kept by the graph and system objects themselves (the app
    keeps one compiled graph per design), so an id is never taken for another's."""
    from graph.kernel.render import to_dot

    key = (id(compiled), id(system), active, taken, active_note)
    with _dots_lock:
        kept = _dots.get(key)
        if kept is not None and kept[0] is compiled and kept[1] is system:
            _dots.move_to_end(key)
            return kept[2]
    dot = to_dot(compiled, system, active=active, taken=taken, active_note=active_note)
    with _dots_lock:
        _dots[key] = (compiled, system, dot)
        while len(_dots) > DOTS_KEPT:
            _dots.popitem(last=False)
    return dot
