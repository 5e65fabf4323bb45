// alarmhub operator console, the alarm screen's response data: the call list of the alarm's
// type in order (who has been tried and how, the next contact to call), the zone, the agencies
// and permit; logging a call with its contact (or the premises), number and outcome; the
// passcode check. Builds on console.js (window.alarmhub); every text from the server goes in
// with textContent.
"use strict";

(() => {
  const hub = window.alarmhub;
  const { el, $, replaceKeepingFocus } = hub;
  const OUTCOMES = {
    answered: "ANSWERED",
    "no-answer": "NO ANSWER",
    busy: "BUSY",
    "left-message": "LEFT MESSAGE",
    "wrong-number": "WRONG NUMBER",
  };
  const OUTCOME_KEYS = { a: "answered", n: "no-answer", b: "busy", l: "left-message", w: "wrong-number" };
  const AGENCY_NAMES = { police: "Police", fire: "Fire", medical: "Medical" };
  const PREMISES = "premises"; // the call form's choice of the account's own phone

  let shown = null;          // the response data on screen, and whether the alarm is mine
  let mine = false;
  let premises = "";         // the account's premises phone
  let focusPasscode = false; // P pressed before the alarm screen was drawn
  let answerFor = null;      // the alarm the passcode answer on screen belongs to

  const contacts = () => (shown && shown.call_list ? shown.call_list.contacts : []);

  // drawing ------------------------------------------------------------------------------------

  function phoneText(phone) {
    return phone.kind ? `${phone.number} ${phone.kind}` : phone.number;
  }

  function badge(call) {
    return el(
      "span",
      { class: `outcome ${call.outcome}`, title: `${hub.when(call.at_us)} by ${call.opr}: ${call.phone}` },
      `${OUTCOMES[call.outcome] || call.outcome} ${hub.when(call.at_us)}`,
    );
  }

  function contactRow(contact, index, next) {
    const numbers = contact.phones.map((phone) => el(
      "button",
      {
        type: "button", class: "phone", disabled: !mine,
        "data-contact": contact.id, "data-phone": phone.number,
        title: mine ? `Log a call to ${phone.number}` : "Take the alarm to log calls",
      },
      phoneText(phone),
    ));
    const who = el("td", { class: "who" },
      el("strong", {}, contact.name),
      contact.relation ? el("span", { class: "relation" }, ` ${contact.relation}`) : null,
      contact.notes ? el("div", { class: "note" }, contact.notes) : null,
    );
    const tr = el(
      "tr",
      { "data-contact-id": contact.id, class: contact.id === next ? "next" : "" },
      el("td", { class: "index" }, index < 9 ? el("kbd", {}, String(index + 1)) : String(index + 1)),
      who,
      el("td", { class: "numbers" }, ...numbers),
      el("td", { class: "tried" },
        contact.id === next ? el("span", { class: "next-mark" }, "NEXT") : null,
        ...contact.calls.map(badge)),
    );
    return tr;
  }

  function drawFacts(response) {
    const dl = $("#response-facts");
    dl.replaceChildren();
    const add = (label, ...value) => dl.append(el("dt", {}, label), el("dd", {}, ...value));
    if (response.zone) {
      const { description, equipment } = response.zone;
      add("Zone is", el("strong", {}, description), equipment ? ` (${equipment})` : "");
    }
    for (const agency of response.agencies || []) {
      add(AGENCY_NAMES[agency.kind] || agency.kind, `${agency.name}  `,
        el("span", { class: "agency-phone" }, agency.phone || ""));
    }
    if (response.permit) add("Permit", response.permit);
  }

  function draw(detail, mineInProcess) {
    const section = $("#alarm-response");
    const response = detail.response;
    const alarmId = detail.alarm.alarm_id;
    mine = mineInProcess;
    shown = response || null;
    premises = (response && response.phone) || "";
    if (answerFor !== alarmId) {
      answerFor = null;
      showAnswer(null);
    }
    const some = response && (
      (response.call_list && response.call_list.contacts.length) || response.zone ||
      (response.agencies && response.agencies.length) || response.permit || response.has_duress_code
    );
    if (!some) {
      shown = null;
      section.hidden = true;
      fillContacts();
      return;
    }
    section.hidden = false;
    const list = response.call_list || { name: "", contacts: [], next: null };
    $("#call-list-name").textContent = list.name || "";
    replaceKeepingFocus(
      $("#call-list tbody"), ...list.contacts.map((contact, i) => contactRow(contact, i, list.next)),
    );
    $("#call-list-empty").hidden = list.contacts.length > 0;
    showNext(alarmId, list.next);
    drawFacts(response);
    $("#form-passcode").hidden = !mineInProcess;
    fillContacts();
    if (focusPasscode && mineInProcess) {
      focusPasscode = false;
      $("#passcode-text").value = "";
      $("#passcode-text").focus();
    }
  }

  // the call list's box scrolls the next contact to its top, when it is not wholly in view, when an
  // alarm opens and when the next one changes (never on other redraws: the operator may have
  // scrolled it)
  let nextShown = null;
  function showNext(alarmId, next) {
    const key = `${alarmId}:${next}`;
    if (key === nextShown) return;
    nextShown = key;
    const row = $(`#call-list tr[data-contact-id="${next}"]`);
    const box = $("#call-list").closest(".list-box");
    if (!row || !box) return;
    const shown = row.getBoundingClientRect();
    const frame = box.getBoundingClientRect();
    if (shown.top < frame.top || shown.bottom > frame.bottom) box.scrollTop += shown.top - frame.top;
  }

  // the call form ------------------------------------------------------------------------------

  function fillContacts() {
    const select = $("#call-contact");
    const chosen = select.value;
    const options = contacts().map((c, i) => el("option", { value: String(c.id) }, `${i + 1}  ${c.name}`));
    if (premises) options.push(el("option", { value: PREMISES }, `the premises  ${premises}`));
    options.push(el("option", { value: "" }, "someone else (describe below)"));
    select.replaceChildren(...options);
    if (chosen && [...select.options].some((o) => o.value === chosen)) select.value = chosen;
    showWho();
  }

  function fillPhones(wanted) {
    const select = $("#call-phone");
    const chosen = $("#call-contact").value;
    const contact = contacts().find((c) => String(c.id) === chosen);
    const phones = chosen === PREMISES ? [{ number: premises, kind: "" }] : contact ? contact.phones : [];
    select.replaceChildren(...phones.map((p) => el("option", { value: p.number }, phoneText(p))));
    if (wanted) select.value = wanted;
  }

  function showWho() {
    const some = $("#call-contact").value !== "";
    $("#call-who").hidden = contacts().length === 0 && !premises;
    $("#call-outcomes").hidden = !some;
    $("#call-phone").disabled = !some;
    $("#call-text-label").textContent = some
      ? "Note (optional): what they said"
      : "Call: who, which number, what they said";
  }

  function choose(contactId, phone) {
    $("#call-contact").value = String(contactId);
    fillPhones(phone);
    showWho();
    const checked = $("#call-outcomes input:checked");
    (checked || $("#call-outcomes input")).focus();
  }

  function formOpened(name) {
    if (name !== "call") return;
    fillContacts();
    const list = contacts();
    if (!list.length && premises) {
      choose(PREMISES);
      return;
    }
    if (!list.length) {
      $("#call-contact").value = "";
      showWho();
      $("#call-text").focus();
      return;
    }
    const next = shown.call_list.next;
    $("#call-contact").value = String(next !== null ? next : list[0].id);
    fillPhones();
    showWho();
    $("#call-contact").focus();
  }

  function openIsMine() {
    const d = hub.state.detail;
    if (d && mine && hub.state.openId === d.alarm.alarm_id) return true;
    hub.banner("No alarm of yours is open.");
    return false;
  }

  function callContact(number) {
    const contact = contacts()[number - 1];
    if (!openIsMine()) return;
    if (!contact) {
      hub.banner(`The call list has no contact ${number}.`);
      return;
    }
    if ($("#form-call").hidden) hub.openForm("call");
    choose(contact.id);
  }

  function callPremises() {
    if (!openIsMine()) return;
    if (!premises) {
      hub.banner("The account has no premises phone.");
      return;
    }
    if ($("#form-call").hidden) hub.openForm("call");
    choose(PREMISES);
  }

  // the cursor on the call list: the next contact's first number (Enter logs a call to it)
  function focusCallList() {
    if (!openIsMine()) return;
    const button = $("#call-list tr.next button.phone") || $("#call-list button.phone");
    if (!button) {
      hub.banner("The alarm's call list has no one on it.");
      return;
    }
    hub.hideForms();
    button.scrollIntoView({ block: "nearest" });
    button.focus();
  }

  function onCallKey(e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const key = e.key.toLowerCase();
    if (e.target.closest("textarea")) {
      // the note: Enter logs the call, Shift+Enter is a new line, other keys type
      if (key !== "enter" || e.shiftKey || e.isComposing) return;
      $("#form-call").requestSubmit();
      e.preventDefault();
      e.stopPropagation();
      return;
    }
    if (OUTCOME_KEYS[key] && !$("#call-outcomes").hidden) {
      const radio = $(`#call-outcomes input[value="${OUTCOME_KEYS[key]}"]`);
      radio.checked = true;
      radio.focus();
    } else if (/^[1-9]$/.test(key) && contacts().length) {
      callContact(Number(key));
    } else if (key === "enter" && e.target.tagName !== "BUTTON") {
      $("#form-call").requestSubmit();
    } else {
      return;
    }
    e.preventDefault();
    e.stopPropagation();
  }

  function submitCall(e) {
    e.preventDefault();
    const text = $("#call-text").value;
    const contact = $("#call-contact").value;
    if (!contact) {
      hub.act("call", { text });
      return;
    }
    const outcome = $("#call-outcomes input:checked");
    if (!outcome) {
      hub.showError("Choose how the call ended (A, N, B, L or W).");
      $("#call-outcomes input").focus();
      return;
    }
    const body = { phone: $("#call-phone").value, outcome: outcome.value };
    if (contact !== PREMISES) body.contact_id = Number(contact);
    if (text.trim()) body.text = text;
    hub.act("call", body);
  }

  // the passcode check -------------------------------------------------------------------------

  function showAnswer(verified) {
    const node = $("#passcode-answer");
    node.className = `passcode-answer ${verified === null ? "" : verified ? "verified" : "not-verified"}`;
    node.textContent = verified === null ? "" : verified ? "VERIFIED" : "NOT VERIFIED";
  }

  async function checkPasscode(e) {
    e.preventDefault();
    const id = hub.state.openId;
    const input = $("#passcode-text");
    const passcode = input.value;
    if (id === null || !passcode) return;
    showAnswer(null);
    input.blur(); // the keys are the console's again: the next P must not type a "p" here
    try {
      // a duress code answers verified too: nothing on screen tells it apart
      const data = await hub.api("POST", `/alarms/${id}/passcode`, { passcode });
      input.value = "";
      answerFor = id;
      showAnswer(data.verified);
      hub.showError("");
      if (hub.state.openId === id) hub.said(`passcode ${data.verified ? "VERIFIED" : "NOT VERIFIED"}`);
    } catch (err) {
      hub.showError(err.message);
    }
    if (hub.state.openId === id) hub.loadDetail(); // PASSCODE_VERIFIED, the action log
  }

  function passcodeKey() {
    const id = hub.myAlarm();
    if (id === null) {
      hub.banner("No alarm in process with you.");
      return;
    }
    if (hub.state.openId !== id) {
      focusPasscode = true;
      hub.openAlarm(id);
      return;
    }
    if (!$("#form-passcode").hidden && !$("#alarm-response").hidden) {
      const input = $("#passcode-text");
      input.value = ""; // a fresh box for each check
      input.focus();
    } else hub.banner("This alarm has no passcode check (not yours, or no response data).");
  }

  // wiring -------------------------------------------------------------------------------------

  hub.hooks.detail.push(draw);
  hub.hooks.formOpened.push(formOpened);
  hub.hooks.opened.push(() => { nextShown = null; });
  for (let n = 1; n <= 9; n += 1) hub.hooks.keys[String(n)] = () => callContact(n);
  hub.hooks.keys.p = passcodeKey;
  Object.assign(hub, { callPremises, focusCallList, focusPasscode: passcodeKey });
  $("#form-call").addEventListener("submit", submitCall);
  $("#form-call").addEventListener("keydown", onCallKey);
  $("#call-contact").addEventListener("change", () => { fillPhones(); showWho(); });
  $("#form-passcode").addEventListener("submit", checkPasscode);
  $("#call-list").addEventListener("click", (e) => {
    const button = e.target.closest("button.phone");
    if (!button || button.disabled) return;
    if ($("#form-call").hidden) hub.openForm("call");
    choose(Number(button.dataset.contact), button.dataset.phone);
  });
})();
