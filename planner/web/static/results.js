/* The answers drawn: the plan's evaluation, the optimum beside the user's plan, the feasibility
   verdict with its fixes, the hardware ranking and the curve of days (charts from svg.js). */
"use strict";

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
