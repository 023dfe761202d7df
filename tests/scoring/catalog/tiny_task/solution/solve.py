import argparse
import json
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--workspace", required=True)
ws = Path(parser.parse_args().workspace)
numbers = json.loads((ws / "data" / "numbers.json").read_text())
(ws / "total.json").write_text(json.dumps({"total": sum(numbers)}))
