"""Shared fixtures and helpers for the whole suite."""
