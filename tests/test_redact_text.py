"""One redaction module: crash logs and error lines use simsubjects.redact.redact_text."""

from simsubjects.cli import crash
from simsubjects import redact


def test_crash_redacts_through_the_one_module(monkeypatch):
    assert crash.redact is redact.redact_text
    monkeypatch.setenv("HF_TOKEN", "hf_ENVSECRET99")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    text = ("failed: http://u:hunter2@10.0.0.1/v1 then me:pw-secret7@host/v1 ?api-key=QSECRET&design=2;"
            "X-Api-Key=XSECRET Bearer tok1 key hf_ENVSECRET99 and extra-value-42 openai:m@http://h/v1 false")
    out = crash.redact(text, extra=("extra-value-42",))
    for secret in ("hunter2", "pw-secret7", "QSECRET", "XSECRET", "tok1", "ENVSECRET99", "extra-value-42"):
        assert secret not in out, secret
    assert "design=2" in out and "openai:m@http://h/v1" in out and out.endswith(" false")
    assert out.count(redact.MASK) >= 6
