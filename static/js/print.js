// The print page's "Print" button (an inline onclick would break the Content-Security-Policy).
document.addEventListener("click", (event) => {
  if (event.target.closest("[data-print]")) {
    window.print();
  }
});
