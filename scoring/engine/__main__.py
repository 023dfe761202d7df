import sys

sys.dont_write_bytecode = True

from .cli import main  # noqa: E402  (bytecode flag must be set before the engine imports)

sys.exit(main())
