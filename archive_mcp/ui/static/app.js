// archive-mcp ui: search as you type, tool calls loaded when opened, charts, the live banner.
// No inline script anywhere: this file is the page's only behaviour (the CSP allows 'self' only).
"use strict";

function debounce(fn, ms) {
  let t = null;
  return (...args) => { clearTimeout(t); t = setTimeout(() => fn(...args), ms); };
}

// --- search as you type: the server renders the results; we swap them in ---
function setupSearch() {
  const form = document.getElementById("search-form");
  const results = document.getElementById("results");
  if (!form || !results) return;
  let seq = 0;
  const run = debounce(async () => {
    const params = new URLSearchParams(new FormData(form));
    const url = "/search?" + params.toString();
    const mine = ++seq;
    params.set("fragment", "1");
    const resp = await fetch("/search?" + params.toString(), { credentials: "same-origin" });
    if (mine !== seq) return; // a newer query answered or is on its way
    results.innerHTML = await resp.text(); // server-rendered, escaped HTML
    history.replaceState(null, "", url);
    results.dataset.query = params.get("q") || "";
  }, 150);
  form.addEventListener("input", run);
  form.addEventListener("submit", (e) => { e.preventDefault(); run(); });
}

// --- a tool call's arguments, result and diff, fetched the first time it is opened ---
function setupTools() {
  document.querySelectorAll("details.tool[data-src]").forEach((d) => {
    d.addEventListener("toggle", async () => {
      if (!d.open || d.dataset.loaded) return;
      d.dataset.loaded = "1";
      const body = d.querySelector(".body");
      const resp = await fetch(d.dataset.src, { credentials: "same-origin" });
      body.innerHTML = await resp.text(); // server-rendered, escaped HTML
    });
  });
}

// --- charts: Vega-Lite specs from <script type="application/json"> blocks ---
function setupCharts() {
  if (!window.vegaEmbed) return;
  document.querySelectorAll("[data-spec]").forEach((el) => {
    const block = document.getElementById(el.dataset.spec);
    if (!block) return;
    const spec = JSON.parse(block.textContent);
    window.vegaEmbed(el, spec, {
      actions: false,
      ast: true, // evaluated by vega-interpreter: no eval, so the CSP holds
      expr: window.vegaInterpreter.expressionInterpreter,
      loader: { target: "_self" }, // a point's link opens the turn in this tab
      renderer: "svg",
    }).then(() => { el.dataset.rendered = "1"; })
      .catch((err) => { el.textContent = "chart: " + err; el.dataset.rendered = "error"; });
  });
}

// --- live: the follower archives new turns; say so and offer a reload ---
function setupLive() {
  const banner = document.getElementById("live");
  if (!banner) return;
  let first = null;
  const poll = async () => {
    try {
      const resp = await fetch("/live", { credentials: "same-origin" });
      const data = await resp.json();
      if (first === null) first = data.turns;
      const added = data.turns - first;
      if (added > 0 || data.catching_up) {
        document.getElementById("live-text").textContent =
          (added > 0 ? added + " new turns archived" : "") +
          (data.catching_up ? (added > 0 ? " · " : "") + data.catching_up : "");
        banner.hidden = false;
      }
    } catch (e) { /* the server restarted: try again on the next tick */ }
  };
  poll();
  setInterval(poll, 5000);
}

document.addEventListener("DOMContentLoaded", () => {
  setupSearch();
  setupTools();
  setupCharts();
  setupLive();
});
