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
