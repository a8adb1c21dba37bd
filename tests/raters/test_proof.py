"""The proof of effort on entries without a panel id: a challenge signed with the secret key, solved by
the browser, checked by the server (valid, wrong, expired, replayed, tampered, off), and the consent page
that asks for it."""

import re
import time

import pytest
from django.test import Client

from raters.models import Rater
from raters.proof import (
    CHALLENGE_SECONDS,
    Proof,
    ProofRefused,
    leading_zero_bits,
    proof_challenge,
    proof_digest,
    proof_verify,
)
from tests.helpers import consent_post, proof_fields, proof_solve

pytestmark = pytest.mark.django_db

BITS = 10


def solved(study_id: int = 1, bits: int = BITS, now: float | None = None) -> Proof:
    challenge = proof_challenge(study_id=study_id, bits=bits, now=now)
    return Proof(challenge=challenge, counter=proof_solve(challenge, bits))


def wrong_counter(challenge: str, bits: int) -> str:
    return next(str(n) for n in range(100) if leading_zero_bits(proof_digest(challenge, str(n))) < bits)


def test_it_counts_leading_zero_bits():
    assert leading_zero_bits(bytes([0, 0, 0x80])) == 16
    assert leading_zero_bits(bytes([0, 0x0F])) == 12
    assert leading_zero_bits(bytes([1])) == 7 and leading_zero_bits(bytes([0xFF])) == 0
    assert leading_zero_bits(bytes(4)) == 32


def test_it_accepts_a_solved_challenge_once():
    proof = solved()
    proof_verify(proof=proof, study_id=1, bits=BITS)
    with pytest.raises(ProofRefused, match="already sent once"):
        proof_verify(proof=proof, study_id=1, bits=BITS)


def test_it_refuses_a_wrong_counter():
    proof = solved()
    wrong = wrong_counter(proof.challenge, BITS)
    for counter in (wrong, "", "-1", "١٢", "9" * 13):
        with pytest.raises(ProofRefused):
            proof_verify(proof=Proof(proof.challenge, counter), study_id=1, bits=BITS)
    proof_verify(proof=proof, study_id=1, bits=BITS)  # the right one still passes: nothing was used up


def test_it_refuses_an_expired_challenge():
    issued = time.time() - CHALLENGE_SECONDS - 5
    with pytest.raises(ProofRefused, match="expired"):
        proof_verify(proof=solved(now=issued), study_id=1, bits=BITS)
    proof_verify(proof=solved(now=time.time() - CHALLENGE_SECONDS + 60), study_id=1, bits=BITS)


def test_it_refuses_a_tampered_challenge():
    proof = solved()
    payload, signature = proof.challenge.rsplit(":", 1)
    study, bits, issued, nonce = payload.split(".")
    forged = [
        f"{payload}:{signature[:-1]}{'A' if signature[-1] != 'A' else 'B'}",  # another signature
        f"{study}.0.{issued}.{nonce}:{signature}",  # an easier difficulty under the old signature
        f"{study}.{bits}.{int(time.time()) + 10**6}.{nonce}:{signature}",  # a later time of issue
        payload,  # no signature at all
    ]
    for challenge in forged:
        with pytest.raises(ProofRefused, match="did not come back right"):
            proof_verify(proof=Proof(challenge, proof_solve(challenge, int(bits))), study_id=1, bits=BITS)


def test_it_refuses_a_challenge_of_another_study_or_an_easier_difficulty():
    with pytest.raises(ProofRefused):
        proof_verify(proof=solved(study_id=2), study_id=1, bits=BITS)
    with pytest.raises(ProofRefused):
        proof_verify(proof=solved(bits=BITS - 2), study_id=1, bits=BITS)


def test_it_asks_for_nothing_at_difficulty_zero():
    proof_verify(proof=Proof("", ""), study_id=1, bits=0)
    with pytest.raises(ProofRefused, match="needs JavaScript"):
        proof_verify(proof=Proof("", ""), study_id=1, bits=BITS)


def open_page(client: Client) -> str:
    return client.get("/rate/", follow=True).content.decode()


def test_the_open_consent_page_asks_the_browser_for_the_proof(client, study):
    assert study.proof_of_effort_bits == 13
    page = open_page(client)
    assert 'data-proof-bits="13"' in page and 'name="proof_challenge"' in page
    assert re.search(r'<script src="/static/js/proof\.js" defer></script>', page)
    assert not re.search(r"<script(?![^>]*\bsrc=)", page)  # no inline script: the CSP allows none
    assert "This page needs JavaScript." in page.split("<noscript>")[1]
    assert re.search(r'<button class="button primary" type="submit" disabled>Continue', page)
    assert "'self'" in client.get("/rate/consent/")["Content-Security-Policy"].split("script-src")[1]
    assert Client().get("/static/js/proof.js").status_code == 200


def test_an_open_entry_with_the_proof_solved_in_python_gets_in(client, study):
    client.get("/rate/")
    response = consent_post(client)
    assert response.status_code == 302 and response.url == "/rate/screener/"
    assert Rater.objects.get().source == Rater.Source.OPEN


def test_an_open_entry_without_the_proof_is_told_and_can_try_again(client, study):
    first = open_page(client)
    refused = client.post("/rate/consent/", {"agree": "yes"})
    page = refused.content.decode()
    assert refused.status_code == 400 and "needs JavaScript" in page and 'data-testid="proof-refused"' in page
    assert Rater.objects.count() == 0
    fresh = proof_fields(page)  # the refusal is the form again, with a fresh challenge
    assert fresh["proof_challenge"] != proof_fields(first)["proof_challenge"]
    assert client.post("/rate/consent/", {"agree": "yes", **fresh}).status_code == 302


def test_a_proof_is_good_for_one_entry_only(study):
    first, second = Client(), Client()
    fields = proof_fields(open_page(first))
    open_page(second)
    assert first.post("/rate/consent/", {"agree": "yes", **fields}).status_code == 302
    replayed = second.post("/rate/consent/", {"agree": "yes", **fields})
    assert replayed.status_code == 400 and "already sent once" in replayed.content.decode()
    assert Rater.objects.count() == 1


def test_it_refuses_a_wrong_proof_from_the_page(client, study):
    fields = proof_fields(open_page(client))
    fields["proof_counter"] = wrong_counter(fields["proof_challenge"], 13)
    response = client.post("/rate/consent/", {"agree": "yes", **fields})
    assert response.status_code == 400 and "did not come back right" in response.content.decode()
    assert Rater.objects.count() == 0


def test_a_study_can_turn_the_proof_off(client, study):
    study.proof_of_effort_bits = 0
    study.save()
    page = open_page(client)
    assert "data-proof-bits" not in page and "proof.js" not in page and "needs JavaScript" not in page
    assert client.post("/rate/consent/", {"agree": "yes"}).status_code == 302


def test_panel_participants_are_not_asked_for_the_proof(client, study):
    page = client.get(f"/s/{study.slug}/?PROLIFIC_PID={'5f' * 12}", follow=True).content.decode()
    assert "data-proof-bits" not in page and "Before you start" in page
    assert client.post("/rate/consent/", {"agree": "yes"}).status_code == 302
