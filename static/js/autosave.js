// The draft editor saves each field as it is typed: one field's value per request, queued in
// order behind the save in flight (apps/protocols/forms.py, hx-sync "queue all"). A save that is
// queued is not yet saved, so while any is queued or in flight the status says "Saving…" and
// leaving the page asks first; the form carries the count as data-pending-saves.
(function () {
  "use strict";
  const counted = new WeakSet();
  let pending = 0;

  function form() {
    return document.querySelector("form.edit-form");
  }

  function isAutosave(elt) {
    const f = form();
    return Boolean(f && elt && elt.hasAttribute && elt.hasAttribute("hx-post") && f.contains(elt));
  }

  function show() {
    const f = form();
    if (f) f.dataset.pendingSaves = String(pending);
    const status = document.getElementById("save-status");
    if (status) status.classList.toggle("pending", pending > 0);
  }

  // A queued save fires htmx:confirm again when it leaves the queue, with the same triggering
  // event: each event is counted once.
  document.addEventListener("htmx:confirm", function (evt) {
    const trigger = evt.detail.triggeringEvent;
    if (!isAutosave(evt.detail.elt) || !trigger || counted.has(trigger)) return;
    counted.add(trigger);
    pending += 1;
    show();
  });
  document.addEventListener("htmx:afterRequest", function (evt) {
    if (!isAutosave(evt.detail.elt)) return;
    pending = Math.max(0, pending - 1);
    show();
  });
  // The status element is swapped by each answer: mark the new one.
  document.addEventListener("htmx:afterSettle", show);
  document.addEventListener("DOMContentLoaded", show);
  window.addEventListener("beforeunload", function (evt) {
    if (pending > 0) {
      evt.preventDefault();
      evt.returnValue = "";
    }
  });
})();
