"""Publishing a run: CSV/Parquet/R exports, the HTML report and its per-paper sections."""
