"""Run one command in the bwrap backend as whoever runs this script (the tests start it as an
ordinary uid through tests.support.as_unprivileged) and print the mode and the result as JSON.

    python unprivileged_runner.py SPEC_JSON

SPEC: argv, workdir, limits (Limits fields), and optionally: other_processes (this many sleeping
processes of the same uid during the run), marker (list live processes whose command line holds it
right after the run), no_prlimit (a host without util-linux's prlimit), deny_userns (as under a
container's seccomp profile), exec (instead of a run: exec this argv, with deny_userns applied).
"""

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

from scoring.sandbox import Limits, python_runtime_env, python_runtime_mounts
from scoring.sandbox.bwrap import BwrapBackend
from tests.support import deny_user_namespaces, host_pids_with

spec = json.loads(sys.argv[1])
if spec.get("deny_userns"):
    deny_user_namespaces()
if spec.get("exec"):
    os.execv(spec["exec"][0], spec["exec"])
warnings: list[str] = []
handler = logging.Handler()
handler.emit = lambda record: warnings.append(record.getMessage())  # type: ignore[method-assign]
logging.getLogger("scoring.sandbox.bwrap").addHandler(handler)

backend = BwrapBackend(prlimit="" if spec.get("no_prlimit") else None)
mode = backend.mode()
out = {"uid": os.getuid(), "mode": mode.label, "problem": mode.problem, "warnings": warnings}
if "argv" in spec:
    others = [subprocess.Popen(["/bin/sleep", "120"]) for _ in range(spec.get("other_processes", 0))]
    try:
        limits = Limits(**{**spec["limits"], "env": python_runtime_env()})
        try:
            result = backend.run(spec["argv"], Path(spec["workdir"]), python_runtime_mounts(), limits)
        except Exception as exc:
            out["error"] = f"{type(exc).__name__}: {exc}"
        else:
            out.update(returncode=result.returncode, stdout=result.stdout_text, stderr=result.stderr_text[-2000:],
                       timed_out=result.timed_out, limit=result.limit, reason=result.reason, ok=result.ok)
        if spec.get("marker"):
            out["survivors"] = host_pids_with(spec["marker"])
    finally:
        for proc in others:
            proc.kill()
            proc.wait()
print(json.dumps(out))
