"""Loaders of human reference data (and released response data sets) into the tidy schema."""
