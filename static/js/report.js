// Analysis reports: printing (or saving as PDF) opens every collapsed section first, so the
// printout holds the whole report; they close again afterwards.
(() => {
  let opened = [];
  window.addEventListener("beforeprint", () => {
    opened = Array.from(document.querySelectorAll("main details:not([open])"));
    opened.forEach((d) => d.setAttribute("open", ""));
  });
  window.addEventListener("afterprint", () => {
    opened.forEach((d) => d.removeAttribute("open"));
    opened = [];
  });
})();
