"""What every API answer shares in the OpenAPI schema: the error body (`portal.api_errors`) and helpers for
declaring an answer's fields. Each API's own answer is an output serializer beside its view, used for the schema
only: the body is sent as built, so no value on the wire is rewritten (fields are only ever added)."""

from rest_framework import serializers


class ErrorOutputSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="what was refused and why, in words")
    code = serializers.CharField(help_text="a stable code a client can branch on (docs/faq.md)")
    help_url = serializers.URLField(required=False, help_text="the FAQ entry for this code, when there is one")


def json_object(help_text: str = "", allow_null: bool = False) -> serializers.DictField:
    """A nested object whose keys are documented in the guides (a table of figures, a usage record)."""
    return serializers.DictField(help_text=help_text, allow_null=allow_null)


def json_objects(help_text: str = "") -> serializers.ListField:
    return serializers.ListField(child=serializers.DictField(), help_text=help_text)


class DeviceFlowErrorOutputSerializer(ErrorOutputSerializer):
    """RFC 8628's error answer (authorization_pending, slow_down, access_denied, expired_token, invalid_grant,
    invalid_request), beside the Portal's own detail and code."""

    error = serializers.CharField()
    error_description = serializers.CharField()
