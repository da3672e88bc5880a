"""Evaluation: datasets, official metrics, hardness, runner, reports."""
