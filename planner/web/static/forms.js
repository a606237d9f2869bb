/* The page's controls: the instance form (generated from the fields the server lists, with
   presets, units, tables and assumption constants), the plan form and the sliders. Each control
   edits the raw instance or plan in `state` and calls `changed()` (app.js). */
"use strict";

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
