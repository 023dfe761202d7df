"""Roots of the polynomial in data/coefficients.json by homotopy continuation from z^n - 1.

Usage: python solver.py [--tol 1e-10]. The previous version ignored conjugate pairs; see the notes below.
"""
import json
import numpy as np

coefficients = np.array(json.load(open("data/coefficients.json")))
n = len(coefficients) - 1
starts = np.exp(2j * np.pi * np.arange(n) / n)
g = np.zeros(n + 1); g[0], g[-1] = 1.0, -1.0
roots = []
for z in starts:
    for s in np.linspace(0, 1, 400)[1:]:
        h = (1 - s) * g + s * coefficients
        for _ in range(8):
            z = z - np.polyval(h, z) / np.polyval(np.polyder(h), z)
    roots.append(z)
roots = sorted(roots, key=lambda z: (round(z.real, 9), z.imag))
json.dump([[round(z.real, 6), round(z.imag, 6)] for z in roots], open("roots.json", "w"))
print(json.dumps([[round(z.real, 6), round(z.imag, 6)] for z in roots]))
