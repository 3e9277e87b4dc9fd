(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('lens-data').textContent);
  var NS = document.getElementById('step-chart').namespaceURI;
  var PHASE_COLORS = ['#4e79a7', '#f28e2b', '#e15759', '#59a14f', '#b07aa1', '#edc948',
                      '#bab0ac'];

  function svgEl(tag, attrs, parent) {
    var el = document.createElementNS(NS, tag);
    Object.keys(attrs).forEach(function (k) { el.setAttribute(k, String(attrs[k])); });
    if (parent) parent.appendChild(el);
    return el;
  }
  function label(parent, x, y, str, attrs) {
    var t = svgEl('text', Object.assign({x: x, y: y}, attrs || {}), parent);
    t.textContent = str;
    return t;
  }
  function tip(el, str) { svgEl('title', {}, el).textContent = str; }
  // The stall suspects' marks (bands over heatmap rows or timeline lanes) and their legend.
  var BAND_COLORS = ['#e8175d', '#ff8c00', '#00b3ff', '#ffffff', '#ff4df0', '#a0ff3c'];
  function bandLegend(bands, itemClass, title) {
    var legend = document.createElement('div');
    legend.className = 'note ' + itemClass + 's';
    legend.textContent = title;
    bands.forEach(function (band, b) {
      var item = document.createElement('span');
      item.className = itemClass;
      item.setAttribute('data-kind', band.kind);
      item.setAttribute('data-ranks', band.ranks);
      item.setAttribute('data-rows', band.rows.map(function (run) {
        return run[0] === run[1] ? String(run[0]) : run[0] + '-' + run[1];
      }).join(','));
      var swatch = document.createElement('span');
      swatch.className = 'legend-swatch';
      swatch.style.border = '2px solid ' + BAND_COLORS[b % BAND_COLORS.length];
      item.appendChild(swatch);
      item.appendChild(document.createTextNode(
          String(b + 1) + ' ' + band.label + ', ' + band.phase));
      legend.appendChild(item);
    });
    return legend;
  }
  function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); }
  function rankColor(i, n) {
    return 'hsl(' + Math.round((i * 360) / Math.max(n, 1)) + ',62%,42%)';
  }
  function fmt(v) {
    var a = Math.abs(v);
    if (a >= 1e6) return v.toExponential(2);
    if (a >= 100 || a === 0) return v.toFixed(0);
    if (a >= 10) return v.toFixed(1);
    if (a >= 0.01) return v.toFixed(2);
    return v.toExponential(1);
  }
  function fmtMs(ms) { return ms >= 1000 ? (ms / 1000).toFixed(2) + ' s' : fmt(ms) + ' ms'; }
  // Tick labels carry as many decimals as the tick step needs.
  function decimalsFor(step) {
    return Math.max(0, Math.min(6, -Math.floor(Math.log10(step) + 1e-9)));
  }
  function fmtTick(t, step) {
    if (Math.abs(t) >= 1e6) return t.toExponential(2);
    return t.toFixed(decimalsFor(step || 1));
  }
  function fmtMsTick(t, step) {
    if (t >= 1000) return (t / 1000).toFixed(decimalsFor((step || 1000) / 1000)) + ' s';
    return t.toFixed(decimalsFor(step || 1)) + ' ms';
  }
  function extent(values) {
    var lo = Infinity, hi = -Infinity;
    for (var i = 0; i < values.length; i++) {
      if (values[i] < lo) lo = values[i];
      if (values[i] > hi) hi = values[i];
    }
    return [lo, hi];
  }
  function ticks(lo, hi, count) {
    var range = hi - lo;
    if (!(range > 0)) {
      var one = [lo];
      one.step = Math.abs(lo) || 1;
      return one;
    }
    var step = Math.pow(10, Math.floor(Math.log10(range / count)));
    var err = range / count / step;
    if (err >= 5) step *= 10; else if (err >= 2) step *= 5; else if (err >= 1) step *= 2;
    var out = [];
    for (var t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push(t);
    out.step = step;
    return out;
  }
  function widthOf(el) {
    var w = el.parentNode ? el.parentNode.clientWidth - 10 : 0;
    return w > 300 ? w : 960;
  }

  // Per-rank timeline: job spans (one row per nesting level), then steps (and checkpoints or
  // evaluations outside steps), then the phase spans inside the steps. Wheel zooms around the
  // pointer, drag pans.
  function Timeline(svg) {
    var LABEL = 64, ROW = 14, JOB_ROW = 12, GAP = 3, AXIS = 22, MAX_LEVELS = 4;
    var full = [0, Math.max(data.endMs, 0.001)];
    var bands = data.bands || [];
    if (bands.length) svg.parentNode.parentNode.insertBefore(
        bandLegend(bands, 'timeline-band', 'marked at the left:'), svg.parentNode.nextSibling);
    var view = full.slice();
    var plotW = 0;
    // Job spans nest by time: each gets the level of the spans still open when it starts.
    data.ranks.forEach(function (lane) {
      var open = [];
      lane.levels = 1;
      lane.job.forEach(function (it) {
        while (open.length && open[open.length - 1] <= it[0]) open.pop();
        it.level = Math.min(open.length, MAX_LEVELS - 1);
        open.push(it[1]);
        lane.levels = Math.max(lane.levels, it.level + 1);
      });
      lane.height = lane.levels * (JOB_ROW + 1) + 2 * (ROW + GAP) + 8;
    });

    function clampView(lo, width) {
      width = Math.min(Math.max(width, 0.001), full[1] - full[0]);
      lo = Math.min(Math.max(lo, full[0]), full[1] - width);
      view = [lo, lo + width];
    }
    function fitted(str, width) {
      var chars = Math.floor((width - 6) / 6.2);
      if (chars < 3) return '';
      return str.length > chars ? str.slice(0, chars - 1) + '\u2026' : str;
    }
    // items: [start, end, ...]; rowY and height of each item from yOf.
    function drawRow(parent, items, yOf, height, colorOf, textOf, labelOf, x) {
      var lastRight = {};
      for (var i = 0; i < items.length; i++) {
        var it = items[i];
        if (it[1] < view[0] || it[0] > view[1]) continue;
        var y = yOf(it);
        var x0 = Math.max(x(it[0]), LABEL - 2), x1 = Math.min(x(it[1]), LABEL + plotW + 2);
        var w = Math.max(x1 - x0, 0.6);
        if (w < 1 && x0 < (lastRight[y] || -Infinity)) continue;  // sub-pixel marks merge
        lastRight[y] = x0 + w;
        var r = svgEl('rect', {x: x0.toFixed(2), y: y, width: w.toFixed(2), height: height,
                               fill: colorOf(it)}, parent);
        tip(r, textOf(it));
        var text = labelOf ? fitted(labelOf(it), w) : '';
        if (text) {
          label(parent, x0 + 3, y + height - 3, text, {fill: '#fff', 'pointer-events': 'none'});
        }
      }
    }
    function render() {
      clear(svg);
      var w = widthOf(svg);
      plotW = w - LABEL - 8;
      var h = AXIS + 4;
      data.ranks.forEach(function (lane) { h += lane.height; });
      svg.setAttribute('width', w);
      svg.setAttribute('height', h);
      var width = view[1] - view[0];
      var x = function (t) { return LABEL + ((t - view[0]) / width) * plotW; };
      var defs = svgEl('defs', {}, svg);
      var clip = svgEl('clipPath', {id: 'timeline-clip'}, defs);
      svgEl('rect', {x: LABEL, y: -100000, width: plotW, height: 200000}, clip);
      var marks = ticks(view[0], view[1], 8);
      marks.forEach(function (t) {
        svgEl('line', {x1: x(t), x2: x(t), y1: AXIS - 4, y2: h, 'class': 'grid'}, svg);
        label(svg, x(t), AXIS - 8, fmtMsTick(t, marks.step), {'text-anchor': 'middle'});
      });
      var top = AXIS;
      data.ranks.forEach(function (lane) {
        lane.top = top;
        var g = svgEl('g', {'class': 'rank-lane', 'data-rank': lane.rank,
                            transform: 'translate(0,' + top + ')'}, svg);
        top += lane.height;
        var stepY = lane.levels * (JOB_ROW + 1) + GAP, phaseY = stepY + ROW + GAP;
        svgEl('line', {x1: 0, x2: w, y1: lane.height - 4, y2: lane.height - 4,
                       'class': 'lane-sep'}, g);
        label(g, 7, stepY + ROW - 3, 'rank ' + lane.rank, {'class': 'lane-label'});
        var body = svgEl('g', {'clip-path': 'url(#timeline-clip)'}, g);
        var span = function (it) { return it[2] + ' (' + fmtMs(it[1] - it[0]) + ')'; };
        drawRow(body, lane.job, function (it) { return it.level * (JOB_ROW + 1); }, JOB_ROW,
                function (it) { return it.level % 2 ? '#6f7a90' : '#8a93a6'; }, span,
                function (it) { return it[2]; }, x);
        var stepText = function (it) {
          return 'step ' + (it[2] === null ? '?' : it[2]) + ' (' + fmtMs(it[1] - it[0]) + ')';
        };
        drawRow(body, lane.steps, function () { return stepY; }, ROW, function (it) {
          return it[2] !== null && it[2] % 2 ? '#2f4b7c' : '#3d5f99';
        }, stepText, function (it) { return stepText(it).split(' (')[0]; }, x);
        drawRow(body, lane.events, function () { return stepY; }, ROW,
                function (it) { return PHASE_COLORS[it[3]]; }, span,
                function (it) { return it[2]; }, x);
        drawRow(body, lane.phases, function () { return phaseY; }, ROW,
                function (it) { return PHASE_COLORS[it[2]]; }, function (it) {
                  return data.phases[it[2]] + ': ' + it[3] + ' (' + fmtMs(it[1] - it[0]) + ')';
                }, null, x);
      });
      // Each suspect's lanes: a bar at the left edge over them, numbered as in the legend.
      bands.forEach(function (band, b) {
        var color = BAND_COLORS[b % BAND_COLORS.length];
        band.rows.forEach(function (run) {
          var first = data.ranks[run[0]], last = data.ranks[run[1]];
          var y0 = first.top, y1 = last.top + last.height - 4;
          var bar = svgEl('rect', {x: 0, y: y0, width: 4, height: Math.max(y1 - y0, 2),
                                   fill: color, 'class': 'lane-band'}, svg);
          tip(bar, String(b + 1) + ' ' + band.label + ', ' + band.phase);
          label(svg, 6 + 8 * (b % 4), y0 + 10, String(b + 1), {fill: color, 'font-weight': 700});
        });
      });
    }
    svg.addEventListener('wheel', function (e) {
      e.preventDefault();
      var rect = svg.getBoundingClientRect();
      var width = view[1] - view[0];
      var at = view[0] + ((e.clientX - rect.left - LABEL) / plotW) * width;
      var factor = e.deltaY > 0 ? 1.25 : 0.8;
      clampView(at - (at - view[0]) * factor, width * factor);
      render();
    }, {passive: false});
    var drag = null;
    svg.addEventListener('mousedown', function (e) { drag = {x: e.clientX, view: view.slice()}; });
    window.addEventListener('mouseup', function () { drag = null; });
    window.addEventListener('mousemove', function (e) {
      if (!drag) return;
      var width = drag.view[1] - drag.view[0];
      clampView(drag.view[0] - ((e.clientX - drag.x) / plotW) * width, width);
      render();
    });
    function zoom(factor) {
      var width = view[1] - view[0];
      clampView(view[0] + width * (1 - factor) / 2, width * factor);
      render();
    }
    document.getElementById('zoom-in').addEventListener('click', function () { zoom(0.5); });
    document.getElementById('zoom-out').addEventListener('click', function () { zoom(2); });
    document.getElementById('zoom-reset').addEventListener('click', function () {
      view = full.slice();
      render();
    });
    window.addEventListener('resize', render);
    render();
  }

  // series: [{name, color, points: [[x, y], ...]}]
  function lineChart(svg, series, xName, yName) {
    clear(svg);
    var xs = [], ys = [];
    series.forEach(function (s) {
      s.points.forEach(function (p) {
        if (p[1] !== null && isFinite(p[1])) { xs.push(p[0]); ys.push(p[1]); }
      });
    });
    var w = widthOf(svg), h = 240, L = 60, R = 150, T = 10, B = 34;
    svg.setAttribute('width', w);
    if (!xs.length) {
      svg.setAttribute('height', 24);
      label(svg, 8, 16, 'no data', {'class': 'note'});
      return;
    }
    svg.setAttribute('height', h);
    var xe = extent(xs), ye = extent(ys);
    if (xe[0] === xe[1]) { xe = [xe[0] - 1, xe[1] + 1]; }
    var pad = (ye[1] - ye[0]) * 0.05 || Math.abs(ye[0]) * 0.05 || 1;
    ye = [ye[0] - pad, ye[1] + pad];
    var pw = w - L - R, ph = h - T - B;
    var x = function (v) { return L + ((v - xe[0]) / (xe[1] - xe[0])) * pw; };
    var y = function (v) { return T + ph - ((v - ye[0]) / (ye[1] - ye[0])) * ph; };
    var yTicks = ticks(ye[0], ye[1], 5), xTicks = ticks(xe[0], xe[1], 8);
    yTicks.forEach(function (t) {
      svgEl('line', {x1: L, x2: L + pw, y1: y(t), y2: y(t), 'class': 'grid'}, svg);
      label(svg, L - 4, y(t) + 4, fmtTick(t, yTicks.step), {'text-anchor': 'end'});
    });
    xTicks.forEach(function (t) {
      label(svg, x(t), T + ph + 14, fmtTick(t, xTicks.step), {'text-anchor': 'middle'});
    });
    svgEl('line', {x1: L, x2: L + pw, y1: T + ph, y2: T + ph, 'class': 'axis-line'}, svg);
    svgEl('line', {x1: L, x2: L, y1: T, y2: T + ph, 'class': 'axis-line'}, svg);
    label(svg, L + pw / 2, h - 4, xName, {'text-anchor': 'middle'});
    label(svg, 12, T + ph / 2, yName,
          {'text-anchor': 'middle', transform: 'rotate(-90 12 ' + (T + ph / 2) + ')'});
    series.forEach(function (s, i) {
      var d = '', pen = 'M';
      s.points.forEach(function (p) {
        if (p[1] === null || !isFinite(p[1])) { pen = 'M'; return; }
        d += pen + x(p[0]).toFixed(1) + ' ' + y(p[1]).toFixed(1) + ' ';
        pen = 'L';
      });
      if (d) {
        var path = svgEl('path', {d: d, fill: 'none', stroke: s.color, 'stroke-width': 1.5}, svg);
        tip(path, s.name);
      }
      if (s.points.length <= 60) {
        s.points.forEach(function (p) {
          if (p[1] === null || !isFinite(p[1])) return;
          var c = svgEl('circle', {cx: x(p[0]), cy: y(p[1]), r: 2.2, fill: s.color}, svg);
          tip(c, s.name + ': ' + fmt(p[1]) + ' at ' + fmt(p[0]));
        });
      }
      if (i < 14) {
        svgEl('rect', {x: L + pw + 12, y: T + i * 15, width: 10, height: 10, fill: s.color}, svg);
        label(svg, L + pw + 26, T + i * 15 + 9, s.name);
      } else if (i === 14) {
        label(svg, L + pw + 12, T + i * 15 + 9, '+' + (series.length - 14) + ' more');
      }
    });
  }

  function breakdownChart(svg) {
    clear(svg);
    var rows = data.breakdown;
    var w = widthOf(svg), L = 64, R = 20, T = 26, ROW = 18;
    svg.setAttribute('width', w);
    if (!rows.length) {
      svg.setAttribute('height', 24);
      label(svg, 8, 16, 'no steps', {'class': 'note'});
      return;
    }
    var h = T + rows.length * (ROW + 4) + 24;
    svg.setAttribute('height', h);
    var max = 0;
    rows.forEach(function (r) {
      var total = r.ms.reduce(function (a, b) { return a + b; }, 0);
      if (total > max) max = total;
    });
    max = max || 1;
    var pw = w - L - R;
    var legendX = L;
    data.phases.forEach(function (name, p) {
      svgEl('rect', {x: legendX, y: 4, width: 10, height: 10, fill: PHASE_COLORS[p]}, svg);
      label(svg, legendX + 14, 13, name);
      legendX += 30 + name.length * 6.5;
    });
    rows.forEach(function (r, i) {
      var y = T + i * (ROW + 4), x = L;
      label(svg, 4, y + ROW - 4, 'rank ' + r.rank, {'class': 'lane-label'});
      r.ms.forEach(function (ms, p) {
        var bw = (ms / max) * pw;
        if (bw <= 0) return;
        var rect = svgEl('rect', {x: x, y: y, width: bw, height: ROW, fill: PHASE_COLORS[p]}, svg);
        tip(rect, 'rank ' + r.rank + ' ' + data.phases[p] + ': ' + fmt(ms) + ' ms per step');
        x += bw;
      });
    });
    var marks = ticks(0, max, 6);
    marks.forEach(function (t) {
      label(svg, L + (t / max) * pw, h - 6, fmtTick(t, marks.step) + ' ms',
            {'text-anchor': 'middle'});
    });
  }

  // Rank x iteration heatmaps (large runs): each layer's cells are bytes, 0 = no step, 1-255 =
  // lo..hi; one image pixel per cell, scaled up without smoothing, axes and legend around it.
  var RAMP = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  function rampColor(at) {
    var x = Math.min(Math.max(at, 0), 1) * (RAMP.length - 1);
    var i = Math.min(Math.floor(x), RAMP.length - 2);
    var f = x - i, a = RAMP[i], b = RAMP[i + 1];
    return [0, 1, 2].map(function (k) { return Math.round(a[k] + (b[k] - a[k]) * f); });
  }
  function rangeText(pair) {
    return pair[0] === pair[1] ? String(pair[0]) : pair[0] + '-' + pair[1];
  }
  function Heatmaps(holder) {
    var hm = data.heatmap, rows = hm.rows.length, cols = hm.columns.length;
    if (!rows || !cols) {
      var none = document.createElement('p');
      none.className = 'note';
      none.textContent = 'no steps with an iteration';
      holder.appendChild(none);
      return;
    }
    // The rank labels' margin fits the longest label ("rank 199936-199999" at 200,000 ranks).
    var longest = 0;
    hm.rows.forEach(function (row) { longest = Math.max(longest, rangeText(row).length); });
    var LEFT = Math.max(100, Math.ceil((longest + 5) * 6.5) + 8), TOP = 6, BOTTOM = 40, LEGEND = 14;
    var bands = hm.bands || [];
    var RIGHT = bands.length ? 12 + 14 * 8 : 12;
    // The band of each row, for the readout: the first suspect's wins.
    var bandOfRow = {};
    bands.forEach(function (band) {
      band.rows.forEach(function (run) {
        for (var r = run[0]; r <= run[1]; ++r) {
          if (!(r in bandOfRow)) bandOfRow[r] = band;
        }
      });
    });
    hm.layers.forEach(function (layer) {
      var box = document.createElement('div');
      box.className = 'chart';
      var title = document.createElement('h3');
      title.textContent = layer.name;
      box.appendChild(title);
      holder.appendChild(box);
      var bytes = atob(layer.cells);
      var image = document.createElement('canvas');
      image.width = cols;
      image.height = rows;
      var pixels = image.getContext('2d').createImageData(cols, rows);
      for (var i = 0; i < rows * cols; ++i) {
        var b = bytes.charCodeAt(i);
        var c = b === 0 ? [232, 234, 238] : rampColor((b - 1) / 254);
        pixels.data[4 * i] = c[0];
        pixels.data[4 * i + 1] = c[1];
        pixels.data[4 * i + 2] = c[2];
        pixels.data[4 * i + 3] = 255;
      }
      image.getContext('2d').putImageData(pixels, 0, 0);
      var canvas = document.createElement('canvas');
      canvas.className = 'heatmap';
      canvas.setAttribute('data-layer', layer.key);
      canvas.setAttribute('data-rows', String(rows));
      canvas.setAttribute('data-columns', String(cols));
      var w = Math.max(widthOf(box) - 8, 400);
      var ph = Math.min(Math.max(rows * 2, 120), 512), pw = w - LEFT - RIGHT;
      canvas.width = w;
      canvas.height = TOP + ph + BOTTOM + LEGEND;
      box.appendChild(canvas);
      if (bands.length) box.appendChild(bandLegend(bands, 'heatmap-band', 'outlined:'));
      var readout = document.createElement('div');
      readout.className = 'note heatmap-readout';
      readout.textContent = 'hover a cell for its rank, iteration and value';
      box.appendChild(readout);
      var ctx = canvas.getContext('2d');
      ctx.imageSmoothingEnabled = false;
      ctx.drawImage(image, LEFT, TOP, pw, ph);
      // Each suspect's rows outlined across the map, numbered as in the legend at the right.
      bands.forEach(function (band, b) {
        var color = BAND_COLORS[b % BAND_COLORS.length];
        ctx.strokeStyle = color;
        ctx.fillStyle = color;
        ctx.lineWidth = 2;
        ctx.font = 'bold 11px sans-serif';
        ctx.textAlign = 'left';
        band.rows.forEach(function (run) {
          var y0 = TOP + (run[0] / rows) * ph, y1 = TOP + ((run[1] + 1) / rows) * ph;
          ctx.strokeRect(LEFT + 1, y0 + 1, pw - 2, Math.max(y1 - y0 - 2, 1));
          ctx.fillRect(LEFT + pw + 2, y0, 4, Math.max(y1 - y0, 2));
          ctx.fillText(String(b + 1) + ' ' + band.kind, LEFT + pw + 9 + 10 * (b % 2),
                       Math.min(Math.max((y0 + y1) / 2 + 4, TOP + 10), TOP + ph));
        });
      });
      ctx.fillStyle = '#1d2330';
      ctx.font = '11px sans-serif';
      ctx.textAlign = 'right';
      var rowStep = Math.max(1, Math.ceil(rows / Math.max(1, Math.floor(ph / 16))));
      for (var r = 0; r < rows; r += rowStep) {
        ctx.fillText('rank ' + rangeText(hm.rows[r]), LEFT - 4, TOP + ((r + 0.5) / rows) * ph + 4);
      }
      ctx.textAlign = 'center';
      var colStep = Math.max(1, Math.ceil(cols / Math.max(1, Math.floor(pw / 70))));
      for (var k = 0; k < cols; k += colStep) {
        ctx.fillText(String(hm.columns[k][0]), LEFT + ((k + 0.5) / cols) * pw, TOP + ph + 14);
      }
      ctx.fillText('iteration', LEFT + pw / 2, TOP + ph + 28);
      var ly = TOP + ph + BOTTOM - 4, lw = Math.min(240, pw / 2);
      for (var x = 0; x < lw; ++x) {
        var rc = rampColor(x / (lw - 1));
        ctx.fillStyle = 'rgb(' + rc[0] + ',' + rc[1] + ',' + rc[2] + ')';
        ctx.fillRect(LEFT + x, ly, 1, LEGEND);
      }
      ctx.fillStyle = '#1d2330';
      ctx.textAlign = 'right';
      ctx.fillText(fmt(layer.lo) + ' ms', LEFT - 4, ly + 11);
      ctx.textAlign = 'left';
      ctx.fillText(fmt(layer.hi) + ' ms', LEFT + lw + 4, ly + 11);
      canvas.addEventListener('mousemove', function (e) {
        var box2 = canvas.getBoundingClientRect();
        var px = (e.clientX - box2.left) * (canvas.width / box2.width) - LEFT;
        var py = (e.clientY - box2.top) * (canvas.height / box2.height) - TOP;
        if (px < 0 || py < 0 || px >= pw || py >= ph) return;
        var row = Math.floor((py / ph) * rows), col = Math.floor((px / pw) * cols);
        var b = bytes.charCodeAt(row * cols + col);
        var value = b === 0 ? 'no step' :
            '~' + fmt(layer.lo + ((layer.hi - layer.lo) * (b - 1)) / 254) + ' ms';
        var band = bandOfRow[row];
        readout.textContent = 'rank ' + rangeText(hm.rows[row]) + ', iteration ' +
            rangeText(hm.columns[col]) + ': ' + value +
            (band ? ' (' + band.label + ', ' + band.phase + ')' : '');
      });
    });
  }

  function rankSeries(list) {
    return list.map(function (s, i) {
      return {name: 'rank ' + s.rank, color: rankColor(i, list.length), points: s.points};
    });
  }

  if (data.heatmap) {
    Heatmaps(document.getElementById('heatmaps'));
  } else {
    Timeline(document.getElementById('timeline'));
  }
  lineChart(document.getElementById('step-chart'), rankSeries(data.stepSeries), 'iteration',
            'step time (ms)');
  breakdownChart(document.getElementById('breakdown-chart'));
  var pct = data.stepPercentiles;
  lineChart(document.getElementById('percentile-chart'), ['p50', 'p90', 'p99'].map(
    function (name, k) {
      return {name: name, color: ['#4e79a7', '#f28e2b', '#e15759'][k],
              points: pct.map(function (p) { return [p[0], p[k + 1]]; })};
    }), 'seconds since start', 'step duration (ms)');
  var sq = data.stepQuantiles;
  lineChart(document.getElementById('step-quantile-chart'), ['median', 'p90', 'max'].map(
    function (name, k) {
      return {name: name, color: ['#4e79a7', '#f28e2b', '#e15759'][k],
              points: sq.map(function (p) { return [p[0], p[k + 1]]; })};
    }), 'iteration', 'step time (ms)');
  function charts(holderId, list, xName) {
    var holder = document.getElementById(holderId);
    if (!list.length) {
      var none = document.createElement('p');
      none.className = 'note';
      none.textContent = 'none recorded';
      holder.appendChild(none);
      return;
    }
    list.forEach(function (m) {
      var box = document.createElement('div');
      box.className = 'chart';
      var title = document.createElement('h3');
      title.textContent = m.name;
      box.appendChild(title);
      var svg = svgEl('svg', {'class': 'metric-chart'}, box);
      holder.appendChild(box);
      lineChart(svg, rankSeries(m.series), xName, m.unit);
    });
  }
  charts('iteration-charts', data.iterationCurves, 'iteration');
  charts('metric-charts', data.metrics, 'seconds since start');
  charts('self-metric-charts', data.selfMetrics, 'seconds since start');
  document.body.setAttribute('data-rendered', 'true');
})();
