"""Bundled stimuli and human reference data, each with its source, license and citation."""

from .registry import DATASETS, Dataset, checksum, data_path, get

__all__ = ["DATASETS", "Dataset", "checksum", "data_path", "get"]
