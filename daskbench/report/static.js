/* daskbench report: the metric switch and the "hide unchanged" filter. Plain JS, no network.
 *
 * The switch sets <body data-metric>, and the stylesheet shows only that metric's table
 * rows and counts. It also redraws every history chart with that metric: their data
 * sources (Bokeh models named "history-points"/"history-band") carry one column per
 * metric ("y__cost_usd", ...), copied here into the drawn column ("y"); their figures
 * ("history-figure") keep a title and axis label per metric in their tags. The choice is
 * kept in the URL hash (#metric=cost_usd) so a link or a reload shows the same view.
 */
(function () {
  "use strict";

  var SWITCHED = ["y", "line", "text", "low", "mid", "high"];
  var SOURCES = ["history-points", "history-band"];
  var FIGURE = "history-figure";
  var inputs = Array.prototype.slice.call(document.querySelectorAll('input[name="metric"]'));
  var metrics = inputs.map(function (input) { return input.value; });

  function get(mapping, key) {
    return mapping instanceof Map ? mapping.get(key) : mapping[key];
  }

  function keys(mapping) {
    return mapping instanceof Map ? Array.from(mapping.keys()) : Object.keys(mapping);
  }

  function documents() {
    var bokeh = window.Bokeh;
    return bokeh && bokeh.documents ? bokeh.documents : [];
  }

  function historyModels(docs) {
    var found = [];
    (docs || documents()).forEach(function (doc) {
      doc.all_models.forEach(function (model) {
        if (model.name === FIGURE || SOURCES.indexOf(model.name) >= 0) { found.push(model); }
      });
    });
    return found;
  }

  function switchSource(source, metric) {
    var data = source.data;
    var next = {};
    keys(data).forEach(function (key) { next[key] = get(data, key); });
    SWITCHED.forEach(function (name) {
      var column = get(data, name + "__" + metric);
      if (column !== undefined) { next[name] = column; }
    });
    source.data = next;
  }

  function switchFigure(figure, metric) {
    var tags = figure.tags && figure.tags[0];
    if (!tags) { return; }
    var title = get(get(tags, "titles"), metric);
    var label = get(get(tags, "axes"), metric);
    if (title !== undefined && figure.title) { figure.title.text = title; }
    figure.left.forEach(function (axis) { if (label !== undefined && "axis_label" in axis) { axis.axis_label = label; } });
  }

  function syncCharts(metric, docs) {
    var models = historyModels(docs);
    models.forEach(function (model) {
      if (model.name === FIGURE) { switchFigure(model, metric); } else { switchSource(model, metric); }
    });
    if (models.length) { document.body.setAttribute("data-charts-metric", metric); }
    return models.length;
  }

  function setMetric(metric, remember) {
    if (metrics.indexOf(metric) < 0) { return; }
    document.body.setAttribute("data-metric", metric);
    inputs.forEach(function (input) { input.checked = input.value === metric; });
    syncCharts(metric);
    if (remember && window.history && window.history.replaceState) {
      window.history.replaceState(null, "", "#metric=" + metric);
    }
  }

  function metricFromHash() {
    var match = /(?:^#|&)metric=([a-z_]+)/.exec(window.location.hash);
    return match ? match[1] : null;
  }

  /* Bokeh embeds the charts after the page loads: retry until they exist (20 s at most). */
  function syncWhenReady(metric, attempt) {
    if (document.body.getAttribute("data-metric") !== metric) { return; }
    if (syncCharts(metric) > 0 || attempt > 200) { return; }
    window.setTimeout(function () { syncWhenReady(metric, attempt + 1); }, 100);
  }

  inputs.forEach(function (input) {
    input.addEventListener("change", function () { if (input.checked) { setMetric(input.value, true); } });
  });

  var filter = document.getElementById("hide-unchanged");
  if (filter) {
    filter.addEventListener("change", function () { document.body.classList.toggle("hide-unchanged", filter.checked); });
  }

  var initial = metricFromHash();
  if (initial && metrics.indexOf(initial) >= 0 && initial !== metrics[0]) {
    setMetric(initial, false);
    syncWhenReady(initial, 0);
  }

  /* A report's sections wait as inert scripts (type LATER): each is run in turn, the one nearest the view
   * first, and the next only once its Bokeh document exists, so the page answers between sections. A
   * section drawn after the metric switch moved is switched on arrival. */
  var LATER = 'script[type="text/x-daskbench-charts"]';

  function distance(script) {
    var section = document.getElementById(script.getAttribute("data-section") || "");
    if (!section) { return 0; }
    var box = section.getBoundingClientRect();
    return box.bottom < 0 ? -box.bottom : Math.max(0, box.top - window.innerHeight);
  }

  function whenEmbedded(count, then, attempt) {
    if (documents().length >= count || attempt > 400) { then(); return; }
    window.setTimeout(function () { whenEmbedded(count, then, attempt + 1); }, 25);
  }

  function drawNext() {
    var waiting = Array.prototype.slice.call(document.querySelectorAll(LATER));
    if (!waiting.length) { document.body.setAttribute("data-charts", "all"); return; }
    waiting.sort(function (a, b) { return distance(a) - distance(b); });
    var before = documents().length;
    var run = document.createElement("script");
    run.text = waiting[0].text;
    waiting[0].parentNode.replaceChild(run, waiting[0]);
    whenEmbedded(before + 1, function () {
      var metric = document.body.getAttribute("data-metric");
      if (metric !== metrics[0]) { syncCharts(metric, documents().slice(before)); }
      window.setTimeout(drawNext, 0);
    }, 0);
  }

  /* The first section only after the page has painted once: the headline and tables come first. */
  function drawAfterPaint() {
    window.requestAnimationFrame(function () { window.setTimeout(drawNext, 0); });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", drawAfterPaint);
  } else {
    drawAfterPaint();
  }

  window.daskbenchReport = { setMetric: setMetric, metrics: metrics, historyModels: historyModels };
})();
