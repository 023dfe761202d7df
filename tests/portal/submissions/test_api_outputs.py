"""The upload answer and the progress API have typed shapes: a TypedDict each (what mypy checks the code
builds) and a serializer (what the OpenAPI schema shows), holding the same fields; real answers carry
exactly those fields."""

import json
import typing

import pytest
from django.test import Client

from portal.submissions.apis import IntakeBody, IntakeOutputSerializer, ProgressBody, ProgressOutputSerializer
from tests.support import bundle_of, issue_token

SHAPES = [(IntakeBody, IntakeOutputSerializer), (ProgressBody, ProgressOutputSerializer)]


def fields_of(serializer: type) -> tuple[set[str], set[str]]:
    fields = serializer().fields
    return set(fields), {name for name, field in fields.items() if field.required}


@pytest.mark.parametrize(("body", "serializer"), SHAPES)
def test_each_typed_body_and_its_serializer_name_the_same_fields(body, serializer):
    every, required = fields_of(serializer)
    assert set(typing.get_type_hints(body)) == every
    assert set(body.__required_keys__) == required


def test_the_openapi_schema_shows_the_fields_of_both_answers(db, client: Client):
    schema = json.loads(client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").content)
    components = schema["components"]["schemas"]
    for _, serializer in SHAPES:
        name = serializer.__name__.removesuffix("Serializer")
        assert set(components[name]["properties"]) == fields_of(serializer)[0], name
    upload = schema["paths"]["/api/v1/submissions/bundle"]["post"]["responses"]["201"]
    assert upload["content"]["application/json"]["schema"]["$ref"].endswith("/IntakeOutput")


@pytest.mark.slow
def test_a_real_upload_and_its_progress_answer_carry_exactly_the_declared_fields(
        submit_catalog, submitter, db, client: Client, run_results, tmp_path):
    token = issue_token(submitter.user)
    body = bundle_of(run_results["reference"], tmp_path / "reference.tar.gz").read_bytes()
    upload = client.generic("POST", "/api/v1/submissions/bundle", body, content_type="application/gzip",
                            HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_X_ASIBENCH_FILENAME="submission_x.tar.gz")
    assert upload.status_code == 201, upload.content
    every, required = fields_of(IntakeOutputSerializer)
    assert required <= set(upload.json()) <= every
    assert "confirm_url" in upload.json()  # a draft: the optional field is there
    progress = client.get(f"/api/v1/submissions/{upload.json()['submission_id']}",
                          HTTP_AUTHORIZATION=f"Bearer {token}")
    assert progress.status_code == 200, progress.content
    assert set(progress.json()) == fields_of(ProgressOutputSerializer)[0]


def test_every_json_answer_of_the_api_names_its_fields(db, client: Client):
    # No answer is declared as a bare object: each 2xx and 4xx JSON body is a component with its properties.
    schema = json.loads(client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").content)
    components = schema["components"]["schemas"]
    bare = []
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            for status, response in operation.get("responses", {}).items():
                body = (response.get("content") or {}).get("application/json", {}).get("schema")
                if body is None:
                    continue
                ref = body.get("$ref", "")
                if not ref or not components[ref.rsplit("/", 1)[-1]].get("properties"):
                    bare.append(f"{method.upper()} {path} {status}")
    assert bare == []


def test_the_public_json_answers_carry_the_declared_fields(db, client: Client):
    from leaderboard.apis import BoardOutputSerializer, ModerationLogOutputSerializer
    from portal.accounts.apis import DeviceCodeApi
    from scoring.task_loading import datasets_ensure

    datasets_ensure()

    for url, serializer in (("/api/v1/leaderboard", BoardOutputSerializer),
                            ("/api/v1/leaderboard/moderation", ModerationLogOutputSerializer)):
        answer = client.get(url)
        assert answer.status_code == 200, (url, answer.content)
        assert set(answer.json()) == fields_of(serializer)[0], url
    code = client.post("/api/v1/cli/device-code", {}, content_type="application/json")
    assert set(code.json()) == fields_of(DeviceCodeApi.DeviceCodeOutputSerializer)[0]
