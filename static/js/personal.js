// The personal leaderboard: each weight slider's value is shown beside it while it moves. The page works
// without this file (the server renders the values); htmx does the rest.
"use strict";

document.addEventListener("input", (event) => {
  const slider = event.target;
  if (!(slider instanceof HTMLInputElement) || slider.type !== "range") return;
  const output = document.getElementById(`${slider.id}-value`);
  if (output) output.value = slider.value;
});
