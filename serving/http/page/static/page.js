// The papertrack page: one paper -> POST /explain; a dropped dump -> POST /parse_dump (the server's one parser of
// every input layout), then POST /predict_batch in chunks -> a CSV to download. Errors are shown in plain words
// (the API's message without status codes and field paths); every request has a timeout, so nothing hangs.
"use strict";

const CHUNK = 100;            // papers per /predict_batch request
const TIMEOUT_MS = 60000;     // per request
const DUMP_TOP_K = 3;
const $ = (id) => document.getElementById(id);

// ------------------------------------------------------------------ API calls

class ApiError extends Error {}  // .status, .apiMessage (the answer's "error"), .detail (its "detail" list)

async function api(path, options = {}) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), TIMEOUT_MS);
  let response;
  try {
    response = await fetch(path, { ...options, signal: controller.signal });
  } catch (err) {
    throw new ApiError(err.name === "AbortError"
      ? `The service gave no answer within ${TIMEOUT_MS / 1000} s (${path}). Try again.`
      : `Cannot reach the service (${err.message}). Is papertrack serve still running?`);
  } finally {
    clearTimeout(timer);
  }
  const text = await response.text();
  let body = null;
  try { body = JSON.parse(text); } catch (_) { /* not JSON */ }
  if (!response.ok) {
    const message = body && (body.error || body.detail) ? (body.error || JSON.stringify(body.detail))
      : (text.trim().slice(0, 300) || response.statusText);
    const error = new ApiError(`${response.status}: ${message}`);
    error.status = response.status;
    error.apiMessage = String(message);
    error.detail = body && Array.isArray(body.detail) ? body.detail : [];
    throw error;
  }
  if (body === null) throw new ApiError(`${path} answered something that is not JSON`);
  return body;
}

const postJson = (path, data) => api(path, {
  method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(data),
});

const FIELDS = { abstract: "The abstract", title: "The title" };
const capitalized = (text) => text.charAt(0).toUpperCase() + text.slice(1);

// What went wrong, in words for a person: no status code, no "invalid request: abstract: ..." field path.
function plainMessage(err, sent = {}) {
  if (!(err instanceof ApiError) || !err.status) return err.message;  // network, timeout: already in words
  if (err.status >= 500) {
    return `The service failed (error ${err.status}). Try again; if it keeps failing, look at the server's log.`;
  }
  const d = err.detail[0];
  const field = d && Array.isArray(d.loc) ? d.loc[d.loc.length - 1] : null;
  const what = err.detail.length === 1 ? FIELDS[field] : undefined;
  if (what) {
    if (d.type === "blank_abstract" || d.type === "string_too_short") {
      return `${what} is empty. Paste the paper's ${field} into the box.`;
    }
    if (d.type === "no_content") return `${what} has no letters or digits. Paste the paper's ${field} text.`;
    if (d.type === "string_too_long") {
      const limit = Number((/at most (\d+)/.exec(d.msg) || [])[1]);
      const length = typeof sent[field] === "string" ? [...sent[field]].length : null;
      return `${what} is too long` + (length ? ` (${length.toLocaleString("en-US")} characters)` : "") +
        (limit ? `: the limit is ${limit.toLocaleString("en-US")} characters` : "") + `. Paste only the ${field}.`;
    }
  }
  const message = err.apiMessage;  // e.g. "papers.csv: no abstract column ..." (keeps a file name as it is)
  return message.startsWith("invalid request: ") ? capitalized(message.slice("invalid request: ".length)) : message;
}

function showError(id, message) {
  const box = $(id);
  box.textContent = message || "";
  box.hidden = !message;
}

const plural = (n, noun) => `${n} ${noun}${n === 1 ? "" : "s"}`;
const pct = (p) => `${(100 * p).toFixed(p >= 0.1 ? 0 : 1)}%`;

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

function bar(p, label) {
  const fill = el("span");
  fill.style.width = `${Math.max(0, Math.min(100, 100 * p))}%`;
  return el("span", { class: "bar", role: "img", "aria-label": `${label}: ${pct(p)}` }, fill);
}

// ------------------------------------------------------------------ model info

let confidence = null;  // the selected taxonomy's calibration (GET /metadata): top1_threshold, target_precision, ...
let metadata = null;

// The selected taxonomy's own figures: its threshold, its number of tracks and areas (the default's when none).
function showTaxonomy() {
  const meta = metadata;
  if (!meta) return;
  const info = (meta.taxonomies || {})[$("taxonomy").value] || meta;
  confidence = info.confidence || meta.confidence || null;
  const m = meta.model;
  $("model-info").textContent = `model ${m.name} v${m.version} · ${meta.candidate || "?"} · ` +
    `${info.n_labels} tracks in ${info.areas.length} areas`;
}

async function loadModel() {
  try {
    const meta = await api("/metadata");
    metadata = meta;
    // the taxonomies the model answers in (the default first); a model without any: one "default" entry
    const select = $("taxonomy");
    const names = Object.keys(meta.taxonomies || {});
    select.replaceChildren();
    for (const name of names.length ? names : ["default"]) {
      const option = document.createElement("option");
      option.value = names.length ? name : "";
      option.textContent = name === meta.default_taxonomy ? `${name} (default)` : name;
      option.selected = name === meta.default_taxonomy;
      select.append(option);
    }
    select.disabled = names.length < 2;
    select.addEventListener("change", showTaxonomy);
    showTaxonomy();
  } catch (err) {
    $("model-info").textContent = `model information unavailable: ${err.message}`;
  }
}

// ------------------------------------------------------------------ one paper

let current = null;  // the last /explain answer

async function classify(event) {
  if (event) event.preventDefault();
  const button = $("classify");
  const title = $("title").value.trim();
  const payload = { abstract: $("abstract").value, title: title || null, top_k: Number($("top-k").value) };
  if ($("taxonomy").value) payload.taxonomy = $("taxonomy").value;
  showError("paper-error", "");
  button.disabled = true;
  $("paper-status").textContent = "classifying…";
  try {
    current = await postJson("/explain", payload);
    current.abstract_text = payload.abstract;  // the spans are offsets in the text sent
    render(current);
    $("paper-status").textContent = "";
  } catch (err) {
    $("paper-status").textContent = "";
    clearResults();  // the previous paper's tracks must not stay next to this paper's error
    showError("paper-error", plainMessage(err, payload));
  } finally {
    button.disabled = false;
  }
}

function clearResults() {
  current = null;
  $("results").hidden = true;
  for (const id of ["tracks", "areas", "set-list", "terms", "highlighted", "neighbors"]) $(id).replaceChildren();
  for (const id of ["badge", "set-note", "set-summary", "method", "why-track", "warning-note"]) $(id).textContent = "";
  $("unfamiliar").hidden = true;
  $("set-details").hidden = true;
}

// One line on what the badge means, with the model's threshold (from /metadata).
function confidenceNote(answer) {
  const top = pct(answer.tracks[0].probability);
  if (confidence && confidence.top1_threshold >= 1 && !answer.confident) {
    return `Unsure: this model is never confident (no probability level made its top track right for ` +
      `${pct(confidence.target_precision)} of held-out papers); the true track is probably one of the prediction set.`;
  }
  const threshold = confidence
    ? ` of ${pct(confidence.top1_threshold)} (above it, the top track was right for ` +
      `${pct(confidence.target_precision)} of held-out papers)`
    : "";
  return answer.confident
    ? `Confident: the top track's probability (${top}) reaches the model's confidence threshold${threshold}.`
    : `Unsure: the top track's probability (${top}) is below the model's confidence threshold${threshold}; ` +
      `the true track is probably one of the prediction set.`;
}

function render(answer) {
  $("results").hidden = false;
  const inSet = new Set(answer.prediction_set || []);
  const tracks = $("tracks");
  tracks.replaceChildren();
  answer.tracks.forEach((t, i) => {
    const button = el("button", { type: "button", class: "track", "aria-pressed": String(i === 0),
                                  "data-label": t.label },
      el("span", { class: "name", text: `${i + 1}. ${t.label}` }), el("span", { class: "pct", text: pct(t.probability) }),
      bar(t.probability, t.label));
    button.addEventListener("click", () => selectTrack(i));
    tracks.append(el("li", inSet.has(t.label) && inSet.size > 1 ? { class: "in-set" } : {}, button));
  });
  const areas = $("areas");
  areas.replaceChildren();
  for (const a of answer.areas) {
    areas.append(el("li", {}, el("span", { class: "track" },
      el("span", { class: "name", text: a.area }), el("span", { class: "pct", text: pct(a.probability) }),
      bar(a.probability, a.area))));
  }
  const unfamiliar = $("unfamiliar");  // the text is mostly outside the model's training vocabulary
  unfamiliar.hidden = !answer.warning;
  unfamiliar.title = answer.warning || "";
  $("warning-note").textContent = answer.warning ? `Warning: ${answer.warning}.` : "";
  const badge = $("badge");
  const details = $("set-details");
  const list = $("set-list");
  list.replaceChildren();
  details.open = false;
  if (answer.confident === undefined || answer.confident === null) {
    badge.className = "badge"; badge.textContent = "";
    $("set-note").textContent = "";
    details.hidden = true;
  } else {
    badge.className = answer.confident ? "badge sure" : "badge unsure";
    badge.textContent = answer.confident ? "confident" : "unsure";
    $("set-note").textContent = confidenceNote(answer);
    const set = answer.prediction_set;
    $("set-summary").textContent = `Prediction set: ${plural(set.length, "track")}` +
      (confidence ? ` (holds the true track for about ${pct(confidence.coverage)} of papers)` : "");
    for (const label of set) list.append(el("li", { text: label }));
    details.hidden = false;
  }
  $("method").textContent = answer.method.kind === "linear-member"
    ? `How: only part of the model is explained — ${answer.method.detail}`
    : `How: ${answer.method.kind} — ${answer.method.detail}`;
  const neighbors = $("neighbors");
  neighbors.replaceChildren();
  for (const n of answer.neighbors) {
    neighbors.append(el("li", {},
      el("strong", { text: n.title || n.id }), el("br"),
      el("span", { class: "meta", text: `${n.label} · similarity ${n.similarity.toFixed(2)}` }), el("br"),
      el("span", { text: n.snippet })));
  }
  if (!answer.neighbors.length) neighbors.append(el("li", { text: "no similar labeled paper in the model" }));
  selectTrack(0);
}

function selectTrack(index) {
  if (!current) return;
  document.querySelectorAll("#tracks .track").forEach((b, i) => b.setAttribute("aria-pressed", String(i === index)));
  const label = current.tracks[index].label;
  const explanation = current.explanations[index] || { terms: [] };
  $("why-track").textContent = `(${label})`;
  $("hl-track").textContent = label;
  const terms = $("terms");
  terms.replaceChildren();
  for (const t of explanation.terms) terms.append(el("span", { text: `${t.term} +${t.weight.toPrecision(2)}` }));
  if (!explanation.terms.length) terms.append(el("span", { text: "no term pushed this track up" }));
  highlight(current.abstract_text, explanation.terms);
}

function highlight(text, terms) {
  const spans = [];
  for (const t of terms) for (const [start, end] of t.spans) spans.push({ start, end, term: t.term, weight: t.weight });
  spans.sort((a, b) => a.start - b.start || b.end - a.end);
  const out = $("highlighted");
  out.replaceChildren();
  let at = 0;
  for (const s of spans) {
    if (s.start < at) continue;  // overlapping n-grams: the first wins
    out.append(text.slice(at, s.start));
    out.append(el("mark", { title: `${s.term}: +${s.weight.toPrecision(2)}`, text: text.slice(s.start, s.end) }));
    at = s.end;
  }
  out.append(text.slice(at));
}

// ------------------------------------------------------------------ a dump

// The CSV is papertrack label's (serving/labeler/rows.py): the same columns in the same order, probabilities as
// Python writes floats, the prediction set as JSON, true/false, and a ' in front of a text cell a spreadsheet would
// run as a formula. Papers the service rejects get no row (like the CLI's errors file): they are listed on the page.
const FORMULA_STARTS = ["=", "+", "-", "@", "\t", "\r"];

function csvCell(value) {
  const s = value === null || value === undefined ? "" : String(value);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

function textCell(value) {
  const s = value === null || value === undefined ? "" : String(value);
  return FORMULA_STARTS.some((c) => s.startsWith(c)) ? "'" + s : s;
}

function pyFloat(x) {
  // Python's repr(float): the shortest digits that round-trip (as JavaScript's), fixed notation for exponents
  // -4..15 with at least one decimal, else d.ddde-05 (JavaScript writes 5e-7 and 0.00005).
  if (!Number.isFinite(x)) return String(x);
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mantissa, exp] = Math.abs(x).toExponential().split("e");
  const e = Number(exp);
  const digits = mantissa.replace(".", "");
  const sign = x < 0 ? "-" : "";
  if (e < -4 || e >= 16) return `${sign}${mantissa}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
  if (e < 0) return `${sign}0.${"0".repeat(-e - 1)}${digits}`;
  const whole = digits.slice(0, e + 1).padEnd(e + 1, "0");
  return `${sign}${whole}.${digits.slice(e + 1) || "0"}`;
}

function jsonList(items) {
  return "[" + items.map((item) => JSON.stringify(item)).join(", ") + "]";  // Python's json.dumps spacing
}

function csvRows(papers, results, source) {
  const header = ["id", "number", "source", "line", "title"];  // number: an OpenReview note's (else empty)
  for (let i = 1; i <= DUMP_TOP_K; i++) header.push(`track_${i}`, `probability_${i}`);
  header.push("area", "area_probability", "label", "in_top_k", "prediction_set", "confident", "warning");
  const lines = [header.map(csvCell).join(",")];
  papers.forEach((paper, i) => {
    const r = results[i];
    if (!r || r.error) return;  // rejected: listed on the page instead
    const number = paper.number === null || paper.number === undefined ? "" : textCell(String(paper.number));
    const cells = [textCell(paper.id), number, textCell(source), paper.line, textCell(paper.title)];
    const tracks = r.tracks.slice(0, DUMP_TOP_K);
    for (let k = 0; k < DUMP_TOP_K; k++) {
      const t = tracks[k];
      cells.push(t ? textCell(t.label) : "", t ? pyFloat(t.probability) : "");
    }
    const area = r.areas[0];
    const label = paper.label === null || paper.label === undefined ? null : paper.label;
    const inTopK = label === null ? "" : String(tracks.some((t) => t.label === label));
    cells.push(textCell(area.area), pyFloat(area.probability), textCell(label), inTopK,
      r.prediction_set ? textCell(jsonList(r.prediction_set)) : "",
      r.confident === undefined || r.confident === null ? "" : String(r.confident), textCell(r.warning || ""));
    lines.push(cells.map(csvCell).join(","));
  });
  return lines.join("\n") + "\n";
}

async function labelChunk(chunk) {
  const body = { papers: chunk.map((p) => ({ abstract: p.abstract, title: p.title })), top_k: DUMP_TOP_K };
  if ($("taxonomy").value) body.taxonomy = $("taxonomy").value;
  try {
    return (await postJson("/predict_batch", body)).results;
  } catch (err) {
    if (err.status !== 400 || chunk.length === 1) {
      if (err.status === 400) return [{ error: { error: err.message } }];
      throw err;
    }
    // the service refused the whole chunk (a service from before per-paper errors): label its papers one by one
    const out = [];
    for (const paper of chunk) out.push(...(await labelChunk([paper])));
    return out;
  }
}

let busy = false;

async function labelDump(file) {
  if (busy || !file) return;
  busy = true;
  const progress = $("dump-progress");
  const download = $("dump-download");
  showError("dump-error", "");
  $("dump-skipped").replaceChildren();
  download.hidden = true;
  progress.hidden = false;
  progress.removeAttribute("value");  // indeterminate while the file is read
  $("dump-status").textContent = `reading ${file.name}…`;
  try {
    const parsed = await api(`/parse_dump?filename=${encodeURIComponent(file.name)}`, {
      method: "POST", headers: { "Content-Type": "application/octet-stream" }, body: file,
    });
    for (const e of parsed.errors.slice(0, 50)) {
      $("dump-skipped").append(el("li", { text: `${file.name}:${e.line}: ${e.reason}` }));
    }
    const papers = parsed.papers;
    if (!papers.length) throw new ApiError(`${file.name}: no paper with an abstract (${parsed.errors.length} skipped)`);
    progress.max = papers.length;
    progress.value = 0;
    const results = [];
    for (let start = 0; start < papers.length; start += CHUNK) {
      results.push(...(await labelChunk(papers.slice(start, start + CHUNK))));
      progress.value = results.length;
      $("dump-status").textContent = `${parsed.format}: labeled ${results.length} of ${papers.length} papers`;
    }
    const failed = results.filter((r) => r.error).length;
    papers.forEach((paper, i) => {
      if (results[i] && results[i].error) {
        // a paper the service rejects: {error: {error: "invalid request: papers[i]...", detail, index}}
        const why = results[i].error.detail && results[i].error.detail.length
          ? results[i].error.detail.map((d) => `${d.loc.slice(2).join(".")}: ${d.msg}`).join("; ")
          : results[i].error.error;
        $("dump-skipped").append(el("li", { text: `${file.name}:${paper.line}: not labeled: ${why}` }));
      }
    });
    const blob = new Blob([csvRows(papers, results, file.name)], { type: "text/csv" });
    if (download.href) URL.revokeObjectURL(download.href);
    download.href = URL.createObjectURL(blob);
    download.download = file.name.replace(/(\.gz)?$/i, "").replace(/\.[^.]*$/, "") + ".labeled.csv";
    download.hidden = false;
    download.focus();
    $("dump-status").textContent = `${parsed.format}: ${plural(papers.length - failed, "paper")} labeled` +
      (failed ? `, ${failed} rejected (listed below, not in the CSV)` : "") +
      (parsed.errors.length ? `; ${plural(parsed.errors.length, "record")} skipped (listed below)` : "") + ".";
  } catch (err) {
    $("dump-status").textContent = "";
    showError("dump-error", plainMessage(err));
  } finally {
    progress.hidden = true;
    busy = false;
  }
}

// ------------------------------------------------------------------ wiring

function wire() {
  $("paper-form").addEventListener("submit", classify);
  $("abstract").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) classify(e);
  });
  const zone = $("drop-zone");
  const input = $("dump-file");
  zone.addEventListener("click", () => input.click());
  zone.addEventListener("keydown", (e) => {
    if (e.key === "Enter" || e.key === " ") { e.preventDefault(); input.click(); }
  });
  zone.addEventListener("dragover", (e) => { e.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (e) => {
    e.preventDefault();
    zone.classList.remove("over");
    if (e.dataTransfer.files.length) labelDump(e.dataTransfer.files[0]);
  });
  input.addEventListener("change", () => { if (input.files.length) labelDump(input.files[0]); input.value = ""; });
  loadModel();
}

wire();
