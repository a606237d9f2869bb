/* dtplan serve: the page. Its state is the instance (and the plan): every control edits the raw
   instance JSON, which is what gets downloaded, loaded and put in the link (#i=...&p=..., base64url
   of the JSON). The server checks everything (the same schema and messages as the command line)
   and answers: evaluation at once, solves and other long answers as jobs with progress and a
   cancel button. */
"use strict";

const state = {meta: null, instance: {}, plan: {}, resolved: {}, evaluation: null, optimum: null,
               seq: 0, timer: null, jobs: {}};
const $ = (sel, root = document) => root.querySelector(sel);
const fmt = Charts.fmt;

// -- small helpers ---------------------------------------------------------------------------------

function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
  return node;
}

function getPath(obj, path) {
  let node = obj;
  for (const key of path.split(".")) {
    if (node === null || typeof node !== "object" || Array.isArray(node)) return undefined;
    node = node[key];
  }
  return node;
}

function setPath(obj, path, value) {
  const keys = path.split(".");
  let node = obj;
  for (const key of keys.slice(0, -1)) {
    if (node[key] === null || typeof node[key] !== "object" || Array.isArray(node[key])) node[key] = {};
    node = node[key];
  }
  node[keys[keys.length - 1]] = value;
}

function deletePath(obj, path) {
  const keys = path.split(".");
  let node = obj;
  for (const key of keys.slice(0, -1)) {
    if (node === null || typeof node !== "object") return;
    node = node[key];
  }
  if (node && typeof node === "object") delete node[keys[keys.length - 1]];
}

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

// What a control's text means: a number when it reads as one, else the text itself (the schema
// then says what is wrong with it, in the CLI's words); empty means "absent: the default".
function parseText(text, kind) {
  const t = text.trim();
  if (t === "") return undefined;
  if (kind === "text") return text;
  if (kind === "json") { try { return JSON.parse(t); } catch (e) { return t; } }
  if (kind === "bool") return t === "true" ? true : t === "false" ? false : t;
  if (kind === "list") {
    if (t.startsWith("[")) { try { return JSON.parse(t); } catch (e) { return t; } }
    return t.split(",").map(s => s.trim()).filter(s => s !== "").map(s => {
      if (NUMBER.test(s)) return Number(s);
      if (s === "true" || s === "false") return s === "true";
      return s;
    });
  }
  if (kind === "number" || kind === "integer" || kind === "days") return NUMBER.test(t) ? Number(t) : t;
  return t;
}

function showNumber(n) {
  if (typeof n !== "number") return String(n);
  const a = Math.abs(n);
  return a >= 1e7 || (a > 0 && a < 1e-4) ? n.toExponential().replace("e+", "e") : String(n);
}

function showValue(v, kind) {
  if (v === undefined || v === null) return "";
  if (kind === "json" || (typeof v === "object" && !Array.isArray(v))) return JSON.stringify(v);
  if (Array.isArray(v)) return v.every(x => typeof x !== "object") ? v.map(showNumber).join(", ") : JSON.stringify(v);
  return showNumber(v);
}

function b64urlEncode(text) {
  const bytes = new TextEncoder().encode(text);
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function b64urlDecode(text) {
  const bin = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return new TextDecoder().decode(Uint8Array.from(bin, c => c.charCodeAt(0)));
}

function notice(text, ms = 2500) {
  const n = $("#notice");
  n.textContent = text;
  n.hidden = false;
  clearTimeout(notice.timer);
  notice.timer = setTimeout(() => { n.hidden = true; }, ms);
}

async function api(method, url, body) {
  let response;
  try {
    response = await fetch(url, {method, headers: body ? {"Content-Type": "application/json"} : {},
                                 body: body ? JSON.stringify(body) : undefined});
  } catch (e) {
    return {status: 0, data: {error: `the dtplan server cannot be reached (${e.message}): is dtplan serve still running?`}};
  }
  let data = null;
  try { data = await response.json(); } catch (e) { data = {error: `the server answered ${response.status}`}; }
  return {status: response.status, data};
}

// Charts are drawn at their container's width (text stays readable on a phone) and redrawn when it changes.
const drawn = new Map();
function draw(container, chart, data) {
  drawn.set(container, [chart, data]);
  const width = Math.max(300, Math.min(760, Math.floor(container.clientWidth || 640)));
  container.replaceChildren(chart(data, width));
}
window.addEventListener("resize", () => {
  clearTimeout(draw.timer);
  draw.timer = setTimeout(() => {
    for (const [container, [chart, data]] of drawn) {
      if (container.isConnected) draw(container, chart, data); else drawn.delete(container);
    }
  }, 150);
});

const days = d => d === null || d === undefined ? "-" : `${fmt(d, 5)} days`;
const usd = x => x === null || x === undefined ? "-" : "$" + Math.round(x).toLocaleString("en-US");

// -- the instance form -----------------------------------------------------------------------------

function presetOptions(field) {
  const p = state.meta.presets;
  if (field.presets === "hardware")
    return p.hardware.map(hw => [hw.id, `${hw.id}: ${hw.name}, ${fmt(hw.node_peak_fp16_pflops)} PFLOP/s, ` +
                                        `${fmt(hw.node_hbm_gb)} GB, $${Math.round(hw.node_price_usd).toLocaleString("en-US")} per node`]);
  if (field.presets === "models")
    return p.models.map(m => [m.id, `${m.id}: ${fmt(m.params / 1e9, 4)}B` + (m.active_params ? ` (${fmt(m.active_params / 1e9, 3)}B active)` : "")]);
  if (field.presets === "profiles") return p.profiles.map(x => [x, x]);
  if (field.presets === "search") return p.search.map(x => [x, x]);
  return field.choices.map(c => [c, c]);
}

function control(field, prefix) {
  const id = `${prefix}-${field.path.replace(/[^a-z0-9]+/gi, "-")}`;
  let input;
  if (field.kind === "choice" || field.kind === "bool") {
    const options = field.kind === "bool" ? [["true", "true"], ["false", "false"]] : presetOptions(field);
    input = h("select", {id}, h("option", {value: ""}, "default"), options.map(([v, t]) => h("option", {value: v}, t)));
    if (field.path === "fleet.hardware") input.append(h("option", {value: "__custom__"}, "custom hardware (below)"));
  } else if (field.kind === "json") {
    input = h("textarea", {id, rows: 2, spellcheck: "false"});
  } else {
    input = h("input", {id, type: "text", spellcheck: "false",
                        inputmode: ["number", "integer"].includes(field.kind) ? "decimal" : undefined});
  }
  input.dataset.path = field.path;
  input.dataset.kind = field.kind;
  if (field.presets) input.dataset.presets = field.presets;
  return input;
}

function buildInstanceForm() {
  const form = $("#instance-form");
  form.replaceChildren();
  for (const section of state.meta.sections) {
    const box = h("div", {class: "fields"});
    const details = h("details", {class: "section", open: ["question", "model", "training", "fleet", "network", "limits"].includes(section.id),
                                  id: `section-${section.id}`},
                      h("summary", {}, section.title), box);
    if (section.id === "network") box.append(...networkProfileRow());
    for (const field of state.meta.fields.filter(f => f.section === section.id)) {
      if (field.kind === "constants") { box.append(...constantsEditor(field)); continue; }
      if (field.kind === "table") { box.append(...tableEditor(field)); continue; }
      const input = control(field, "i");
      input.title = field.help;
      box.append(h("label", {for: input.id, title: field.help}, field.label, field.unit ? h("span", {class: "unit"}, field.unit) : null),
                 input, h("div", {class: "field-error", "data-error-for": field.path}));
      input.addEventListener(input.tagName === "SELECT" ? "change" : "input", () => onInstanceInput(field, input));
    }
    box.append(h("div", {class: "field-error full", "data-error-for": section.id}));
    form.append(details);
  }
}

function networkProfileRow() {
  const select = h("select", {id: "network-profile", title: state.meta.network_profiles.source},
                   h("option", {value: ""}, "custom (the fields below)"),
                   state.meta.network_profiles.profiles.map(p =>
                     h("option", {value: p.id}, `${p.name}: ${p.up_mbps} Mb/s, ${p.rtt_ms} ms`)));
  select.addEventListener("change", () => {
    const p = state.meta.network_profiles.profiles.find(x => x.id === select.value);
    if (!p) return;
    for (const k of ["up_mbps", "down_mbps", "rtt_ms"]) setPath(state.instance, `network.wan.${k}`, p[k]);
    fillInstanceForm();
    changed();
  });
  return [h("label", {for: "network-profile", title: state.meta.network_profiles.source}, "WAN profile",
            h("span", {class: "unit"}, "sets the three WAN fields")), select];
}

function constantsEditor(field) {
  const wrap = h("div", {class: "constants full", id: "constants"});
  const add = h("select", {id: "constant-add", "aria-label": "add an assumption constant"},
                h("option", {value: ""}, "add a constant…"),
                state.meta.presets.constants.map(c => h("option", {value: c.name}, c.name)));
  add.addEventListener("change", () => {
    if (!add.value) return;
    const current = getPath(state.instance, "assumptions.constants") || {};
    const resolved = (state.resolved["assumptions.constants"] || {});
    const profile = getPath(state.instance, "assumptions.profile") || "reference";
    const entry = state.meta.presets.constants.find(c => c.name === add.value);
    const start = add.value in resolved ? resolved[add.value] : entry ? entry.values[profile] : null;
    setPath(state.instance, "assumptions.constants", {...current, [add.value]: start === undefined ? null : start});
    add.value = "";
    fillConstants();
    changed();
  });
  return [h("label", {class: "full", title: field.help}, field.label, h("span", {class: "unit"}, field.unit)),
          wrap, add, h("div", {class: "field-error", "data-error-for": "assumptions.constants"})];
}

// A list of objects (network.sites, network.links): one row per object, one column per property
// of the schema; an empty cell leaves the property out.
function tableEditor(field) {
  const wrap = h("div", {class: "table-editor full table-wrap", "data-table": field.path});
  const add = h("button", {type: "button", class: "full", onclick: () => {
    const rows = getPath(state.instance, field.path);
    setPath(state.instance, field.path, [...(Array.isArray(rows) ? rows : []), {}]);
    fillTables();
    changed();
  }}, `add a row to ${field.path}`);
  return [h("label", {class: "full", title: field.help}, field.label, h("span", {class: "unit"}, field.unit)),
          wrap, add, h("div", {class: "field-error", "data-error-for": field.path})];
}

function fillTables() {
  for (const field of state.meta.fields.filter(f => f.kind === "table")) {
    const wrap = document.querySelector(`[data-table="${field.path}"]`);
    const rows = getPath(state.instance, field.path);
    if (!wrap) continue;
    if (!Array.isArray(rows) || !rows.length) { wrap.replaceChildren(); continue; }
    const head = h("tr", {}, field.columns.map(c => h("th", {title: c.help}, c.name)), h("th"));
    const body = rows.map((row, i) => {
      const cells = field.columns.map(c => {
        const path = `${field.path}[${i}].${c.name}`;
        const value = row && typeof row === "object" ? row[c.name] : undefined;
        const input = h("input", {type: "text", value: showValue(value, "number"), title: c.help, spellcheck: "false",
                                  "aria-label": `${field.path} row ${i + 1} ${c.name}`});
        input.dataset.path = path;
        input.addEventListener("input", () => {
          const list = getPath(state.instance, field.path);
          if (!list[i] || typeof list[i] !== "object" || Array.isArray(list[i])) list[i] = {};
          const t = input.value.trim();
          if (t === "") delete list[i][c.name];
          else list[i][c.name] = NUMBER.test(t) ? Number(t) : t;
          changed();
        });
        return h("td", {}, input);
      });
      const remove = h("button", {type: "button", title: `remove row ${i + 1}`, onclick: () => {
        getPath(state.instance, field.path).splice(i, 1);
        fillTables();
        changed();
      }}, "×");
      return [h("tr", {}, cells, h("td", {}, remove)),
              h("tr", {}, h("td", {colspan: field.columns.length + 1, class: "field-error", "data-error-for": `${field.path}[${i}]`}))];
    });
    wrap.replaceChildren(h("table", {class: "rows"}, head, body.flat()));
  }
}

function fillConstants() {
  const wrap = $("#constants");
  if (!wrap) return;
  wrap.replaceChildren();
  const constants = getPath(state.instance, "assumptions.constants");
  if (!constants || typeof constants !== "object") return;
  for (const [name, value] of Object.entries(constants)) {
    const path = `assumptions.constants.${name}`;
    const input = h("input", {type: "text", value: showValue(value, "json"), "aria-label": name, spellcheck: "false"});
    input.dataset.path = path;
    input.addEventListener("input", () => {
      const v = input.value.trim();
      let parsed;
      try { parsed = JSON.parse(v); } catch (e) { parsed = v; }
      setPath(state.instance, path, parsed);
      changed();
    });
    const remove = h("button", {type: "button", title: `remove ${name}`, onclick: () => {
      deletePath(state.instance, path);
      fillConstants();
      changed();
    }}, "×");
    wrap.append(h("div", {class: "const-row"}, h("code", {}, name), input, remove),
                h("div", {class: "field-error", "data-error-for": path}));
  }
}

function onInstanceInput(field, input) {
  if (field.path === "fleet.hardware") {
    if (input.value === "__custom__") {
      setPath(state.instance, "fleet.hardware", customHardwareFrom(getPath(state.instance, "fleet.hardware")));
      fillInstanceForm();
    } else if (input.value) setPath(state.instance, "fleet.hardware", input.value);
    else deletePath(state.instance, "fleet.hardware");
    showHardwareSection();
    return changed();
  }
  const value = parseText(input.value, field.kind);
  if (value === undefined) deletePath(state.instance, field.path);
  else setPath(state.instance, field.path, value);
  if (field.path.startsWith("network.wan.")) syncNetworkProfile();
  changed();
}

// Custom hardware starts from the preset chosen so far, per accelerator (its fp16 peak, memory, price).
function customHardwareFrom(id) {
  const hw = state.meta.presets.hardware.find(x => x.id === id) || state.meta.presets.hardware[0];
  const n = hw.accelerators_per_node;
  return {id: "custom", name: `custom (from ${hw.id})`, accelerator: hw.accelerator, accelerators_per_node: n,
          peak_tflops_per_accelerator: {fp16: Number((hw.node_peak_fp16_pflops * 1000 / n).toPrecision(6))},
          hbm_gb_per_accelerator: Number((hw.node_hbm_gb / n).toPrecision(6)),
          price_usd_per_accelerator: Number((hw.node_price_usd / n).toPrecision(6))};
}

function showHardwareSection() {
  const custom = typeof getPath(state.instance, "fleet.hardware") === "object";
  const section = $("#section-hardware");
  section.hidden = !custom;
  if (custom) section.open = true;
}

function syncNetworkProfile() {
  const wan = getPath(state.instance, "network.wan") || {};
  const match = state.meta.network_profiles.profiles.find(p =>
    p.up_mbps === wan.up_mbps && p.down_mbps === wan.down_mbps && p.rtt_ms === wan.rtt_ms);
  $("#network-profile").value = match ? match.id : "";
}

function fillInstanceForm() {
  for (const input of document.querySelectorAll("#instance-form [data-kind]")) {
    const path = input.dataset.path, kind = input.dataset.kind;
    const value = getPath(state.instance, path);
    if (path === "fleet.hardware") input.value = typeof value === "object" && value !== null ? "__custom__" : (value || "");
    else if (input.tagName === "SELECT") input.value = value === undefined || value === null ? "" : String(value);
    else if (document.activeElement !== input) input.value = showValue(value, kind);
  }
  fillConstants();
  fillTables();
  showHardwareSection();
  syncNetworkProfile();
  fillPlaceholders();
}

// What an empty control stands for: the value the schema resolved (preset, profile or default).
function fillPlaceholders() {
  for (const input of document.querySelectorAll("#instance-form [data-kind]")) {
    const path = input.dataset.path;
    const resolved = state.resolved[path];
    if (input.tagName === "SELECT") {
      const first = input.options[0];
      const none = ["models", "search"].includes(input.dataset.presets) ? "none" : "default";
      if (first && first.value === "") first.textContent = resolved === undefined || resolved === null
        ? none : `default (${showValue(resolved, input.dataset.kind)})`;
    } else {
      input.placeholder = resolved === undefined || resolved === null ? "" : showValue(resolved, input.dataset.kind);
    }
  }
}

// -- the plan form ---------------------------------------------------------------------------------

function buildPlanForm() {
  const form = $("#plan-form");
  form.replaceChildren();
  for (const field of state.meta.plan_fields) {
    const input = control(field, "p");
    input.addEventListener(input.tagName === "SELECT" ? "change" : "input", () => {
      const value = parseText(input.value, field.kind);
      if (value === undefined) delete state.plan[field.path];
      else state.plan[field.path] = value;
      if (field.path === "mode") showPlanFields();
      changed();
    });
    const wrap = h("div", {class: "pf" + (field.path === "description" ? " wide" : ""), "data-plan-field": field.path},
                   h("label", {for: input.id}, field.label, field.unit ? h("span", {class: "unit"}, field.unit) : null),
                   input, h("div", {class: "field-error", "data-error-for": `plan.${field.path}`}));
    form.append(wrap);
  }
}

function showPlanFields() {
  const mode = state.plan.mode;
  const moe = (state.resolved["model.moe_layers"] || 0) > 0;
  for (const field of state.meta.plan_fields) {
    const wrap = document.querySelector(`[data-plan-field="${field.path}"]`);
    const used = field.modes.includes(mode) || !state.meta.plan_fields[0].choices.includes(mode);
    const relevant = field.path === "expert_parallel" ? moe : true;
    wrap.hidden = !((used && relevant) || state.plan[field.path] !== undefined);
  }
}

function fillPlanForm() {
  for (const input of document.querySelectorAll("#plan-form [data-kind]")) {
    const value = state.plan[input.dataset.path];
    if (input.tagName === "SELECT") input.value = value === undefined ? "" : String(value);
    else if (document.activeElement !== input) input.value = showValue(value, input.dataset.kind);
  }
  showPlanFields();
}

// -- sliders: the reference page's way of asking "and with more bandwidth?" --------------------------

// Each slider moves one input on a log scale and writes it into the instance or the plan (the
// fields of the form follow); the evaluation answers within milliseconds.
const SLIDERS = [
  {key: "bandwidth", label: "WAN bandwidth", unit: "Mb/s", lo: 1, hi: 100000, digits: 3,
   get: () => getPath(state.instance, "network.wan.up_mbps") ?? state.resolved["network.wan.up_mbps"],
   set: v => { setPath(state.instance, "network.wan.up_mbps", v); setPath(state.instance, "network.wan.down_mbps", v); }},
  {key: "nodes", label: "nodes used", unit: "", lo: 1, hi: () => getPath(state.instance, "fleet.nodes"), integer: true,
   get: () => state.plan.nodes, set: v => { state.plan.nodes = v; }},
  {key: "inner_steps", label: "inner steps H", unit: "", lo: 1, hi: 10000, integer: true, synced: true,
   get: () => state.plan.inner_steps ?? 1, set: v => { state.plan.inner_steps = v; }},
  {key: "compression", label: "compression Cr", unit: "x", lo: 1, hi: 1000, digits: 3, synced: true,
   get: () => state.plan.compression ?? 1, set: v => { state.plan.compression = v; }},
];
const STEPS = 1000;

function sliderBounds(s) {
  const hi = typeof s.hi === "function" ? s.hi() : s.hi;
  return [s.lo, typeof hi === "number" && hi > s.lo ? hi : s.lo * 10];
}

function buildSliders() {
  const box = $("#sliders");
  box.replaceChildren(...SLIDERS.map(s => {
    const range = h("input", {type: "range", min: 0, max: STEPS, step: 1, id: `slide-${s.key}`, "aria-label": s.label});
    const out = h("output", {for: range.id, id: `slide-${s.key}-value`});
    range.addEventListener("input", () => {
      const [lo, hi] = sliderBounds(s);
      let v = lo * (hi / lo) ** (range.value / STEPS);
      v = s.integer ? Math.round(v) : Number(v.toPrecision(s.digits));
      s.set(v);
      out.textContent = `${v.toLocaleString("en-US")} ${s.unit}`;
      fillInstanceForm();
      fillPlanForm();
      changed();
    });
    return h("label", {class: "slider", "data-slider": s.key}, h("span", {}, s.label), range, out);
  }));
}

function syncSliders() {
  const piped = state.plan.mode === "pipeline_wan";
  for (const s of SLIDERS) {
    const wrap = document.querySelector(`[data-slider="${s.key}"]`);
    if (!wrap) continue;
    wrap.hidden = Boolean(s.synced && piped);
    const v = s.get(), [lo, hi] = sliderBounds(s), range = $("input", wrap);
    if (typeof v !== "number" || !(v > 0)) continue;
    if (document.activeElement !== range)
      range.value = Math.round(STEPS * Math.log(Math.min(hi, Math.max(lo, v)) / lo) / Math.log(hi / lo));
    $("output", wrap).textContent = `${v.toLocaleString("en-US")} ${s.unit}`;
  }
}

// -- state: load, change, link, download -----------------------------------------------------------

function setState(instance, plan, source) {
  state.instance = instance && typeof instance === "object" ? instance : {};
  state.plan = plan && typeof plan === "object" ? plan : defaultPlan();
  state.optimum = null;
  for (const id of ["optimum-card", "feasible-card", "compare-card"]) $(`#${id}`).hidden = true;
  $("#curve-card .answer").replaceChildren();
  fillInstanceForm();
  fillPlanForm();
  setCurveRange();
  changed();
  if (source) notice(`loaded ${source}`);
}

function defaultPlan() {
  const nodes = getPath(state.instance, "fleet.nodes");
  return {...state.meta.default_plan, nodes: Number.isInteger(nodes) ? nodes : state.meta.default_plan.nodes};
}

function link() {
  return `${location.origin}${location.pathname}#i=${b64urlEncode(JSON.stringify(state.instance))}` +
         `&p=${b64urlEncode(JSON.stringify(state.plan))}`;
}

function changed() {
  history.replaceState(null, "", link());
  document.title = `dtplan: ${typeof state.instance.name === "string" && state.instance.name || "instance"}`;
  syncSliders();
  clearTimeout(state.timer);
  state.timer = setTimeout(evaluate, 120);
}

function fromHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  if (!params.has("i")) return false;
  try {
    const instance = JSON.parse(b64urlDecode(params.get("i")));
    const plan = params.has("p") ? JSON.parse(b64urlDecode(params.get("p"))) : null;
    setState(instance, plan);
    return true;
  } catch (e) {
    showProblems([{field: "<root>", text: `link: cannot read the instance in this link (${e.message})`}], "instance");
    return false;
  }
}

function fileStem() {
  const name = typeof state.instance.name === "string" ? state.instance.name.trim() : "";
  return name.replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 60) || "instance";
}

function saveBlob(blob, filename) {
  const a = h("a", {href: URL.createObjectURL(blob), download: filename});
  document.body.append(a);
  a.click();
  setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
}

function download(data = state.instance, filename = `${fileStem()}.json`) {
  saveBlob(new Blob([JSON.stringify(data, null, 2) + "\n"], {type: "application/json"}), filename);
}

// The report is made by the server (the same writer as `dtplan evaluate --report`), then saved.
async function downloadReport() {
  const button = $("#download-report");
  button.disabled = true;
  try {
    const response = await fetch("/api/report", {method: "POST", headers: {"Content-Type": "application/json"},
                                                 body: JSON.stringify({instance: state.instance, plan: state.plan})});
    if (!response.ok) {
      const data = await response.json().catch(() => ({}));
      return notice((data.problems || []).map(p => p.text).join("; ") || data.error || `report: ${response.status}`, 6000);
    }
    saveBlob(await response.blob(), `${fileStem()}.report.html`);
  } catch (e) {
    notice(`report: ${e.message}`, 6000);
  } finally {
    button.disabled = false;
  }
}

async function loadFile(file) {
  const text = await file.text();
  let data;
  try { data = JSON.parse(text); } catch (e) {
    return showProblems([{field: "<root>", text: `${file.name}: not valid JSON (${e.message})`}], "instance");
  }
  if (data && typeof data === "object" && !Array.isArray(data) && "mode" in data && !("fleet" in data)) {
    state.plan = data;       // a plan file
    fillPlanForm();
    changed();
    return notice(`plan loaded from ${file.name}`);
  }
  setState(data, null, file.name);
}

async function loadExample(name) {
  const {status, data} = await api("GET", `/api/examples/${name}`);
  if (status !== 200) return showProblems(data.problems || [], "instance");
  setState(data.instance, data.plan, `example ${name}`);
}

// -- evaluation ------------------------------------------------------------------------------------

function clearProblems(scope) {
  const sel = scope === "plan" ? "#plan-card [data-error-for]" : "#instance-form [data-error-for], #general-problems";
  for (const node of document.querySelectorAll(sel)) node.textContent = "";
  const inputs = scope === "plan" ? "#plan-form [data-path]" : "#instance-form [data-path]";
  for (const node of document.querySelectorAll(inputs)) node.classList.remove("invalid");
}

// Each problem goes next to the field it names, or the nearest section that holds that field.
function showProblems(problems, scope) {
  for (const p of problems) {
    let path = p.field || p.path || "<root>";
    let target = null;
    while (path) {
      target = document.querySelector(`[data-error-for="${CSS.escape(path)}"]`);
      if (target) break;
      const cut = Math.max(path.lastIndexOf("."), path.lastIndexOf("["));
      path = cut > 0 ? path.slice(0, cut) : "";
    }
    if (!target) target = scope === "plan" ? $('[data-error-for="plan"]') : $("#general-problems");
    target.textContent += (target.textContent ? "\n" : "") + p.text;
    const input = document.querySelector(`[data-path="${CSS.escape(p.field || "")}"]`) ||
                  document.querySelector(`[data-path="${CSS.escape(path)}"]`);
    if (input) input.classList.add("invalid");
    const details = target.closest("details");
    if (details) details.open = true;
  }
}

async function evaluate() {
  const seq = ++state.seq;
  const {status, data} = await api("POST", "/api/evaluate", {instance: state.instance, plan: state.plan});
  if (seq !== state.seq) return;           // a newer edit is on its way
  clearProblems("instance");
  clearProblems("plan");
  if (status !== 200) {
    showProblems(data.problems || [{field: "<root>", text: data.error}], "instance");
    state.evaluation = null;
    return renderEvaluation();
  }
  state.resolved = data.resolved || {};
  showProblems(data.instance_problems, "instance");
  showProblems(data.plan_problems, "plan");
  fillPlaceholders();
  showPlanFields();
  syncSliders();
  state.evaluation = data.evaluation;
  renderEvaluation();
  if (state.optimum) renderOptimum();
}

function renderEvaluation() {
  const e = state.evaluation;
  const headline = $("#headline");
  if (!e) {
    const why = $("#general-problems").textContent || document.querySelector("#instance-form .field-error:not(:empty)")
      ? "Fix the instance's inputs marked in red to see the plan's figures." : "Fix the plan's inputs marked in red.";
    headline.replaceChildren(h("div", {class: "muted", id: "no-evaluation"}, why));
    $("#summary").replaceChildren(h("span", {class: "muted"}, "no evaluation: see the inputs marked in red"));
    for (const id of ["#limits-broken", "#timeline", "#efficiency", "#warnings", "#tables"]) $(id).replaceChildren();
    return;
  }
  const x = e.headline;
  const verdict = e.feasible ? h("span", {class: "chip ok"}, "meets every limit") : h("span", {class: "chip bad"}, "breaks a limit");
  // max_compute asks how much compute the run reaches within the limit: that is the big figure then
  const compute = state.resolved.objective === "max_compute";
  const kind = x.target_kind === "c_quality" ? "C_quality" : "C_local";
  const reached = x.target_kind === "c_quality" ? x.c_quality : x.c_local;
  headline.replaceChildren(
    compute ? h("div", {}, h("span", {class: "big", id: "compute"}, fmt(reached, 4)), ` FLOP ${kind} within the limit `, verdict)
            : h("div", {}, h("span", {class: "big", id: "days"}, fmt(x.days, 5)), " days to target ", verdict),
    h("div", {class: "facts"},
      compute ? h("span", {}, "days to target ", h("b", {id: "days"}, fmt(x.days, 5))) : null,
      h("span", {}, "limit ", h("b", {}, days(x.limit_days))),
      h("span", {}, "cost ", h("b", {id: "cost"}, usd(x.cost_usd))),
      h("span", {}, `${x.nodes.toLocaleString("en-US")} nodes, ${Math.round(x.gpus).toLocaleString("en-US")} accelerators`),
      h("span", {}, "bottleneck ", h("b", {id: "bottleneck"}, e.bottleneck)),
      h("span", {}, "in the limit: C_local ", h("b", {}, fmt(x.c_local, 4)), " FLOP of ", fmt(x.target_flop, 4)),
      h("span", {}, "eta ", h("b", {}, fmt(x.eta, 4)), ", global MFU ", h("b", {}, (100 * x.global_mfu).toFixed(1) + "%"))));
  $("#summary").replaceChildren(compute ? h("span", {class: "days"}, `${fmt(reached, 4)} FLOP`) :
                                h("span", {class: "days", id: "summary-days"}, `${fmt(x.days, 5)} days`),
                                compute ? ` ${kind} in the limit, ` : " to target, ",
                                e.feasible ? h("span", {class: "chip ok"}, "within limits") : h("span", {class: "chip bad"}, "breaks a limit"));
  $("#limits-broken").replaceChildren(e.violations.length ? h("ul", {class: "bad", id: "violations"}, e.violations.map(v => h("li", {}, v))) : "");
  draw($("#timeline"), Charts.timeline, e.timeline);
  draw($("#efficiency"), Charts.efficiency, e.efficiency);
  $("#warnings").replaceChildren(e.warnings.length ? h("ul", {class: "warn"}, e.warnings.map(w => h("li", {}, "warning: " + w))) : "");
  $("#tables").replaceChildren(...e.tables.map(t => h("div", {class: "table-wrap"}, h("h3", {}, t.title),
    h("table", {}, t.rows.map(r => h("tr", {}, h("td", {}, r[0]), h("td", {class: "num"}, r[1]), h("td", {class: "muted"}, r[2] || "")))))));
}

// -- jobs: solve, feasible, compare, curve --------------------------------------------------------

function timeLimit() {
  const text = $("#time-limit").value.trim();
  return text === "" ? null : NUMBER.test(text) ? Number(text) : text;
}

async function runJob(kind, card, body, render) {
  const box = $(`#${card}`);
  box.hidden = false;
  const jobBox = $(".job", box), answer = $(".answer", box);
  const old = state.jobs[kind];
  if (old) api("DELETE", `/api/jobs/${old}`);
  for (const node of document.querySelectorAll(`[data-error-for="objective-options"], [data-error-for="curve"]`)) node.textContent = "";
  const {status, data} = await api("POST", "/api/jobs", {kind, instance: state.instance, ...body});
  if (status !== 202) {
    jobBox.replaceChildren();
    answer.replaceChildren(h("div", {class: "problems"}, (data.problems || []).map(p => p.text).join("\n") || data.error));
    if (kind === "curve") showProblems((data.problems || []).filter(p => p.field.startsWith("curve")), "instance");
    return;
  }
  const id = data.id;
  state.jobs[kind] = id;
  answer.replaceChildren();          // the previous answer is for another question
  const bar = h("div", {class: "bar indeterminate"}, h("div"));
  const label = h("span", {class: "job-label"}, "starting…");
  const cancel = h("button", {type: "button", class: "cancel", onclick: () => api("DELETE", `/api/jobs/${id}`)}, "Cancel");
  jobBox.replaceChildren(h("div", {class: "row"}, label, cancel), bar);
  box.scrollIntoView({block: "nearest", behavior: "smooth"});
  let job = data;
  while (!["done", "bad_input", "error", "cancelled", "time_limit"].includes(job.state)) {
    showProgress(job, bar, label);
    const next = await api("GET", `/api/jobs/${id}?after=${job.version}&wait=0.5`);
    if (next.status !== 200) { job = {state: "error", error: next.data.error}; break; }
    job = next.data;
    if (state.jobs[kind] !== id) return;         // a newer request of the same kind took over
  }
  delete state.jobs[kind];
  jobBox.replaceChildren();
  if (job.state === "done") return render(job.result, answer, job);
  const text = job.state === "cancelled" ? "cancelled" : job.state === "bad_input"
    ? job.problems.map(p => p.text).join("\n") : job.error;
  answer.replaceChildren(h("div", {class: job.state === "cancelled" ? "muted" : "problems", id: `${kind}-ended`}, text));
}

function showProgress(job, bar, label) {
  const p = job.progress || {}, elapsed = job.elapsed_s || 0;
  let fraction = null;
  if (p.total) fraction = p.done / p.total;
  else if (job.time_limit_s) fraction = Math.min(1, elapsed / job.time_limit_s);
  bar.classList.toggle("indeterminate", fraction === null);
  bar.firstChild.style.width = fraction === null ? "" : `${(100 * fraction).toFixed(1)}%`;
  const count = p.total ? ` ${p.done} of ${p.total}` : "";
  const limit = job.time_limit_s ? ` of the ${fmt(job.time_limit_s)} s limit` : "";
  label.textContent = `${job.state === "queued" ? "queued" : (p.message || "working")}${count}, ${elapsed.toFixed(1)} s${limit}`;
}

const PLAN_ROWS = [["mode", "mode"], ["nodes", "nodes"], ["precision", "precision"], ["inner_steps", "H"],
                   ["compression", "Cr"], ["streaming", "streaming"], ["group_size", "k"], ["regional_rounds", "R"],
                   ["stages", "S"], ["micro_batches", "M"], ["activation_compression", "Ca"], ["expert_parallel", "EP"]];

function planValue(plan, key) {
  if (!plan) return "-";
  const v = plan[key];
  const synced = plan.mode !== "pipeline_wan", hier = plan.mode === "hierarchical",
        pipe = ["pp_group", "pipeline_wan"].includes(plan.mode);
  if (["inner_steps", "compression", "streaming"].includes(key) && !synced) return "-";
  if (["group_size", "regional_rounds"].includes(key) && !hier) return "-";
  if (["stages", "micro_batches", "activation_compression"].includes(key) && !pipe) return "-";
  return v === undefined || v === null ? "-" : typeof v === "number" ? v.toLocaleString("en-US") : String(v);
}

function renderOptimum() {
  const r = state.optimum, answer = $("#optimum-card .answer");
  const cls = r.status === "optimal" ? "ok" : r.status === "time_limit" ? "warn" : "bad";
  const gap = r.gap === null || r.gap === undefined ? "-" : r.gap.toExponential(1);
  const parts = [h("div", {class: `status-line ${cls}`, id: "optimum-status"},
                   `${r.status.toUpperCase()} (${r.objective}): ${r.objective_text}`),
                 h("div", {class: "muted"}, `solver ${r.solver}, gap ${gap}, ${r.solve_time_s.toFixed(2)} s, ` +
                   `${r.evaluations.toLocaleString("en-US")} of ${fmt(r.space_size)} plans scored`)];
  if (r.model_params && getPath(state.instance, "search.params"))
    parts.push(h("div", {}, `model size chosen among search.params: ${fmt(r.model_params / 1e9, 4)}B parameters`));
  if (!r.evaluation) {
    parts.push(h("ul", {class: "bad"}, r.infeasibility.map(x => h("li", {}, x))));
    if (r.fastest_days) parts.push(h("div", {}, `the fastest plan needs ${days(r.fastest_days)}`));
    return answer.replaceChildren(...parts);
  }
  const mine = state.evaluation, best = r.evaluation;
  const rows = PLAN_ROWS.filter(([k]) => planValue(r.plan, k) !== "-" || planValue(state.plan, k) !== "-").map(([k, name]) => {
    const a = planValue(state.plan, k), b = planValue(r.plan, k);
    return h("tr", {}, h("td", {}, name), h("td", {class: a !== b ? "diff" : ""}, a), h("td", {class: a !== b ? "diff" : ""}, b));
  });
  const outcome = (name, f) => h("tr", {}, h("td", {}, name), h("td", {class: "num"}, mine ? f(mine) : "-"), h("td", {class: "num"}, f(best)));
  rows.push(
    outcome("days to target", e => days(e.headline.days)),
    outcome("cost", e => usd(e.headline.cost_usd)),
    outcome("C_local in the limit", e => `${fmt(e.headline.c_local, 4)} FLOP`),
    outcome("bottleneck", e => e.bottleneck),
    outcome("limits", e => e.feasible ? "all met" : `${e.violations.length} broken`));
  parts.push(h("div", {class: "table-wrap"}, h("table", {class: "side", id: "side-by-side"},
    h("tr", {}, h("th", {}, ""), h("th", {}, "your plan"), h("th", {}, "optimal plan")), rows)));
  if (r.binding.length) parts.push(h("h3", {}, "Binding at the optimum"), h("ul", {class: "plain"}, r.binding.map(x => h("li", {}, x))));
  if (best.warnings.length) parts.push(h("ul", {class: "warn"}, best.warnings.map(w => h("li", {}, "warning: " + w))));
  const lanes = h("figure"), bars = h("figure");
  parts.push(lanes, bars);
  parts.push(h("div", {class: "row"}, h("button", {type: "button", id: "use-optimum", onclick: () => {
    state.plan = {...r.plan};
    if (!state.plan.description) delete state.plan.description;
    fillPlanForm();
    changed();
    notice("the optimal plan is now your plan");
  }}, "Use the optimal plan as mine")));
  answer.replaceChildren(...parts);
  draw(lanes, Charts.timeline, best.timeline);
  draw(bars, Charts.efficiency, best.efficiency);
}

function renderFeasible(f, answer) {
  const parts = [];
  if (f.timed_out) parts.push(h("div", {class: "status-line warn"}, "TIME LIMIT: reached before a verdict"));
  else if (f.feasible) {
    parts.push(h("div", {class: "status-line ok", id: "feasible-verdict"},
                 `FEASIBLE: the target is reached in ${days(f.result.objective_value / 86400)}`));
    parts.push(h("div", {class: "muted"}, "the fastest plan: " + PLAN_ROWS.map(([k, n]) => [n, planValue(f.result.plan, k)])
      .filter(([, v]) => v !== "-").map(([n, v]) => `${n} ${v}`).join(", ")));
  } else {
    parts.push(h("div", {class: "status-line bad", id: "feasible-verdict"}, "INFEASIBLE: no plan reaches the target within every limit"));
    parts.push(h("ul", {class: "bad"}, f.binding.map(x => h("li", {}, x))));
    if (f.fixes.length) {
      parts.push(h("h3", {}, "The smallest single change that makes it feasible (each re-solved and verified)"));
      parts.push(h("div", {class: "table-wrap"}, h("table", {id: "fixes"},
        h("tr", {}, ["limit", "change", "fields", "time to target", "plan", ""].map(c => h("th", {}, c))),
        f.fixes.map(x => h("tr", {}, h("td", {}, x.limit), h("td", {}, x.summary),
          h("td", {}, Object.entries(x.fields).map(([k, v]) => `${k} = ${showValue(v)}`).join(", ")),
          h("td", {class: "num"}, days(x.days)), h("td", {}, x.plan_short),
          h("td", {}, h("button", {type: "button", onclick: () => {
            for (const [k, v] of Object.entries(x.fields)) setPath(state.instance, k, v);
            fillInstanceForm();
            changed();
            notice(`applied: ${x.summary}`);
          }}, "Apply")))))));
    }
    if (f.no_fix.length) parts.push(h("ul", {class: "plain"}, f.no_fix.map(x => h("li", {}, "no single change: " + x))));
  }
  parts.push(h("div", {class: "muted"}, `${f.solves} solves`));
  answer.replaceChildren(...parts);
}

function renderCompare(c, answer) {
  const value = r => c.objective === "min_time" ? days(r.days) : c.objective === "min_cost" ? usd(r.value) : `${fmt(r.value, 4)} FLOP`;
  const chart = h("figure");
  answer.replaceChildren(chart, h("div", {class: "table-wrap"}, h("table", {id: "ranking"},
    h("tr", {}, ["rank", "hardware", "status", c.objective, "nodes", "cost", "plan / reason"].map(x => h("th", {}, x))),
    c.rows.map(r => h("tr", {}, h("td", {}, r.feasible ? r.rank : "-"), h("td", {}, r.hardware), h("td", {}, r.status),
      h("td", {class: "num"}, r.feasible ? value(r) : "-"), h("td", {class: "num"}, r.nodes ? r.nodes.toLocaleString("en-US") : "-"),
      h("td", {class: "num"}, usd(r.cost_usd)), h("td", {}, r.feasible ? `${r.plan_short}; ${r.bottleneck}` : r.reason))))));
  draw(chart, Charts.comparison, c);
}

function renderCurve(c, answer) {
  const rows = c.xs.map((x, i) => {
    const f = c.fastest[i] || {}, y = (c.yours || [])[i] || {};
    return h("tr", {}, h("td", {class: "num"}, fmt(x, 4)), h("td", {class: "num"}, f.days ? days(f.days) : (f.error || f.status || "-")),
             h("td", {}, f.plan_short || ""), h("td", {class: "num"}, y.days ? days(y.days) : (y.error || "-")));
  });
  const chart = h("figure", {id: "curve-chart"});
  answer.replaceChildren(chart,
    c.input.optimal_note ? h("div", {class: "muted"}, `fastest plan: ${c.input.optimal_note}; the duration limit lifted`)
                         : h("div", {class: "muted"}, "fastest plan: optimal at each point, the duration limit lifted"),
    h("details", {}, h("summary", {}, "points"), h("div", {class: "table-wrap"}, h("table", {},
      h("tr", {}, [`${c.input.label} (${c.input.unit})`, "fastest plan", "its plan", "your plan"].map(x => h("th", {}, x))), rows))));
  draw(chart, Charts.curve, c);
}

// Default range of the curve: around the current value (bandwidth /10 .. x100, nodes /8 .. x8), or the schema's span.
function setCurveRange() {
  const key = $("#curve-input").value;
  const r = state.resolved;
  let low, high;
  if (key === "bandwidth") { const b = getPath(state.instance, "network.wan.up_mbps") || r["network.wan.up_mbps"] || 100; low = b / 10; high = b * 100; }
  else if (key === "nodes") { const n = getPath(state.instance, "fleet.nodes") || 64; low = Math.max(2, Math.round(n / 8)); high = n * 8; }
  else if (key === "inner_steps") { low = 1; high = 10000; }
  else { low = 1; high = 500; }
  $("#curve-low").value = showNumber(Number(low.toPrecision(4)));
  $("#curve-high").value = showNumber(Number(high.toPrecision(4)));
}

function drawCurve() {
  const read = id => { const t = $(id).value.trim(); return NUMBER.test(t) ? Number(t) : t; };
  runJob("curve", "curve-card", {plan: state.evaluation ? state.plan : null, time_limit_s: timeLimit(),
    curve: {input: $("#curve-input").value, low: read("#curve-low"), high: read("#curve-high"), points: read("#curve-points")}},
    renderCurve);
}

function objective() { return $("#objective").value || null; }

// -- start -----------------------------------------------------------------------------------------

async function start() {
  const {data} = await api("GET", "/api/meta");
  state.meta = data;
  buildInstanceForm();
  buildPlanForm();
  buildSliders();
  $("#curve-input").replaceChildren(...data.curves.map(c => h("option", {value: c.key}, `${c.label} (${c.unit})`)));
  $("#curve-input").addEventListener("change", setCurveRange);
  const examples = $("#example");
  examples.append(...data.examples.map(name => h("option", {value: name}, name)));
  examples.addEventListener("change", () => { if (examples.value) loadExample(examples.value); examples.value = ""; });
  $("#load-file").addEventListener("change", e => { if (e.target.files[0]) loadFile(e.target.files[0]); e.target.value = ""; });
  $("#download").addEventListener("click", () => download());
  $("#download-plan").addEventListener("click", () => download(state.plan, `${fileStem()}.plan.json`));
  $("#download-report").addEventListener("click", downloadReport);
  $("#share").addEventListener("click", async () => {
    const url = link();
    try { await navigator.clipboard.writeText(url); notice("link copied: it holds the instance and the plan"); }
    catch (e) { notice(url, 8000); }
  });
  $("#optimise").addEventListener("click", () => runJob("solve", "optimum-card",
    {objective: objective(), time_limit_s: timeLimit()}, r => { state.optimum = r; renderOptimum(); }));
  $("#feasible").addEventListener("click", () => runJob("feasible", "feasible-card", {time_limit_s: timeLimit()}, renderFeasible));
  $("#compare").addEventListener("click", () => runJob("compare", "compare-card",
    {objective: objective(), time_limit_s: timeLimit()}, renderCompare));
  $("#curve-draw").addEventListener("click", drawCurve);
  window.addEventListener("hashchange", () => { if (location.href !== link()) fromHash(); });
  $("#footer").textContent = `dtplan ${data.version}: every figure from the same cost model and solver as the ` +
    "command line (docs/web.md). Network profiles: " + data.network_profiles.source;
  if (fromHash()) return;
  if (data.start) return setState(structuredClone(data.start.instance),
                                  data.start.plan ? structuredClone(data.start.plan) : null, data.start.name);
  const preferred = ["baseline-1e25", "solve-1e24-64xh100"].find(x => data.examples.includes(x));
  if (preferred) return loadExample(preferred);
  setState(structuredClone(data.default_instance), null);
}

start();
