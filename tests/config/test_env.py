import pytest

from config.env import ImproperlyConfiguredEnv, env_bool, env_int, env_list, env_str


def test_it_reads_values_and_defaults(monkeypatch):
    monkeypatch.setenv("POPULUS_T_STR", "hello")
    monkeypatch.setenv("POPULUS_T_BOOL", "Yes")
    monkeypatch.setenv("POPULUS_T_INT", "42")
    monkeypatch.setenv("POPULUS_T_LIST", "a, b,,c")
    assert env_str("POPULUS_T_STR") == "hello"
    assert env_bool("POPULUS_T_BOOL") is True
    assert env_int("POPULUS_T_INT") == 42
    assert env_list("POPULUS_T_LIST") == ["a", "b", "c"]
    assert env_str("POPULUS_T_MISSING", "fallback") == "fallback"
    assert env_bool("POPULUS_T_MISSING", False) is False


def test_it_fails_loudly_on_missing_or_malformed_values(monkeypatch):
    monkeypatch.setenv("POPULUS_T_BOOL", "maybe")
    monkeypatch.setenv("POPULUS_T_INT", "4x")
    with pytest.raises(ImproperlyConfiguredEnv, match="POPULUS_T_MISSING is required"):
        env_str("POPULUS_T_MISSING")
    with pytest.raises(ImproperlyConfiguredEnv, match="not a boolean"):
        env_bool("POPULUS_T_BOOL")
    with pytest.raises(ImproperlyConfiguredEnv, match="not an integer"):
        env_int("POPULUS_T_INT")
