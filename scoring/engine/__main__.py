import os
import sys

sys.dont_write_bytecode = True
# Task code (run in children, see isolation.py) can write the working directory; `-m` put it first
# on sys.path, where a module planted there would shadow what this process imports later.
if sys.path and os.path.realpath(sys.path[0] or ".") == os.path.realpath("."):
    del sys.path[0]

from .cli import main  # noqa: E402  (bytecode flag must be set before the engine imports)
from .isolation import engine_process_seal  # noqa: E402

engine_process_seal()
sys.exit(main())
