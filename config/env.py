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
