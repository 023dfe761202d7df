"""The verifier's scan hook: each declared result handed over whole, with the start and end of its outputs,
within the bundle's sample budget; without a hook nothing is sampled."""

import io
import json
from pathlib import Path

from contracts.bundle import build_bundle, write_archive
from portal.submissions.bundle_verify import BundleLimits, ResultMaterial, verify_bundle_stream
from tests.results_tree import write_result

IID = "math.roots_demo__seed42"
BIG = b"head-" + b"x" * 200_000 + b"-tail"


def bundle(tmp_path: Path, log: str) -> bytes:
    results = tmp_path / "results"
    base = write_result(results, IID, "b1", {"small.json": b'{"a": 1}', "big.csv": BIG})
    write_result(results, IID, "b2", {"small.json": b'{"a": 2}'})
    path = results / "math.roots_demo" / f"{base}.json"
    result = json.loads(path.read_text())
    result["agent_output"]["log"] = log
    path.write_text(json.dumps(result))
    build_bundle(results, tmp_path / "bundle")
    return write_archive(tmp_path / "bundle", tmp_path / "bundle.tar.gz").read_bytes()


def verify(data: bytes, limits: BundleLimits, scan=None):  # noqa: ANN001, ANN201
    return verify_bundle_stream(io.BytesIO(data), io.BytesIO(), limits, {IID}, {"os"}, lambda task_id: [],
                                scan_result=scan)


def test_each_result_is_handed_over_whole_with_its_output_samples(tmp_path):
    log = "start-marker " + "y" * 100_000 + " end"
    seen: list[ResultMaterial] = []
    verified = verify(bundle(tmp_path, log), BundleLimits(evidence_log_tail_chars=1000),
                      lambda material: seen.append(material) or material.base_name)
    by_base = {m.base_name: m for m in seen}
    first = by_base[f"{IID}__b1"]
    assert first.result["agent_output"]["log"] == log  # all of it, not the evidence's tail
    big = first.outputs["big.csv"]
    limits = BundleLimits()
    assert big.size == len(BIG) and big.head == BIG[:limits.output_sample_head]
    assert big.tail == BIG[-limits.output_sample_tail:] and not big.whole
    assert first.outputs["small.json"].head == b'{"a": 1}' and first.outputs["small.json"].whole
    assert set(by_base[f"{IID}__b2"].outputs) == {"small.json"}
    assert {e.base_name: e.scan for e in verified.entries} == {f"{IID}__b1": f"{IID}__b1", f"{IID}__b2": f"{IID}__b2"}


def test_outputs_past_the_bundles_sample_budget_are_counted_not_sampled(tmp_path):
    seen: list[ResultMaterial] = []
    verify(bundle(tmp_path, "log"), BundleLimits(output_samples_bytes=100), seen.append)
    unsampled = {m.base_name: (sorted(m.outputs), m.outputs_unsampled) for m in seen}
    assert sum(count for _, count in unsampled.values()) >= 1
    assert all(len(names) + count == (2 if base.endswith("b1") else 1) for base, (names, count) in unsampled.items())


def test_without_a_hook_no_entry_has_a_scan(tmp_path):
    verified = verify(bundle(tmp_path, "log"), BundleLimits())
    assert [e.scan for e in verified.entries] == [None, None]
