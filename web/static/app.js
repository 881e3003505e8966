// Pitfall's one script. Every page works without it; it only adds copy
// buttons to error texts and manifests, and live results on /rules.
(function () {
  "use strict";
  // Copy buttons.
  document.querySelectorAll("pre[data-copy]").forEach(function (pre) {
    if (!navigator.clipboard) return;
    var button = document.createElement("button");
    button.type = "button";
    button.className = "copy";
    button.textContent = "Copy";
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(pre.innerText.replace(/\nCopy(ied)?$/, "")).then(function () {
        button.textContent = "Copied";
        setTimeout(function () { button.textContent = "Copy"; }, 1500);
      });
    });
    pre.appendChild(button);
  });
  // Live search: fetch the same page and swap the results in.
  var form = document.querySelector("form[data-live-search]");
  var results = document.getElementById("results");
  if (!form || !results || !window.fetch) return;
  var timer = null, latest = 0;
  function update() {
    var query = new URLSearchParams(new FormData(form)).toString();
    var url = "/rules?" + query, ticket = ++latest;
    fetch(url, { headers: { accept: "text/html" } }).then(function (r) { return r.ok ? r.text() : null; }).then(function (html) {
      if (html === null || ticket !== latest) return;
      var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("results");
      if (fresh) { results.replaceWith(fresh); results = fresh; history.replaceState(null, "", url); }
    }).catch(function () {});
  }
  form.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(update, 250); });
})();
