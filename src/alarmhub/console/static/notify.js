// alarmhub operator console, messages to the account's contacts: on the alarm screen the plan's
// notify step done by messaging them (the form lists each contact that has an e-mail address or
// a mobile phone, the subscribers of the alarm's kind checked, else the call list's; POST
// /console/api/alarms/{id}/notify) and the messages about the alarm with their state (GET the
// same path, read again every few seconds while the alarm is open); the Messages view of the
// failed messages, each with its Resend button (POST /console/api/notifications/{id}/resend),
// and their count in red on the view's button, for everyone. Builds on console.js and plan.js
// (window.alarmhub); every text from the server goes in with textContent.
"use strict";

(() => {
  const hub = window.alarmhub;
  const { el, $ } = hub;
  const OPEN_EVERY_MS = 10000;    // an open alarm's messages
  const SHOWN_EVERY_MS = 5000;    // the failed messages while the view is on screen
  const HIDDEN_EVERY_MS = 15000;  // for the button's count
  const CHANNEL_NAMES = { email: "e-mail", sms: "SMS" };

  let alarmId = null;   // the alarm whose messages are shown
  let step = null;      // the position of its plan's notify step still to do
  let mine = false;
  let choices = null;   // whom the step may message
  let asked = 0;        // the newest read of an alarm's messages (older answers are dropped)
  let alarmTimer = null;

  const cell = (text, cls) => el("td", cls ? { class: cls } : {}, text === null ? "" : String(text));
  const stateCell = (m) => el("td", {}, el("span", { class: `link-state ${m.state === "failed" ? "failed" : m.state === "sent" ? "up" : "idle"}` }, m.state.toUpperCase()));

  // the alarm screen ----------------------------------------------------------------------------

  // one message about the alarm: when it was queued and why its last attempt failed in its title
  function messageRow(m) {
    const title = `queued ${hub.when(m.queued_us)}${m.last_error ? `; ${m.last_error}` : ""}`;
    return el("tr", { class: `sent-message ${m.state}`, "data-message": m.id, title },
      cell(m.name || `contact ${m.contact_id}`), cell(CHANNEL_NAMES[m.channel] || m.channel),
      cell(m.to, "address"), stateCell(m), cell(m.attempts, "num"));
  }

  function drawMessages(messages) {
    $("#alarm-messages").hidden = messages.length === 0;
    hub.replaceKeepingFocus($("#alarm-messages-table tbody"), ...messages.map(messageRow));
  }

  async function loadMessages() {
    clearTimeout(alarmTimer);
    if (alarmId === null || hub.state.openId !== alarmId) return; // closed: no more reads
    const id = alarmId;
    const mark = ++asked;
    try {
      const data = await hub.api("GET", `/alarms/${id}/notify`);
      if (mark !== asked || id !== alarmId) return;
      choices = data.choices;
      drawMessages(data.messages);
    } catch (err) {
      if (mark === asked) $("#alarm-messages").hidden = true;
    }
    clearTimeout(alarmTimer); // one timer, however many reads were under way
    if (id === alarmId) alarmTimer = setTimeout(loadMessages, OPEN_EVERY_MS);
  }

  function onDetail(shown, mineInProcess) {
    const id = shown.alarm.alarm_id;
    if (id !== alarmId) {
      alarmId = id;
      choices = null;
      drawMessages([]);
    }
    mine = mineInProcess;
    const steps = (shown.plan && shown.plan.steps) || [];
    const todo = steps.find((s) => s.kind === "notify" && !s.done);
    step = todo ? todo.position : null;
    $("#plan-notify").hidden = !(mine && step !== null);
    loadMessages();
  }

  function recipientRow(contact) {
    const boxes = choices.channels.filter((ch) => contact[ch === "email" ? "email" : "mobile"])
      .map((ch) => {
        const address = ch === "email" ? contact.email : contact.mobile;
        const box = el("input", { type: "checkbox", "data-contact": contact.id, "data-channel": ch });
        box.defaultChecked = contact.channels.includes(ch);
        return el("label", { class: "channel" }, box, ` ${CHANNEL_NAMES[ch]} ${address}`);
      });
    const tags = [contact.subscribed ? "subscribed" : "", contact.on_call_list ? "call list" : ""]
      .filter(Boolean).join(", ");
    return el("div", { class: "recipient", "data-contact": contact.id },
      el("span", { class: "who" }, contact.name), tags ? el("small", {}, ` (${tags})`) : null,
      ...boxes);
  }

  async function openNotify() {
    if (!mine) {
      hub.banner("No alarm in process with you.");
      return;
    }
    if (!choices) await loadMessages();
    if (!choices) return;
    if (!choices.contacts.length) {
      hub.banner("No contact of this account has an e-mail address or a mobile phone.");
      return;
    }
    $("#notify-legend").textContent = `Step ${step}: message about this ${choices.kind}`;
    const box = $("#notify-recipients");
    box.replaceChildren($("#notify-legend"), ...choices.contacts.map(recipientRow));
    hub.openForm("notify");
  }

  async function submitNotify(e) {
    e.preventDefault();
    const byContact = new Map();
    for (const box of document.querySelectorAll("#notify-recipients input:checked")) {
      const id = Number(box.dataset.contact);
      byContact.set(id, [...(byContact.get(id) || []), box.dataset.channel]);
    }
    const error = $("#plan-error");
    if (!byContact.size) {
      error.textContent = "Check at least one contact's e-mail or SMS.";
      error.hidden = false;
      return;
    }
    const recipients = [...byContact].map(([contact, channels]) => ({ contact, channels }));
    error.hidden = true;
    try {
      const done = await hub.api("POST", `/alarms/${alarmId}/notify`, { position: step, recipients });
      hub.hideForms();
      hub.said(done.note.replace("MESSAGED", "messaged").replaceAll(" BY ", " by "));
      drawMessages(done.messages);
      await hub.loadDetail();
    } catch (err) {
      error.textContent = err.message;
      error.hidden = false;
    }
  }

  // the Messages view -----------------------------------------------------------------------------

  let visible = false;
  let viewTimer = null;
  const plainTitle = $("#messages-button").title;

  function failedRow(m) {
    return el("tr", { class: "link failed", "data-failed": m.id },
      cell(hub.when(m.queued_us), "when"), cell(m.account), cell(m.name || `contact ${m.contact_id}`),
      cell(CHANNEL_NAMES[m.channel] || m.channel), cell(m.to), cell(m.kind), cell(m.attempts, "num"),
      cell(m.last_error || ""),
      el("td", {}, el("button", { type: "button", class: "resend", "data-resend": m.id,
        title: `Queue the message to ${m.to} again` }, "Resend")));
  }

  function badge(count) {
    $("#messages-badge").hidden = count === 0;
    $("#messages-badge").textContent = `${count} FAILED`;
    $("#messages-button").classList.toggle("failed", count > 0);
    $("#messages-button").title = count ? `${count} message(s) failed (open the Messages view)` : plainTitle;
  }

  function showError(message) {
    $("#messages-error").textContent = message;
    $("#messages-error").hidden = !message;
  }

  async function loadFailed() {
    clearTimeout(viewTimer);
    try {
      const data = await hub.api("GET", "/notifications/failed");
      badge(data.failed);
      hub.replaceKeepingFocus($("#failed-messages tbody"), ...data.messages.map(failedRow));
      $("#messages-count").textContent = data.failed;
      $("#messages-empty").hidden = data.messages.length > 0;
      showError("");
    } catch (err) {
      if (visible) showError(err.message);
    }
    clearTimeout(viewTimer);
    viewTimer = setTimeout(loadFailed, visible ? SHOWN_EVERY_MS : HIDDEN_EVERY_MS);
  }

  async function resend(button) {
    const id = Number(button.dataset.resend);
    const next = button.closest("tr").nextElementSibling || button.closest("tr").previousElementSibling;
    button.disabled = true;
    try {
      await hub.api("POST", `/notifications/${id}/resend`, {});
      hub.banner(`Message ${id} queued again.`);
      await loadFailed();
      const focus = next && $(`#failed-messages button[data-resend="${next.dataset.failed}"]`);
      if (focus) focus.focus(); // the keyboard goes on down the list
    } catch (err) {
      showError(err.message);
      button.disabled = false;
    }
  }

  // wiring --------------------------------------------------------------------------------------

  hub.forms.push("notify");
  hub.hooks.detail.push(onDetail);
  hub.openNotify = openNotify;
  hub.hooks.keys.e = () => {
    if (mine && step !== null && hub.state.openId === alarmId) openNotify();
    else hub.banner("No notify step to do on an alarm in process with you.");
  };
  $("#plan-notify").addEventListener("click", () => openNotify());
  $("#form-notify").addEventListener("submit", submitNotify);
  $("#failed-messages").addEventListener("click", (e) => {
    const button = e.target.closest("button[data-resend]");
    if (button && !button.disabled) resend(button);
  });
  hub.hooks.viewShown.push((name) => {
    visible = name === "messages";
    if (visible) {
      loadFailed().then(() => {
        const first = $("#failed-messages button[data-resend]");
        if (first) first.focus();
      });
    }
  });
  loadFailed();
})();
