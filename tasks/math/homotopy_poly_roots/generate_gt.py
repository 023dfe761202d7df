"""Instance generator for math.homotopy_poly_roots.

Builds a square system f1(x, y) = f2(x, y) = 0 with integer coefficients (degrees d1, d2)
whose total-degree homotopy has all three kinds of path endpoints:

* ``n_at_infinity`` common points at infinity: the top-degree forms of f1 and f2 share the
  linear factors (x - c_k y), so exactly that many of the d1*d2 paths diverge;
* one finite double root p (integer point): both curves pass through p with parallel
  gradients (common tangent), so two paths end there with a singular Jacobian;
* the remaining d1*d2 - n_at_infinity - 2 finite roots are simple.

Everything is certified in exact integer arithmetic: the Sylvester resultant R(x) =
Res_y(f1, f2) is built by exact evaluation/interpolation; deg R = d1*d2 - n_at_infinity,
(x - p_x)^2 divides R exactly, R / (x - p_x)^2 is square-free and does not vanish at p_x.
The simple roots are the roots of R / (x - p_x)^2, lifted to y through the common root of
f1(x*, .) and f2(x*, .) and polished by Newton's method on the full system; the double
root is the exact integer point p.
"""

from __future__ import annotations

import argparse
import json
from fractions import Fraction
from math import comb
from pathlib import Path
from typing import Any

import numpy as np

TASK_DIR = Path(__file__).resolve().parent

DEFAULT_PARAMS: dict[str, Any] = {"d1": 3, "d2": 3, "n_at_infinity": 1, "seed": 0}

INPUT_SPEC: list[dict[str, Any]] = [
    {"name": "system.json", "type": "json",
     "description": "two polynomials in x, y as integer coefficient/exponent terms"},
]

OUTPUT_SPEC: list[dict[str, Any]] = [
    {"name": "roots.npy", "type": "data"},
    {"name": "multiplicities.npy", "type": "data"},
    {"name": "path_counts.npy", "type": "data"},
]

Poly = dict[tuple[int, int], int]  # (i, j) -> integer coefficient of x^i y^j


# ----------------------------------------------------------------------------- exact algebra
def _mul(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for (i1, j1), c1 in a.items():
        for (i2, j2), c2 in b.items():
            out[(i1 + i2, j1 + j2)] = out.get((i1 + i2, j1 + j2), 0) + c1 * c2
    return {k: v for k, v in out.items() if v != 0}


def _shift(poly_uv: Poly, px: int, py: int) -> Poly:
    """Rewrite a polynomial in u = x - px, v = y - py as a polynomial in x, y."""
    out: Poly = {}
    for (i, j), c in poly_uv.items():
        for a in range(i + 1):
            for b in range(j + 1):
                term = c * comb(i, a) * (-px) ** (i - a) * comb(j, b) * (-py) ** (j - b)
                out[(a, b)] = out.get((a, b), 0) + term
    return {k: v for k, v in out.items() if v != 0}


def _in_y(poly: Poly, x: int, deg: int) -> list[int]:
    """Coefficients (highest power first) of poly(x, y) as a polynomial in y."""
    coeffs = [0] * (deg + 1)
    for (i, j), c in poly.items():
        coeffs[deg - j] += c * x**i
    return coeffs


def _bareiss_det(mat: list[list[int]]) -> int:
    m = [row[:] for row in mat]
    n = len(m)
    sign, prev = 1, 1
    for k in range(n - 1):
        if m[k][k] == 0:
            swap = next((r for r in range(k + 1, n) if m[r][k] != 0), None)
            if swap is None:
                return 0
            m[k], m[swap] = m[swap], m[k]
            sign = -sign
        for i in range(k + 1, n):
            for j in range(k + 1, n):
                m[i][j] = (m[i][j] * m[k][k] - m[i][k] * m[k][j]) // prev
        prev = m[k][k]
    return sign * m[n - 1][n - 1]


def _sylvester(a: list[int], b: list[int]) -> list[list[int]]:
    da, db = len(a) - 1, len(b) - 1
    size = da + db
    rows = [[0] * i + a + [0] * (size - da - 1 - i) for i in range(db)]
    rows += [[0] * i + b + [0] * (size - db - 1 - i) for i in range(da)]
    return rows


def _interpolate(xs: list[int], ys: list[int]) -> list[Fraction]:
    """Exact Newton interpolation; returns coefficients lowest power first."""
    n = len(xs)
    dd = [Fraction(y) for y in ys]
    for level in range(1, n):
        for i in range(n - 1, level - 1, -1):
            dd[i] = (dd[i] - dd[i - 1]) / (xs[i] - xs[i - level])
    coeffs = [Fraction(0)] * n
    for i in range(n - 1, -1, -1):  # Horner on the Newton form
        coeffs = [Fraction(0)] + coeffs[:-1]
        for k in range(n - 1):
            coeffs[k] -= xs[i] * coeffs[k + 1]
        coeffs[0] += dd[i]
    return coeffs


def _trim(p: list[Fraction]) -> list[Fraction]:
    while len(p) > 1 and p[-1] == 0:
        p = p[:-1]
    return p


def _divmod(num: list[Fraction], den: list[Fraction]) -> tuple[list[Fraction], list[Fraction]]:
    num, den = _trim(num[:]), _trim(den)
    if len(num) < len(den):
        return [Fraction(0)], num
    quot = [Fraction(0)] * (len(num) - len(den) + 1)
    for k in range(len(quot) - 1, -1, -1):
        quot[k] = num[k + len(den) - 1] / den[-1]
        for j, dj in enumerate(den):
            num[k + j] -= quot[k] * dj
    return quot, _trim(num[: len(den) - 1] or [Fraction(0)])


def _gcd_degree(a: list[Fraction], b: list[Fraction]) -> int:
    a, b = _trim(a), _trim(b)
    while not (len(b) == 1 and b[0] == 0):
        a, b = b, _divmod(a, b)[1]
    return len(_trim(a)) - 1


def _peval(p: list[Fraction], x: Fraction | int) -> Fraction:
    acc = Fraction(0)
    for c in reversed(p):
        acc = acc * x + c
    return acc


def resultant_in_x(f1: Poly, f2: Poly, d1: int, d2: int) -> list[Fraction]:
    n_pts = d1 * d2 + 1
    xs = list(range(-(n_pts // 2), n_pts - n_pts // 2))
    vals = [_bareiss_det(_sylvester(_in_y(f1, x, d1), _in_y(f2, x, d2))) for x in xs]
    return _trim(_interpolate(xs, vals))


# ----------------------------------------------------------------------------- construction
def build_system(d1: int, d2: int, n_inf: int, rng: np.random.Generator
                 ) -> tuple[Poly, Poly, tuple[int, int]]:
    px, py = (0, 0)
    while (px, py) == (0, 0):
        px, py = (int(v) for v in rng.integers(-2, 3, size=2))
    c_vals = [int(c) for c in rng.choice([-3, -2, -1, 1, 2, 3], size=n_inf, replace=False)]
    common: Poly = {(0, 0): 1}
    for c in c_vals:
        common = _mul(common, {(1, 0): 1, (0, 1): -c})  # (u - c v)
    a_lin = (0, 0)
    while a_lin == (0, 0):
        a_lin = tuple(int(v) for v in rng.integers(-3, 4, size=2))
    k_par = int(rng.choice([-2, -1, 1, 2]))
    polys = []
    for deg, scale in ((d1, 1), (d2, k_par)):
        g: Poly = {}
        for i in range(deg - n_inf + 1):
            g[(i, deg - n_inf - i)] = int(rng.integers(-3, 4))
        top = _mul(common, g)
        mid: Poly = {}
        for total in range(2, deg):
            for i in range(total + 1):
                mid[(i, total - i)] = int(rng.integers(-3, 4))
        lin = {(1, 0): scale * a_lin[0], (0, 1): scale * a_lin[1]}
        f_uv: Poly = {}
        for part in (top, mid, lin):
            for key, val in part.items():
                f_uv[key] = f_uv.get(key, 0) + val
        polys.append(_shift({k: v for k, v in f_uv.items() if v != 0}, px, py))
    return polys[0], polys[1], (px, py)


def _eval(poly: Poly, x: complex, y: complex) -> tuple[complex, complex, complex]:
    val = dx = dy = 0j
    for (i, j), c in poly.items():
        val += c * x**i * y**j
        if i:
            dx += c * i * x ** (i - 1) * y**j
        if j:
            dy += c * j * x**i * y ** (j - 1)
    return val, dx, dy


def _newton(f1: Poly, f2: Poly, z: np.ndarray, iters: int = 30) -> np.ndarray:
    for _ in range(iters):
        v1, a, b = _eval(f1, z[0], z[1])
        v2, c, d = _eval(f2, z[0], z[1])
        step = np.linalg.solve(np.array([[a, b], [c, d]]), np.array([v1, v2]))
        z = z - step
        if np.linalg.norm(step) <= 1e-15 * max(1.0, float(np.linalg.norm(z))):
            break
    return z


def certify_and_solve(f1: Poly, f2: Poly, d1: int, d2: int, n_inf: int, p: tuple[int, int]
                      ) -> np.ndarray | None:
    """Return the simple roots (complex (m, 2)) or None if the instance is degenerate."""
    res = resultant_in_x(f1, f2, d1, d2)
    if len(res) - 1 != d1 * d2 - n_inf:
        return None
    lin2 = [Fraction(p[0] ** 2), Fraction(-2 * p[0]), Fraction(1)]  # (x - px)^2
    simple, rem = _divmod(res, lin2)
    if any(r != 0 for r in rem) or _peval(simple, p[0]) == 0:
        return None
    deriv = [k * c for k, c in enumerate(simple)][1:] or [Fraction(0)]
    if len(simple) > 1 and _gcd_degree(simple, deriv) != 0:
        return None
    n_simple = len(simple) - 1
    if n_simple < 1:
        return None
    xs = np.roots([float(c) for c in reversed(simple)])
    roots = []
    for x0 in xs:
        ys = np.roots([complex(c) for c in _in_y_float(f1, complex(x0), d1)])
        y0 = min(ys, key=lambda y: abs(_eval(f2, complex(x0), complex(y))[0]))
        roots.append(_newton(f1, f2, np.array([complex(x0), complex(y0)])))
    roots_arr = np.array(roots)
    for z in roots_arr:
        v1, a, b = _eval(f1, z[0], z[1])
        v2, c, d = _eval(f2, z[0], z[1])
        scale = max(1.0, float(np.abs(z).max())) ** max(d1, d2)
        if abs(v1) + abs(v2) > 1e-9 * scale or abs(a * d - b * c) < 1e-8 * scale:
            return None
    all_pts = np.vstack([roots_arr, np.array([[p[0], p[1]]], dtype=complex)])
    gaps = np.linalg.norm(all_pts[:, None, :] - all_pts[None, :, :], axis=2) + np.eye(len(all_pts))
    if gaps.min() < 2e-2 or np.abs(roots_arr).max() > 1e3:
        return None
    return roots_arr


def _in_y_float(poly: Poly, x: complex, deg: int) -> list[complex]:
    coeffs = [0j] * (deg + 1)
    for (i, j), c in poly.items():
        coeffs[deg - j] += c * x**i
    while len(coeffs) > 1 and coeffs[0] == 0:
        coeffs = coeffs[1:]
    return coeffs


# ----------------------------------------------------------------------------- rendering
def poly_to_text(poly: Poly) -> str:
    parts = []
    for (i, j), c in sorted(poly.items(), key=lambda kv: (-(kv[0][0] + kv[0][1]), -kv[0][0])):
        mono = "*".join(s for s in (f"x^{i}" if i > 1 else ("x" if i == 1 else ""),
                                    f"y^{j}" if j > 1 else ("y" if j == 1 else "")) if s)
        body = f"{abs(c)}*{mono}" if mono and abs(c) != 1 else (mono or str(abs(c)))
        parts.append(("- " if c < 0 else "+ ") + body)
    text = " ".join(parts)
    return text[2:] if text.startswith("+ ") else "-" + text[2:]


def _compact_json(obj: dict[str, Any]) -> str:
    """Indented JSON with every [coefficient, i, j] term kept on one line."""
    placeholder = {}
    for eq in obj["equations"]:
        for k, term in enumerate(eq["terms"]):
            key = f"@@{eq['name']}_{k}@@"
            placeholder[json.dumps(key)] = json.dumps(term)
            eq["terms"][k] = key
    text = json.dumps(obj, indent=2)
    for key, term in placeholder.items():
        text = text.replace(key, term)
    return text + "\n"


def render(template: str, values: dict[str, Any]) -> str:
    out = template
    for key, val in values.items():
        out = out.replace("{{ " + key + " }}", str(val)).replace("{{" + key + "}}", str(val))
    return out


def generate(output_dir: Path, params: dict[str, Any]) -> dict[str, Any]:
    output_dir = Path(output_dir)
    p = {**DEFAULT_PARAMS, **(params or {})}
    d1, d2, n_inf = int(p["d1"]), int(p["d2"]), int(p["n_at_infinity"])
    if not (1 <= n_inf <= min(d1, d2)) or d1 * d2 - n_inf - 2 < 1:
        raise ValueError(f"unsupported degrees/n_at_infinity: {d1}, {d2}, {n_inf}")
    rng = np.random.default_rng(int(p["seed"]))
    attempts = 0
    for _ in range(200):
        attempts += 1
        f1, f2, point = build_system(d1, d2, n_inf, rng)
        simple = certify_and_solve(f1, f2, d1, d2, n_inf, point)
        if simple is not None:
            break
    else:
        raise RuntimeError("no non-degenerate system found")

    roots = np.vstack([simple, np.array([[point[0], point[1]]], dtype=np.complex128)])
    order = np.lexsort((roots[:, 1].imag, roots[:, 1].real, roots[:, 0].imag, roots[:, 0].real))
    mult = np.ones(len(roots), dtype=np.int64)
    mult[-1] = 2
    roots, mult = roots[order].astype(np.complex128), mult[order]
    n_paths = d1 * d2
    counts = np.array([n_paths, n_paths - n_inf - 2, 2, n_inf], dtype=np.int64)

    data_dir, ref_dir = output_dir / "data", output_dir / "reference"
    data_dir.mkdir(parents=True, exist_ok=True)
    ref_dir.mkdir(parents=True, exist_ok=True)
    system = {
        "description": "Polynomial system f1(x, y) = 0, f2(x, y) = 0 over the complex numbers. "
                       "Each term is [coefficient, power of x, power of y].",
        "variables": ["x", "y"],
        "degrees": [d1, d2],
        "equations": [
            {"name": "f1", "text": poly_to_text(f1),
             "terms": [[c, i, j] for (i, j), c in sorted(f1.items())]},
            {"name": "f2", "text": poly_to_text(f2),
             "terms": [[c, i, j] for (i, j), c in sorted(f2.items())]},
        ],
    }
    (data_dir / "system.json").write_text(_compact_json(system), encoding="utf-8")
    np.save(ref_dir / "roots_ref.npy", roots)
    np.save(ref_dir / "multiplicities_ref.npy", mult)
    np.save(ref_dir / "path_counts_ref.npy", counts)
    (ref_dir / "construction_ref.json").write_text(json.dumps({
        "double_root": list(point), "attempts": attempts,
        "n_simple_roots": int(len(simple)), "n_at_infinity": n_inf}, indent=2) + "\n",
        encoding="utf-8")

    values = {"d1": d1, "d2": d2, "n_paths": n_paths,
              "f1": poly_to_text(f1), "f2": poly_to_text(f2)}
    for level in ("b1", "b2", "b3", "b4"):
        template = (TASK_DIR / f"prompt_{level}.md").read_text(encoding="utf-8")
        (output_dir / f"prompt_{level}.md").write_text(render(template, values), encoding="utf-8")
    meta = {
        "params_used": {k: p[k] for k in sorted(p)},
        "input_files": ["data/system.json"],
        "reference_files": sorted(f.name for f in ref_dir.iterdir()),
    }
    (output_dir / "instance_meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n",
                                                   encoding="utf-8")
    return meta


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", required=True, type=Path)
    parser.add_argument("--params", default="{}", help="JSON object of parameters")
    args = parser.parse_args()
    generate(args.output_dir, json.loads(args.params))


if __name__ == "__main__":
    main()
