"""Fit a damped oscillation to data/measurements.csv and write results.json."""
import json
import numpy as np
from scipy.optimize import curve_fit

t, theta = np.loadtxt("data/measurements.csv", delimiter=",", skiprows=1, unpack=True)


def model(t, a, gamma, omega0):
    return a * np.exp(-gamma * t) * np.cos(omega0 * t)


(a, gamma, omega0), _ = curve_fit(model, t, theta, p0=(0.25, 0.05, 3.0))
period = 2 * np.pi / omega0
q = omega0 / (2 * gamma)
json.dump({"gamma": round(gamma, 5), "omega0": round(omega0, 4), "period": round(period, 4),
           "q_factor": round(q, 3)}, open("results.json", "w"))
print(f"gamma={gamma:.6f} omega0={omega0:.6f} period={period:.5f} q={q:.4f}")
print("wrote results.json")
