/* dtplan serve: the page. Its state is the instance (and the plan): every control edits the raw
   instance JSON, which is what gets downloaded, loaded and put in the link (#i=...&p=..., base64url
   of the JSON). The server checks everything (the same schema and messages as the command line)
   and answers: evaluation at once, solves and other long answers as jobs with progress and a
   cancel button. This file holds the state, loading and saving, the evaluation, the jobs and the
   start; util.js the helpers, forms.js the controls, results.js the answers, svg.js the charts
   (plain scripts in that order, no build step). */
"use strict";

const state = {meta: null, instance: {}, plan: {}, resolved: {}, evaluation: null, optimum: null,
               seq: 0, timer: null, jobs: {}, placeholderPlan: null};

// -- state: load, change, link, download -----------------------------------------------------------

function setState(instance, plan, source) {
  state.instance = instance && typeof instance === "object" ? instance : {};
  state.plan = plan && typeof plan === "object" ? plan : defaultPlan();
  // no plan given: the server's starting plan (every node of every pool for a fleet of pools) replaces
  // this placeholder with the first evaluation, unless the plan was edited before it came
  state.placeholderPlan = plan && typeof plan === "object" ? null : JSON.stringify(state.plan);
  state.optimum = null;
  for (const id of ["optimum-card", "feasible-card", "compare-card"]) $(`#${id}`).hidden = true;
  for (const box of document.querySelectorAll("[data-asked]")) delete box.dataset.asked;
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

// What an answer was asked about: the instance (and, for the curve, the plan too: one of its series).
function askedOf(kind) {
  return JSON.stringify(kind === "curve" ? [state.instance, state.plan] : state.instance);
}

// An answer to an instance that has changed since says so (it is kept: it may still be wanted).
function markStale() {
  for (const [card, kind] of [["optimum-card", "solve"], ["feasible-card", "feasible"], ["compare-card", "compare"],
                              ["curve-card", "curve"]]) {
    const box = $(`#${card}`);
    $(".stale", box).hidden = !box.dataset.asked || box.dataset.asked === askedOf(kind);
  }
}

function changed() {
  history.replaceState(null, "", link());
  markStale();
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
  const placeholder = state.placeholderPlan !== null && JSON.stringify(state.plan) === state.placeholderPlan;
  const {status, data} = await api("POST", "/api/evaluate", {instance: state.instance, plan: placeholder ? null : state.plan});
  if (seq !== state.seq) return;           // a newer edit is on its way
  if (placeholder && data && data.plan) {  // the starting plan the server chose for this instance
    state.plan = data.plan;
    state.placeholderPlan = null;
    fillPlanForm();
    history.replaceState(null, "", link());
  }
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
  box.dataset.asked = askedOf(kind);
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
  const {status, data} = await api("GET", "/api/meta");
  if (status !== 200) {       // e.g. 403: opened without the token `dtplan serve` printed
    $("#general-problems").textContent = data.error || `the server answered ${status}`;
    return;
  }
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
    {objective: objective(), solver: $("#solver").value, time_limit_s: timeLimit()},
    r => { state.optimum = r; renderOptimum(); }));
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
