"""Stand-ins for the parts of ``ai4sci_bench`` that task custom scorers import.

This directory is put on ``sys.path`` only while a task's custom scorer loads or runs
(see ``scoring.engine.custom``); it is never importable otherwise.
"""
