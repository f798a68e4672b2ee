// The scoring page's keyboard: number keys choose an option (categorical, ordinal) or tick a unit
// (checklist) of the field that holds the focus, space toggles a focused yes/no (the browser's own
// checkbox behaviour), enter submits. Every control stays a labelled form control, so the page
// works without this script, by keyboard and with a screen reader.
(function () {
  "use strict";
  var form = document.querySelector("form[data-scoring]");
  if (!form) return;
  var started = Date.now();
  var fieldsets = Array.prototype.slice.call(form.querySelectorAll("fieldset.rubric-field"));
  var submitted = false;

  function currentFieldset() {
    var active = document.activeElement;
    var holder = active && active.closest ? active.closest("fieldset.rubric-field") : null;
    if (holder) return holder;
    // Nothing focused: the first field that takes number keys.
    return fieldsets.filter(function (f) {
      return ["categorical", "ordinal", "checklist", "signals"].indexOf(f.dataset.kind) >= 0;
    })[0] || null;
  }

  function typing(element) {
    if (!element) return false;
    var tag = element.tagName;
    return tag === "TEXTAREA" || (tag === "INPUT" && ["text", "number"].indexOf(element.type) >= 0);
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (event.key === "Enter") {
      if (target && target.tagName === "TEXTAREA") return;
      // Links and buttons outside the form keep their own Enter.
      if (target && target !== document.body && !form.contains(target)) return;
      event.preventDefault();
      if (form.requestSubmit) form.requestSubmit(); else form.submit();
      return;
    }
    if (typing(target)) return;
    if (!/^[1-9]$/.test(event.key)) return;
    var holder = currentFieldset();
    if (!holder) return;
    var inputs = holder.querySelectorAll("input[type=radio], input[type=checkbox]");
    var input = inputs[Number(event.key) - 1];
    if (!input) return;
    event.preventDefault();
    if (input.type === "radio") input.checked = true; else input.checked = !input.checked;
    input.focus();
  });

  form.addEventListener("submit", function (event) {
    if (submitted) { event.preventDefault(); return; }
    submitted = true;
    form.querySelector("input[name=seconds_spent]").value = String(Math.round((Date.now() - started) / 1000));
    var button = form.querySelector("button[type=submit]");
    if (button) { button.disabled = true; button.textContent = "Saving…"; }
  });
})();
