/* Charts drawn as SVG in the browser (no library): one outer step as a timeline, the efficiency
   factors as bars, a curve of days against one input, the hardware comparison as bars.
   Each function takes the JSON the server sends (planner/web/views.py, answers.py) and returns
   an <svg> element sized by its viewBox (it scales to its container's width). */
"use strict";

const Charts = (() => {
  const NS = "http://www.w3.org/2000/svg";
  const LANE_COLORS = {"compute": "#4c72b0", "regional sync": "#55a868", "WAN sync": "#dd8452"};

  function el(tag, attrs = {}, text) {
    const node = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function svg(width, height, label) {
    const s = el("svg", {viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": label});
    s.appendChild(el("title", {}, label));
    return s;
  }

  // A title on one line, or two when the chart is narrow (split at the colon).
  function title(s, text, W) {
    const at = text.indexOf(": ");
    if (W >= 520 || at < 0) { s.appendChild(el("text", {x: 0, y: 14, "font-weight": 600}, text)); return; }
    s.appendChild(el("text", {x: 0, y: 14, "font-weight": 600}, text.slice(0, at + 1)));
    s.appendChild(el("text", {x: 0, y: 29}, text.slice(at + 2)));
  }

  function fmt(x, digits = 3) {
    if (x === null || x === undefined || !isFinite(x)) return "-";
    const a = Math.abs(x);
    if (a !== 0 && (a >= 1e6 || a < 1e-3)) return x.toExponential(Math.max(0, digits - 1)).replace("e+", "e");
    return Number(x.toPrecision(digits)).toLocaleString("en-US");
  }

  // Ticks: powers of ten and their 2x and 5x on a log axis; 'nice' steps on a linear one.
  function ticks(lo, hi, log, want = 5) {
    if (log) {
      const out = [];
      for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++)
        for (const m of [1, 2, 5]) { const v = m * 10 ** e; if (v >= lo * 0.999 && v <= hi * 1.001) out.push(v); }
      if (out.length > 8) return out.filter(v => Math.abs(Math.log10(v) % 1) < 1e-9);
      return out.length >= 2 ? out : [lo, hi];
    }
    const span = hi - lo || Math.abs(hi) || 1;
    const raw = span / want, mag = 10 ** Math.floor(Math.log10(raw));
    const step = [1, 2, 5, 10].map(m => m * mag).find(s => span / s <= want) || 10 * mag;
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
    return out;
  }

  function scale(lo, hi, a, b, log) {
    const f = log ? Math.log10 : (x => x);
    const l = f(lo), h = f(hi);
    return x => a + (h === l ? 0.5 : (f(x) - l) / (h - l)) * (b - a);
  }

  /* One outer step: a lane per activity, the step's end marked, compute waiting for a sync hatched. */
  function timeline(t, W = 640) {
    const narrow = W < 520, lanes = t.lanes, left = narrow ? 84 : 96, right = narrow ? 62 : 110, laneH = 26;
    const top = narrow ? 56 : 28;
    const H = top + lanes.length * laneH + 34;
    const s = svg(W, H, t.title);
    const defs = el("defs");
    const pat = el("pattern", {id: "hatch", width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)"});
    pat.appendChild(el("line", {x1: 0, y1: 0, x2: 0, y2: 6, stroke: "#999", "stroke-width": 1.5}));
    defs.appendChild(pat); s.appendChild(defs);
    title(s, t.title, W);
    let end = t.outer_s || 0;
    for (const lane of lanes) for (const [a, d] of lane.segments) end = Math.max(end, a + d);
    if (!(end > 0)) end = 1;
    const x = scale(0, end, left, W - right, false);
    const axisY = top + lanes.length * laneH + 4;
    const g = el("g", {class: "axis"});
    for (const v of ticks(0, end, false, 6)) {
      g.appendChild(el("line", {x1: x(v), x2: x(v), y1: top - 4, y2: axisY, class: "grid"}));
      g.appendChild(el("text", {x: x(v), y: axisY + 13, "text-anchor": "middle"}, fmt(v)));
    }
    g.appendChild(el("text", {x: (left + W - right) / 2, y: axisY + 27, "text-anchor": "middle", fill: "#59636e"},
                     "seconds within one outer step"));
    s.appendChild(g);
    lanes.forEach((lane, i) => {
      const y = top + i * laneH;
      s.appendChild(el("text", {x: left - 6, y: y + laneH / 2 + 4, "text-anchor": "end"}, lane.name));
      let last = 0;
      for (const [a, d] of lane.segments) {
        const r = el("rect", {x: x(a), y: y + 4, width: Math.max(0.8, x(a + d) - x(a)), height: laneH - 8,
                              fill: LANE_COLORS[lane.name] || "#888", stroke: "#fff", "stroke-width": 0.5});
        r.appendChild(el("title", {}, `${lane.name}: ${fmt(d)} s from ${fmt(a)} s`));
        s.appendChild(r);
        last = Math.max(last, a + d);
      }
      s.appendChild(el("text", {x: x(last) + 4, y: y + laneH / 2 + 4}, `${fmt(lane.busy_s)} s`));
      if (i === 0 && t.outer_s > t.compute_end_s * (1 + 1e-9)) {
        const idle = el("rect", {x: x(t.compute_end_s), y: y + 4, width: x(t.outer_s) - x(t.compute_end_s),
                                 height: laneH - 8, fill: "url(#hatch)", stroke: "#999", "stroke-width": 0.5});
        idle.appendChild(el("title", {}, `compute idle, waiting for the sync: ${fmt(t.outer_s - t.compute_end_s)} s`));
        s.appendChild(idle);
      }
    });
    s.appendChild(el("line", {x1: x(t.outer_s), x2: x(t.outer_s), y1: top - 6, y2: axisY, stroke: "#222",
                              "stroke-dasharray": "4 3"}));
    const room = W - x(t.outer_s) > 110;
    s.appendChild(el("text", {x: room ? x(t.outer_s) + 4 : x(t.outer_s) - 4, y: top - 8, "text-anchor": room ? "start" : "end"},
                     `outer step ${fmt(t.outer_s)} s`));
    return s;
  }

  /* Horizontal bars with their values written at the end (efficiency factors, 0..1). */
  function efficiency(items, W = 640) {
    const left = Math.min(190, Math.round(W * 0.46)), barH = 22, top = 26, H = top + items.length * barH + 8;
    const s = svg(W, H, "Efficiency factors: the fraction of compute that counts");
    s.appendChild(el("text", {x: 0, y: 14, "font-weight": 600}, "Efficiency factors: the fraction of compute that counts"));
    const x = scale(0, 1, left, W - 52, false);
    items.forEach((it, i) => {
      const y = top + i * barH, last = i === items.length - 1;
      s.appendChild(el("text", {x: left - 6, y: y + barH / 2 + 4, "text-anchor": "end"}, it.label));
      s.appendChild(el("rect", {x: left, y: y + 3, width: x(1) - left, height: barH - 6, fill: "#f6f8fa"}));
      s.appendChild(el("rect", {x: left, y: y + 3, width: Math.max(0, x(Math.min(1, it.value || 0)) - left),
                                height: barH - 6, fill: last ? "#2a9d8f" : "#4c72b0"}));
      s.appendChild(el("text", {x: x(Math.min(1, it.value || 0)) + 4, y: y + barH / 2 + 4},
                       it.value === null ? "-" : it.value.toFixed(4)));
    });
    return s;
  }

  /* Days to target against one input: the fastest plan and the user's plan, the duration limit,
     the current value; log axes where the values span decades. */
  function curve(data, W = 680) {
    const H = W < 520 ? 300 : 350, L = 58, R = 14, T = W < 520 ? 62 : 46, B = 46;
    const series = [
      {key: "fastest", name: "fastest plan at each point", color: "#2a9d8f", points: data.fastest},
      {key: "yours", name: "your plan", color: "#4c72b0", points: data.yours || []},
    ].filter(sr => sr.points.length);
    const ys = [];
    for (const sr of series) for (const p of sr.points) if (p.days > 0 && isFinite(p.days)) ys.push(p.days);
    if (data.limit_days) ys.push(data.limit_days);
    const label = `Days to target against ${data.input.label}`;
    const s = svg(W, H, label);
    s.appendChild(el("text", {x: 0, y: 14, "font-weight": 600}, label));
    if (!ys.length) {
      s.appendChild(el("text", {x: W / 2, y: H / 2, "text-anchor": "middle"}, "no point reaches the target"));
      return s;
    }
    const xs = data.xs, xlo = Math.min(...xs), xhi = Math.max(...xs);
    const xlog = data.input.log && xlo > 0 && xhi / xlo >= 10;
    let ylo = Math.min(...ys), yhi = Math.max(...ys);
    const ylog = yhi / ylo >= 30;
    if (!ylog) { ylo = Math.max(0, ylo - 0.08 * (yhi - ylo || yhi)); yhi = yhi + 0.08 * (yhi - ylo || yhi); }
    else { ylo /= 1.3; yhi *= 1.3; }
    const x = scale(xlo, xhi, L, W - R, xlog), y = scale(ylo, yhi, H - B, T, ylog);
    const g = el("g", {class: "axis"});
    for (const v of ticks(xlo, xhi, xlog, 6)) {
      g.appendChild(el("line", {x1: x(v), x2: x(v), y1: T, y2: H - B, class: "grid"}));
      g.appendChild(el("text", {x: x(v), y: H - B + 14, "text-anchor": "middle"}, fmt(v)));
    }
    for (const v of ticks(ylo, yhi, ylog, 5)) {
      g.appendChild(el("line", {x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid"}));
      g.appendChild(el("text", {x: L - 5, y: y(v) + 4, "text-anchor": "end"}, fmt(v)));
    }
    g.appendChild(el("line", {x1: L, x2: W - R, y1: H - B, y2: H - B}));
    g.appendChild(el("line", {x1: L, x2: L, y1: T, y2: H - B}));
    g.appendChild(el("text", {x: (L + W - R) / 2, y: H - 12, "text-anchor": "middle", fill: "#59636e"},
                     `${data.input.label}, ${data.input.unit}${xlog ? " (log scale)" : ""}`));
    g.appendChild(el("text", {x: 12, y: (T + H - B) / 2, "text-anchor": "middle", fill: "#59636e",
                              transform: `rotate(-90 12 ${(T + H - B) / 2})`}, `days to target${ylog ? " (log)" : ""}`));
    s.appendChild(g);
    if (data.limit_days && data.limit_days >= ylo && data.limit_days <= yhi) {
      s.appendChild(el("line", {x1: L, x2: W - R, y1: y(data.limit_days), y2: y(data.limit_days), stroke: "#cf222e",
                                "stroke-dasharray": "5 4"}));
      s.appendChild(el("text", {x: W - R - 4, y: y(data.limit_days) - 4, "text-anchor": "end", fill: "#cf222e"},
                       `duration limit ${fmt(data.limit_days, 4)} d`));
    }
    if (data.current !== null && data.current !== undefined && data.current >= xlo && data.current <= xhi) {
      s.appendChild(el("line", {x1: x(data.current), x2: x(data.current), y1: T, y2: H - B, stroke: "#8c959f",
                                "stroke-dasharray": "2 3"}));
      s.appendChild(el("text", {x: x(data.current) + 3, y: T + 10, fill: "#59636e"}, "now"));
    }
    for (const sr of series) {
      const pts = sr.points.filter(p => p.days > 0 && isFinite(p.days) && p.days >= ylo && p.days <= yhi);
      if (pts.length > 1)
        s.appendChild(el("polyline", {points: pts.map(p => `${x(p.x)},${y(p.days)}`).join(" "), fill: "none",
                                      stroke: sr.color, "stroke-width": 2, class: `series-${sr.key}`}));
      for (const p of pts) {
        const within = sr.key === "fastest" ? p.reachable : p.feasible;
        const c = el("circle", {cx: x(p.x), cy: y(p.days), r: 3.5, fill: within ? sr.color : "#fff", stroke: sr.color,
                                "stroke-width": 1.5, class: `point-${sr.key}`});
        c.appendChild(el("title", {}, `${sr.name}: ${fmt(p.x, 4)} ${data.input.unit} -> ${fmt(p.days, 4)} days` +
                                       (p.plan_short ? ` (${p.plan_short})` : "") + (within ? "" : "; breaks a limit")));
        s.appendChild(c);
      }
    }
    series.forEach((sr, i) => {
      const lx = W < 520 ? 0 : L + i * 200, ly = W < 520 ? 30 + 15 * i : 30;
      s.appendChild(el("line", {x1: lx, x2: lx + 18, y1: ly, y2: ly, stroke: sr.color, "stroke-width": 2}));
      s.appendChild(el("text", {x: lx + 22, y: ly + 4}, sr.name));
    });
    return s;
  }

  /* The comparison: one bar per preset of the objective's value, best first; missing plans marked. */
  function comparison(data, W = 640) {
    const rows = data.rows, left = 130, barH = 22, top = 26, H = top + rows.length * barH + 30;
    const unit = {min_time: "days to target", min_cost: "cost, USD", max_compute: "compute, FLOP"}[data.objective];
    const value = r => data.objective === "min_time" ? r.days : r.value;
    const s = svg(W, H, `Hardware presets ranked by ${data.objective}`);
    s.appendChild(el("text", {x: 0, y: 14, "font-weight": 600}, `${unit} per hardware preset (${data.objective})`));
    const vals = rows.map(value).filter(v => v > 0 && isFinite(v));
    if (data.objective === "min_time" && data.limit_days) vals.push(data.limit_days);
    const hi = vals.length ? Math.max(...vals) * 1.15 : 1;
    const x = scale(0, hi, left, W - 70, false);
    rows.forEach((r, i) => {
      const y = top + i * barH, v = value(r);
      s.appendChild(el("text", {x: left - 6, y: y + barH / 2 + 4, "text-anchor": "end"}, `${r.feasible ? r.rank + ". " : ""}${r.hardware}`));
      if (r.feasible && v > 0 && isFinite(v)) {
        s.appendChild(el("rect", {x: left, y: y + 3, width: x(v) - left, height: barH - 6, fill: i === 0 ? "#2a9d8f" : "#5b7db1"}));
        s.appendChild(el("text", {x: x(v) + 4, y: y + barH / 2 + 4}, data.objective === "min_cost" ? "$" + fmt(v) : fmt(v, 4)));
      } else {
        s.appendChild(el("text", {x: left + 4, y: y + barH / 2 + 4, fill: "#cf222e"}, r.fastest_days ?
          `misses the limit: fastest ${fmt(r.fastest_days, 4)} d` : "no plan"));
      }
    });
    if (data.objective === "min_time" && data.limit_days) {
      s.appendChild(el("line", {x1: x(data.limit_days), x2: x(data.limit_days), y1: top, y2: H - 26, stroke: "#cf222e",
                                "stroke-dasharray": "5 4"}));
      s.appendChild(el("text", {x: x(data.limit_days), y: H - 12, "text-anchor": "middle", fill: "#cf222e"},
                       `limit ${fmt(data.limit_days, 4)} d`));
    }
    return s;
  }

  return {timeline, efficiency, curve, comparison, fmt};
})();
