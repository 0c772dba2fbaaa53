// scoreaudit view: refreshes the verification banner while `verify` runs in the server (the pages work without it).
(function () {
  "use strict";
  var boxes = document.querySelectorAll("[data-status]");
  function poll(el) {
    if (!/verify-pending/.test(el.className)) { return; }
    fetch(el.getAttribute("data-status"), { cache: "no-store" }).then(function (r) { return r.json(); }).then(function (s) {
      if (s.state === "pending") { setTimeout(function () { poll(el); }, 1000); return; }
      if (el.id === "verify") { window.location.reload(); return; }
      el.className = el.className.replace("verify-pending", "verify-" + s.state);
      el.textContent = s.state;
    }).catch(function () { setTimeout(function () { poll(el); }, 3000); });
  }
  Array.prototype.forEach.call(boxes, poll);
}());
