// hybridsim live console: receives the run's records as Server-Sent Events from /events and
// draws them on canvases (no library, nothing fetched but this page's own server).
"use strict";
const WINDOW = 10;          // s of test time on the time plots
const KEEP = 6000;          // points kept per actuator
const COLORS = { desired: "#8a939e", command: "#2b5fab", measured: "#c0392b", force: "#1f7a3a" };
const S = window.consoleState = { updates: 0, points: 0, meta: null, acts: [], lambda: { names: [], rows: [] },
  timing: null, outcome: null, dirty: true, token: new URLSearchParams(location.search).get("token") || "" };

function fmt(v, digits = 4) {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1e5 || a < 1e-3) return v.toExponential(digits - 1);
  return v.toPrecision(digits);
}
function el(tag, attrs = {}, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}
function niceTicks(lo, hi, n = 5) {
  const span = hi - lo || Math.abs(hi) || 1;
  const step0 = span / n, mag = Math.pow(10, Math.floor(Math.log10(step0)));
  const step = [1, 2, 5, 10].map(m => m * mag).find(s => s >= step0) || 10 * mag;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9 * step; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  return out;
}
function tickLabel(v) {
  if (v === 0) return "0";
  const a = Math.abs(v);
  return (a >= 1e4 || a < 1e-3) ? v.toExponential(1) : String(+v.toPrecision(4));
}
// One plot: series of {x, y, color, dash, label}; options xlabel, ylabel, diagonal, xrange.
function plot(canvas, series, o) {
  const dpr = window.devicePixelRatio || 1, w = canvas.clientWidth, h = canvas.clientHeight;
  if (canvas.width !== Math.round(w * dpr)) { canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr); }
  const g = canvas.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  const L = 64, R = 10, T = 22, B = 40;
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  for (const s of series) for (let i = 0; i < s.x.length; i++) {
    const x = s.x[i], y = s.y[i];
    if (!Number.isFinite(x) || !Number.isFinite(y)) continue;
    if (x < x0) x0 = x; if (x > x1) x1 = x; if (y < y0) y0 = y; if (y > y1) y1 = y;
  }
  if (o.xrange) { x0 = o.xrange[0]; x1 = o.xrange[1]; }
  if (!(x1 > x0)) { x0 = (Number.isFinite(x0) ? x0 : 0) - 1; x1 = x0 + 2; }
  if (!(y1 > y0)) { const c = Number.isFinite(y0) ? y0 : 0; y0 = c - 1e-3; y1 = c + 1e-3; }
  if (o.diagonal) { y0 = x0 = Math.min(x0, y0); y1 = x1 = Math.max(x1, y1); }
  const pad = 0.06 * (y1 - y0); y0 -= pad; y1 += pad;
  const X = x => L + (x - x0) / (x1 - x0) * (w - L - R), Y = y => h - B - (y - y0) / (y1 - y0) * (h - T - B);
  g.font = "11px system-ui, sans-serif"; g.fillStyle = "#5d6773"; g.strokeStyle = "#e3e7ec"; g.lineWidth = 1;
  g.textAlign = "center"; g.textBaseline = "top";
  for (const t of niceTicks(x0, x1, 6)) { g.beginPath(); g.moveTo(X(t), T); g.lineTo(X(t), h - B); g.stroke(); g.fillText(tickLabel(t), X(t), h - B + 4); }
  g.textAlign = "right"; g.textBaseline = "middle";
  for (const t of niceTicks(y0, y1, 5)) { g.beginPath(); g.moveTo(L, Y(t)); g.lineTo(w - R, Y(t)); g.stroke(); g.fillText(tickLabel(t), L - 5, Y(t)); }
  g.strokeStyle = "#9aa3ad"; g.strokeRect(L, T, w - L - R, h - T - B);
  g.fillStyle = "#1d232b"; g.font = "12px system-ui, sans-serif"; g.textAlign = "center"; g.textBaseline = "bottom";
  g.fillText(o.xlabel, L + (w - L - R) / 2, h - 4);
  g.save(); g.translate(13, T + (h - T - B) / 2); g.rotate(-Math.PI / 2); g.textBaseline = "middle"; g.fillText(o.ylabel, 0, 0); g.restore();
  g.save(); g.beginPath(); g.rect(L, T, w - L - R, h - T - B); g.clip();
  if (o.diagonal) { g.strokeStyle = "#c6ccd4"; g.setLineDash([4, 4]); g.beginPath(); g.moveTo(X(x0), Y(x0)); g.lineTo(X(x1), Y(x1)); g.stroke(); g.setLineDash([]); }
  for (const s of series) {
    g.strokeStyle = s.color; g.lineWidth = s.width || 1.4; g.setLineDash(s.dash || []); g.beginPath();
    let pen = false;
    for (let i = 0; i < s.x.length; i++) {
      const x = s.x[i], y = s.y[i];
      if (!Number.isFinite(x) || !Number.isFinite(y) || x < x0) { pen = false; continue; }
      if (pen) g.lineTo(X(x), Y(y)); else { g.moveTo(X(x), Y(y)); pen = true; }
    }
    g.stroke();
  }
  g.restore(); g.setLineDash([]);
  // Legend.
  let lx = L + 6; g.textAlign = "left"; g.textBaseline = "middle"; g.font = "11px system-ui, sans-serif";
  for (const s of series) if (s.label) {
    g.strokeStyle = s.color; g.lineWidth = 2; g.setLineDash(s.dash || []); g.beginPath(); g.moveTo(lx, 11); g.lineTo(lx + 18, 11); g.stroke(); g.setLineDash([]);
    g.fillStyle = "#1d232b"; g.fillText(s.label, lx + 22, 11); lx += 30 + g.measureText(s.label).width;
  }
}

function actuatorCard(a, i) {
  const card = el("div", { class: "card", id: "act-" + i });
  card.appendChild(el("h2", {}, "Actuator " + a.name));
  const row = el("div", { class: "row" });
  for (const k of ["hist", "sync", "loop"]) row.appendChild(el("canvas", { id: `act-${i}-${k}` }));
  card.appendChild(row);
  const tables = el("div", { class: "tables" });
  tables.appendChild(el("table", { id: `act-${i}-tracking` }));
  tables.appendChild(el("table", { id: `act-${i}-safety` }));
  card.appendChild(tables);
  return card;
}
function push(arr, vals) { for (const v of vals) arr.push(v); }
function trim(s, keep) {
  const n = s.t.length - keep;
  if (n > 0) for (const k of ["t", "desired", "command", "measured", "force"]) s[k].splice(0, n);
}
function absorb(msg) {
  if (msg.kind === "init") {
    S.meta = msg.meta; S.acts = [];
    document.getElementById("actuators").textContent = "";
    S.lambda = { names: msg.lambda.names, rows: [] };
    renderMeta();
  }
  // Cards for actuators the run has announced (an early browser sees them after the start).
  const box = document.getElementById("actuators");
  msg.actuators.forEach((a, i) => { if (!document.getElementById("act-" + i)) box.appendChild(actuatorCard(a, i)); });
  if (msg.lambda.names.length > S.lambda.names.length) S.lambda.names = msg.lambda.names;
  msg.actuators.forEach((a, i) => {
    if (!S.acts[i]) S.acts[i] = { t: [], desired: [], command: [], measured: [], force: [] };
    const s = S.acts[i], last = s.t.length ? s.t[s.t.length - 1] : -Infinity;
    const n = a.series.t.length; let from = 0;
    while (from < n && a.series.t[from] <= last) from++;   // an init's history may overlap
    for (const k of ["t", "desired", "command", "measured", "force"]) push(s[k], a.series[k].slice(from));
    trim(s, KEEP);
    Object.assign(s, { name: a.name, ud: a.unit_displacement, uf: a.unit_force, state: a.safety_state,
      tracking: a.tracking, margins: { displacement: a.displacement, velocity: a.velocity, force: a.force } });
  });
  const lastL = S.lambda.rows.length ? S.lambda.rows[S.lambda.rows.length - 1][0] : -Infinity;
  for (const r of msg.lambda.rows) if (r[0] > lastL) S.lambda.rows.push(r);
  if (S.lambda.rows.length > KEEP) S.lambda.rows.splice(0, S.lambda.rows.length - KEEP);
  S.timing = msg.timing; S.outcome = msg.outcome; S.time = msg.time; S.dropped = msg.dropped_frames;
  S.updates++; S.points = S.acts.reduce((n, s) => n + s.t.length, 0) + S.lambda.rows.length;
  S.received = (S.received || 0) + msg.actuators.reduce((n, a) => n + a.series.t.length, 0);
  S.lastTime = S.acts.reduce((t, s) => Math.max(t, s.t.length ? s.t[s.t.length - 1] : -Infinity), -Infinity);
  S.dirty = true;
}
function stateName(code) { return code === 0 ? ["armed", "good"] : code === 1 ? ["tripped: holding / ramping down", "bad"] : ["tripped: second event", "bad"]; }
function renderTables() {
  S.acts.forEach((s, i) => {
    const tr = s.tracking || {};
    const t = document.getElementById(`act-${i}-tracking`);
    if (!t) return;
    t.innerHTML = `<tr><th>tracking (last ${fmt(tr.window, 3)} s, ${tr.samples ?? 0} samples)</th><th>value</th></tr>
      <tr><td>delay (cross-correlation)</td><td>${fmt(tr.delay * 1e3, 3)} ms</td></tr>
      <tr><td>normalized RMS error</td><td>${fmt(tr.nrms * 100, 3)} %</td></tr>
      <tr><td>normalized peak error</td><td>${fmt(tr.peak * 100, 3)} %</td></tr>`;
    const [sn, sc] = stateName(s.state);
    const row = (q, v, unit) => {
      if (!v) return "";
      const m = v.margin, cls = m === undefined ? "" : m < 0.1 ? "bad" : m < 0.3 ? "warn" : "good";
      const bar = m === undefined ? "" : `<span class="bar" style="width:${Math.max(0, Math.min(1, m)) * 60}px;background:${cls === "good" ? "#1f7a3a" : cls === "warn" ? "#a86a00" : "#b3261e"}"></span>`;
      return `<tr><td>${q}</td><td>${fmt(v.peak, 3)} ${unit}</td><td>${fmt(v.limit, 3)} ${unit}</td><td class="${cls}">${m === undefined ? "–" : fmt(m * 100, 3) + " %"} ${bar}</td></tr>`;
    };
    document.getElementById(`act-${i}-safety`).innerHTML =
      `<tr><th>safety: <span class="${sc}" id="act-${i}-state">${sn}</span></th><th>peak</th><th>limit</th><th>margin</th></tr>` +
      row("|displacement|", s.margins.displacement, s.ud) + row("|velocity|", s.margins.velocity, s.ud + "/s") + row("|force|", s.margins.force, s.uf);
  });
  const tm = S.timing;
  if (tm) {
    const dl = tm.deadline_ms;
    document.getElementById("timing").innerHTML = `
      <tr><td>steps</td><td>${tm.steps} / ${tm.n_steps}</td></tr>
      <tr><td>step interval (last update, mean / max)</td><td>${fmt(tm.interval_mean_ms, 3)} / ${fmt(tm.interval_max_ms, 3)} ms</td></tr>
      <tr><td>largest step interval</td><td>${fmt(tm.interval_max_all_ms, 3)} ms</td></tr>
      <tr><td>deadline per step (Δt<sup>S</sup>)</td><td>${dl == null ? "none (not paced)" : fmt(dl, 4) + " ms"}</td></tr>
      <tr><td>behind schedule (now / largest)</td><td>${dl == null ? "–" : fmt(tm.behind_ms, 3) + " / " + fmt(tm.max_behind_ms, 3) + " ms"}</td></tr>
      <tr><td>late steps (completed more than one step behind schedule)</td><td class="${tm.late_steps > 0 ? "warn" : ""}">${dl == null ? "–" : tm.late_steps}</td></tr>`;
  }
  const st = document.getElementById("status");
  const replay = S.meta && S.meta.mode === "replay";
  const status = (S.outcome && S.outcome.status) || (S.stopRequested ? "stopping" : "running");
  st.textContent = (replay ? "replay · " : "") + status + (S.outcome && S.outcome.safety_event ? ": " + (S.outcome.safety_event.kind || "") : "");
  st.className = replay ? "replay" : status;
  document.getElementById("time").textContent = fmt(S.time, 5) + " " + (S.meta?.units?.time || "s");
  document.getElementById("steps").textContent = tm ? `${tm.steps} / ${tm.n_steps}` : "–";
  document.getElementById("frame").textContent = S.updates;
  document.getElementById("dropped").textContent = S.dropped ?? 0;
}
function renderMeta() {
  const m = S.meta || {};
  document.getElementById("title").textContent = m.title || "hybridsim console";
  document.getElementById("mode").textContent = m.mode === "replay" ? "replay of " + m.folder : "live · " + (m.runner || "") + " · pacing " + (m.pacing || "");
  const t = document.getElementById("meta"); t.textContent = "";
  for (const [k, v] of Object.entries(m)) {
    const r = el("tr"); r.appendChild(el("td", {}, k)); r.appendChild(el("td", {}, typeof v === "object" ? JSON.stringify(v) : String(v))); t.appendChild(r);
  }
  const live = m.mode !== "replay";
  document.getElementById("stop").disabled = !live;
  document.getElementById("stop").hidden = !live;
}
function draw() {
  if (S.dirty) {
    S.dirty = false;
    S.acts.forEach((s, i) => {
      const c = document.getElementById(`act-${i}-hist`);
      if (!c) return;
      const tEnd = s.t.length ? s.t[s.t.length - 1] : 0, tStart = Math.max(s.t[0] ?? 0, tEnd - WINDOW);
      plot(c, [
        { x: s.t, y: s.desired, color: COLORS.desired, dash: [5, 3], label: "desired" },
        { x: s.t, y: s.command, color: COLORS.command, label: "command" },
        { x: s.t, y: s.measured, color: COLORS.measured, label: "measured" }],
        { xlabel: `time [${S.meta?.units?.time || "s"}]`, ylabel: `displacement [${s.ud}]`, xrange: [tStart, Math.max(tEnd, tStart + 1e-6)] });
      let k0 = 0; while (k0 < s.t.length && s.t[k0] < tStart) k0++;
      plot(document.getElementById(`act-${i}-sync`), [
        { x: s.desired.slice(k0), y: s.measured.slice(k0), color: COLORS.measured, label: "measured vs desired" }],
        { xlabel: `desired [${s.ud}]`, ylabel: `measured [${s.ud}]`, diagonal: true });
      plot(document.getElementById(`act-${i}-loop`), [
        { x: s.measured, y: s.force, color: COLORS.force, label: "specimen" }],
        { xlabel: `measured displacement [${s.ud}]`, ylabel: `measured force [${s.uf}]` });
    });
    const L = S.lambda, rows = L.rows, tEnd = rows.length ? rows[rows.length - 1][0] : 0;
    const palette = ["#2b5fab", "#c0392b", "#1f7a3a", "#a86a00", "#6a4fa0", "#00838f"];
    const units = L.names.map(n => (n.match(/\[(.*)\]$/) || [])[1] || "");
    plot(document.getElementById("lambda"), L.names.map((n, j) => ({
      x: rows.map(r => r[0]), y: rows.map(r => r[j + 1]), color: palette[j % palette.length], label: n.replace(/\[.*\]$/, "") })),
      { xlabel: `time [${S.meta?.units?.time || "s"}]`, ylabel: `Λ [${[...new Set(units)].join(", ") || "-"}]`, xrange: [Math.max(rows[0]?.[0] ?? 0, tEnd - WINDOW), Math.max(tEnd, 1e-6)] });
    renderTables();
  }
  requestAnimationFrame(draw);
}

// The stop: arm (first action), then confirm within the window (second action).
let code = null;
async function post(step, extra = "") {
  const r = await fetch(`/api/stop?step=${step}${extra}`, { method: "POST", headers: { "X-Console-Token": S.token } });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}
const msgBox = () => document.getElementById("message");
document.getElementById("stop").onclick = async () => {
  try {
    const a = await post("arm");
    code = a.code;
    document.getElementById("stop").hidden = true;
    document.getElementById("confirm").hidden = false; document.getElementById("cancel").hidden = false;
    msgBox().textContent = `Confirm within ${a.confirm_within_s} s: the actuators hold, then ramp down as configured.`;
  } catch (e) { msgBox().textContent = "stop: " + e.message; }
};
document.getElementById("confirm").onclick = async () => {
  try {
    await post("confirm", "&code=" + encodeURIComponent(code));
    msgBox().textContent = "Stop requested: the safety layer is stopping the test.";
    document.getElementById("confirm").disabled = true; document.getElementById("cancel").hidden = true;
    S.stopRequested = true;
  } catch (e) { msgBox().textContent = "confirm: " + e.message; resetStop(); }
};
function resetStop() {
  document.getElementById("stop").hidden = false; document.getElementById("confirm").hidden = true; document.getElementById("cancel").hidden = true;
}
document.getElementById("cancel").onclick = async () => { try { await post("cancel"); } catch (e) {} msgBox().textContent = ""; resetStop(); };

const es = new EventSource("/events");
for (const kind of ["init", "update"]) es.addEventListener(kind, e => { try { absorb(JSON.parse(e.data)); } catch (err) { console.error(err); } });
es.onerror = () => { document.getElementById("mode").textContent += " (disconnected)"; es.close(); };
requestAnimationFrame(draw);
