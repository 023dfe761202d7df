ENGINE_VERSION = "1.0.0"
# The official framework release whose scoring semantics this engine reproduces.
COMPAT_FRAMEWORK = "asibench 0.2.0"
