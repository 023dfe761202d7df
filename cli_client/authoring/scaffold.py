"""`asibench task create`: a new task directory from a template that already validates.

The template is a real (if trivial) task — eigenvalues of a seeded random symmetric matrix —
so a fresh scaffold generates deterministically and passes the GT self-check; authors then
replace the computation, the prompts and the scoring contract.
"""

from __future__ import annotations

import re
from pathlib import Path

from cli_client.errors import CliError
from scoring.engine.static_checks import STANDARD_DOMAINS

SEGMENT_RE = re.compile(r"^[a-z][a-z0-9_]*$")

TASK_META = """\
id: {task_id}
name: "Eigenvalues of a symmetric matrix (template — rename)"
version: "0.1"
status: in_development
domain: {domain}
subdomain: "template"
source:
  paper: null
  repo: null
difficulty:
  estimated_lines: 10-30
  estimated_time_minutes: 5-15
  requires_gpu: false
  requires_network: false
tags: [template]
runtime:
  python: ">=3.11"
  packages: ["numpy>=1.26"]
prompts: {{b1: prompt_b1.md, b2: prompt_b2.md, b3: prompt_b3.md, b4: prompt_b4.md}}
input:
  files:
    - name: matrix.npy
      type: data
      description: "real symmetric n x n matrix (float64)"
output:
  files:
    - name: solve.py
      type: code
      description: "the script that computes the eigenvalues"
    - name: eigenvalues.npy
      type: data
      description: "all n eigenvalues in ascending order (float64)"
"""

TASK_EVAL = """\
task_id: {task_id}
output:
  files:
    - {{name: eigenvalues.npy, shape: '{{n}}', dtype: float64}}
evaluation:
  gates:
    - scorer: file_match
      severity: hard
      config:
        checks:
          - {{file: solve.py}}
          - {{file: eigenvalues.npy, shape: '{{n}}', dtype: float64}}
          - {{check: no_nan_inf}}
  scoring:
    - scorer: numerical
      weight: 100
      config:
        metric: relative_l2
        pred_file: eigenvalues.npy
        ref_file: eigenvalues_ref.npy
        scoring: linear_interpolation
        full_score_threshold: 0.000001
        zero_score_threshold: 0.1
generation:
  script: generate_gt.py
  mode: infinite
  seed: true
  parameters:
    n: {{type: int, range: [4, 12], default: 6}}
  timeout_seconds: 60
"""

GENERATE_GT = '''\
"""Instance generator for {task_id} (template: eigenvalues of a random symmetric matrix).

Writes data/ (agent inputs), reference/ (answers, never shown to the agent), the rendered
prompt_b1..b4.md and instance_meta.json. Every random number comes from `params["seed"]`,
so the same parameters give byte-identical files.

Usage: python generate_gt.py --output-dir DIR --params '{{"n": 6, "seed": 0}}'
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

TASK_DIR = Path(__file__).resolve().parent

DEFAULT_PARAMS: dict[str, Any] = {{"n": 6, "seed": 0}}

INPUT_SPEC: list[dict[str, Any]] = [
    {{"name": "matrix.npy", "type": "data", "description": "real symmetric n x n matrix"}},
]

OUTPUT_SPEC: list[dict[str, Any]] = [
    {{"name": "eigenvalues.npy", "type": "data", "description": "eigenvalues, ascending"}},
]


def render(template: str, params: dict[str, Any]) -> str:
    """Replace {{{{ name }}}} placeholders with parameter values."""
    return re.sub(r"{{{{\\s*(\\w+)\\s*}}}}", lambda m: str(params.get(m.group(1), m.group(0))), template)


def generate(output_dir: Path, params: dict[str, Any]) -> dict[str, Any]:
    p = {{**DEFAULT_PARAMS, **(params or {{}})}}
    p["n"], p["seed"] = int(p["n"]), int(p["seed"])
    rng = np.random.default_rng(p["seed"])
    a = rng.standard_normal((p["n"], p["n"]))
    matrix = (a + a.T) / 2.0
    eigenvalues = np.linalg.eigvalsh(matrix)

    output_dir = Path(output_dir)
    (output_dir / "data").mkdir(parents=True, exist_ok=True)
    (output_dir / "reference").mkdir(parents=True, exist_ok=True)
    np.save(output_dir / "data" / "matrix.npy", matrix)
    np.save(output_dir / "reference" / "eigenvalues_ref.npy", eigenvalues)
    for level in ("b1", "b2", "b3", "b4"):
        text = (TASK_DIR / f"prompt_{{level}}.md").read_text(encoding="utf-8")
        (output_dir / f"prompt_{{level}}.md").write_text(render(text, p), encoding="utf-8")
    meta = {{
        "params_used": p,
        "input_files": ["data/matrix.npy"],
        "reference_files": ["eigenvalues_ref.npy"],
    }}
    (output_dir / "instance_meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\\n",
                                                   encoding="utf-8")
    return meta


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", required=True, type=Path)
    parser.add_argument("--params", default="{{}}", help="JSON object of parameters")
    args = parser.parse_args()
    generate(args.output_dir, json.loads(args.params))


if __name__ == "__main__":
    main()
'''

PROMPT_B1 = """\
# Eigenvalues of a symmetric matrix

`data/matrix.npy` holds a real symmetric {{ n }} x {{ n }} matrix A (float64).

Background: a real symmetric matrix has n real eigenvalues λ with A v = λ v; they are the
roots of det(A − λI) = 0 and can be computed stably by reducing A to tridiagonal form and
applying the QR algorithm (`numpy.linalg.eigvalsh` does exactly this).

Recipe:
1. Load A with `numpy.load("data/matrix.npy")`.
2. Compute the eigenvalues with `numpy.linalg.eigvalsh(A)` (returned in ascending order).
3. Save them as a float64 array of length {{ n }} to `eigenvalues.npy` in the workspace root.

Write the script you used as `solve.py` in the workspace root.
"""

PROMPT_B2 = """\
# Eigenvalues of a symmetric matrix

`data/matrix.npy` holds a real symmetric {{ n }} x {{ n }} matrix (float64). Compute all of its
eigenvalues with a symmetric eigensolver (tridiagonal reduction + QR) and save them in
ascending order as a float64 array of length {{ n }} to `eigenvalues.npy` in the workspace root.
Also save your script as `solve.py`.
"""

PROMPT_B3 = """\
# Eigenvalues

Input: `data/matrix.npy`, a real symmetric {{ n }} x {{ n }} matrix.

Produce, in the workspace root:
- `eigenvalues.npy`: all eigenvalues in ascending order (float64, length {{ n }});
- `solve.py`: the script that computes them.
"""

PROMPT_B4 = """\
# Eigenvalues

Input: `data/matrix.npy`, a real symmetric {{ n }} x {{ n }} matrix. Symmetric matrices appear
throughout physics as Hamiltonians, inertia tensors and covariance matrices; their spectra
are real and their eigenvectors can be chosen orthonormal.

Produce, in the workspace root:
- `eigenvalues.npy`: all eigenvalues in ascending order (float64, length {{ n }});
- `solve.py`: the script that computes them.
"""

REFERENCE_SPECS = """\
# Reference notes ({task_id})

Private; read by reviewers and the error analyser, never shown to agents.

- The reference is `numpy.linalg.eigvalsh` of the input matrix, ascending.
- Common mistakes: unsorted eigenvalues (from `numpy.linalg.eig`), complex dtype, float32.
"""

TASK_SUBMISSION = """\
# Portal-only author evidence (never exported). Fill it in after testing the task locally
# with real agents in the os sandbox; `asibench task submit` checks local_testing_done,
# and that every local_test_results entry has `sandbox: os` and an `agent`, at least one
# of them a multi-turn harness (claude_code_cli, codex_cli, openhands, ...).
schema_version: 1
scientific_goal: "TODO: what scientific question the task answers"
core_method: "TODO: the method an agent must implement"
why_difficult: "TODO: why frontier agents struggle at b3/b4"
difficulty_assessment: "TODO"
feasibility_checklist:
  version: 2
  items:
    - {id: deterministic_ground_truth, status: unsure}
    - {id: runtime_budget, status: unsure}
    - {id: offline_runtime, status: unsure}
    - {id: self_contained_inputs, status: unsure}
    - {id: machine_checkable_scoring, status: unsure}
local_testing_done: false
local_test_results:
  - provider: "TODO"
    family: "TODO"
    version: base
    agent: codex_cli
    sandbox: os
    results:
      - {prompt_level: b1, score: null}
      - {prompt_level: b2, score: null}
      - {prompt_level: b3, score: null}
      - {prompt_level: b4, score: null}
    runtime_evidence: {generation_seconds: null, agent_execution_seconds: null,
                       scoring_seconds: null, environment: "TODO"}
    scorer_replay: {first_score: null, second_score: null, tolerance: 0}
"""

SOLVE = '''\
"""Reference solution for {task_id}: what a perfect agent would run in its workspace.

Usage: python solution/solve.py --workspace W
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workspace", required=True, type=Path)
    workspace = parser.parse_args().workspace
    matrix = np.load(workspace / "data" / "matrix.npy")
    np.save(workspace / "eigenvalues.npy", np.linalg.eigvalsh(matrix).astype(np.float64))
    shutil.copyfile(Path(__file__), workspace / "solve.py")


if __name__ == "__main__":
    main()
'''


def template_files(domain: str, name: str) -> dict[str, str]:
    task_id = f"{domain}.{name}"
    fill = {"task_id": task_id, "domain": domain}
    return {
        "task_meta.yaml": TASK_META.format(**fill),
        "task_eval.yaml": TASK_EVAL.format(**fill),
        "generate_gt.py": GENERATE_GT.format(**fill),
        "prompt_b1.md": PROMPT_B1,
        "prompt_b2.md": PROMPT_B2,
        "prompt_b3.md": PROMPT_B3,
        "prompt_b4.md": PROMPT_B4,
        "reference_specs.md": REFERENCE_SPECS.format(**fill),
        "task_submission.yaml": TASK_SUBMISSION,
        "solution/solve.py": SOLVE.format(**fill),
    }


def create_task(tasks_dir: Path, domain: str, name: str) -> tuple[Path, list[str]]:
    """Write the scaffold to `<tasks_dir>/<domain>/<name>/`; returns it and any warnings."""
    for label, value in (("domain", domain), ("name", name)):
        if not SEGMENT_RE.match(value):
            raise CliError(f"--{label} {value!r} must be lowercase letters, digits and underscores, "
                           "starting with a letter")
    warnings = []
    if domain not in STANDARD_DOMAINS:
        warnings.append(f"domain {domain!r} is not a standard domain ({', '.join(STANDARD_DOMAINS)})")
    target = tasks_dir / domain / name
    if target.exists():
        raise CliError(f"{target} already exists; choose another name or remove it first")
    files = template_files(domain, name)
    target.mkdir(parents=True)
    for rel, text in files.items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return target, warnings
