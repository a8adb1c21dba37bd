"""A short proof of effort for entries without a panel id: the consent page hands the browser a challenge
signed with the site's secret key (its study, difficulty, time of issue and a random nonce), and the
browser (static/js/proof.js) finds a counter such that SHA-256(challenge + counter) starts with that many
zero bits before the form submits. A person never notices a fraction of a second; a script that makes
raters by the thousand pays for each one, and one that does not run JavaScript cannot enter at all.

Nothing is stored when a challenge is issued. A solved challenge is remembered in the cache until it
expires, so each one makes one rater.
"""

import hashlib
import secrets
import time
from dataclasses import dataclass

from django.core import signing
from django.core.cache import cache

from config.errors import InvalidInput

SALT = "populus.raters.proof"
# How long a consent page's challenge stays good: time to read the page, not to stockpile solutions.
CHALLENGE_SECONDS = 30 * 60
USED_KEY = "raters:proof-used:{nonce}"


class ProofRefused(InvalidInput):
    """The consent form's proof of effort is missing, wrong, expired or used; a fresh page fixes it."""

    title = "Please try once more"


@dataclass(frozen=True)
class Proof:
    """What the consent form sends back: the challenge it was given and the counter the browser found."""

    challenge: str
    counter: str


def proof_challenge(*, study_id: int, bits: int, now: float | None = None) -> str:
    issued = int(time.time() if now is None else now)
    nonce = secrets.token_urlsafe(12)
    return signing.Signer(salt=SALT).sign(f"{study_id}.{bits}.{issued}.{nonce}")


def leading_zero_bits(digest: bytes) -> int:
    bits = 0
    for byte in digest:
        if byte:
            return bits + 8 - byte.bit_length()
        bits += 8
    return bits


def proof_digest(challenge: str, counter: str) -> bytes:
    return hashlib.sha256(f"{challenge}{counter}".encode()).digest()


def proof_verify(*, proof: Proof, study_id: int, bits: int, now: float | None = None) -> None:
    """Raise `ProofRefused` unless `proof` solves a challenge this site issued for this study, at least as
    hard as `bits`, not expired and not used before. `bits` 0: no proof needed."""
    if bits == 0:
        return
    if not proof.challenge or not proof.counter:
        raise ProofRefused(
            "Your browser did not finish the short automatic check this page runs (it needs JavaScript). "
            "Please make sure JavaScript is on, then tick the box and continue again."
        )
    try:
        study, required, issued, nonce = signing.Signer(salt=SALT).unsign(proof.challenge).split(".")
    except (signing.BadSignature, ValueError):
        raise ProofRefused(_WRONG) from None
    if int(study) != study_id or int(required) < bits:
        raise ProofRefused(_WRONG)
    age = (time.time() if now is None else now) - int(issued)
    if age > CHALLENGE_SECONDS:
        raise ProofRefused(
            "This page was open for a long time, so its automatic check has expired. Please tick the box "
            "and continue again."
        )
    counter_ok = proof.counter.isascii() and proof.counter.isdigit() and len(proof.counter) <= 12
    if not counter_ok or leading_zero_bits(proof_digest(proof.challenge, proof.counter)) < int(required):
        raise ProofRefused(_WRONG)
    if not cache.add(USED_KEY.format(nonce=nonce), True, timeout=max(1, int(CHALLENGE_SECONDS - age) + 1)):
        raise ProofRefused(
            "This page was already sent once. Please tick the box and continue again on this fresh page."
        )


_WRONG = (
    "The short automatic check this page runs did not come back right. Please tick the box and continue "
    "again; if it keeps failing, reload the page."
)
