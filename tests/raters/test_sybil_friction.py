"""Sybil friction on entries without a panel id: a cap on new raters per network per hour (the network
kept only as a keyed fingerprint), a honeypot field on the consent form, both set per study, with clear
refusals."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from raters.models import Rater
from tests.helpers import consent_post

pytestmark = pytest.mark.django_db

PID = "5f1a2b3c4d5e6f7a8b9c0d1e"
LINK = f"/s/pilot-study/?PROLIFIC_PID={{pid}}&STUDY_ID={'a' * 24}&SESSION_ID={'b' * 24}"


def enter_open(address: str = "203.0.113.5", fields: dict | None = None, **headers):
    client = Client(REMOTE_ADDR=address, **headers)
    client.get("/rate/")
    return consent_post(client, fields)


def test_it_refuses_the_21st_new_rater_from_one_network_within_the_hour(study):
    assert study.new_raters_per_network_hour == 20
    for _ in range(20):
        assert enter_open().status_code == 302
    refused = enter_open()
    assert refused.status_code == 429 and 0 < int(refused["Retry-After"]) <= 3600
    assert "Too many new raters have started from your network" in refused.content.decode()
    assert Rater.objects.count() == 20
    assert enter_open(address="198.51.100.1").status_code == 302


def test_it_admits_the_network_again_once_the_hour_has_passed(study):
    study.new_raters_per_network_hour = 2
    study.save()
    enter_open()
    enter_open()
    assert enter_open().status_code == 429
    Rater.objects.update(created_at=timezone.now() - timedelta(minutes=61))
    assert enter_open().status_code == 302


def test_it_counts_one_ipv6_slash_64_as_one_network(study):
    study.new_raters_per_network_hour = 2
    study.save()
    enter_open(address="2001:db8:5:6::1")
    enter_open(address="2001:db8:5:6::2")
    assert enter_open(address="2001:db8:5:6::3").status_code == 429
    assert enter_open(address="2001:db8:5:7::1").status_code == 302


def test_it_is_not_reset_by_a_forged_forwarded_for_header(study):
    study.new_raters_per_network_hour = 1
    study.save()
    enter_open(HTTP_X_FORWARDED_FOR="10.0.0.1")
    assert enter_open(HTTP_X_FORWARDED_FOR="10.0.0.2").status_code == 429


def test_it_keeps_only_a_keyed_fingerprint_of_the_network(study):
    enter_open(address="203.0.113.5")
    enter_open(address="203.0.113.5")
    enter_open(address="198.51.100.1")
    first, second, other = Rater.objects.order_by("pk")
    assert len(first.network_fingerprint) == 64 and "203.0.113" not in first.network_fingerprint
    assert first.network_fingerprint == second.network_fingerprint != other.network_fingerprint


def test_it_has_no_cap_when_the_study_sets_none(study):
    study.new_raters_per_network_hour = None
    study.save()
    for _ in range(3):
        assert enter_open().status_code == 302
    assert Rater.objects.count() == 3


def test_it_does_not_cap_panel_participants_who_share_a_network(study):
    study.new_raters_per_network_hour = 1
    study.save()
    for n in range(3):
        client = Client(REMOTE_ADDR="203.0.113.5")
        client.get(LINK.format(pid=f"{n:024x}"))
        assert client.post("/rate/consent/", {"agree": "yes"}).status_code == 302
    assert Rater.objects.filter(source=Rater.Source.PANEL).count() == 3


def test_it_refuses_an_entry_that_fills_the_hidden_field(study):
    page = Client().get("/rate/", follow=True).content.decode()
    assert 'name="website"' in page and 'tabindex="-1"' in page
    refused = enter_open(fields={"website": "http://spam.example"})
    assert refused.status_code == 400 and "filled in automatically" in refused.content.decode()
    assert Rater.objects.count() == 0
    assert enter_open(fields={"website": ""}).status_code == 302


def test_it_lets_a_study_turn_the_honeypot_off(study):
    study.honeypot = False
    study.save()
    assert 'name="website"' not in Client().get("/rate/", follow=True).content.decode()
    assert enter_open(fields={"website": "anything"}).status_code == 302
