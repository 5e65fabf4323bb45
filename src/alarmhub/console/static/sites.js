// alarmhub operator console, one operator per site: the alarm screen lists the account's other
// open alarms (siblings) and opens them; the resolve form offers the siblings the operator may
// resolve with the alarm (pending ones, and those in process with them); a supervisor moves the
// site's alarms to a signed-on operator. Builds on console.js (window.alarmhub); every text from
// the server goes in with textContent.
"use strict";

(() => {
  const hub = window.alarmhub;
  const { el, $, me } = hub;

  let siblings = [];      // the open alarm's siblings, as last drawn
  let account = "";       // the open alarm's account

  const stateText = (s) => (s.state === "pending" ? "pending" : `${s.state.replace("_", " ")}: ${s.opr || "-"}`);
  // a sibling the operator may resolve with their alarm: theirs, or pending (taken first)
  const resolvable = (s) => s.state === "pending" || (s.state === "in_process" && s.opr === me.code);

  // drawing ------------------------------------------------------------------------------------

  function siblingRow(s) {
    const open = el("button", { type: "button", class: "open-sibling", "data-alarm-id": s.alarm_id,
      title: `Open alarm ${s.alarm_id}` }, String(s.alarm_id));
    const type = el("td", { class: "type" }, s.type);
    hub.paint(type, s.color);
    return el("tr", { "data-alarm-id": s.alarm_id, class: s.state },
      el("td", {}, open), el("td", { class: "when" }, hub.when(s.received_us)), type,
      el("td", {}, s.hist_text), el("td", { class: "sibling-state" }, stateText(s)));
  }

  function draw(detail, mine) {
    const { alarm } = detail;
    siblings = openSiblings();
    account = alarm.account_number;
    const section = $("#alarm-site");
    section.hidden = !account || alarm.state === "resolved";
    if (section.hidden) return;
    $("#sibling-count").textContent = String(siblings.length);
    const rows = siblings.map(siblingRow);
    if (!rows.length) rows.push(el("tr", {}, el("td", { class: "note" }, "none")));
    $("#sibling-list tbody").replaceChildren(...rows);
    drawMove(alarm);
    if (mine && !$("#form-resolve").hidden) fillChoices(true);
  }

  function drawMove(alarm) {
    const form = $("#form-move");
    const movable = alarm.state !== "pending" || siblings.some((s) => s.state !== "pending");
    form.hidden = !me.supervisor || !movable;
    if (form.hidden) return;
    const select = $("#move-to");
    const chosen = select.value;
    const choices = hub.state.operators.map((o) =>
      el("option", { value: o.code }, `${o.code}  ${o.name}  (${o.in_process} in process)`));
    select.replaceChildren(el("option", { value: "" }, "choose an operator..."), ...choices);
    select.value = chosen;
  }

  // resolving together -------------------------------------------------------------------------

  // the siblings of the alarm open now (none while its screen is still loading)
  function openSiblings() {
    const detail = hub.state.detail;
    return detail && detail.alarm.alarm_id === hub.state.openId ? detail.siblings || [] : [];
  }

  // the resolve form's checkboxes: one per sibling the operator may resolve with the alarm,
  // ticks kept when the screen is redrawn
  function fillChoices(keep) {
    const fieldset = $("#resolve-siblings");
    const boxes = [...fieldset.querySelectorAll('input[name="sibling"]')];
    const ticked = new Set(keep ? boxes.filter((b) => b.checked).map((b) => Number(b.value)) : []);
    const choices = openSiblings().filter(resolvable);
    const same = keep && boxes.map((b) => Number(b.value)).join() === choices.map((c) => c.alarm_id).join();
    if (same) return; // nothing to redraw (and the focus stays where it is)
    fieldset.hidden = !choices.length;
    fieldset.replaceChildren(fieldset.querySelector("legend"), ...choices.map((c) => el("label", { class: "check" },
      el("input", { type: "checkbox", name: "sibling", value: c.alarm_id, checked: ticked.has(c.alarm_id) }),
      ` ${c.alarm_id}  ${c.type}  ${c.hist_text}  (${stateText(c)})`)));
  }

  function formOpened(name) {
    if (name === "resolve") fillChoices(false);
  }

  function resolving(body) {
    const chosen = [...document.querySelectorAll('#resolve-siblings input[name="sibling"]:checked')];
    if (chosen.length && !$("#resolve-siblings").hidden) body.siblings = chosen.map((box) => Number(box.value));
  }

  // moving the site's alarms -------------------------------------------------------------------

  async function move(e) {
    e.preventDefault();
    $("#move-to").blur(); // the keys are the console's again once the move is asked for
    const to = $("#move-to").value;
    if (!to || !account) return;
    try {
      const data = await hub.api("POST", `/accounts/${encodeURIComponent(account)}/move`, { to });
      hub.banner(`Moved ${data.moved.length} alarm(s) of account ${account} to ${to}.`);
      hub.showError("");
    } catch (err) {
      hub.showError(err.message);
    }
    hub.loadDetail();
  }

  // keys ---------------------------------------------------------------------------------------

  function ensureOpen() {
    if (hub.state.openId !== null) return true;
    const id = hub.myAlarm();
    if (id === null) hub.banner("No alarm open or in process with you.");
    else hub.openAlarm(id);
    return false;
  }

  function siblingsKey() {
    if (!ensureOpen()) return;
    const first = $("#sibling-list button.open-sibling");
    if (first && !$("#alarm-site").hidden) first.focus();
    else hub.banner("This alarm's site has no other open alarm.");
  }

  function moveKey() {
    if (!me.supervisor || !ensureOpen()) return;
    if ($("#form-move").hidden) hub.banner("Nothing of this site to move.");
    else $("#move-to").focus();
  }

  // wiring -------------------------------------------------------------------------------------

  hub.hooks.detail.push(draw);
  hub.hooks.formOpened.push(formOpened);
  hub.hooks.resolving.push(resolving);
  hub.hooks.keys.s = siblingsKey;
  hub.hooks.keys.m = moveKey;
  $("#form-move").addEventListener("submit", move);
  $("#move-to").addEventListener("keydown", (e) => {
    if (e.key !== "Enter") return; // a select does not submit its form by itself
    e.preventDefault();
    $("#form-move").requestSubmit();
  });
  $("#sibling-list").addEventListener("click", (e) => {
    const button = e.target.closest("button.open-sibling");
    if (button) hub.openAlarm(Number(button.dataset.alarmId));
  });
})();
