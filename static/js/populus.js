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
