import logging

__all__ = ["get_logger"]


def get_logger(name: str) -> logging.Logger:
    return logging.getLogger(name if name.startswith("ai4sci_bench") else f"ai4sci_bench.{name}")
