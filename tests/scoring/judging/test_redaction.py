"""What a judge returns is redacted before it is kept: the secrets the process holds, by exact value, and the
usual shapes of keys and tokens it does not hold; ordinary judge text stays as it is."""

from __future__ import annotations

import json

from scoring.judging.redaction import REDACTED, held_secrets, judge_redactor

ENVIRON = {
    "ASIBENCH_JUDGE_API_KEY_ENV": "MY_GATEWAY_CREDS",  # names the variable; its own value is no secret
    "MY_GATEWAY_CREDS": "gw-Hq28s7Lx0PzeWQ",  # a key under a name that does not say so
    "OPENAI_API_KEY": "plainvalue12345",
    "DATABASE_URL": "postgres://asibench:db%2Fpass-77x@db.internal:5432/asibench",
    "LANG": "C.UTF-8",
    "SESSION_COOKIE_SECURE": "1",  # too short to be a secret
    "ASIBENCH_JUDGE_DAILY_TOKENS": "20000000",  # a count
    "ASIBENCH_CREDENTIALS_DIR": "/root/.config/asibench",  # a place
}


def test_the_values_the_process_holds_are_found_by_name_setting_and_url():
    found = held_secrets(ENVIRON, named=["MY_GATEWAY_CREDS"], extra=["django-secret-key-value"])
    assert found == {"gw-Hq28s7Lx0PzeWQ", "plainvalue12345", "db%2Fpass-77x", "db/pass-77x", "django-secret-key-value"}


def test_every_held_value_and_every_key_shape_is_replaced_in_nested_replies():
    redact = judge_redactor(ENVIRON, extra=["django-secret-key-value"])
    reply = {"stdout": "MY_GATEWAY_CREDS=gw-Hq28s7Lx0PzeWQ OPENAI_API_KEY=plainvalue12345 LANG=C.UTF-8\n",
             "score_json": json.dumps({"score": 7, "reasoning": "db/pass-77x and django-secret-key-value"}),
             "egress_refused": ["sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv", "AIzaSyA1234567890abcdefghijklmnopqrstu"],
             "stderr_tail": ("Authorization: Bearer ghp_abcdefghijklmnopqrstuvwxyz0123456789 "
                             "x-api-key: 9f8e7d6c5b4a39281706 AKIAIOSFODNN7EXAMPLE "
                             "redis://:s3cretpassw0rd@cache:6379/0 hf_abcdefghijklmnopqrstuvwxyzABCDEF")}
    out = redact.value(reply)
    text = json.dumps(out)
    for secret in ("gw-Hq28s7Lx0PzeWQ", "plainvalue12345", "db/pass-77x", "django-secret-key-value",
                   "sk-ant-api03", "AIzaSyA", "ghp_abc", "9f8e7d6c5b4a39281706", "AKIAIOSFODNN7", "s3cretpassw0rd",
                   "hf_abc"):
        assert secret not in text, secret
    assert out["stdout"] == f"MY_GATEWAY_CREDS={REDACTED} OPENAI_API_KEY={REDACTED} LANG=C.UTF-8\n"
    assert json.loads(out["score_json"])["score"] == 7
    assert "redis://:<redacted>@cache:6379/0" in out["stderr_tail"]


def test_ordinary_judge_text_is_left_alone():
    redact = judge_redactor(ENVIRON)
    texts = ['{"score": 8, "reasoning": "The peak is at 3.000 eV; max_tokens=1024 was enough."}',
             'usage {"input_tokens": 123456789, "output_tokens": 12}',
             "I would give it 7/10 overall: the secret of a good fit is the baseline.",
             "20000000 photons were counted; the files are under /root/.config/asibench."]
    assert [redact.text(t) for t in texts] == texts
