"""Scoring's Prometheus metrics: how long each result took, and what the judges cost. Recorded where the
work happens (pipeline, judge services); served by each worker's metrics server (config/metrics.py) when
ASIBENCH_METRICS_LISTEN is set, otherwise only counted in the process."""

from prometheus_client import Counter, Histogram

SCORING_RESULT_SECONDS = Histogram(
    "asibench_scoring_result_seconds", "Wall time of one scored result (its share of the instance's sandbox run)",
    ["outcome"], buckets=(0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900, 1800, 3600),
)
JUDGE_CALLS = Counter("asibench_judge_calls", "Judge calls finished, by kind (chat, agent) and status "
                      "(answered; unanswered: waits for another round or failed)", ["kind", "status"])
JUDGE_TOKENS = Counter("asibench_judge_tokens", "Tokens judge models reported, by direction (input, output)",
                       ["direction"])


def result_scored(*, outcome: str, seconds: float) -> None:
    SCORING_RESULT_SECONDS.labels(outcome=outcome).observe(seconds)


def judge_answered(*, kind: str, tokens_in: int, tokens_out: int) -> None:
    JUDGE_CALLS.labels(kind=kind, status="answered").inc()
    JUDGE_TOKENS.labels(direction="input").inc(max(tokens_in, 0))
    JUDGE_TOKENS.labels(direction="output").inc(max(tokens_out, 0))


def judge_unanswered(*, kind: str) -> None:
    JUDGE_CALLS.labels(kind=kind, status="unanswered").inc()
