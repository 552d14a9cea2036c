// DeepContext inspector: zoom and pan of the graph (wheel, drag, double-click to reset) and a
// confirmation before destructive forms. Everything else works without script.
(function () {
  "use strict";

  function zoomable(svg) {
    var start = svg.viewBox.baseVal;
    var home = { x: start.x, y: start.y, w: start.width, h: start.height };
    var view = { x: home.x, y: home.y, w: home.w, h: home.h };
    var drag = null;
    var moved = false;

    function apply() {
      svg.setAttribute("viewBox", view.x + " " + view.y + " " + view.w + " " + view.h);
    }
    function toSvg(evt) {
      var r = svg.getBoundingClientRect();
      var scale = Math.max(view.w / r.width, view.h / r.height);
      var ox = (r.width * scale - view.w) / 2, oy = (r.height * scale - view.h) / 2;
      return { x: view.x - ox + (evt.clientX - r.left) * scale, y: view.y - oy + (evt.clientY - r.top) * scale, scale: scale };
    }
    svg.addEventListener("wheel", function (evt) {
      evt.preventDefault();
      var p = toSvg(evt);
      var f = evt.deltaY < 0 ? 0.85 : 1 / 0.85;
      var w = Math.min(home.w * 4, Math.max(home.w / 40, view.w * f));
      f = w / view.w;
      view.x = p.x - (p.x - view.x) * f;
      view.y = p.y - (p.y - view.y) * f;
      view.w = w;
      view.h = view.h * f;
      apply();
    }, { passive: false });
    svg.addEventListener("mousedown", function (evt) {
      if (evt.button !== 0) return;
      drag = { x: evt.clientX, y: evt.clientY, vx: view.x, vy: view.y, scale: toSvg(evt).scale };
      moved = false;
    });
    window.addEventListener("mousemove", function (evt) {
      if (!drag) return;
      var dx = evt.clientX - drag.x, dy = evt.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) { moved = true; svg.classList.add("dragging"); }
      view.x = drag.vx - dx * drag.scale;
      view.y = drag.vy - dy * drag.scale;
      apply();
    });
    window.addEventListener("mouseup", function () {
      drag = null;
      svg.classList.remove("dragging");
    });
    // a drag that ends on an entity is a pan, not a click
    svg.addEventListener("click", function (evt) {
      if (moved) { evt.preventDefault(); evt.stopPropagation(); moved = false; }
    }, true);
    svg.addEventListener("dblclick", function (evt) {
      evt.preventDefault();
      view = { x: home.x, y: home.y, w: home.w, h: home.h };
      apply();
    });
  }

  document.querySelectorAll("svg.zoomable").forEach(zoomable);
  document.querySelectorAll("form[data-confirm]").forEach(function (form) {
    form.addEventListener("submit", function (evt) {
      if (!window.confirm(form.getAttribute("data-confirm"))) evt.preventDefault();
    });
  });
})();
