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
// With a dimension chosen, 1, 2 and 3 mark its verdict (left, tie, right) before the overall key.
const QUIZ_KEYS = { a: "left", arrowleft: "left", b: "right", arrowright: "right", t: "tie" };
const DIMENSION_KEYS = new Set(["1", "2", "3"]);

document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const typing = 'input:not([type="radio"]), select, textarea';
  if (event.target instanceof HTMLElement && event.target.closest(typing)) return;
  const name = event.key.toLowerCase();
  const key = QUIZ_KEYS[name] || (DIMENSION_KEYS.has(name) && name);
  const control = key && document.querySelector(`#quiz-form [data-key="${key}"]`);
  if (!control) return;
  event.preventDefault();
  // htmx wires up a swapped-in form only when the swap settles; a key pressed before that would submit
  // it natively, a full page load to the form's raw address. process() does it now (once per form).
  if (window.htmx) window.htmx.process(control.form);
  control.click();
});
