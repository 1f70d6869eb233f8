// Interactive tree view for DT-PBO Explorer (no dependencies, no network).
// Lays out the tree like pbo_core.explain.export.TreeView.layout, draws SVG, and supports
// wheel/button zoom, drag to pan, click a split to collapse/expand its subtree, click a
// leaf to list all its items, full screen, and SVG/PNG download of what is shown. Two
// layouts, as TreeView.layout: "tree" (top-down tidy tree) and "outline" (one indented row
// per node, for trees too wide to read top-down), chosen by the page (OPTS.style).
(function () {
  const VIEW = JSON.parse(document.getElementById("tree-data").textContent);
  const OPTS = JSON.parse(document.getElementById("tree-opts").textContent);
  const NS = "http://www.w3.org/2000/svg";
  const nodes = new Map(VIEW.nodes.map((n) => [n.id, n]));
  const kids = new Map(VIEW.nodes.map((n) => [n.id, []]));
  VIEW.nodes.forEach((n) => { if (n.parent >= 0) kids.get(n.parent).push(n.id); });
  const shut = new Set(OPTS.collapsed || []);
  if (OPTS.max_depth !== null && OPTS.max_depth !== undefined) {
    VIEW.nodes.forEach((n) => { if (n.depth >= OPTS.max_depth && kids.get(n.id).length) shut.add(n.id); });
  }
  const svg = document.getElementById("tree-svg");
  const panel = document.getElementById("tree-panel");
  let scale = 1, tx = 0, ty = 0, layoutBox = { w: 100, h: 100 };
  const style = OPTS.style === "outline" ? "outline" : "tree";
  const root = VIEW.nodes.length ? VIEW.nodes[0].id : null;
  const INDENT = 22;
  // a number whose 95 % interval includes 0 (pbo_core.explain.export.MUTED)
  const MUTED = "#4f4f4f";  // drawn in italics
  const muted = (n, t) => (n.muted || []).includes(t);
  if (OPTS.bare) document.getElementById("bar").style.display = "none";  // presentation

  function outlineLayout() {
    // one row per visible node, depth first ("yes" side first), indented per level
    const out = new Map(), level = new Map(), stack = root === null ? [] : [root];
    let y = VIEW.title ? 24 : 4;
    while (stack.length) {
      const i = stack.pop(), n = nodes.get(i);
      const closed = shut.has(i) && kids.get(i).length > 0;
      level.set(i, n.parent < 0 ? 0 : level.get(n.parent) + 1);
      const [w, h] = closed ? [n.ocw, n.och] : [n.ow, n.oh];
      out.set(i, { x: 4 + level.get(i) * INDENT + w / 2, y, w, h, closed });
      y += h + 4;
      if (!closed) stack.push(...kids.get(i).slice().reverse());
    }
    return out;
  }

  function layout() {
    if (style === "outline") return outlineLayout();
    const size = new Map(), level = new Map(), visible = [];
    const stack = root === null ? [] : [root];
    while (stack.length) {
      const i = stack.pop(); const n = nodes.get(i); visible.push(i);
      const closed = shut.has(i) && kids.get(i).length > 0;
      size.set(i, closed ? [n.cw, n.ch] : [n.w, n.h]);
      level.set(i, n.parent < 0 ? 0 : level.get(n.parent) + 1);
      if (!closed) stack.push(...kids.get(i).slice().reverse());
    }
    const gx = 14, gy = 34, levelH = [];
    visible.forEach((i) => { const l = level.get(i); levelH[l] = Math.max(levelH[l] || 0, size.get(i)[1]); });
    const top = [VIEW.title ? 24 : 4];
    for (let l = 1; l < levelH.length; l++) top[l] = top[l - 1] + levelH[l - 1] + gy;
    // tidy tree (as pbo_core.explain.export._tidy_offsets): subtrees packed by their
    // per-level contours, each parent centred over its first and last child
    const open = (i) => (shut.has(i) ? [] : kids.get(i));
    const contour = new Map(), rel = new Map();
    visible.slice().reverse().forEach((i) => {
      const ch = open(i), half = size.get(i)[0] / 2;
      if (!ch.length) { contour.set(i, [[-half, half]]); return; }
      const merged = contour.get(ch[0]).map((p) => p.slice());
      const offs = [0];
      ch.slice(1).forEach((c) => {
        const cc = contour.get(c);
        let shift = -Infinity;
        for (let d = 0; d < Math.min(merged.length, cc.length); d++) shift = Math.max(shift, merged[d][1] - cc[d][0]);
        shift += gx;
        offs.push(shift);
        cc.forEach(([lo, hi], d) => {
          if (d < merged.length) merged[d] = [merged[d][0], hi + shift]; else merged.push([lo + shift, hi + shift]);
        });
      });
      const mid = (offs[0] + offs[offs.length - 1]) / 2;
      ch.forEach((c, k) => rel.set(c, offs[k] - mid));
      contour.set(i, [[-half, half], ...merged.map(([lo, hi]) => [lo - mid, hi - mid])]);
    });
    const xOf = new Map(), out = new Map();
    if (root !== null) xOf.set(root, 0);
    visible.forEach((i) => open(i).forEach((c) => xOf.set(c, xOf.get(i) + rel.get(c))));
    let left = Infinity;
    visible.forEach((i) => { left = Math.min(left, xOf.get(i) - size.get(i)[0] / 2); });
    visible.forEach((i) => {
      const [w, h] = size.get(i);
      out.set(i, { x: xOf.get(i) - left + 4, y: top[level.get(i)], w, h, closed: shut.has(i) && kids.get(i).length > 0 });
    });
    return out;
  }

  function el(tag, attrs, text) {
    const e = document.createElementNS(NS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function draw() {
    const lay = layout();
    svg.innerHTML = "";
    const g = el("g", { id: "viewport" });
    svg.appendChild(g);
    let W = 0, H = 0;
    lay.forEach((b) => { W = Math.max(W, b.x + b.w / 2); H = Math.max(H, b.y + b.h); });
    layoutBox = { w: W + 8, h: H + 8 };
    const body = el("g", {});
    if (VIEW.title) {
      // a title wider than the tree widens the picture; the tree is centred under it
      const t = el("text", { x: W / 2, y: 16, "text-anchor": "middle", "font-size": 13, "font-weight": "bold" }, VIEW.title);
      g.appendChild(t);
      const tw = t.getComputedTextLength ? t.getComputedTextLength() : 0;
      if (tw + 16 > layoutBox.w) {
        const dx = (tw + 16 - layoutBox.w) / 2;
        layoutBox.w = tw + 16;
        t.setAttribute("x", layoutBox.w / 2);
        body.setAttribute("transform", `translate(${dx},0)`);
      }
    }
    g.appendChild(body);
    lay.forEach((b, i) => {
      const n = nodes.get(i);
      if (n.parent < 0 || !lay.has(n.parent)) return;
      const p = lay.get(n.parent), y0 = p.y + p.h, y1 = b.y, ym = (y0 + y1) / 2;
      const bold = n.on_path && nodes.get(n.parent).on_path;
      if (style === "outline") {  // an elbow from below the parent's left edge to the row
        const x0 = p.x - p.w / 2 + INDENT / 2;
        body.appendChild(el("path", { d: `M${x0},${y0} V${b.y + b.h / 2} H${b.x - b.w / 2}`, fill: "none", stroke: bold ? "#1f4e79" : "#888", "stroke-width": bold ? 3 : 1 }));
        return;
      }
      body.appendChild(el("path", { d: `M${p.x},${y0} C${p.x},${ym} ${b.x},${ym} ${b.x},${y1}`, fill: "none", stroke: bold ? "#1f4e79" : "#666", "stroke-width": bold ? 3 : 1 }));
      if (n.edge) body.appendChild(el("text", { x: (p.x + b.x) / 2, y: ym - 2, "text-anchor": "middle", "font-size": 11, fill: "#333" }, n.edge));
    });
    lay.forEach((b, i) => {
      const n = nodes.get(i);
      const grp = el("g", { class: "node " + n.kind + (b.closed ? " collapsed" : ""), "data-id": i, cursor: "pointer" });
      grp.appendChild(el("title", {}, n.tooltip + (kids.get(i).length ? (b.closed ? " — click to expand." : " — click to collapse.") : (n.items.length ? " — click to list every item." : ""))));
      grp.appendChild(el("rect", { x: b.x - b.w / 2, y: b.y, width: b.w, height: b.h, rx: 6, fill: n.fill, stroke: n.on_path ? "#1f4e79" : "#555", "stroke-width": n.on_path ? 3 : 1, "stroke-dasharray": b.closed ? "4 2" : "none" }));
      const ty0 = b.y + 4 + 11;
      if (style === "outline") {
        const rows = b.closed ? n.outline_closed : n.outline, left = b.x - b.w / 2 + 8;
        rows.forEach((t, k) => grp.appendChild(el("text", k ? { x: left, y: ty0 + k * 14, fill: muted(n, t) ? MUTED : "#000", "font-style": muted(n, t) ? "italic" : "normal" } : { x: left, y: ty0, "font-weight": "bold" }, t)));
        if (n.warn) grp.appendChild(el("text", { x: left, y: ty0 + rows.length * 14, fill: "#b00020" }, n.warn));
        grp.addEventListener("click", (ev) => { ev.stopPropagation(); clicked(i); });
        body.appendChild(grp);
        return;
      }
      n.title_lines.forEach((t, k) => {
        grp.appendChild(el("text", { x: b.x, y: ty0 + k * 14, "text-anchor": "middle", "font-weight": "bold" }, t));
      });
      const off = n.title_lines.length;
      (b.closed ? n.summary : n.lines).forEach((t, k) => {
        const fill = t === n.warn ? "#b00020" : (muted(n, t) ? MUTED : "#000");
        const attrs = { x: b.x, y: ty0 + (k + off) * 14, "text-anchor": "middle", fill };
        if (muted(n, t)) attrs["font-style"] = "italic";
        grp.appendChild(el("text", attrs, t));
      });
      grp.addEventListener("click", (ev) => { ev.stopPropagation(); clicked(i); });
      body.appendChild(grp);
    });
    apply();
    document.getElementById("tree-count").textContent = `${lay.size} of ${VIEW.nodes.length} boxes shown`;
  }

  function clicked(i) {
    const n = nodes.get(i);
    if (kids.get(i).length) {
      if (shut.has(i)) shut.delete(i); else shut.add(i);
      draw();
      return;
    }
    // a leaf: every line of it (the box may show fewer) and all its items
    const details = n.details || [];
    if (!n.items.length && !details.length) return;
    panel.innerHTML = "";
    const h = document.createElement("b");
    h.textContent = n.items.length ? `${n.title}: ${n.items.length} item${n.items.length === 1 ? "" : "s"}` : n.title;
    panel.appendChild(h);
    if (details.length) {
      const d = document.createElement("div"); d.className = "details";
      details.forEach((t) => {
        const line = document.createElement("div"); line.textContent = t;
        if (muted(n, t)) { line.style.color = MUTED; line.style.fontStyle = "italic"; }
        d.appendChild(line);
      });
      panel.appendChild(d);
    }
    if (n.items.length) {
      const ul = document.createElement("ul");
      n.items.forEach((t) => { const li = document.createElement("li"); li.textContent = t; ul.appendChild(li); });
      panel.appendChild(ul);
    }
    panel.style.display = "block";
  }

  function apply() {
    document.getElementById("viewport").setAttribute("transform", `translate(${tx},${ty}) scale(${scale})`);
    document.getElementById("tree-zoom").textContent = `${Math.round(scale * 100)}%`;
  }
  function fit() {
    const r = svg.getBoundingClientRect();
    scale = Math.min(r.width / layoutBox.w, r.height / layoutBox.h, 1.5);
    tx = (r.width - layoutBox.w * scale) / 2; ty = 4;
    apply();
  }
  function zoomAt(f, cx, cy) {
    const s = Math.min(Math.max(scale * f, 0.05), 8);
    tx = cx - (cx - tx) * (s / scale); ty = cy - (cy - ty) * (s / scale); scale = s; apply();
  }
  function centre() { const r = svg.getBoundingClientRect(); return [r.width / 2, r.height / 2]; }

  svg.addEventListener("wheel", (e) => {
    e.preventDefault();
    const r = svg.getBoundingClientRect();
    zoomAt(e.deltaY < 0 ? 1.15 : 1 / 1.15, e.clientX - r.left, e.clientY - r.top);
  }, { passive: false });
  let drag = null;
  svg.addEventListener("mousedown", (e) => { drag = [e.clientX - tx, e.clientY - ty]; });
  window.addEventListener("mousemove", (e) => { if (drag) { tx = e.clientX - drag[0]; ty = e.clientY - drag[1]; apply(); } });
  window.addEventListener("mouseup", () => { drag = null; });

  function standalone() {
    const lay = layoutBox;
    const copy = svg.cloneNode(true);
    copy.setAttribute("xmlns", NS);
    copy.setAttribute("width", Math.ceil(lay.w)); copy.setAttribute("height", Math.ceil(lay.h));
    copy.setAttribute("viewBox", `0 0 ${Math.ceil(lay.w)} ${Math.ceil(lay.h)}`);
    copy.querySelector("#viewport").setAttribute("transform", "");
    const bg = el("rect", { width: "100%", height: "100%", fill: "#fff" });
    copy.insertBefore(bg, copy.firstChild);
    return new XMLSerializer().serializeToString(copy);
  }
  function save(blob, name) {
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob); a.download = name; document.body.appendChild(a); a.click(); a.remove();
  }
  const on = (id, f) => document.getElementById(id).addEventListener("click", f);
  on("b-in", () => zoomAt(1.25, ...centre()));
  on("b-out", () => zoomAt(0.8, ...centre()));
  on("b-fit", fit);
  on("b-real", () => { scale = 1; tx = 4; ty = 4; apply(); });
  const refit = () => (style === "outline" ? start() : fit());  // an outline stays legible
  on("b-expand", () => { shut.clear(); draw(); refit(); });
  on("b-collapse", () => { VIEW.nodes.forEach((n) => { if (n.depth >= 2 && kids.get(n.id).length) shut.add(n.id); }); draw(); refit(); });
  on("b-full", () => {
    const fe = window.frameElement;
    const target = fe && fe.requestFullscreen ? fe : document.documentElement;
    const d = fe ? window.parent.document : document;
    if (d.fullscreenElement) d.exitFullscreen(); else target.requestFullscreen().then(() => setTimeout(fit, 200));
  });
  on("b-svg", () => save(new Blob([standalone()], { type: "image/svg+xml" }), OPTS.name + "-view.svg"));
  on("b-png", () => {
    const img = new Image(), s = 2;
    img.onload = () => {
      const c = document.createElement("canvas");
      c.width = Math.ceil(layoutBox.w * s); c.height = Math.ceil(layoutBox.h * s);
      const ctx = c.getContext("2d"); ctx.scale(s, s); ctx.drawImage(img, 0, 0);
      c.toBlob((b) => save(b, OPTS.name + "-view.png"), "image/png");
    };
    img.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(standalone());
  });
  // the smallest text is 11 px: at this scale it is drawn at 9 px, the least that reads
  const MIN_OPEN_SCALE = 9 / 11;
  function start() {
    // small trees fit the view; big ones open at a readable scale centred on the root
    fit();
    if (style === "outline" && scale < 1) { scale = 1; tx = 4; ty = 4; apply(); return; }
    if (scale < MIN_OPEN_SCALE) {
      const r = svg.getBoundingClientRect(), lay = layout(), b = lay.get(root);
      scale = MIN_OPEN_SCALE; tx = r.width / 2 - b.x * scale; ty = 4; apply();
    }
  }
  draw();
  start();
})();
