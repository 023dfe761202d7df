"""Asking judge models, outside the scoring sandbox: the endpoint settings, the client, agent judges.

The engine (inside the sandbox) turns judge scorers into requests (`scoring.engine.judge_calls`);
this package answers them. Pure Python, no Django: the Portal's worker (`scoring.judge_services`)
and the CLI's local scoring both use it.
"""
