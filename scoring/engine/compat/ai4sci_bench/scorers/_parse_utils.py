from scoring.engine.judge_parse import parse_judge_score as parse_judge_json

__all__ = ["parse_judge_json"]
