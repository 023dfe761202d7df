"""How the Portal talks to its S3 bucket, beyond django-storages' defaults (settings wires it)."""

from urllib.parse import urlsplit

from botocore.config import Config

AWS_HOST_SUFFIXES = (".amazonaws.com", ".amazonaws.com.cn")


def endpoint_is_aws(endpoint_url: str | None) -> bool:
    """No endpoint means AWS itself; otherwise AWS only when the host is one of its own."""
    if not endpoint_url:
        return True
    host = (urlsplit(endpoint_url).hostname or "").lower()
    return host.endswith(AWS_HOST_SUFFIXES)


def s3_client_config(endpoint_url: str | None) -> Config | None:
    """botocore's client settings for `endpoint_url`; None keeps django-storages' own (AWS).

    Since 1.36 botocore adds CRC checksums to every upload (aws-chunked trailers) and checks them on
    every download; several S3-compatible servers refuse such uploads or return no checksum to check.
    `when_required` sends and checks them only where the S3 API demands one, as before. Such servers
    are reached by path (`endpoint/bucket/key`): they seldom answer on a name per bucket."""
    if endpoint_is_aws(endpoint_url):
        return None
    return Config(
        s3={"addressing_style": "path"},
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
    )
