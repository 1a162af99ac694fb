// dsync status page: reads status.json every second and draws it. No
// framework, nothing fetched but status.json beside this script.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const form = $("filter");
  let after = "", next = "", lastGood = null, timer = null;

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else e.setAttribute(k, v);
    }
    for (const k of kids) e.append(k instanceof Node ? k : String(k));
    return e;
  }
  function dur(ms) {
    const s = Math.round(ms / 1000);
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m " + (s % 60) + "s";
    return Math.floor(s / 3600) + "h " + Math.floor((s % 3600) / 60) + "m";
  }
  function clock(t) { return new Date(t).toISOString().slice(11, 19) + " UTC"; }
  // An expiry passed while the holder is still listed: not proven gone
  // (within its outage grace: riding an outage of the store, or dead with
  // nothing to show it yet).
  function expiry(t, inMs) { return clock(t) + (inMs > 0 ? " (in " + dur(inMs) + ")" : " (expired)"); }
  function table(head, rows) {
    const t = el("table", {}, el("thead", {}, el("tr", {}, ...head.map((h) => el("th", {}, h)))));
    const b = el("tbody");
    for (const r of rows) {
      const tr = el("tr", r.cls ? { class: r.cls } : {});
      r.cells.forEach((c, i) => tr.append(el("td", { "data-label": head[i], class: r.num && r.num[i] ? "num" : "" }, c)));
      b.append(tr);
    }
    t.append(b);
    return t;
  }
  function claimRow(c, i, holds) {
    const units = c.mode === "weighted" ? " ×" + c.weight : "";
    const revoked = c.revoked ? " (revoked)" : "";
    return {
      cls: (holds ? "holder" : "waiting") + (c.revoked ? " revoked" : ""),
      cells: [(holds ? "holds" + units : "waits #" + i + units) + revoked, c.token, c.host, c.pid, c.owner,
        holds ? dur(c.heldForMs) : "waiting " + dur(c.heldForMs), expiry(c.expiresAt, c.expiresInMs)],
      num: [false, true, false, true, false, true, false],
    };
  }
  function lockCard(l) {
    const state = /^\d+\/\d+$/.test(l.state) ? "units" : l.state;
    const card = el("div", { class: "card lock", "data-key": l.key },
      el("div", { class: "title" }, el("span", { class: "name" }, l.name), el("span", { class: "kind" }, l.kind),
        el("span", { class: "badge " + state }, l.state),
        l.waiting.length ? el("span", { class: "kind" }, l.waiting.length + " waiting") : ""));
    const rows = l.holders.map((c) => claimRow(c, 0, true)).concat(l.waiting.map((c, i) => claimRow(c, i + 1, false)));
    if (rows.length) card.append(table(["Claim", "Token", "Host", "PID", "Owner", "Held for", "Lease ends"], rows));
    return card;
  }
  function electionCard(e) {
    const card = el("div", { class: "card election", "data-name": e.name },
      el("div", { class: "title" }, el("span", { class: "name" }, e.name), el("span", { class: "kind" }, "election"),
        e.leader ? el("span", { class: "badge leader" }, "led by " + e.leader.host + " pid " + e.leader.pid)
          : el("span", { class: "badge none" }, "no leader")));
    if (e.leader) {
      const l = e.leader;
      card.append(table(["Leader", "Term", "Value", "Version", "Leads for", "Lease ends"],
        [{ cls: "leader", cells: [l.host + " pid " + l.pid, l.term, l.value || "–", l.version || "–", dur(l.heldForMs),
          l.expiresAt ? expiry(l.expiresAt, l.expiresInMs) : "–"] }]));
    }
    if (e.members.length) {
      card.append(table(["Member", "Host", "PID", "Version", "Last heartbeat"],
        e.members.map((m) => ({ cells: [m.id + (m.leader ? " (leader)" : ""), m.host, m.pid, (m.version || "–") + (m.priority ? " · priority " + m.priority : ""), dur(m.lastSeenAgoMs) + " ago"] }))));
    }
    return card;
  }
  function count(n, noun) { return n + " " + noun + (n === 1 ? "" : "s"); }
  function partitionCard(p) {
    const owners = new Set(p.shards.filter((sh) => sh.owner).map((sh) => sh.owner.host + " pid " + sh.owner.pid));
    const card = el("div", { class: "card partition", "data-name": p.name },
      el("div", { class: "title" }, el("span", { class: "name" }, p.name), el("span", { class: "kind" }, "partition"),
        el("span", { class: "kind" }, count(p.shards.length, "shard") + ", " + count(owners.size, "owner"))));
    card.append(table(["Shard", "Owner", "Token", "Owns for", "Lease ends"], p.shards.map((sh) => {
      const o = sh.owner;
      return o ? { cls: "shard", cells: [sh.shard, o.host + " pid " + o.pid, o.term, dur(o.heldForMs),
        o.expiresAt ? expiry(o.expiresAt, o.expiresInMs) : "–"], num: [true, false, true, true, false] }
        : { cls: "shard unowned", cells: [sh.shard, "no owner", "–", "–", "–"], num: [true, false, false, false, false] };
    })));
    const drained = p.drained || [];
    if (drained.length) {
      card.append(table(["Drained member", "Host", "PID", "Drained by", "When", "Why"], drained.map((d) => ({ cls: "drained",
        cells: [d.id, d.host || "no status seen", d.pid || "–", d.by, when(d.at), d.reason || "–"], num: [false, false, true, false, false, false] }))));
    }
    return card;
  }
  function when(t) { return new Date(t).toISOString().replace("T", " ").slice(0, 19) + " UTC"; }
  function revocations(rs) {
    if (!rs.length) return [el("p", { class: "empty" }, "No session was revoked.")];
    return [el("div", { class: "card" }, table(["Session", "Revoked by", "When", "Why"],
      rs.map((r) => ({ cls: "revoked", cells: [r.session, r.by, when(r.at), r.reason] }))))];
  }
  // A stall of the last hour (by the read's time) is marked.
  function stalls(ss, now) {
    if (!ss.length) return [el("p", { class: "empty" }, "No hold stalled.")];
    return [el("div", { class: "card" }, table(["Lock", "Token", "Host", "PID", "Owner", "Held since", "Last progress", "Stalled at"],
      ss.map((st) => {
        const recent = Date.parse(now) - Date.parse(st.at) < 3600e3;
        return { cls: "stalled" + (recent ? " recent" : ""),
          cells: [st.name + " (" + st.kind + ")" + (recent ? " · last hour" : ""), st.token, st.host, st.pid, st.owner,
            st.since ? when(st.since) : "–", st.lastProgress ? when(st.lastProgress) : "–", when(st.at)],
          num: [false, true, false, true, false, false, false, false] };
      })))];
  }
  // Who waits for whom among lock sets, and the deadlocks broken; the
  // store may keep no notes or records, and the page says so.
  function setWaits(ws, s) {
    const out = [];
    if (!ws.length) out.push(el("p", { class: "empty" }, "No lock set waits on this page."));
    else out.push(el("div", { class: "card" }, table(["Set", "Host", "PID", "Holds", "Waits for", "Held by", "Waiting"],
      ws.map((w) => ({ cls: "setwait", cells: [w.set, w.host, w.pid,
        w.noted ? (w.holds.join(", ") || "–") : "not noted yet", w.name + " (" + w.kind + ", token " + w.token + ")",
        w.heldBy.map((h) => (h.set ? "set " + h.set + " " : "") + h.host + " pid " + h.pid + " token " + h.token).join("; ") || "nobody now",
        dur(w.waitingMs)], num: [false, false, true, false, false, false, true] })))));
    if (s.noWaitNotes) out.push(el("p", { class: "empty" }, "The store keeps no wait notes: what a set holds while it waits is not known, and no deadlock is detected."));
    return out;
  }
  function deadlocks(ds, s) {
    if (s.noDeadlockRecords) return [el("p", { class: "empty" }, "The store keeps no records of deadlocks broken.")];
    if (!ds.length) return [el("p", { class: "empty" }, "No deadlock was broken in the last day.")];
    return [el("div", { class: "card" }, table(["When", "Victim", "Host", "PID", "Cycle"],
      ds.map((d) => ({ cls: "deadlock", cells: [when(d.at), d.victim, d.host, d.pid,
        (d.cycle.length ? d.cycle[0].set : "") + d.cycle.map((e) => " →" + e.name + "→ " + e.heldBy).join("")],
        num: [false, false, false, true, false] }))))];
  }
  // The outages of the store ridden through: a row per session that kept
  // holds, suspended at its deadline and resumed once the store was back.
  function outages(os) {
    if (!os.length) return [el("p", { class: "empty" }, "No outage of the store was ridden through in the last day.")];
    return [el("div", { class: "card" }, table(["Suspended", "For", "Holds kept", "Host", "PID", "Session"],
      os.map((o) => ({ cls: "outage", cells: [when(o.suspended), dur(Date.parse(o.resumed) - Date.parse(o.suspended)), o.holds, o.host, o.pid, o.session],
        num: [false, true, true, false, true, false] }))))];
  }
  function draw(s) {
    $("setwaits").replaceChildren(...setWaits(s.setWaits || [], s));
    $("deadlocks").replaceChildren(...deadlocks(s.deadlocks || [], s));
    $("outages").replaceChildren(...outages(s.outages || []));
    $("revocations").replaceChildren(...revocations(s.revocations || []));
    $("stalls").replaceChildren(...stalls(s.stalls || [], s.now));
    $("locks").replaceChildren(...(s.locks.length ? s.locks.map(lockCard) : [el("p", { class: "empty" }, "No locks on this page.")]));
    $("partitions").replaceChildren(...(s.partitions.length ? s.partitions.map(partitionCard) : [el("p", { class: "empty" }, "No partitions on this page.")]));
    $("elections").replaceChildren(...(s.elections.length ? s.elections.map(electionCard) : [el("p", { class: "empty" }, "No elections on this page.")]));
    next = s.next;
    $("more").hidden = !(s.more && !s.next);
    $("next").disabled = !next;
    $("first").disabled = !after;
  }
  async function refresh() {
    const p = new URLSearchParams(new FormData(form));
    if (after) p.set("after", after);
    let s = null, why = "";
    try {
      const r = await fetch("status.json?" + p.toString(), { cache: "no-store" });
      s = await r.json();
      if (s.error) why = s.error;
    } catch (e) {
      why = "the page's server does not answer (" + e.message + ")";
    }
    if (why) {
      $("error").hidden = false;
      $("error").textContent = "Cannot reach the store: " + why +
        (lastGood ? ". Showing what was read at " + clock(lastGood) + "." : ".");
    } else {
      $("error").hidden = true;
      lastGood = s.now;
      draw(s);
      $("meta").textContent = count(s.locks.length, "lock") + ", " + count(s.elections.length, "election") + ", " + count(s.partitions.length, "partition") + " · read at " +
        clock(s.now) + (s.clock === "store" ? " (store time)" : " (this server's clock)") + " · updates every second";
    }
    timer = setTimeout(refresh, 1000);
  }
  function restart() { clearTimeout(timer); refresh(); }
  form.addEventListener("input", () => { after = ""; restart(); });
  form.addEventListener("submit", (e) => e.preventDefault());
  $("next").addEventListener("click", () => { if (next) { after = next; restart(); } });
  $("first").addEventListener("click", () => { after = ""; restart(); });
  refresh();
})();
