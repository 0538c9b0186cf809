"""Data collection: models, studies, human reference loaders and the run store."""
