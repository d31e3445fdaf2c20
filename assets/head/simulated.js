// The simulated engine's notes in the header (m3ui/ui/header_view.py): the SIMULATED badge unfolds what it means
// (a tap, where a phone has no hover), and the first-visit banner stays closed once closed, in this browser. The
// header is redrawn by Gradio, so the state lives in classes on <html>, set here before the first paint.
(() => {
  const KEY = "m3ui-sim-banner-closed";
  const root = document.documentElement;
  try { if (localStorage.getItem(KEY) === "1") root.classList.add("m3-sim-banner-closed"); } catch (e) { /* none */ }

  document.addEventListener("click", (event) => {
    if (!event.target.closest) return;
    const badge = event.target.closest(".m3-header .m3-badge-sim");
    if (badge) {
      const open = root.classList.toggle("m3-sim-about-open");
      badge.setAttribute("aria-expanded", String(open));
    } else if (event.target.closest(".m3-sim-banner-close")) {
      root.classList.add("m3-sim-banner-closed");
      try { localStorage.setItem(KEY, "1"); } catch (e) { /* private mode: closed for this page only */ }
    }
  });
})();
