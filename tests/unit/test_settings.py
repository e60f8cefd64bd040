"""The settings object: what it reads from the environment, and what it never shows."""

from graph.settings import Settings


def test_only_stepwise_variables_are_read_never_home_for_the_store(monkeypatch):
    monkeypatch.delenv("STEPWISE_HOME", raising=False)
    monkeypatch.setenv("HOME", "/somewhere/else")
    assert str(Settings().home) == ".stepwise"
    monkeypatch.setenv("STEPWISE_HOME", "/data/stepwise")
    assert str(Settings().home) == "/data/stepwise"


def test_an_endpoint_or_a_key_switches_the_provider_to_openai(monkeypatch):
    assert Settings().resolved_provider == "scripted"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1234/v1")
    assert Settings().resolved_provider == "openai"
    monkeypatch.setenv("STEPWISE_PROVIDER", "scripted")
    assert Settings().resolved_provider == "scripted"


def test_keys_are_never_in_the_public_form(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET")
    settings = Settings()
    assert settings.public_dict()["openai_api_key"] == "set"
    assert "sk-test-SECRET" not in repr(settings) + str(settings.public_dict())
