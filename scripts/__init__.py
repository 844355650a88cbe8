"""Maintenance scripts: documentation generated from the code and from the real-stream corpus."""
