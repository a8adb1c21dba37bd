// The personal leaderboard: each weight slider's value is shown beside it while it moves. The page works
// without this file (the server renders the values); htmx does the rest.
"use strict";

document.addEventListener("input", (event) => {
  const slider = event.target;
  if (!(slider instanceof HTMLInputElement) || slider.type !== "range") return;
  const output = document.getElementById(`${slider.id}-value`);
  if (output) output.value = slider.value;
});

// The judging quiz: A (or the left arrow) for the left reply, B (or the right arrow) for the right one,
// T for a tie. Keys typed into a field are left alone.
const QUIZ_KEYS = { a: "left", arrowleft: "left", b: "right", arrowright: "right", t: "tie" };

document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.target instanceof HTMLElement && event.target.closest("input, select, textarea")) return;
  const key = QUIZ_KEYS[event.key.toLowerCase()];
  const button = key && document.querySelector(`#quiz-form button[data-key="${key}"]`);
  if (!button) return;
  event.preventDefault();
  button.click();
});
