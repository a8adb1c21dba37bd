"""Strict readers for settings that come from the environment.

Every setting read from the environment goes through one of these, so a typo or a missing value fails
loudly at start-up instead of silently falling back to something unsafe.
"""

import os


class ImproperlyConfiguredEnv(Exception):
    pass


_MISSING = object()
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _raw(name: str, default: object) -> str | None:
    """The variable's text, or None when it is unset and a default was given."""
    value = os.environ.get(name)
    if value is None and default is _MISSING:
        raise ImproperlyConfiguredEnv(f"Environment variable {name} is required but not set.")
    return value


def env_str(name: str, default: str | object = _MISSING) -> str:
    value = _raw(name, default)
    return default if value is None else value  # type: ignore[return-value]


def env_bool(name: str, default: bool | object = _MISSING) -> bool:
    value = _raw(name, default)
    if value is None:
        return default  # type: ignore[return-value]
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfiguredEnv(
        f"Environment variable {name}={value!r} is not a boolean (use true or false)."
    )


def env_int(name: str, default: int | object = _MISSING) -> int:
    value = _raw(name, default)
    if value is None:
        return default  # type: ignore[return-value]
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfiguredEnv(f"Environment variable {name}={value!r} is not an integer.") from None


def env_list(name: str, default: list[str] | object = _MISSING) -> list[str]:
    value = _raw(name, default)
    if value is None:
        return list(default)  # type: ignore[call-overload]
    return [item.strip() for item in value.split(",") if item.strip()]


# The placeholders of .env.example: a copy of that file used as is must not run a site.
EXAMPLE_SECRETS = frozenset({"change-me-to-50-random-characters", "change-me-to-another-long-random-string"})
MIN_SECRET_LENGTH = 50


def env_secret(name: str) -> str:
    """A required secret key: refused when it is a placeholder of .env.example or shorter than 50
    characters (Django's own bar for SECRET_KEY), since a guessable key lets anyone forge sessions or,
    for PANEL_ID_HMAC_KEY, match a panel id to its hash by trying ids."""
    value = env_str(name)
    if value in EXAMPLE_SECRETS or value.lower().startswith("change-me"):
        raise ImproperlyConfiguredEnv(
            f"Environment variable {name} still holds the example value from .env.example; set it to a "
            f"random string of at least {MIN_SECRET_LENGTH} characters, e.g. the output of "
            "`python -c 'import secrets; print(secrets.token_urlsafe(50))'`."
        )
    if len(value) < MIN_SECRET_LENGTH:
        raise ImproperlyConfiguredEnv(
            f"Environment variable {name} is {len(value)} characters long; a secret needs at least "
            f"{MIN_SECRET_LENGTH} random characters, e.g. the output of "
            "`python -c 'import secrets; print(secrets.token_urlsafe(50))'`."
        )
    return value
