// Live regions without inline script (the CSP allows only our static files): every element with
// data-live="true" and a data-live-url is re-fetched every few seconds and replaced by the
// server's fragment, rendered from the same template as the page, until the fragment says
// data-live="false". Pages carry a <noscript> meta refresh for browsers without JavaScript.
(function () {
  "use strict";
  var DEFAULT_INTERVAL_MS = 3000;

  function schedule(el) {
    var interval = parseInt(el.getAttribute("data-live-interval"), 10) || DEFAULT_INTERVAL_MS;
    window.setTimeout(function () { refresh(el); }, interval);
  }

  function refresh(el) {
    fetch(el.getAttribute("data-live-url"), {credentials: "same-origin", headers: {"Accept": "text/html"}})
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.text();
      })
      .then(function (html) {
        var holder = document.createElement("div");
        holder.innerHTML = html.trim();
        var next = holder.firstElementChild;
        if (!next) { schedule(el); return; }
        el.replaceWith(next);
        if (next.getAttribute("data-live") === "true") { schedule(next); }
      })
      .catch(function () { schedule(el); });  // a network blip: try again on the next tick
  }

  document.querySelectorAll("[data-live='true'][data-live-url]").forEach(schedule);
})();
