// The page assets as Swift string literals, so the server binary carries them (no resource bundle).
extension PageAsset {
    /// `/`: the inspector page.
    static let inspectorHTML = #"""
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <title>Contrail inspector</title>
    <link rel="stylesheet" href="/pages.css">
    <style>
      body { font-size: 13px; }
      .figure b { font-size: 18px; }
      main { display: grid; grid-template-columns: 240px 1fr 1fr; gap: 12px; padding: 12px; }
      section { background: #fff; border: 1px solid #dde; border-radius: 6px; padding: 10px; overflow: auto; max-height: calc(100vh - 90px); }
      h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .05em; color: #667; margin: 0 0 8px; }
      table { border-collapse: collapse; width: 100%; }
      td, th { text-align: left; padding: 4px 6px; border-bottom: 1px solid #eef; }
      tr.scope { cursor: pointer; }
      tr.scope.chosen { background: #e3efff; font-weight: 600; }
      details { margin-left: 14px; }
      summary { cursor: pointer; font-family: ui-monospace, monospace; }
      .cls { color: #7a3e9d; font-weight: 600; }
      .prop { font-family: ui-monospace, monospace; margin-left: 16px; white-space: nowrap; }
      .key { color: #1a5fb4; }
      .flash { animation: flash 1.2s ease-out; }
      @keyframes flash { from { background: #ffe27a; } to { background: transparent; } }
      .changeset { border-bottom: 1px solid #eef; padding: 4px 0; font-family: ui-monospace, monospace; font-size: 12px; }
      .changeset time { color: #889; margin-right: 6px; }
      .fragment { margin-left: 12px; white-space: pre-wrap; word-break: break-all; }
      .empty { color: #889; font-style: italic; }
    </style>
    </head>
    <body>
    <header>
      <h1>Contrail inspector</h1>
      <span class="figure">sessions <b id="sessions">–</b></span>
      <span class="figure">fragments/s <b id="rate">0</b></span>
      <a href="/demo">canvas demo</a>
      <span id="status">connecting</span>
    </header>
    <main>
      <section><h2>Scopes</h2><table id="scopes"><tr><th>name</th><th>objects</th><th>sessions</th></tr></table></section>
      <section><h2>Tree <span id="scope-title"></span></h2><div id="tree" class="empty">choose a scope</div></section>
      <section><h2>Change sets</h2><div id="changes" class="empty">none yet</div></section>
    </main>
    <script type="module" src="/inspector.js"></script>
    </body>
    </html>
    """#
    /// `/inspector.js`: the inspector's script.
    static let inspectorJS = #"""
    // The inspector: scopes with object counts and the session count (polled from /api/overview), and a
    // live tree of one scope with the change sets flowing through it, through its own read-only session.
    import { Client, Scope } from "/contrail.js";

    const query = new URLSearchParams(location.search);
    const hash = new URLSearchParams(location.hash.slice(1));
    const params = hash.has("token") ? { token: hash.get("token") } : {};
    const wsURL = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/`;
    const chosenName = query.get("scope");
    const $ = (id) => document.getElementById(id);
    const element = (tag, className, text) => {
      const e = document.createElement(tag);
      if (className) e.className = className;
      if (text !== undefined) e.textContent = text;
      return e;
    };
    const arrivals = [];   // [time, fragment count] of the last few seconds
    const changes = [];    // the last change sets, newest first
    let scope = null;
    let client = null;
    let flashes = new Set();

    async function poll() {
      try {
        const response = await fetch("/api/overview", { cache: "no-store" });
        const overview = await response.json();
        $("sessions").textContent = overview.sessions;
        const table = $("scopes");
        while (table.rows.length > 1) table.deleteRow(1);
        for (const s of overview.scopes) {
          const row = table.insertRow();
          row.className = "scope" + (scope?.name === s.name ? " chosen" : "");
          row.dataset.name = s.name;
          for (const value of [s.name, s.objects, s.subscribers]) row.insertCell().textContent = value;
          row.addEventListener("click", () => { location.search = `?scope=${encodeURIComponent(s.name)}`; });
        }
        if (!scope && !chosenName && overview.scopes.length) choose(overview.scopes[0].name);
      } catch (error) {
        $("status").textContent = `overview failed: ${error.message}`;
      }
    }

    function choose(name) {
      scope = new Scope(name);
      $("scope-title").textContent = `· ${name}`;
      client = new Client(wsURL, { params });
      client.on("status", (s) => { $("status").textContent = s; $("status").className = s; });
      scope.on("change", ({ model, key }) => { flashes.add(`${model.uuid}/${key}`); render(); });
      for (const type of ["attach", "detach", "state"]) scope.on(type, render);
      scope.on("changeset", ({ fragments, remote, state }) => {
        if (!remote) return;
        if (!state) arrivals.push([performance.now(), fragments.length]);
        changes.unshift({ at: new Date(), fragments, state });
        changes.length = Math.min(changes.length, 50);
        renderChanges();
      });
      client.fetch(scope).then(() => { render(); poll(); }, (error) => { $("tree").textContent = `fetch failed: ${error.message}`; });
    }

    function describe(value) {
      if (value === null || value === undefined) return "null";
      if (typeof value === "string" && scope.object(value)) return `→ ${value.slice(0, 8)}`;
      return JSON.stringify(value);
    }

    function node(model, depth, seen) {
      const details = element("details");
      details.open = openState.get(model.uuid) ?? depth < 2;
      details.dataset.uuid = model.uuid;
      const summary = element("summary");
      summary.append(element("span", "cls", model.clsName), ` ${model.uuid.slice(0, 8)}`);
      details.append(summary);
      seen.add(model.uuid);
      for (const key of Object.keys(model.properties).sort()) {
        const value = model.properties[key];
        const line = element("div", "prop");
        line.dataset.key = `${model.uuid}/${key}`;
        if (flashes.has(line.dataset.key)) line.classList.add("flash");
        line.append(element("span", "key", key), `: ${Array.isArray(value) ? `[${value.length}]` : describe(value)}`);
        details.append(line);
        const children = Array.isArray(value) ? value : typeof value === "string" ? [value] : [];
        for (const id of children) {
          const child = scope.object(id);
          if (child && !seen.has(id)) details.append(node(child, depth + 1, seen));
        }
      }
      details.addEventListener("toggle", () => openState.set(model.uuid, details.open));
      return details;
    }

    const openState = new Map();
    let frame = 0;
    function render() {
      if (frame || !scope) return;
      frame = requestAnimationFrame(() => {
        frame = 0;
        const tree = $("tree");
        tree.className = "";
        tree.replaceChildren(node(scope.root, 0, new Set()));
        flashes = new Set();
      });
    }

    function renderChanges() {
      const list = $("changes");
      list.className = "";
      list.replaceChildren(...changes.map(({ at, fragments, state }) => {
        const entry = element("div", "changeset");
        const count = `${fragments.length} fragment${fragments.length === 1 ? "" : "s"}`;
        entry.append(element("time", "", at.toLocaleTimeString()), state ? `full state, ${count}` : count);
        for (const f of fragments) {
          entry.append(element("div", "fragment", `${f.type} ${f.clsName} ${f.uuid.slice(0, 8)} ${JSON.stringify(f.properties)}`));
        }
        return entry;
      }));
    }

    setInterval(() => {
      const now = performance.now();
      while (arrivals.length && now - arrivals[0][0] > 1000) arrivals.shift();
      $("rate").textContent = arrivals.reduce((sum, [, n]) => sum + n, 0);
    }, 250);
    setInterval(poll, 1000);
    poll();
    if (chosenName) choose(chosenName);
    // For tests and the console.
    window.contrailInspector = { get scope() { return scope; }, get client() { return client; } };
    """#
}
