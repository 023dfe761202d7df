"""The judge client against a local server speaking the OpenAI and Anthropic wire protocols: what goes on
the wire, the three attempts 1 s then 2 s apart, timeouts, 429 then success, 500, routing and keys."""

from __future__ import annotations

import pytest

from scoring.engine.scorers.judges import delimited_messages
from scoring.judging.client import JudgeUnavailable, SdkJudgeClient
from scoring.judging.endpoint import (
    PROVIDER_BASES,
    JudgeConfigurationError,
    JudgeEndpoint,
)
from tests.judge_endpoint import JudgeEndpoint as LocalEndpoint
from tests.judge_endpoint import png_with_script

SECRET = "sk-judge-secret-0123456789"


@pytest.fixture
def server():  # noqa: ANN201
    with LocalEndpoint() as endpoint:
        yield endpoint


def gateway(server: LocalEndpoint, protocol: str = "openai", base: str = "/v1") -> JudgeEndpoint:
    return JudgeEndpoint.from_environment({"ASIBENCH_JUDGE_API_BASE": server.url + base, "JUDGE_KEY": SECRET,
                                           "ASIBENCH_JUDGE_API_KEY_ENV": "JUDGE_KEY",
                                           "ASIBENCH_JUDGE_API_PROTOCOL": protocol})


class Sleeps:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def request(text: str, model: str = "google/gemini-3.5-flash", **extra: object) -> dict:
    return {"model": model, "max_tokens": 64, "temperature": 0.0,
            "messages": delimited_messages("You judge.", "Score 0-10.", [("AGENT_OUTPUT", "file: r.md", text)]),
            **extra}


def no_images(part: dict) -> bytes:
    raise AssertionError("no image expected")


def test_a_gateway_gets_the_canonical_model_the_rubric_in_the_system_message_and_the_key(server) -> None:
    client = SdkJudgeClient(gateway(server))
    reply = client.complete(request("JUDGE-SCRIPT:well:7 my report"), no_images)
    assert reply.text == '{"score": 7.0, "reasoning": "scripted 7"}'
    assert (reply.model, reply.attempts) == ("openai/google/gemini-3.5-flash", 1)
    assert reply.input_tokens > 0 and reply.output_tokens > 0
    sent = server.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["authorization"] == f"Bearer {SECRET}"
    body = sent["body"]
    assert (body["model"], body["max_tokens"], body["temperature"]) == ("google/gemini-3.5-flash", 64, 0.0)
    system, user = body["messages"]
    assert system["role"] == "system" and "Score 0-10." in system["content"]
    assert user["content"].startswith("<<<BEGIN AGENT_OUTPUT ") and "JUDGE-SCRIPT:well:7 my report" in user["content"]
    assert "Score 0-10." not in user["content"]


@pytest.mark.parametrize("script", ["fenced:8", "prose:6", "text:4", "malformed"])
def test_every_reply_shape_comes_back_verbatim_for_the_engine_to_read(server, script) -> None:
    reply = SdkJudgeClient(gateway(server)).complete(request(f"JUDGE-SCRIPT:{script}"), no_images)
    assert reply.text == server.reply_text(*script.partition(":")[::2], 0)


def test_429_then_success_takes_a_second_attempt_one_second_later(server) -> None:
    sleeps = Sleeps()
    reply = SdkJudgeClient(gateway(server), sleep=sleeps).complete(request("JUDGE-SCRIPT:429:5"), no_images)
    assert reply.text.startswith('{"score": 5.0') and reply.attempts == 2
    assert sleeps.calls == [1.0]
    assert len(server.requests) == 2


def test_a_server_error_is_unavailable_after_three_attempts_one_then_two_seconds_apart(server) -> None:
    sleeps = Sleeps()
    with pytest.raises(JudgeUnavailable, match=r"InternalServerError.*\(after 3 attempts\)") as raised:
        SdkJudgeClient(gateway(server), sleep=sleeps).complete(request("JUDGE-SCRIPT:500"), no_images)
    assert sleeps.calls == [1.0, 2.0] and len(server.requests) == 3
    assert SECRET not in str(raised.value)


def test_a_reply_slower_than_the_timeout_is_unavailable(server) -> None:
    client = SdkJudgeClient(gateway(server), timeout=0.5, sleep=Sleeps())
    with pytest.raises(JudgeUnavailable, match="APITimeoutError"):
        client.complete(request("JUDGE-SCRIPT:slow:2:9"), no_images)
    assert len(server.requests) == 3


def test_an_unreachable_endpoint_is_unavailable(server) -> None:
    endpoint = JudgeEndpoint.from_environment({"ASIBENCH_JUDGE_API_BASE": "http://127.0.0.1:9/v1", "K": SECRET,
                                               "ASIBENCH_JUDGE_API_KEY_ENV": "K",
                                               "ASIBENCH_JUDGE_API_PROTOCOL": "openai"})
    with pytest.raises(JudgeUnavailable, match="APIConnectionError"):
        SdkJudgeClient(endpoint, sleep=Sleeps()).complete(request("x"), no_images)


def test_native_protocol_speaks_anthropic_messages_for_anthropic_models(server) -> None:
    client = SdkJudgeClient(gateway(server, "native", base=""))
    reply = client.complete(request("JUDGE-SCRIPT:fenced:9", model="anthropic/claude-opus-4-6"), no_images)
    assert "```json" in reply.text and reply.model == "anthropic/claude-opus-4-6"
    sent = server.requests[-1]
    assert sent["path"] == "/v1/messages" and sent["headers"]["anthropic-version"]
    headers = sent["headers"]
    assert SECRET in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer "))
    body = sent["body"]
    assert body["model"] == "claude-opus-4-6" and "Score 0-10." in body["system"]
    assert [m["role"] for m in body["messages"]] == ["user"] and body["temperature"] == 0.0


def test_images_go_inline_on_both_wires_and_must_be_the_ones_the_scorer_named(server) -> None:
    image = png_with_script("well:6")
    part = {"type": "image_file", "side": "prediction", "path": "fig.png", "mime": "image/png", "bytes": len(image),
            "sha256": __import__("hashlib").sha256(image).hexdigest()}
    chat = {"model": "openai/gpt-5.4", "max_tokens": 10,
            "messages": [{"role": "system", "content": "judge"},
                         {"role": "user", "content": [{"type": "text", "text": "## Agent Output Image:"}, part]}]}
    assert SdkJudgeClient(gateway(server)).complete(chat, lambda p: image).text.startswith('{"score": 6.0')
    url = server.requests[-1]["body"]["messages"][1]["content"][1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    anthropic = SdkJudgeClient(gateway(server, "native", base=""))
    assert anthropic.complete({**chat, "model": "anthropic/claude-opus-4-6"}, lambda p: image).text
    assert server.requests[-1]["body"]["messages"][0]["content"][1]["source"]["media_type"] == "image/png"
    with pytest.raises(JudgeUnavailable, match="differs from the one the scorer read"):
        SdkJudgeClient(gateway(server)).complete(chat, lambda p: image + b"changed")


def test_without_a_base_each_provider_prefix_routes_to_its_own_endpoint_and_key() -> None:
    keys = {"OPENAI_API_KEY": "o", "ANTHROPIC_API_KEY": "a", "GOOGLE_API_KEY": "g", "OPENROUTER_API_KEY": "r"}
    endpoint = JudgeEndpoint.from_environment(keys)
    routes = {model: endpoint.route(model) for model in
              ("openai/gpt-5.5", "gpt-5.4", "anthropic/claude-opus-4-6", "gemini/gemini-3.1-pro-preview",
               "google/gemini-3.5-flash", "openrouter/gpt-5.5", "openrouter/google/gemini-3.1-pro-preview")}
    summary = {m: (r.wire, r.base_url, r.model, r.key_env) for m, r in routes.items()}
    openai, anthropic, gemini, router = (PROVIDER_BASES[p] for p in ("openai", "anthropic", "gemini", "openrouter"))
    assert summary == {
        "openai/gpt-5.5": ("openai", openai, "gpt-5.5", "OPENAI_API_KEY"),
        "gpt-5.4": ("openai", openai, "gpt-5.4", "OPENAI_API_KEY"),
        "anthropic/claude-opus-4-6": ("anthropic", anthropic, "claude-opus-4-6", "ANTHROPIC_API_KEY"),
        "gemini/gemini-3.1-pro-preview": ("openai", gemini, "gemini-3.1-pro-preview", "GOOGLE_API_KEY"),
        "google/gemini-3.5-flash": ("openai", gemini, "gemini-3.5-flash", "GOOGLE_API_KEY"),
        "openrouter/gpt-5.5": ("openai", router, "openai/gpt-5.5", "OPENROUTER_API_KEY"),
        "openrouter/google/gemini-3.1-pro-preview": ("openai", router, "google/gemini-3.1-pro-preview",
                                                     "OPENROUTER_API_KEY"),
    }
    assert routes["gpt-5.4"].completion_tokens_field == "max_completion_tokens"
    assert routes["openrouter/gpt-5.5"].completion_tokens_field == "max_tokens"


@pytest.mark.parametrize(("environ", "message"), [
    ({"ASIBENCH_JUDGE_API_BASE": "http://x/v1", "ASIBENCH_JUDGE_API_KEY_ENV": "K", "K": "s"},
     "ASIBENCH_JUDGE_API_PROTOCOL is required"),
    ({"ASIBENCH_JUDGE_API_BASE": "http://x/v1", "ASIBENCH_JUDGE_API_PROTOCOL": "openai"},
     "ASIBENCH_JUDGE_API_KEY_ENV is required"),
    ({"ASIBENCH_JUDGE_API_BASE": "http://x/v1", "ASIBENCH_JUDGE_API_PROTOCOL": "openai",
      "ASIBENCH_JUDGE_API_KEY_ENV": "K"}, r"\(K\) is unset or empty"),
    ({"ASIBENCH_JUDGE_API_KEY_ENV": "sk-abc123-not-a-name"}, "never hold the key itself"),
    ({"ASIBENCH_JUDGE_API_BASE": "http://user:pw@x/v1", "ASIBENCH_JUDGE_API_PROTOCOL": "openai",
      "ASIBENCH_JUDGE_API_KEY_ENV": "K", "K": "s"}, "must not contain credentials"),
    ({"ASIBENCH_JUDGE_API_PROTOCOL": "grpc"}, "must be native or openai"),
])
def test_bad_endpoint_settings_are_refused_with_the_reason(environ, message) -> None:
    with pytest.raises(JudgeConfigurationError, match=message):
        JudgeEndpoint.from_environment(environ)


def test_a_model_without_a_key_is_unavailable_naming_the_variables() -> None:
    client = SdkJudgeClient(JudgeEndpoint.from_environment({}))
    with pytest.raises(JudgeUnavailable, match="no API key for anthropic judges: set ANTHROPIC_API_KEY"):
        client.complete(request("x", model="anthropic/claude-opus-4-6"), no_images)
    with pytest.raises(JudgeUnavailable, match="names no provider"):
        client.complete(request("x", model="mistral-large"), no_images)


def test_cost_comes_from_the_operators_price_table(server) -> None:
    client = SdkJudgeClient(gateway(server), prices={"openai/google/gemini-3.5-flash": [2.0, 10.0]})
    reply = client.complete(request("JUDGE-SCRIPT:well:5"), no_images)
    assert reply.cost_usd == pytest.approx((reply.input_tokens * 2.0 + reply.output_tokens * 10.0) / 1e6)
    assert reply.record()["usage"] == {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens}
    unpriced = SdkJudgeClient(gateway(server)).complete(request("JUDGE-SCRIPT:well:5"), no_images)
    assert unpriced.cost_usd is None
