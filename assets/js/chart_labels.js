// The Monitor's time axes (m3ui/ui/monitor/view.py): Vega picks ticks for round times (every 2 s on a young chart),
// not for the room its labels need, so on a phone the "21:30:14" labels (~41 px) overlapped. A label that would
// touch the one before it is left out, again whenever Vega redraws the axis.
(() => {
  const AXES = '.m3-monitor svg [aria-label^="X-axis"] .role-axis-label';
  const GAP = 8; // px between two labels shown
  const onLoad = (run) => (document.readyState === "complete" ? run() : window.addEventListener("load", run));

  function thin(axis) {
    let right = -Infinity;
    for (const label of axis.querySelectorAll("text")) {
      label.style.display = "";
      const box = label.getBoundingClientRect();
      if (box.width === 0) continue;
      if (box.left < right + GAP) label.style.display = "none";
      else right = box.right;
    }
  }

  onLoad(() => {
    let queued = false;
    const run = () => { queued = false; document.querySelectorAll(AXES).forEach(thin); };
    // Vega moves labels by their `transform` and replaces them on a redraw; our own `style` changes are not watched.
    new MutationObserver(() => { if (!queued) { queued = true; requestAnimationFrame(run); } })
      .observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true,
        attributeFilter: ["transform"] });
  });
})();
