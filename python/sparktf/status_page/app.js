// The status page: polls api/status (every second) and api/history (every 2 s) of the
// server that served it and draws the nodes table, per-node charts and errors.
"use strict";

const token = new URLSearchParams(location.search).get("token");
const headers = token ? { Authorization: "Bearer " + token } : {};
const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
  "#7f7f7f", "#bcbd22", "#17becf"];

async function getJson(path) {
  const r = await fetch(path, { headers, credentials: "same-origin", cache: "no-store" });
  if (!r.ok) throw new Error(path + ": HTTP " + r.status);
  return r.json();
}

function num(v, digits = 1) {
  if (v === null || v === undefined || typeof v !== "number") return "-";
  return Number.isInteger(v) ? String(v) : v.toFixed(digits);
}
function pct(v) { return typeof v === "number" ? Math.round(v * 100) + "%" : "-"; }
function dur(v) {
  if (typeof v !== "number") return "-";
  const s = Math.floor(v);
  if (s < 120) return s + "s";
  if (s < 3600) return Math.floor(s / 60) + "m" + (s % 60) + "s";
  return Math.floor(s / 3600) + "h" + Math.floor(s / 60) % 60 + "m";
}
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function renderStatus(s) {
  const t = s.totals || {};
  const phases = t.nodes || {};
  document.getElementById("summary").textContent =
    `${s.registered} of ${s.num_nodes} nodes registered, ${phases.running || 0} running, ` +
    `${phases.exited || 0} exited, ${phases.lost || 0} lost · generation ${s.generation} · ` +
    `up ${dur(s.uptime_s)} · rows taken ${num(t.rows_taken)} of ${num(t.rows_fed)} fed ` +
    `(${num(t.rows_per_sec, 0)} rows/s) · chief ${num(t.chief_steps_per_sec)} steps/s` +
    (t.stragglers ? ` · ${t.stragglers} straggler(s)` : "");
  const aborted = document.getElementById("aborted");
  aborted.classList.toggle("hidden", !s.aborted);
  aborted.textContent = s.aborted ? "aborted: " + s.abort_reason : "";

  const body = document.querySelector("#nodes tbody");
  body.replaceChildren();
  const errors = document.getElementById("errors");
  errors.replaceChildren();
  for (const n of s.nodes) {
    const tr = el("tr");
    tr.dataset.node = n.name;
    const tr_ = n.training || {};
    const input = n.input || {};
    const failed = !!n.traceback || (n.phase === "exited" && !n.stopped && n.exit_code !== 0);
    const notes = [];
    if (n.straggler) { notes.push("straggler"); tr.classList.add("straggler"); }
    if (failed) { notes.push("failed"); tr.classList.add("failed"); }
    if (n.phase === "lost") tr.classList.add("lost");
    const metrics = Object.entries(tr_.metrics || {}).filter(([k]) => k !== "loss")
      .map(([k, v]) => k + "=" + num(v, 4)).join(" ");
    const live = n.phase === "running" || n.phase === "registered";
    const cells = [
      ["name", n.name], ["host", n.host], ["executor", n.executor_id], ["pid", n.pid],
      ["state", n.phase], ["gen", s.generation], ["up", dur(n.uptime_s)],
      ["heartbeat", live ? dur(n.heartbeat_age_s) + " ago" : "-"], ["epoch", num(tr_.epoch)],
      ["step", num(tr_.step)], ["steps", num(tr_.steps_per_sec)],
      ["examples", num(tr_.examples_per_sec ?? input.rows_per_sec, 0)],
      ["loss", num((tr_.metrics || {}).loss, 4)], ["metrics", metrics || "-"],
      ["fed", num(input.rows_fed)], ["taken", num(input.rows_taken)],
      ["rows", num(input.rows_per_sec, 0)], ["batches", num(input.batches)],
      ["stall", pct(input.stall)], ["ring", pct(input.ring_fill)],
      ["dropped", num(input.rows_dropped)], ["note", notes.join(", ")]];
    for (const [cls, text] of cells) tr.appendChild(el("td", cls, String(text)));
    body.appendChild(tr);
    if (n.traceback) {
      errors.appendChild(el("h3", "", `${n.name} (executor ${n.executor_id} on ${n.host})`));
      errors.appendChild(el("pre", "", n.traceback));
    }
  }
  if (!errors.children.length) errors.appendChild(el("p", "quiet", "none"));
}

// A line chart of `field` per node over the samples, in an <svg>.
function drawChart(id, samples, field, asPercent) {
  const svg = document.getElementById(id);
  const W = 420, H = 180, L = 44, R = 8, T = 8, B = 20;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.replaceChildren();
  const ns = "http://www.w3.org/2000/svg";
  const names = [...new Set(samples.flatMap(s => Object.keys(s.nodes)))].sort();
  const points = [];
  for (const s of samples) {
    for (const name of names) {
      const v = (s.nodes[name] || {})[field];
      if (typeof v === "number") points.push(v);
    }
  }
  const add = (tag, attrs, text) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.appendChild(e);
    return e;
  };
  add("rect", { x: L, y: T, width: W - L - R, height: H - T - B, fill: "none", stroke: "#ccc" });
  if (!points.length || samples.length < 1) {
    add("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, "no data yet");
    return;
  }
  const t0 = samples[0].t, t1 = Math.max(samples[samples.length - 1].t, t0 + 1);
  const max = asPercent ? 1 : Math.max(...points) * 1.1 || 1;
  const x = t => L + (t - t0) / (t1 - t0) * (W - L - R);
  const y = v => T + (1 - v / max) * (H - T - B);
  add("text", { x: L - 4, y: T + 8, "text-anchor": "end" }, asPercent ? "100%" : num(max));
  add("text", { x: L - 4, y: H - B, "text-anchor": "end" }, "0");
  add("text", { x: W - R, y: H - 6, "text-anchor": "end" }, dur(t1 - t0) + " shown");
  names.forEach((name, i) => {
    const d = samples.filter(s => typeof (s.nodes[name] || {})[field] === "number")
      .map((s, j) => (j ? "L" : "M") + x(s.t).toFixed(1) + "," + y(s.nodes[name][field]).toFixed(1))
      .join(" ");
    const color = COLORS[i % COLORS.length];
    if (d) add("path", { d, fill: "none", stroke: color, "stroke-width": 1.5, "data-node": name });
    add("text", { x: L + 6 + (i % 4) * 90, y: T + 12 + Math.floor(i / 4) * 12, fill: color }, name);
  });
}

function renderHistory(h) {
  const samples = h.samples || [];
  drawChart("chart-steps", samples, "steps_per_sec");
  drawChart("chart-loss", samples, "loss");
  drawChart("chart-rows", samples, "rows_per_sec");
  drawChart("chart-stall", samples, "stall", true);
}

function showConnection(error) {
  const c = document.getElementById("connection");
  c.classList.toggle("hidden", !error);
  c.textContent = error ? "not updating: " + error.message + " (has the cluster ended?)" : "";
}

async function pollStatus() {
  try { renderStatus(await getJson("api/status")); showConnection(null); }
  catch (e) { showConnection(e); }
  setTimeout(pollStatus, 1000);
}
async function pollHistory() {
  try { renderHistory(await getJson("api/history")); } catch (e) { /* pollStatus shows it */ }
  setTimeout(pollHistory, 2000);
}
pollStatus();
pollHistory();
