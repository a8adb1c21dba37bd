// Small progressive enhancements. Every page works without this file.
"use strict";

// In the battle composer, Enter sends and Shift+Enter starts a new line.
document.addEventListener("keydown", (event) => {
  const field = event.target;
  if (!(field instanceof HTMLTextAreaElement) || !field.closest("form.composer")) return;
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    if (field.value.trim()) field.form.requestSubmit();
  }
});

// An error or warning shown for one request is cleared once a later request succeeds; warnings that
// still stand are part of the battle itself and come back with it.
document.addEventListener("htmx:afterRequest", (event) => {
  if (!event.detail.successful) return;
  const slot = document.getElementById("errors");
  if (slot) slot.replaceChildren();
});
