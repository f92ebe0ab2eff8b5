// The console's live update: every 5 s the figures marked data-live are refreshed in place
// from /live.json, and a new held hit or alarm shows a notice to reload the page.
"use strict";
(function () {
  let first = null;
  async function refresh() {
    let live;
    try {
      const r = await fetch("/live.json", {credentials: "same-origin", cache: "no-store"});
      if (!r.ok) return;
      live = await r.json();
    } catch (e) {
      return;
    }
    for (const el of document.querySelectorAll("[data-live]")) {
      const v = live.values[el.dataset.live];
      if (v !== undefined) el.textContent = v;
    }
    if (first === null) first = live;
    else if (live.pending !== first.pending || live.alarm !== first.alarm) {
      document.getElementById("notice").hidden = false;
    }
  }
  if (document.querySelector("nav")) {
    refresh();
    setInterval(refresh, 5000);
  }
})();
