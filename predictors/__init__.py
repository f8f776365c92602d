"""Reclaim predictors."""
