// anvil view: filter, sort and open the rows of the cases table. Nothing is fetched.
(function () {
  "use strict";
  var table = document.getElementById("cases");
  var bodies = Array.prototype.slice.call(table.querySelectorAll("tbody.case"));
  var q = document.getElementById("q");
  var metric = document.getElementById("metric");
  var status = document.getElementById("status");
  var count = document.getElementById("count");

  function shown(body) { return !body.hidden; }

  function apply() {
    var text = q.value.trim().toLowerCase();
    var m = metric.value;
    var s = status.value;
    var n = 0;
    bodies.forEach(function (body) {
      var ok = (!text || body.dataset.text.indexOf(text) >= 0) &&
        (!m || body.dataset.metric === m) &&
        (!s || (" " + body.dataset.tags + " ").indexOf(" " + s + " ") >= 0);
      body.hidden = !ok;
      if (ok) { n += 1; }
    });
    count.textContent = "showing " + n + " of " + bodies.length;
  }

  function toggle(body, open) {
    var detail = body.querySelector("tr.detail");
    var row = body.querySelector("tr.row");
    if (open === undefined) { open = detail.hidden; }
    detail.hidden = !open;
    row.setAttribute("aria-expanded", open ? "true" : "false");
    body.classList.toggle("open", open);
  }

  function sortBy(th) {
    var key = th.dataset.key;
    var numeric = th.dataset.type === "num";
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(table.querySelectorAll("th"), function (other) {
      other.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    bodies.sort(function (a, b) {
      var x = a.dataset[key], y = b.dataset[key];
      var r;
      if (numeric) {
        var fx = x === "" ? Infinity : parseFloat(x), fy = y === "" ? Infinity : parseFloat(y);
        r = fx === fy ? 0 : (fx < fy ? -1 : 1);
      } else {
        r = x.localeCompare(y, undefined, { numeric: true });
      }
      return ascending ? r : -r;
    });
    bodies.forEach(function (body) { table.appendChild(body); });
  }

  table.addEventListener("click", function (event) {
    var th = event.target.closest("th");
    if (th) { sortBy(th); return; }
    var row = event.target.closest("tr.row");
    if (row) { toggle(row.parentNode); }
  });
  table.addEventListener("keydown", function (event) {
    if (event.key !== "Enter" && event.key !== " ") { return; }
    var th = event.target.closest("th");
    if (th) { sortBy(th); event.preventDefault(); return; }
    var row = event.target.closest("tr.row");
    if (row) { toggle(row.parentNode); event.preventDefault(); }
  });
  [q, metric, status].forEach(function (el) { el.addEventListener("input", apply); });
  document.getElementById("open-all").addEventListener("click", function () {
    bodies.filter(shown).forEach(function (body) { toggle(body, true); });
  });
  document.getElementById("close-all").addEventListener("click", function () {
    bodies.forEach(function (body) { toggle(body, false); });
  });

  // The address can carry a view: #status=failing&metric=NAME&q=TEXT&open=ROW,ROW
  var params = new URLSearchParams(window.location.hash.slice(1));
  if (params.has("q")) { q.value = params.get("q"); }
  if (params.has("metric")) { metric.value = params.get("metric"); }
  if (params.has("status")) { status.value = params.get("status"); }
  apply();
  (params.get("open") || "").split(",").forEach(function (index) {
    var body = document.getElementById("row-" + index.trim());
    if (body) { toggle(body, true); }
  });
  var first = params.get("open") && document.getElementById("row-" + params.get("open").split(",")[0]);
  if (first) { first.scrollIntoView({ block: "nearest" }); }
})();
