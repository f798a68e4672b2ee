// The scoring page's keyboard: number keys choose an option (categorical, ordinal) of the field
// that holds the focus, or tick a unit of the checklist (one group: a single tab stop, arrows move
// within it, digits tick units from anywhere outside another number-key field); space toggles a
// focused yes/no (the browser's own checkbox behaviour); enter submits; S moves to the skip form
// (enter there skips); backspace opens the last task scored. Selecting text in the response fills
// the quote field last focused. On a scored task's page, C opens the correction. Every control
// stays a labelled form control, so the page works without this script, by keyboard and with a
// screen reader (the server checks a quote against the response in any case).
(function () {
  "use strict";
  var form = document.querySelector("form[data-scoring]");
  var skipForm = document.querySelector("form[data-skip]");
  var back = document.querySelector("a[data-back]");
  var correct = document.querySelector("a[data-correct]");
  var response = document.querySelector("[data-response]");
  var NUMBER_KEYED = ["categorical", "ordinal", "checklist", "signals"];

  function typing(element) {
    if (!element) return false;
    var tag = element.tagName;
    return tag === "TEXTAREA" || tag === "SELECT" ||
      (tag === "INPUT" && ["text", "number", "search"].indexOf(element.type) >= 0);
  }

  function go(url) { window.location.assign(url); }

  if (!form) {
    // A scored task: C corrects it.
    document.addEventListener("keydown", function (event) {
      if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
      if ((event.key === "c" || event.key === "C") && correct) {
        event.preventDefault();
        go(correct.href);
      }
    });
    return;
  }

  var started = Date.now();
  var fieldsets = Array.prototype.slice.call(form.querySelectorAll("fieldset.rubric-field"));
  var submitted = false;

  // The checklist is one group: only one of its boxes is a tab stop (roving tabindex).
  Array.prototype.forEach.call(form.querySelectorAll("[data-units]"), function (list) {
    var boxes = Array.prototype.slice.call(list.querySelectorAll("input[type=checkbox]"));
    boxes.forEach(function (box, i) { box.tabIndex = i === 0 ? 0 : -1; });
    list.addEventListener("keydown", function (event) {
      var i = boxes.indexOf(event.target);
      if (i < 0) return;
      var step = { ArrowDown: 1, ArrowRight: 1, ArrowUp: -1, ArrowLeft: -1 }[event.key];
      if (!step) return;
      event.preventDefault();
      var next = boxes[(i + step + boxes.length) % boxes.length];
      boxes.forEach(function (box) { box.tabIndex = box === next ? 0 : -1; });
      next.focus();
    });
  });

  function numberKeyed(fieldset) {
    return fieldset && NUMBER_KEYED.indexOf(fieldset.dataset.kind) >= 0;
  }

  function currentFieldset() {
    var active = document.activeElement;
    var holder = active && active.closest ? active.closest("fieldset.rubric-field") : null;
    if (numberKeyed(holder)) return holder;
    // Elsewhere (nothing focused, a yes/no): the checklist, else the first field taking digits.
    var checklist = fieldsets.filter(function (f) { return f.dataset.kind === "checklist"; })[0];
    return checklist || fieldsets.filter(numberKeyed)[0] || null;
  }

  // The quote field a selection in the response goes to: the one focused last.
  var quoteFields = Array.prototype.slice.call(form.querySelectorAll("[data-quote]"));
  var quoteTarget = quoteFields[0] || null;
  quoteFields.forEach(function (field) {
    field.addEventListener("focus", function () { quoteTarget = field; });
  });
  function takeSelection() {
    if (!quoteTarget || !response) return;
    var selection = window.getSelection();
    if (!selection || selection.isCollapsed || !selection.rangeCount) return;
    var range = selection.getRangeAt(0);
    if (!response.contains(range.commonAncestorContainer)) return;
    var text = selection.toString().trim();
    if (!text) return;
    quoteTarget.value = text;
    quoteTarget.dispatchEvent(new Event("input", { bubbles: true }));
  }
  if (response) {
    response.addEventListener("mouseup", takeSelection);
    response.addEventListener("keyup", takeSelection);
    response.addEventListener("touchend", function () { setTimeout(takeSelection, 0); });
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (event.key === "Enter") {
      if (target && target.tagName === "TEXTAREA") return;
      if (skipForm && skipForm.contains(target)) {
        event.preventDefault();
        if (skipForm.requestSubmit) skipForm.requestSubmit(); else skipForm.submit();
        return;
      }
      // Links and buttons outside the form keep their own Enter.
      if (target && target !== document.body && !form.contains(target)) return;
      event.preventDefault();
      if (form.requestSubmit) form.requestSubmit(); else form.submit();
      return;
    }
    if (typing(target)) return;
    if (event.key === "Backspace" && back) {
      event.preventDefault();
      go(back.href);
      return;
    }
    if ((event.key === "s" || event.key === "S") && skipForm) {
      event.preventDefault();
      skipForm.querySelector("select").focus();
      return;
    }
    if (!/^[1-9]$/.test(event.key)) return;
    var holder = currentFieldset();
    if (!holder) return;
    var inputs = holder.querySelectorAll("input[type=radio], input[type=checkbox]");
    var input = inputs[Number(event.key) - 1];
    if (!input) return;
    event.preventDefault();
    if (input.type === "radio") input.checked = true; else input.checked = !input.checked;
    if (holder.dataset.kind === "checklist") {
      Array.prototype.forEach.call(inputs, function (box) { box.tabIndex = box === input ? 0 : -1; });
    }
    input.focus();
  }, true);

  form.addEventListener("submit", function (event) {
    if (submitted) { event.preventDefault(); return; }
    submitted = true;
    form.querySelector("input[name=seconds_spent]").value = String(Math.round((Date.now() - started) / 1000));
    var button = form.querySelector("button[type=submit]");
    if (button) { button.disabled = true; button.textContent = "Saving…"; }
  });
})();
