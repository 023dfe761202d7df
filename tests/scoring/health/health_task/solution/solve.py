import argparse
import json
from pathlib import Path

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("--workspace", required=True)
ws = Path(parser.parse_args().workspace)
numbers = json.loads((ws / "data" / "numbers.json").read_text())
np.save(ws / "total.npy", np.array([float(sum(numbers))]))
