// neardup report: draws the charts and tables from the data embedded in the page. No network:
// everything it needs is in this file's page. Texts from the corpus only ever go in as textContent.
(function () {
  "use strict";
  const R = JSON.parse(document.getElementById("report-data").textContent);
  const D = R.data;
  const PAGE = 20;
  const byKey = new Map((D.pairs || []).map((p) => [p.key, p]));

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v);
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }
  const fmt = (v, places) =>
    v === null || v === undefined ? "–" : typeof v === "number" ? (Number.isInteger(v) && places === undefined ? v.toLocaleString("en") : v.toFixed(places === undefined ? 4 : places)) : String(v);

  // -- charts ------------------------------------------------------------------------------
  const plotConfig = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["select2d", "lasso2d"] };
  function drawCharts() {
    for (const [name, fig] of Object.entries(R.charts || {})) {
      const target = document.getElementById("chart-" + name);
      if (target) Plotly.newPlot(target, fig.data, fig.layout, plotConfig);
    }
  }

  // -- a paged table -----------------------------------------------------------------------
  function pagedTable(container, columns, rowsOf, onRow) {
    let page = 0;
    const body = el("tbody");
    const info = el("span", { class: "note" });
    const prev = el("button", { text: "‹ prev", onclick: () => { page--; draw(); } });
    const next = el("button", { text: "next ›", onclick: () => { page++; draw(); } });
    const head = el("tr", {}, ...columns.map((c) => el("th", { class: c.num ? "num" : "", text: c.title })));
    container.replaceChildren(el("table", {}, el("thead", {}, head), body), el("div", { class: "pager" }, prev, next, info));
    function draw() {
      const rows = rowsOf();
      const pages = Math.max(1, Math.ceil(rows.length / PAGE));
      page = Math.min(Math.max(0, page), pages - 1);
      body.replaceChildren(
        ...rows.slice(page * PAGE, page * PAGE + PAGE).map((r) => {
          const tr = el("tr", { class: onRow ? "clickable" : "" }, ...columns.map((c) => {
            const v = c.value(r);
            return el("td", { class: c.num ? "num" : "" }, v instanceof Node ? v : fmt(v, c.places));
          }));
          if (onRow) tr.addEventListener("click", () => onRow(r));
          return tr;
        })
      );
      info.textContent = `${rows.length.toLocaleString("en")} rows · page ${page + 1} of ${pages}`;
      prev.disabled = page === 0;
      next.disabled = page >= pages - 1;
    }
    draw();
    return { redraw: () => { page = 0; draw(); } };
  }

  const pairBadge = (p) => p.linked ? el("span", { class: "badge ok", text: "linked" }) : el("span", { class: "badge drop", text: "dropped" });
  const pairColumns = [
    { title: "document A", value: (p) => p.a },
    { title: "document B", value: (p) => p.b },
    { title: "Jaccard", num: true, value: (p) => p.jaccard, places: 4 },
    { title: "decision", value: pairBadge },
    { title: "band", num: true, value: (p) => p.band },
    { title: "bucket", value: (p) => p.bucket_key },
  ];

  // -- the side-by-side view ---------------------------------------------------------------
  function tokensView(doc, flags, shared, mark) {
    const col = el("div", { class: "diff-col" });
    if (!doc || !doc.tokens) { col.append(el("em", { text: "(text not in this report)" })); return col; }
    const sep = R.data.run.shape.shingle === "char" ? "" : " ";
    doc.tokens.forEach((t, i) => {
      let cls = "tok";
      if (flags[i]) cls += " " + mark;
      if (shared[i]) cls += " shared";
      col.append(el("span", { class: cls, text: t }), sep);
    });
    return col;
  }
  function expand(runs, length) {
    const out = new Array(length).fill(false);
    let at = 0, on = false;
    for (const r of runs || []) { if (on) for (let k = at; k < at + r && k < length; k++) out[k] = true; at += r; on = !on; }
    return out;
  }
  function openPair(key) {
    const p = byKey.get(key);
    const box = document.getElementById("diff");
    if (!p) return;
    const a = D.docs[p.a], b = D.docs[p.b];
    const la = a && a.tokens ? a.tokens.length : 0, lb = b && b.tokens ? b.tokens.length : 0;
    const changedA = new Array(la).fill(false), changedB = new Array(lb).fill(false);
    const d = p.diff || { ops: [], shared_a: [], shared_b: [] };
    for (const [tag, a0, a1, b0, b1] of d.ops) {
      if (tag === "equal") continue;
      for (let k = a0; k < a1; k++) changedA[k] = true;
      for (let k = b0; k < b1; k++) changedB[k] = true;
    }
    const why = p.band === undefined || p.band === null
      ? "no bucket of this run holds both (lsh_buckets not written, or the pair came from elsewhere)"
      : `a candidate because both fell in bucket ${p.bucket_key} of band ${p.band} (${p.bucket_size} members; they share ${p.shared_buckets} of ${D.s_curve.bands} bands' buckets)`;
    const verdict = p.linked ? "linked: Jaccard at or above the threshold" : "dropped: Jaccard below the threshold";
    const role = (id, doc) => doc ? `${id}${doc.is_duplicate ? " (removed, duplicate of " + doc.representative + ")" : " (kept)"}` : id;
    box.replaceChildren(
      el("h2", { text: `${p.a}  vs  ${p.b}` }),
      el("p", {}, el("strong", { text: `Jaccard ${fmt(p.jaccard)}` }), ` (threshold ${D.s_curve.threshold}) · ${verdict} · ${why}`),
      el("p", { class: "legend note" },
        el("span", {}, el("span", { class: "tok del", text: "only in A" })),
        el("span", {}, el("span", { class: "tok ins", text: "only in B" })),
        el("span", {}, el("span", { class: "tok shared", text: "in a shingle both share" })),
        el("span", { text: "Tokens as neardup sees them (normalised)." })),
      el("div", { class: "diff-cols" },
        el("div", {}, el("h3", { text: "A: " + role(p.a, a) }), tokensView(a, changedA, expand(d.shared_a, la), "del")),
        el("div", {}, el("h3", { text: "B: " + role(p.b, b) }), tokensView(b, changedB, expand(d.shared_b, lb), "ins"))),
      el("details", {}, el("summary", { text: "original texts" }),
        el("pre", { text: a && a.text !== undefined ? a.text + (a.truncated ? " …" : "") : "" }),
        el("pre", { text: b && b.text !== undefined ? b.text + (b.truncated ? " …" : "") : "" })),
    );
    box.classList.add("open");
    box.scrollIntoView({ behavior: "instant", block: "start" });
    history.replaceState(null, "", "#pair=" + encodeURIComponent(key));
  }

  // -- sections ----------------------------------------------------------------------------
  function runSection() {
    const info = D.run;
    const rows = [
      ["inputs", (info.inputs || []).join(", ")],
      ["output", `${info.output_dir} (${info.output_format})`],
      ["text / id column", `${info.text_column} / ${info.id_column}`],
      ["shingles", `${info.shape.shingle} ${info.shape.ngram}-grams`],
      ["LSH shape", `${info.shape.bands} bands x ${info.shape.rows} rows (${info.shape.num_perm} permutations)`],
      ["threshold", info.shape.threshold],
      ["Jaccard of pairs", info.shape.jaccard],
      ["engine", (info.engine && info.engine.mode) || ""],
      ["neardup", info.neardup_version],
    ];
    for (const [k, v] of Object.entries(info.figures)) rows.push([k.replaceAll("_", " "), v]);
    document.getElementById("run-table").replaceChildren(
      el("table", { class: "kv" }, el("tbody", {}, ...rows.map(([k, v]) => el("tr", {}, el("td", { text: k }), el("td", { text: fmt(v) }))))));
    const notes = document.getElementById("sampling");
    notes.replaceChildren(...(D.sampling || []).map((s) => el("li", { text: s })));
  }

  function clusterSection() {
    const minBox = document.getElementById("cluster-min"), maxBox = document.getElementById("cluster-max");
    const chainsOnly = document.getElementById("cluster-chains");
    const detail = document.getElementById("cluster-detail");
    const columns = [
      { title: "cluster", num: true, value: (c) => c.cluster_id },
      { title: "size", num: true, value: (c) => c.size },
      { title: "representative", value: (c) => c.representative },
      { title: "lowest Jaccard to representative", num: true, value: (c) => c.min_jaccard_to_representative },
      { title: "", value: (c) => c.chain ? el("span", { class: "badge warn", text: "chain", title: "a member is below the threshold against the representative" }) : (c.farthest ? el("span", { class: "badge ok", text: "tight" }) : "") },
    ];
    const rowsOf = () => {
      const lo = Number(minBox.value || 0), hi = Number(maxBox.value || Infinity);
      return D.clusters.largest.filter((c) => c.size >= lo && c.size <= hi && (!chainsOnly.checked || c.chain));
    };
    const table = pagedTable(document.getElementById("cluster-table"), columns, rowsOf, (c) => showCluster(c, detail));
    for (const box of [minBox, maxBox, chainsOnly]) box.addEventListener("input", table.redraw);
    const chains = D.clusters.largest.filter((c) => c.chain);
    document.getElementById("chain-warnings").replaceChildren(...chains.slice(0, 10).map((c) =>
      el("li", { text: `cluster ${c.cluster_id} (${c.size} members) is a chain: ${c.farthest[0].id} has Jaccard ${fmt(c.farthest[0].jaccard)} with its representative ${c.representative}, below the threshold; it joined through other members` })));
  }
  function showCluster(c, detail) {
    const parts = [el("h3", { text: `cluster ${c.cluster_id}: ${c.size} members, representative ${c.representative}` })];
    if (!c.farthest) {
      const why = c.representative_in_index
        ? "The row kept is a document of the index this run was checked against: its text is not in the run's outputs."
        : "Only the largest clusters are compared member by member in this report.";
      parts.push(el("p", { class: "note", text: why }));
      detail.replaceChildren(...parts);
      return;
    }
    parts.push(el("p", { class: "note", text: `Members farthest from the representative (of ${c.members_compared} compared); click one to compare.` }));
    const shown = new Set(c.shown || []);
    parts.push(el("table", {}, el("tbody", {}, ...(c.shown || []).map((key) => {
      const p = byKey.get(key);
      const other = p.a === c.representative ? p.b : p.a;
      return el("tr", { class: "clickable", onclick: () => openPair(key) }, el("td", { text: other }), el("td", { class: "num", text: fmt(p.jaccard) }));
    }))));
    if ((c.weakest_edges || []).length) {
      parts.push(el("p", { class: "note", text: "Weakest links inside the cluster (its lowest-Jaccard edges):" }));
      parts.push(el("table", {}, el("tbody", {}, ...c.weakest_edges.map((key) => {
        const p = byKey.get(key);
        return el("tr", { class: "clickable", onclick: () => openPair(key) }, el("td", { text: `${p.a} — ${p.b}` }), el("td", { class: "num", text: fmt(p.jaccard) }));
      }))));
    }
    void shown;
    detail.replaceChildren(...parts);
  }

  function pairSections() {
    const rows = (keys) => keys.map((k) => byKey.get(k)).filter(Boolean);
    pagedTable(document.getElementById("near-above"), pairColumns, () => rows(D.near_threshold.above), (p) => openPair(p.key));
    pagedTable(document.getElementById("near-below"), pairColumns, () => rows(D.near_threshold.below), (p) => openPair(p.key));
    const lo = document.getElementById("pair-min"), hi = document.getElementById("pair-max"), kind = document.getElementById("pair-kind");
    const rowsOf = () => D.pairs.filter((p) => {
      const j = p.jaccard === null ? -1 : p.jaccard;
      return j >= Number(lo.value || 0) && j <= Number(hi.value || 1) && (kind.value === "all" || (kind.value === "linked") === p.linked);
    }).sort((x, y) => (x.jaccard ?? -1) - (y.jaccard ?? -1));
    const table = pagedTable(document.getElementById("pair-table"), pairColumns, rowsOf, (p) => openPair(p.key));
    for (const box of [lo, hi, kind]) box.addEventListener("input", table.redraw);
  }

  function searchSection() {
    const box = document.getElementById("search-input");
    const out = document.getElementById("search-results");
    const pairsOf = new Map();
    for (const p of D.pairs) for (const id of [p.a, p.b]) { if (!pairsOf.has(id)) pairsOf.set(id, []); pairsOf.get(id).push(p); }
    const ids = Object.keys(D.docs);
    const index = D.index || { ids: [], cluster: [], representative: [] };
    const status = (doc) => doc.is_duplicate ? `removed: duplicate of ${doc.representative}` : doc.cluster_id === null ? "no duplicates" : `kept, cluster ${doc.cluster_id}`;
    function docResult(id) {
      const doc = D.docs[id];
      const near = (p) => p.a === doc.representative || p.b === doc.representative;
      const mine = (pairsOf.get(id) || []).slice().sort((x, y) => near(y) - near(x));
      return el("div", { class: "search-result", "data-id": id },
        el("strong", { text: id }), " ", el("span", { class: "badge", text: status(doc) }),
        el("div", { class: "note", text: (doc.text || "").slice(0, 220) }),
        ...mine.slice(0, 6).map((p) => el("button", { class: "compare", text: `compare with ${p.a === id ? p.b : p.a} (J ${fmt(p.jaccard)})`, onclick: () => openPair(p.key) })));
    }
    function indexResult(k) {
      const id = index.ids[k], rep = index.representative[k];
      const text = rep === id ? `kept, representative of cluster ${index.cluster[k]}` : `removed: duplicate of ${rep} (cluster ${index.cluster[k]})`;
      return el("div", { class: "search-result", "data-id": id },
        el("strong", { text: id }), " ", el("span", { class: "badge", text: text }),
        el("div", { class: "note", text: "its text is not in this report" }));
    }
    function run() {
      const q = box.value.trim().toLowerCase();
      if (!q) { out.replaceChildren(); return; }
      const hits = ids.filter((id) => id.toLowerCase().includes(q) || (D.docs[id].text || "").toLowerCase().includes(q));
      hits.sort((x, y) => (y.toLowerCase() === q) - (x.toLowerCase() === q));
      const seen = new Set(hits);
      const more = [];
      for (let k = 0; k < index.ids.length && more.length < 50; k++) {
        const id = index.ids[k];
        if (!seen.has(id) && id.toLowerCase().includes(q)) more.push(k);
      }
      out.replaceChildren(
        el("p", { class: "note", text: `${hits.length} of the ${ids.length.toLocaleString("en")} texts in this report match; ${more.length}${more.length === 50 ? "+" : ""} more ids among the ${index.ids.length.toLocaleString("en")} rows in clusters it knows` }),
        ...hits.slice(0, 50).map(docResult), ...more.map(indexResult));
    }
    box.addEventListener("input", run);
  }

  function evaluationSection() {
    const box = document.getElementById("evaluation");
    const ev = D.evaluation;
    if (!ev) { box.closest("section").remove(); document.querySelector('nav a[href="#sec-eval"]')?.remove(); return; }
    const rows = Object.entries(ev).filter(([, v]) => typeof v === "number" || typeof v === "string");
    const parts = [el("table", { class: "kv" }, el("tbody", {}, ...rows.map(([k, v]) => el("tr", {}, el("td", { text: k.replaceAll("_", " ") }), el("td", { text: fmt(v, /precision|recall|f1|ari/.test(k) ? 4 : undefined) })))))];
    const cats = ev.recall_by_category;
    if (cats && Object.keys(cats).length) {
      parts.push(el("h3", { text: "recall by category" }));
      const counts = ev.category_counts || {};
      parts.push(el("table", {}, el("tbody", {}, ...Object.entries(cats).map(([k, v]) => {
        const c = counts[k] || {};
        return el("tr", {}, el("td", { text: k }), el("td", { class: "num", text: `${fmt(v, 4)} (${fmt(c.found)} of ${fmt(c.counted)})` }));
      }))));
    }
    box.replaceChildren(...parts);
  }

  function tuneSection() {
    const box = document.getElementById("tune");
    if (!box) return;
    const T = D.tune;
    const rec = T.recommended;
    const parts = [];
    parts.push(el("p", {}, rec
      ? el("strong", { text: `Recommended: ${rec.label} at threshold ${rec.threshold}: F1 ${fmt(rec.pair_f1, 4)}, precision ${fmt(rec.pair_precision, 4)}, recall ${fmt(rec.pair_recall, 4)}` })
      : el("strong", { text: T.reason || "no setting reaches the precision floor" })));
    if (T.command) parts.push(el("pre", { id: "tune-command", text: T.command }));
    box.replaceChildren(...parts);
    const points = [];
    for (const s of T.settings) for (const p of s.points) points.push(Object.assign({ label: s.label }, p));
    pagedTable(document.getElementById("tune-table"), [
      { title: "setting", value: (p) => p.label },
      { title: "threshold", num: true, value: (p) => p.threshold, places: 2 },
      { title: "bands x rows", value: (p) => `${p.bands} x ${p.rows}` },
      { title: "precision", num: true, value: (p) => p.pair_precision, places: 4 },
      { title: "recall", num: true, value: (p) => p.pair_recall, places: 4 },
      { title: "F1", num: true, value: (p) => p.pair_f1, places: 4 },
      { title: "ARI", num: true, value: (p) => p.ari, places: 4 },
    ], () => points.slice().sort((x, y) => y.pair_f1 - x.pair_f1));
  }

  document.addEventListener("DOMContentLoaded", () => {
    if (D.kind === "tune") { tuneSection(); drawCharts(); window.neardupReport = { ready: true }; return; }
    runSection();
    drawCharts();
    clusterSection();
    pairSections();
    searchSection();
    evaluationSection();
    const wanted = decodeURIComponent((location.hash.match(/^#pair=(.*)$/) || [])[1] || "");
    if (wanted) openPair(wanted);
    window.neardupReport = { openPair, ready: true };
  });
})();
