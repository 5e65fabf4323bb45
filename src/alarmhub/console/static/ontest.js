// alarmhub operator console, on test (decisions §9): the On test panel lists the accounts on
// test (from each snapshot of the live feed), their zones and alarm TYPEs, who asked and when
// each returns (time and minutes left, ticking); any operator puts an account on test (the
// alarm's on screen, or one typed; key T) and ends a test early: POST and DELETE
// /console/api/accounts/{account}/test. The server checks everything; its refusals are shown as
// they come.
// Builds on console.js (window.alarmhub); every text goes in with textContent.
"use strict";

(() => {
  const hub = window.alarmhub;
  const { el, $ } = hub;
  const MINUTE_US = 60e6;

  let tests = [];

  const serverNowUs = () => (Date.now() + hub.state.offsetMs) * 1000;
  const dialog = () => $("#ontest-dialog");

  function showError(selector, message) {
    const node = $(selector);
    node.textContent = message;
    node.hidden = !message;
  }

  // the panel ----------------------------------------------------------------------------------

  function what(t) {
    const zones = t.zones.length ? `zones ${t.zones.join(" ")}` : "every zone";
    const types = t.types.length ? `TYPEs ${t.types.join(" ")}` : "every TYPE";
    return `${zones} · ${types}`;
  }

  function minutesLeft(t) {
    return Math.max(0, Math.ceil((t.ends_us - serverNowUs()) / MINUTE_US));
  }

  function draw(running) {
    tests = running || [];
    const rows = tests.map((t) => {
      const end = el("button", { type: "button", title: `End the test of ${t.account_number} now` }, "End test");
      end.addEventListener("click", () => stop(t.account_number));
      const who = t.opr ? `by ${t.by} (OPR ${t.opr})` : `by ${t.by}`;
      return el("tr", { "data-account": t.account_number },
        el("td", {},
          el("span", { class: "account" }, t.account_number), " ", t.company_name || "",
          el("span", { class: "what" }, what(t)),
          el("span", { class: "who", title: t.reason || "" }, t.reason ? `${who}: ${t.reason}` : who)),
        el("td", { class: "returns", title: "returns from test at" },
          hub.when(t.ends_us), el("span", { class: "left", "data-ends": t.ends_us }, ""), end));
    });
    $("#ontest tbody").replaceChildren(...rows);
    $("#ontest-count").textContent = tests.length;
    $("#ontest-empty").hidden = tests.length > 0;
    tick();
  }

  function tick() {
    for (const t of tests) {
      const cell = document.querySelector(`#ontest tr[data-account="${CSS.escape(t.account_number)}"] .left`);
      if (cell) cell.textContent = `${minutesLeft(t)} min left`;
    }
  }

  async function stop(account) {
    showError("#ontest-error", "");
    try {
      await hub.api("DELETE", `/accounts/${encodeURIComponent(account)}/test`);
      hub.banner(`${account} returned from test`);
    } catch (err) {
      showError("#ontest-error", err.message);
    }
  }

  // putting an account on test -----------------------------------------------------------------

  // the account of the alarm on screen, else of the alarm in process with me
  function accountOnScreen() {
    const d = hub.state.detail;
    if (hub.state.openId !== null && d && d.alarm) return d.alarm.account_number || "";
    const mine = hub.state.inProcess.find((a) => a.opr === hub.me.code);
    return mine ? mine.account_number : "";
  }

  function openForm(account) {
    const form = $("#form-ontest");
    form.reset();
    showError("#ontest-form-error", "");
    form.elements.namedItem("account").value = account || "";
    dialog().hidden = false;
    form.elements.namedItem(account ? "minutes" : "account").focus();
  }

  function closeForm() {
    dialog().hidden = true;
  }

  const words = (text) => text.split(/[\s,]+/).filter(Boolean);

  async function submit() {
    const form = $("#form-ontest");
    const field = (name) => form.elements.namedItem(name).value.trim();
    const account = field("account");
    const body = {
      minutes: Math.trunc(Number(field("minutes"))),
      zones: words(field("zones")),
      types: words(field("types")),
      by: field("by"),
    };
    if (field("reason")) body.reason = field("reason");
    showError("#ontest-form-error", "");
    try {
      const answer = await hub.api("POST", `/accounts/${encodeURIComponent(account)}/test`, body);
      closeForm();
      hub.banner(`${account} on test until ${hub.when(answer.test.ends_us)}`);
    } catch (err) {
      showError("#ontest-form-error", err.message);
    }
  }

  function wire() {
    $("#ontest-new").addEventListener("click", () => openForm(accountOnScreen()));
    $("#alarm-ontest").addEventListener("click", () => openForm(accountOnScreen()));
    $("#ontest-cancel").addEventListener("click", closeForm);
    dialog().addEventListener("click", (e) => { if (e.target === e.currentTarget) closeForm(); });
    $("#form-ontest").addEventListener("submit", (e) => {
      e.preventDefault();
      submit();
    });
    // Esc closes this form first (before console.js closes the alarm screen beneath it)
    window.addEventListener("keydown", (e) => {
      if (e.key === "Escape" && !dialog().hidden) {
        e.preventDefault();
        e.stopPropagation();
        closeForm();
      }
    }, true);
    hub.hooks.keys.t = () => openForm(accountOnScreen());
    hub.hooks.snapshot.push((snap) => draw(snap.on_test));
    setInterval(tick, 1000);
  }

  wire();
})();
