// The proof of effort of an entry without a panel id (raters/proof.py): find a counter such that
// SHA-256(challenge + counter) starts with the form's number of zero bits, while the rater reads the
// page, and put it in the form before it is sent. The button stays disabled without this file.
"use strict";

// Digests asked for at once: one promise per hash is slow, a batch keeps the browser's hasher busy.
const BATCH = 128;

function zeroBits(bytes) {
  let bits = 0;
  for (const byte of bytes) {
    if (byte !== 0) return bits + Math.clz32(byte) - 24;
    bits += 8;
  }
  return bits;
}

async function solve(challenge, bits) {
  const encoder = new TextEncoder();
  for (let start = 0; ; start += BATCH) {
    const digests = await Promise.all(
      Array.from({ length: BATCH }, (_, i) =>
        crypto.subtle.digest("SHA-256", encoder.encode(challenge + (start + i))),
      ),
    );
    const found = digests.findIndex((digest) => zeroBits(new Uint8Array(digest)) >= bits);
    if (found >= 0) return String(start + found);
  }
}

const form = document.querySelector("form[data-proof-bits]");
if (form) {
  const button = form.querySelector("button[type=submit]");
  const unsupported = () => {
    button.disabled = true;
    document.querySelector("[data-testid=proof-unsupported]").hidden = false;
  };
  if (!(window.crypto && crypto.subtle)) {
    // crypto.subtle exists only on https (and localhost): say so rather than fail on submit.
    unsupported();
  } else {
    const started = performance.now();
    const proof = solve(form.elements.proof_challenge.value, Number(form.dataset.proofBits)).then(
      (counter) => {
        form.elements.proof_counter.value = counter;
        // How long it took, for anyone measuring the friction (the README's figures, the browser test).
        form.dataset.proofMilliseconds = String(Math.round(performance.now() - started));
      },
      unsupported,
    );
    button.disabled = false;
    form.addEventListener("submit", (event) => {
      if (form.elements.proof_counter.value) return;
      // Sent before the check finished: wait for it, then send (the form was already validated).
      event.preventDefault();
      button.disabled = true;
      proof.then(() => form.elements.proof_counter.value && form.submit());
    });
  }
}
