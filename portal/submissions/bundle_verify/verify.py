"""`verify_bundle_stream`: the stages and rules in order."""

from __future__ import annotations

from collections.abc import Callable, Collection

from contracts.bundle import (
    INSTANCES_DIR,
    RESULT_NAME,
    RUN_METADATA_NAME,
    results_digest,
)
from portal.submissions.bundle_verify.manifest import (
    InstanceChecks,
    as_lookup,
    check_files_index,
    check_layout,
    parse_manifest,
)
from portal.submissions.bundle_verify.members import Scan, declared_results, scan_tar
from portal.submissions.bundle_verify.stream import Pipeline, TarFeed
from portal.submissions.bundle_verify.types import (
    BundleLimits,
    BundleRejected,
    ByteSink,
    ByteSource,
    ResultScanner,
    VerifiedBundle,
)


def verify_bundle_stream(
    source: ByteSource,
    sink: ByteSink,
    limits: BundleLimits,
    known_instance_ids: Callable[[str], bool] | Collection[str],
    accepted_sandbox_modes: Collection[str],
    expected_outputs: Callable[[str], list[str]],
    scan_result: ResultScanner | None = None,
) -> VerifiedBundle:
    """Verify a `.tar.gz` bundle while copying it from `source` to `sink`; raise BundleRejected if refused.

    `source` is read to its end exactly once (unless a rule fails first: reading then stops at once, and
    `sink` holds a prefix that the caller should discard). `expected_outputs(task_id)` returns the
    task's declared output names; entries missing any of them are listed in `incomplete_instances`.
    `scan_result`, if given, is called on each declared result (types.ResultMaterial, with the start and end
    of its output files) and its answer kept as the entry's `scan`.
    """
    pipeline, scan = _stream_scanned(source, sink, limits, sample_outputs=scan_result is not None)
    manifest = parse_manifest(scan.manifest)
    results = declared_results(manifest, scan, limits, scan_result)
    files = scan.files
    indexed = check_files_index(manifest, files)
    if bool(manifest.get("run_metadata_included")) != (RUN_METADATA_NAME in files):
        raise BundleRejected("bad_manifest", "run_metadata_included does not match the archive")
    checks = InstanceChecks(
        files=files, results=results, raw_task_infos=scan.raw_task_infos, known=as_lookup(known_instance_ids),
        accepted_sandbox_modes=accepted_sandbox_modes, expected_outputs=expected_outputs)
    entries = [checks.entry(item) for item in manifest["instances"]]
    check_layout(files, indexed, checks.seen, checks.output_members, checks.fti_members)
    assert scan.top is not None
    return VerifiedBundle(
        top_dir=scan.top,
        created_at=manifest.get("created_at"),
        framework_version=manifest.get("framework_version"),
        note=manifest.get("note"),
        benchmark_repo=manifest.get("benchmark_repo"),
        instance_count=len(entries),
        run_metadata_included=RUN_METADATA_NAME in files,
        entries=entries,
        incomplete_instances=checks.incomplete,
        archive_sha256=pipeline.archive_hash.hexdigest(),
        archive_bytes=pipeline.archive_bytes,
        uncompressed_bytes=pipeline.inflated_bytes,
        member_count=scan.members,
        results_digest=results_digest(
            (e.base_name, files[f"{INSTANCES_DIR}/{e.base_name}/{RESULT_NAME}"].sha256,
             [(o.path, o.sha256) for o in e.outputs]) for e in entries),
    )


def _stream_scanned(source: ByteSource, sink: ByteSink, limits: BundleLimits,
                    sample_outputs: bool = False) -> tuple[Pipeline, Scan]:
    """Run the three stages to the end of the archive; the member rules hold for every member."""
    pipeline = Pipeline(source, sink, limits)
    pipeline.start()
    try:
        scan = scan_tar(TarFeed(pipeline), limits, sample_outputs=sample_outputs)
        for thread in pipeline.threads:
            thread.join()
        if pipeline.error is not None:
            raise pipeline.error
    finally:
        pipeline.close()
    if scan.top is None:
        raise BundleRejected("corrupt_tar", "the archive is empty")
    return pipeline, scan
