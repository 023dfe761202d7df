"""Which agent sandboxes a dataset accepts: the vocabulary, the policies and the accept rule.

A result records the sandbox its agent ran in as `provenance.sandbox` (client contract §5.5):
`requested_mode`, `effective_mode`, `enforcement_status`, `verification_status` and, for a
container, `image_identity`. The client writes it (`sandbox_provenance`); the Portal checks it at
intake (`sandbox_refusal`), flags it for reviewers (`sandbox_flag`) and names the policy on the
draft report (`policy_name`). Which modes each dataset accepts comes from settings
(`ASIBENCH_SANDBOX_POLICY` and the per-dataset overrides), defaulting to `default_modes`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

AGENT_SANDBOXES = ("none", "linux_ns", "os")
"""The modes `asibench run --sandbox` offers: no sandbox, bubblewrap, a container."""

# (enforcement_status, verification_status) each mode records, as the official client does.
_STATUS = {
    "none": ("not_requested", "not_applicable"),
    "task": ("fail_closed", "task_env_active"),
    "linux_ns": ("fail_closed", "linux_namespace"),
    "os": ("fail_closed", "docker_container"),
}
VERIFIED_CONTAINER = "docker_container"

POLICIES = ("official", "local")
_DEFAULT_MODES = {
    # The official service's rule: its ranked dataset takes only verified Docker (`os`) runs.
    "official": {"seed42": ("os",), "seed31415": ("os", "linux_ns", "none")},
    # `make run`'s: also bubblewrap runs, so a local Portal can take what `asibench run` makes.
    "local": {"seed42": ("os", "linux_ns"), "seed31415": ("os", "linux_ns", "none")},
}


def default_modes(policy: str, dataset: str) -> tuple[str, ...]:
    return _DEFAULT_MODES[policy][dataset]


def policy_name(accepted: Collection[str]) -> str:
    """`official` when only verified containers are accepted, as the official seed42; else `local`."""
    return "official" if sorted(accepted) == ["os"] else "local"


def sandbox_provenance(mode: str, image_identity: str | None = None) -> dict[str, Any]:
    enforcement, verification = _STATUS.get(mode, ("fail_closed", "runtime_specific"))
    return {"requested_mode": mode, "effective_mode": mode, "enforcement_status": enforcement,
            "verification_status": verification, "image_identity": image_identity}


def sandbox_refusal(sandbox: Mapping[str, Any] | None, accepted: Collection[str]) -> tuple[str, str] | None:
    """Why a result's sandbox is not accepted, as (reason code, message), else None: the rule a
    bundle must meet at intake."""
    if not isinstance(sandbox, Mapping) or not sandbox.get("effective_mode"):
        return "sandbox_policy", "provenance.sandbox is missing; re-run with a current `asibench run --sandbox ...`"
    mode = sandbox["effective_mode"]
    if not isinstance(mode, str):
        return "bad_manifest", "provenance.sandbox.effective_mode must be a string"
    if mode not in accepted:
        allowed = ", ".join(sorted(accepted)) or "none"
        return "sandbox_policy", f"sandbox mode {mode!r} is not accepted for this dataset (accepted: {allowed})"
    if mode == "os":
        identity = sandbox.get("image_identity")
        if sandbox.get("verification_status") != VERIFIED_CONTAINER or not (
                isinstance(identity, str) and identity.strip()):
            return "sandbox_policy", ("sandbox mode 'os' needs verification_status docker_container and an "
                                      "image_identity")
    return None


def sandbox_flag(sandbox: Mapping[str, Any] | None, accepted: Collection[str]) -> str | None:
    """What a reviewer should know about a stored result's sandbox, else None: the intake rule
    (applied again, since a dataset's policy can change after intake) plus a run that did not
    get the sandbox it asked for."""
    refusal = sandbox_refusal(sandbox, accepted)
    if refusal is not None:
        return refusal[1]
    assert sandbox is not None
    requested = sandbox.get("requested_mode")
    if requested and requested != sandbox["effective_mode"]:
        return f"requested sandbox {requested!r} but ran in {sandbox['effective_mode']!r}"
    return None
