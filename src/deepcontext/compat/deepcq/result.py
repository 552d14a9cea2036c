"""``deepcq.result``: deepcq's result types (deepcontext's carry a few more fields, with defaults)."""

from deepcontext.query.result import OptimizationMetrics, QueryResult, ScoreExplanation

__all__ = ["OptimizationMetrics", "QueryResult", "ScoreExplanation"]
