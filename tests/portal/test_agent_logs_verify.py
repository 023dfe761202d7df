"""Agent logs as agents really write them, in a result.json the verifier reads: binary (NUL bytes, other
control characters, invalid UTF-8 decoded as lone surrogates), HTML, ANSI escapes, and huge enough to
push result.json past its size cap. The log is evidence, cleaned and cut, never a refusal; the
identity strings of a result are still refused when the database could not store them."""

import gzip
import json
from typing import Any

import pytest

from portal.submissions.bundle_verify import BundleLimits
from portal.submissions.long_texts import LongTextTrimmer, StructureTooLarge
from tests.hostile_bundles import manifest_bundle, one_instance_members, tar_of
from tests.portal.test_bundle_verify import refused, verify

MARKER = "log-end-marker-51c2"
BINARY = "".join(chr(c) for c in range(32)) + "\x7f\ufffd" + b"\xff\xfe\x80".decode("utf-8", "surrogateescape")
HOSTILE_TEXT = f"\x00\x00ELF{BINARY}\ud800<script>alert('log')</script>\x1b[31mred\x1b[0m\n"


def with_log(log: object):
    return lambda data: data["agent_output"].update(log=log, error_message="boom\x00" + "\udfff")


def evidence_of(body: bytes, limits: BundleLimits | None = None) -> dict:
    bundle, _ = verify(body, limits=limits, known=lambda iid: True)
    return bundle.entries[0].evidence


def test_a_binary_html_log_is_kept_cleaned_not_refused() -> None:
    log = HOSTILE_TEXT * 50 + MARKER
    evidence = evidence_of(manifest_bundle(result=with_log(log)))
    tail = evidence["log_tail"]
    assert tail.endswith(MARKER) and evidence["log_chars"] == len(log)
    assert "<script>alert('log')</script>" in tail and "ELF" in tail  # text stays text; pages escape it
    assert not any(c in tail for c in "\x00\x01\x1b\x7f") and "\ufffd" in tail
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in tail)
    tail.encode("utf-8")  # storable: what PostgreSQL's driver does with it
    assert evidence["error"] == "boom"


def test_identity_strings_holding_a_nul_are_still_refused() -> None:
    err = refused(manifest_bundle(result=lambda data: data.update(status="completed\x00")), "bad_result_json",
                  known=lambda iid: True)
    assert err.message.endswith("/result.json: status holds a NUL character (U+0000), which cannot be stored")
    refused(manifest_bundle(result=lambda data: data.update(instance_id=data["instance_id"] + "\ud800")),
            "bad_result_json", known=lambda iid: True)
    refused(manifest_bundle(entry=lambda item: item.update(agent_name="agent\x00")), "bad_manifest",
            known=lambda iid: True)


def test_a_log_that_pushes_result_json_past_its_cap_is_kept_as_a_tail() -> None:
    limits = BundleLimits(max_result_json_bytes=64 * 1024, evidence_log_tail_chars=2_000)
    log = (HOSTILE_TEXT + "é漢字 \"quoted\" \\ back\\slash\n") * 40_000 + MARKER
    body = manifest_bundle(result=with_log(log))
    assert len(json.dumps(log)) > 20 * limits.max_result_json_bytes
    evidence = evidence_of(body, limits)
    assert evidence["log_tail"].endswith("back\\slash\n" + MARKER)
    assert len(evidence["log_tail"]) == 2_000 and "\x00" not in evidence["log_tail"]
    # The full length is estimated from the JSON text (escapes count their characters): never less.
    assert evidence["log_chars"] >= len(log) and evidence["log_chars_estimated"] is True
    assert evidence["error"] == "boom" and evidence["status"] == "completed"


def test_an_oversized_result_json_whose_bulk_is_not_one_long_text_is_refused_saying_what_to_do() -> None:
    limits = BundleLimits(max_result_json_bytes=64 * 1024)
    many = manifest_bundle(result=lambda data: data.update(notes=[f"line {i}" for i in range(20_000)]))
    err = refused(many, "file_too_large", limits=limits, known=lambda iid: True)
    assert "result.json" in err.message and "outside its long texts" in err.message
    assert "agent log" in err.message


def test_an_oversized_result_json_still_gets_its_identity_checked() -> None:
    limits = BundleLimits(max_result_json_bytes=64 * 1024, evidence_log_tail_chars=1_000)
    body = manifest_bundle(result=lambda data: (with_log("x" * 200_000)(data), data.update(status="failed")))
    err = refused(body, "result_mismatch", limits=limits, known=lambda iid: True)
    assert "status is 'failed'" in err.message


def test_an_oversized_result_json_that_is_not_json_is_refused() -> None:
    limits = BundleLimits(max_result_json_bytes=64 * 1024, evidence_log_tail_chars=1_000)
    members = one_instance_members(result=with_log("x" * 200_000))
    broken = [(path, body[:-1] if path.endswith("result.json") else body) for path, body in members]
    refused(gzip.compress(tar_of(broken)), "bad_result_json", limits=limits, known=lambda iid: True)


# --- the trimmer on its own: any chunking, any escapes -----------------------------------------

def trimmed(document: object, chunk: int, *, long_text: int = 64, tail: int = 32) -> tuple[Any, dict[str, int]]:
    raw = json.dumps(document, ensure_ascii=False).encode("utf-8")
    trimmer = LongTextTrimmer(structure_cap=1 << 20, long_text_bytes=long_text, tail_bytes=tail)
    for start in range(0, len(raw), chunk):
        trimmer.feed(memoryview(raw)[start:start + chunk])
    text, cuts = trimmer.finish()
    return json.loads(text), cuts


DOCUMENT = {
    "short": "a \"quoted\" \\ text",
    "agent_output": {"log": "start " + "é漢\\\"x\n\t" * 40 + "END", "n": [1, 2.5, None, True, "tiny"]},
    "list": ["k" * 200, {"deep": ["\\" * 3 + "z" * 150 + "\u2603"]}],
    "long key " + "q" * 100: 1,
}


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 7, 64, 100_000])
def test_the_trimmer_keeps_structure_and_short_texts_and_the_end_of_long_ones(chunk: int) -> None:
    got, cuts = trimmed(DOCUMENT, chunk)
    assert got["short"] == DOCUMENT["short"] and got["agent_output"]["n"] == [1, 2.5, None, True, "tiny"]
    log = got["agent_output"]["log"]
    assert DOCUMENT["agent_output"]["log"].endswith(log) and log.endswith("x\n\tEND") and 10 <= len(log) <= 32
    assert DOCUMENT["list"][0].endswith(got["list"][0]) and DOCUMENT["list"][1]["deep"][0].endswith(
        got["list"][1]["deep"][0])
    keys = [k for k in got if set(k) == {"q"}]  # a long key is cut like any long text
    assert set(cuts) == {log, got["list"][0], got["list"][1]["deep"][0], *keys} and len(keys) == 1
    assert cuts[log] >= len(DOCUMENT["agent_output"]["log"]) and cuts[got["list"][0]] == 200


@pytest.mark.parametrize("chunk", [1, 7, 100_000])
def test_the_trimmer_keeps_a_string_between_short_and_long_whole(chunk: int) -> None:
    # Past the one-match run of short strings but under long_text_bytes: kept as it is. Python 3.11.2's
    # re ended that run inside such a string (a possessive repeat bug), and the document came out broken.
    document = {"a": "short", "medium": "m" * 48 + "\\\"" + "n" * 8, "after": ["x", "y" * 40]}
    assert trimmed(document, chunk) == (document, {})


def test_the_trimmer_refuses_structure_past_its_cap() -> None:
    trimmer = LongTextTrimmer(structure_cap=1_000, long_text_bytes=64, tail_bytes=32)
    with pytest.raises(StructureTooLarge):
        trimmer.feed(memoryview(json.dumps([str(i) for i in range(1_000)]).encode()))
