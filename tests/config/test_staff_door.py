"""The staff sign-in withstands password guessing: django-axes counts failures per account and per
client network, refuses further attempts with a clear 429 page, logs every failure, and lets the
account in again once the cool-off has passed."""

from datetime import timedelta

import pytest
from axes.models import AccessAttempt, AccessFailureLog
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

pytestmark = pytest.mark.django_db

LOGIN = "/staff/admin/login/"
PASSWORD = "a-long-and-correct-staff-passphrase"


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_user(
        username="curator", password=PASSWORD, is_staff=True, is_superuser=True
    )


def sign_in(client: Client, username: str, password: str, address: str = "203.0.113.7", **headers):
    return client.post(
        LOGIN,
        {"username": username, "password": password, "next": "/staff/admin/"},
        REMOTE_ADDR=address,
        **headers,
    )


def test_it_refuses_the_right_password_after_five_wrong_ones_with_a_clear_message(settings, staff):
    client = Client()
    for attempt in range(settings.AXES_FAILURE_LIMIT - 1):
        response = sign_in(client, "curator", f"guess-{attempt}")
        assert response.status_code == 200  # the login form again, with Django's error
    response = sign_in(client, "curator", "last-guess")
    assert response.status_code == 429
    response = sign_in(client, "curator", PASSWORD)
    assert response.status_code == 429 and response["Retry-After"] == "900"
    page = response.content.decode()
    assert "Too many failed sign-ins" in page and "Try again in 15 minutes" in page
    assert "_auth_user_id" not in client.session
    assert settings.AXES_FAILURE_LIMIT <= 10 and timedelta(minutes=15) == settings.AXES_COOLOFF_TIME


def test_it_logs_every_failed_attempt_for_audit(staff):
    client = Client()
    for attempt in range(3):
        sign_in(client, "curator", f"guess-{attempt}")
    failures = AccessFailureLog.objects.filter(username="curator")
    assert failures.count() == 3
    assert {failure.ip_address for failure in failures} == {"203.0.113.7"}


def test_it_locks_the_account_against_guesses_spread_over_many_networks(settings, staff):
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        sign_in(Client(), "curator", f"guess-{attempt}", address=f"198.51.100.{attempt + 1}")
    assert sign_in(Client(), "curator", PASSWORD, address="192.0.2.200").status_code == 429


def test_it_locks_a_network_that_guesses_across_many_accounts(settings, staff):
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        sign_in(Client(), f"someone-{attempt}", "guess", address="198.51.100.9")
    assert sign_in(Client(), "curator", PASSWORD, address="198.51.100.9").status_code == 429


def test_it_treats_one_ipv6_slash_64_as_one_network(settings, staff):
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        sign_in(Client(), f"someone-{attempt}", "guess", address=f"2001:db8:1:2::{attempt + 1:x}")
    assert sign_in(Client(), "curator", PASSWORD, address="2001:db8:1:2::ffff").status_code == 429


def test_it_is_not_fooled_by_a_forged_forwarded_for_header(settings, staff):
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        forged = {"HTTP_X_FORWARDED_FOR": f"10.0.0.{attempt + 1}"}
        sign_in(Client(), f"someone-{attempt}", "guess", address="198.51.100.9", **forged)
    fresh = {"HTTP_X_FORWARDED_FOR": "10.9.9.9"}
    assert sign_in(Client(), "curator", PASSWORD, address="198.51.100.9", **fresh).status_code == 429


def test_it_reads_the_client_behind_a_trusted_proxy(settings, staff):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        via_proxy = {"HTTP_X_FORWARDED_FOR": "1.2.3.4, 198.51.100.9"}  # the left part is the client's word
        sign_in(Client(), f"someone-{attempt}", "guess", address="10.0.0.2", **via_proxy)
    other_client = {"HTTP_X_FORWARDED_FOR": "1.2.3.4, 198.51.100.77"}
    response = sign_in(Client(), "curator", PASSWORD, address="10.0.0.2", **other_client)
    assert response.status_code == 302
    assert AccessFailureLog.objects.filter(ip_address="198.51.100.9").count() == settings.AXES_FAILURE_LIMIT


def test_it_lets_the_account_in_again_after_the_cool_off(settings, staff):
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        sign_in(Client(), "curator", f"guess-{attempt}")
    assert sign_in(Client(), "curator", PASSWORD).status_code == 429
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    client = Client()
    response = sign_in(client, "curator", PASSWORD)
    assert response.status_code == 302 and client.session["_auth_user_id"] == str(staff.pk)
