// pi-rpc export page: optional niceties. The page reads the same without it.
(function () {
  "use strict";
  // Show times in the reader's time zone (the page carries UTC).
  var timeOnly = { hour: "2-digit", minute: "2-digit", second: "2-digit" };
  document.querySelectorAll("time[datetime]").forEach(function (el) {
    var d = new Date(el.getAttribute("datetime"));
    if (isNaN(d.getTime())) return;
    el.textContent = el.getAttribute("data-fmt") === "time"
      ? d.toLocaleTimeString(undefined, timeOnly)
      : d.toLocaleString();
    el.title = d.toString();
  });
  // Expand / collapse every foldable block at once.
  var bar = document.getElementById("toolbar");
  if (!bar) return;
  bar.hidden = false;
  bar.addEventListener("click", function (ev) {
    var button = ev.target.closest("button[data-open]");
    if (!button) return;
    var open = button.getAttribute("data-open") === "true";
    document.querySelectorAll("main details").forEach(function (d) { d.open = open; });
  });
})();
