"""Reference agent solution: projective total-degree homotopy with the gamma trick.

Tracks the d1*d2 paths of H(z, t) = (1 - t) * gamma * G(z) + t * F(z) in homogeneous
coordinates z = (z0, z1, z2) on a random affine patch a . z = 1, where G is the start
system z1^d1 - z0^d1, z2^d2 - z0^d2. Predictor: classical RK4 on the Davidenko ODE;
corrector: Newton. Endpoints with z0 -> 0 are solutions at infinity (diverging paths);
endpoints where Newton at t = 1 does not converge quadratically are singular and are
clustered; the centroid of a cluster of m paths is its root (the O(s^(1/m)) Puiseux
terms cancel in the average) and m its multiplicity.

Usage: python solution/solve.py --workspace W
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

T_END_GAP = 1e-8  # paths are tracked to t = 1 - T_END_GAP before the endgame


class HomogeneousSystem:
    """F_k(z0, z1, z2) = z0^d_k f_k(z1/z0, z2/z0), evaluated with its gradient in one pass."""

    def __init__(self, terms: list[list[list[int]]], degrees: list[int]) -> None:
        self.deg = degrees
        self.exps, self.mults = [], []
        for eq, d in zip(terms, degrees, strict=True):
            ex = np.array([[d - t[1] - t[2], t[1], t[2]] for t in eq])
            coef = np.array([t[0] for t in eq], dtype=complex)
            # row 0: the monomials; row 1 + v: their derivatives w.r.t. z_v
            stacked = [ex] + [np.maximum(ex - np.eye(3, dtype=int)[v], 0) for v in range(3)]
            self.exps.append(np.stack(stacked))  # (4, n_terms, 3)
            self.mults.append(np.stack([coef] + [coef * ex[:, v] for v in range(3)]))  # (4, n_terms)

    def eval(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Values (2,) and Jacobian (2, 3) of the homogenised target system."""
        out = np.array([np.sum(m * np.prod(z**e, axis=2), axis=1)
                        for e, m in zip(self.exps, self.mults, strict=True)])
        return out[:, 0], out[:, 1:]


class Homotopy:
    def __init__(self, target: HomogeneousSystem, rng: np.random.Generator) -> None:
        self.f = target
        self.d1, self.d2 = target.deg
        self.gamma = np.exp(2j * np.pi * rng.random())
        self.patch = rng.normal(size=3) + 1j * rng.normal(size=3)

    def start(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        z0, z1, z2 = z
        d1, d2 = self.d1, self.d2
        g = np.array([z1**d1 - z0**d1, z2**d2 - z0**d2])
        jg = np.array([[-d1 * z0 ** (d1 - 1), d1 * z1 ** (d1 - 1), 0],
                       [-d2 * z0 ** (d2 - 1), 0, d2 * z2 ** (d2 - 1)]])
        return g, jg

    def residual_and_jacobians(self, z: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        f, jf = self.f.eval(z)
        g, jg = self.start(z)
        h = np.concatenate([(1 - t) * self.gamma * g + t * f, [self.patch @ z - 1]])
        hz = np.vstack([(1 - t) * self.gamma * jg + t * jf, self.patch])
        ht = np.concatenate([f - self.gamma * g, [0]])
        return h, hz, ht

    def tangent(self, z: np.ndarray, t: float) -> np.ndarray:
        _, hz, ht = self.residual_and_jacobians(z, t)
        return -np.linalg.solve(hz, ht)

    def correct(self, z: np.ndarray, t: float, iters: int = 5, tol: float = 1e-10
                ) -> tuple[np.ndarray, bool]:
        """Newton on H(., t). Succeeds on convergence; fails on a large first update
        (the predictor left the path's basin) or on a corrector that does not contract."""
        scale = max(float(np.linalg.norm(z)), 1.0)
        prev = np.inf
        for k in range(iters):
            h, hz, _ = self.residual_and_jacobians(z, t)
            dz = np.linalg.solve(hz, -h)
            z = z + dz
            step = float(np.linalg.norm(dz))
            if k == 0 and step > 1e-3 * scale:
                return z, False  # path-jumping guard
            if step <= tol * scale:
                return z, True
            if k > 0 and step > 0.3 * prev:
                # no contraction: only acceptable at the rounding floor of an
                # ill-conditioned (near-singular) point
                return z, step <= 1e-7 * scale
            prev = step
        return z, False

    def track(self, z: np.ndarray, t_stop: float) -> tuple[np.ndarray, float]:
        """Track from t = 0 towards t_stop; returns the last point and the t reached."""
        t, h, streak = 0.0, 0.01, 0
        while t < t_stop:
            h = min(h, t_stop - t)
            k1 = self.tangent(z, t)
            k2 = self.tangent(z + 0.5 * h * k1, t + 0.5 * h)
            k3 = self.tangent(z + 0.5 * h * k2, t + 0.5 * h)
            k4 = self.tangent(z + h * k3, t + h)
            z_new, ok = self.correct(z + h * (k1 + 2 * k2 + 2 * k3 + k4) / 6.0, t + h)
            if ok:
                z, t, streak = z_new, t + h, streak + 1
                if streak >= 3:
                    h, streak = min(2.0 * h, 0.02), 0
            else:
                h, streak = 0.5 * h, 0
                if h < 1e-15:
                    break
            # near t = 1 never step further than a fraction of the remaining gap
            h = min(h, max(0.5 * (1.0 - t), 1e-15))
        return z, t


def newton_at_one(hom: Homotopy, z: np.ndarray) -> tuple[np.ndarray, bool]:
    """Newton on F (plus the patch) at t = 1. True if it converged to a regular point.

    From an endpoint at 1 - t = 1e-8 Newton reaches a simple root quadratically, in a
    handful of iterations; at a multiple root it only converges linearly (the error
    halves per step for a double root) and stalls near sqrt(eps), so the iteration count
    separates the two cases more reliably than a condition-number threshold.
    """
    z_start = z
    it = 0
    for it in range(1, 31):  # noqa: B007 - the iteration count is the diagnostic
        h, hz, _ = hom.residual_and_jacobians(z, 1.0)
        dz = np.linalg.solve(hz, -h)
        z = z + dz
        if np.linalg.norm(dz) < 1e-12 * float(np.linalg.norm(z)):
            break
    else:
        return z, False
    hz = hom.residual_and_jacobians(z, 1.0)[1]
    close = float(np.linalg.norm(z - z_start)) < 1e-3 * float(np.linalg.norm(z))
    return z, bool(it <= 6 and close and np.linalg.cond(hz) < 1e8)


def affine_derivatives(terms: list[list[int]], x: complex, y: complex
                       ) -> tuple[complex, np.ndarray, np.ndarray]:
    """Value, gradient (2,) and Hessian (2, 2) of one polynomial at (x, y)."""
    val, grad, hess = 0j, np.zeros(2, complex), np.zeros((2, 2), complex)
    for c, i, j in terms:
        val += c * x**i * y**j
        if i:
            grad[0] += c * i * x ** (i - 1) * y**j
        if j:
            grad[1] += c * j * x**i * y ** (j - 1)
        if i > 1:
            hess[0, 0] += c * i * (i - 1) * x ** (i - 2) * y**j
        if j > 1:
            hess[1, 1] += c * j * (j - 1) * x**i * y ** (j - 2)
        if i and j:
            hess[0, 1] += c * i * j * x ** (i - 1) * y ** (j - 1)
    hess[1, 0] = hess[0, 1]
    return val, grad, hess


def affine_newton(terms: list[list[list[int]]], point: np.ndarray) -> np.ndarray:
    """Plain Newton on (f1, f2) in affine coordinates; returns the input if it diverges."""
    z = np.array(point, dtype=complex)
    for _ in range(50):
        vals, jac = zip(*(affine_derivatives(t, z[0], z[1])[:2] for t in terms), strict=True)
        dz = np.linalg.solve(np.array(jac), -np.array(vals))
        z = z + dz
        if np.abs(dz).max() < 1e-15 * max(1.0, float(np.abs(z).max())):
            break
    scale = max(1.0, float(np.abs(point).max()))
    return z if np.abs(z - point).max() < 1e-3 * scale else np.asarray(point)


def deflate_refine(terms: list[list[list[int]]], point: np.ndarray, rng: np.random.Generator
                   ) -> np.ndarray:
    """Refine a multiple root by one step of deflation (Leykin-Verschelde-Zhao).

    Unknowns (x, y, l1, l2); equations f1 = f2 = 0, J(x, y) l = 0, b . l = 1. For a root
    whose Jacobian has a one-dimensional kernel the augmented root is regular, so
    Gauss-Newton converges quadratically to full precision.
    """
    x, y = point
    jac = np.array([affine_derivatives(t, x, y)[1] for t in terms])
    lam = np.linalg.svd(jac)[2].conj()[-1]
    b = rng.normal(size=2) + 1j * rng.normal(size=2)
    lam = lam / (b @ lam)
    u = np.array([x, y, lam[0], lam[1]], dtype=complex)
    for _ in range(40):
        res = np.zeros(5, complex)
        big = np.zeros((5, 4), complex)
        for k, t in enumerate(terms):
            val, grad, hess = affine_derivatives(t, u[0], u[1])
            res[k], res[2 + k] = val, grad @ u[2:]
            big[k, :2] = grad
            big[2 + k, :2], big[2 + k, 2:] = hess @ u[2:], grad
        res[4], big[4, 2:] = b @ u[2:] - 1, b
        step = np.linalg.lstsq(big, -res, rcond=None)[0]
        u = u + step
        if np.linalg.norm(step[:2]) < 1e-15 * max(1.0, float(np.abs(u[:2]).max())):
            break
    return u[:2]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", required=True, type=Path)
    ws = ap.parse_args().workspace
    system = json.loads((ws / "data" / "system.json").read_text(encoding="utf-8"))
    degrees = [int(d) for d in system["degrees"]]
    terms = [eq["terms"] for eq in system["equations"]]
    hom = Homotopy(HomogeneousSystem(terms, degrees), np.random.default_rng(20240531))
    d1, d2 = degrees

    points, flags, n_inf = [], [], 0
    for a in range(d1):
        for b in range(d2):
            z = np.array([1.0, np.exp(2j * np.pi * a / d1), np.exp(2j * np.pi * b / d2)])
            z = z / (hom.patch @ z)
            z, t_reached = hom.track(z, 1.0 - T_END_GAP)
            if t_reached < 1.0 - 1e-4:
                raise SystemExit(f"path tracking failed at t = {t_reached}")
            # a path that stalls in (1 - 1e-4, 1 - 1e-8) is running into a singular
            # endpoint; the endgame below (clustering + deflation) handles it
            z_pol, nonsingular = newton_at_one(hom, z)
            if nonsingular:
                z = z_pol
            if abs(z[0]) < 1e-8 * float(np.linalg.norm(z)):
                n_inf += 1
                continue
            points.append(z[1:] / z[0])
            flags.append(nonsingular)

    # Cluster the finite endpoints. Two paths never share a simple root, so any two
    # endpoints that coincide belong to a multiple root: polished points are linked when
    # they agree to 1e-6, a non-polished (singular-looking) endpoint when it lies within
    # 1e-2 of another endpoint (branches of a double root are still ~sqrt(1e-8) apart).
    n = len(points)
    label = list(range(n))

    def find(i: int) -> int:
        while label[i] != i:
            label[i] = label[label[i]]
            i = label[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            scale = max(1.0, float(np.abs(points[i]).max()))
            dist = float(np.abs(points[i] - points[j]).max()) / scale
            if dist < 1e-6 or (dist < 1e-2 and not (flags[i] and flags[j])):
                label[find(i)] = find(j)
    clusters: dict[int, list[int]] = {}
    for i in range(n):
        clusters.setdefault(find(i), []).append(i)

    roots, mult = [], []
    for members in clusters.values():
        if len(members) == 1:  # a lone endpoint is a simple root: Newton converges there
            roots.append(affine_newton(terms, points[members[0]]))
            mult.append(1)
            continue
        # centroid cancels the leading Puiseux terms; deflation then restores full accuracy
        centroid = np.mean([points[i] for i in members], axis=0)
        refined = deflate_refine(terms, centroid, np.random.default_rng(11))
        scale = max(1.0, float(np.abs(centroid).max()))
        ok = np.abs(refined - centroid).max() < 1e-4 * scale  # stayed with its cluster
        roots.append(refined if ok else centroid)
        mult.append(len(members))
    n_sing = int(sum(m for m in mult if m > 1))
    n_reg = int(sum(1 for m in mult if m == 1))
    np.save(ws / "roots.npy", np.array(roots, dtype=np.complex128).reshape(-1, 2))
    np.save(ws / "multiplicities.npy", np.array(mult, dtype=np.int64))
    np.save(ws / "path_counts.npy", np.array([d1 * d2, n_reg, n_sing, n_inf], dtype=np.int64))


if __name__ == "__main__":
    main()
