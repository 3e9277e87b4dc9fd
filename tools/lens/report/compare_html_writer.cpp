// The comparison page (see compare_html_writer.hpp).
#include "report/compare_html_writer.hpp"

#include <cmath>

#include "report/html_assets.hpp"
#include "report/html_writer.hpp"

namespace lens::report {
namespace {

using nlohmann::json;

// Distinct, colour-blind friendly (Tableau 10); runs past ten reuse them in order.
constexpr const char* kRunColors[] = {"#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#b07aa1",
                                      "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#bab0ac"};

std::string run_color(std::size_t index) {
  return kRunColors[index % (sizeof(kRunColors) / sizeof(kRunColors[0]))];
}

json points_json(const std::vector<std::pair<std::int64_t, double>>& points, double scale) {
  json out = json::array();
  for (const auto& [iteration, value] : points) {
    out.push_back({iteration, std::round(value * scale) / scale});
  }
  return out;
}

// Draws each chart from the data block; DOM methods and textContent only, like the report page.
constexpr std::string_view kCompareScript = R"JS(
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('lens-data').textContent);
  var NS = 'http://www.w3.org/2000/svg';
  function svgEl(tag, attrs, parent) {
    var el = document.createElementNS(NS, tag);
    Object.keys(attrs).forEach(function (k) { el.setAttribute(k, String(attrs[k])); });
    parent.appendChild(el);
    return el;
  }
  function text(parent, x, y, str, attrs) {
    var t = svgEl('text', Object.assign({x: x, y: y}, attrs || {}), parent);
    t.textContent = str;
    return t;
  }
  function fmt(v) { return Math.abs(v) >= 100 ? v.toFixed(1) : String(+v.toPrecision(4)); }
  function ticks(lo, hi, count) {
    var raw = (hi - lo) / count || 1, base = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = [1, 2, 5, 10].map(function (m) { return m * base; })
                            .filter(function (s) { return s >= raw; })[0];
    var out = [];
    for (var t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push(t);
    return out;
  }
  function chart(svg, key, yName) {
    var w = Math.max(480, (svg.parentNode.clientWidth || 900) - 12), h = 260;
    var L = 64, R = 16, T = 10, B = 36;
    svg.setAttribute('width', w);
    svg.setAttribute('height', h);
    var xs = [], ys = [];
    data.runs.forEach(function (run) {
      run[key].forEach(function (p) { xs.push(p[0]); ys.push(p[1]); });
    });
    if (!xs.length) { text(svg, 8, 16, 'no data', {'class': 'note'}); return; }
    var x0 = Math.min.apply(null, xs), x1 = Math.max.apply(null, xs);
    var y0 = Math.min.apply(null, ys), y1 = Math.max.apply(null, ys);
    if (x0 === x1) { x0 -= 1; x1 += 1; }
    var pad = (y1 - y0) * 0.05 || Math.abs(y0) * 0.05 || 1;
    y0 -= pad; y1 += pad;
    var pw = w - L - R, ph = h - T - B;
    var x = function (v) { return L + ((v - x0) / (x1 - x0)) * pw; };
    var y = function (v) { return T + ph - ((v - y0) / (y1 - y0)) * ph; };
    ticks(y0, y1, 5).forEach(function (t) {
      svgEl('line', {x1: L, x2: L + pw, y1: y(t), y2: y(t), 'class': 'grid'}, svg);
      text(svg, L - 4, y(t) + 4, fmt(t), {'text-anchor': 'end'});
    });
    ticks(x0, x1, 8).forEach(function (t) {
      text(svg, x(t), T + ph + 14, fmt(t), {'text-anchor': 'middle'});
    });
    svgEl('line', {x1: L, x2: L + pw, y1: T + ph, y2: T + ph, 'class': 'axis-line'}, svg);
    svgEl('line', {x1: L, x2: L, y1: T, y2: T + ph, 'class': 'axis-line'}, svg);
    text(svg, L + pw / 2, h - 4, 'iteration', {'text-anchor': 'middle'});
    text(svg, 12, T + ph / 2, yName,
         {'text-anchor': 'middle', transform: 'rotate(-90 12 ' + (T + ph / 2) + ')'});
    data.runs.forEach(function (run) {
      var points = run[key];
      if (!points.length) return;
      var d = points.map(function (p, i) {
        return (i ? 'L' : 'M') + x(p[0]).toFixed(1) + ' ' + y(p[1]).toFixed(1);
      }).join(' ');
      var path = svgEl('path', {d: d, fill: 'none', stroke: run.color, 'stroke-width': 1.5,
                                'class': 'run-line'}, svg);
      svgEl('title', {}, path).textContent = run.label;
      if (points.length <= 60) {
        points.forEach(function (p) {
          var c = svgEl('circle', {cx: x(p[0]), cy: y(p[1]), r: 2.2, fill: run.color}, svg);
          svgEl('title', {}, c).textContent = run.label + ': ' + fmt(p[1]) + ' at ' + p[0];
        });
      }
    });
  }
  chart(document.getElementById('step-chart'), 'stepMs', 'step time (ms)');
  chart(document.getElementById('loss-chart'), 'loss', 'loss');
  document.body.setAttribute('data-rendered', 'true');
})();
)JS";

}  // namespace

json comparison_json(const std::vector<ComparedRun>& runs) {
  json list = json::array();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    list.push_back({{"label", run_label(runs[i])},
                    {"color", run_color(i)},
                    {"stepMs", points_json(runs[i].step_ms, 1e3)},
                    {"loss", points_json(runs[i].loss, 1e6)}});
  }
  return {{"runs", std::move(list)}};
}

void write_comparison_html(const std::vector<ComparedRun>& runs,
                           const std::vector<std::string>& warnings, std::ostream& out) {
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         "<title>lens report: "
      << runs.size() << " runs compared</title>\n<style>" << report_css()
      << "</style>\n</head>\n<body>\n<h1>lens report: " << runs.size() << " runs compared</h1>\n";
  // The legend of both charts, and the run table.
  out << "<table><tr><th>run</th><th>run id</th><th>directory</th><th>ranks</th>"
         "<th>iterations</th><th>median step ms</th><th>final loss</th></tr>\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const ComparedRun& run = runs[i];
    out << "<tr class=\"run-legend\"><td><span class=\"legend-swatch\" style=\"background:"
        << run_color(i) << "\"></span>" << html_escape(run_label(run)) << "</td><td>"
        << html_escape(run.run_id.empty() ? "-" : run.run_id) << "</td><td>" << html_escape(run.dir)
        << "</td><td class=\"num\">" << run.ranks << "</td><td class=\"num\">"
        << html_escape(iterations_text(run)) << "</td><td class=\"num\">" << median_step_text(run)
        << "</td><td class=\"num\">" << final_loss_text(run) << "</td></tr>\n";
  }
  out << "</table>\n"
         "<h2>Step time per iteration (median across ranks, ms)</h2>\n"
         "<div class=\"chart\"><svg id=\"step-chart\"></svg></div>\n"
         "<h2>Loss per iteration (median across ranks)</h2>\n"
         "<div class=\"chart\"><svg id=\"loss-chart\"></svg></div>\n"
         "<p class=\"note\">From the megatron.train_step spans: their duration (exact) and "
         "their megatron.loss attribute. Colours as in the table above.</p>\n";
  if (!warnings.empty()) {
    out << "<h2>Warnings</h2>\n<ul class=\"warnings\">\n";
    for (const std::string& warning : warnings) out << "<li>" << html_escape(warning) << "</li>\n";
    out << "</ul>\n";
  }
  out << "<script type=\"application/json\" id=\"lens-data\">"
      << script_safe_json(
             comparison_json(runs).dump(-1, ' ', false, json::error_handler_t::replace))
      << "</script>\n<script>" << kCompareScript << "</script>\n</body>\n</html>\n";
}

}  // namespace lens::report
