/* Small helpers of the page (plain script, loaded first): DOM building, dotted paths into the
   instance, reading and showing values, the link's encoding, the server's JSON API, charts drawn at
   their container's width. */
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
const fmt = Charts.fmt;

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

// A dotted path's keys; `pools[2]` is the key "pools" then the index 2 (a number), as the CLI's --set reads it.
function pathKeys(path) {
  const keys = [];
  for (const part of path.split(".")) {
    const m = part.match(/^([^\[\]]*)((?:\[\d+\])*)$/);
    if (!m) { keys.push(part); continue; }
    if (m[1] !== "") keys.push(m[1]);
    for (const i of m[2].matchAll(/\[(\d+)\]/g)) keys.push(Number(i[1]));
  }
  return keys;
}

function isContainerFor(node, key) {
  return node !== null && typeof node === "object" && (typeof key === "number") === Array.isArray(node);
}

function getPath(obj, path) {
  let node = obj;
  for (const key of pathKeys(path)) {
    if (!isContainerFor(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

// Sets a value at a path, making the objects (and lists, for an index) on the way; an index equal
// to a list's length appends, as `--set fleet.pools[N]...` does on N pools.
function setPath(obj, path, value) {
  const keys = pathKeys(path);
  let node = obj;
  keys.forEach((key, i) => {
    if (i === keys.length - 1) { node[key] = value; return; }
    const next = keys[i + 1];
    if (!isContainerFor(node[key], next)) node[key] = typeof next === "number" ? [] : {};
    node = node[key];
  });
}

function deletePath(obj, path) {
  const keys = pathKeys(path);
  let node = obj;
  for (const key of keys.slice(0, -1)) {
    if (!isContainerFor(node, key)) return;
    node = node[key];
  }
  const last = keys[keys.length - 1];
  if (isContainerFor(node, last) && !Array.isArray(node)) delete node[last];
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
