"""The one home of the collection options' defaults (issue 37: --batch-size was written 5 times, --n 4):
the command-line options (cli/options.py) and the Python API (pipeline.run_study, the Ray engine,
replicate) read them from here."""

BATCH_SIZE = 64  # --batch-size: trials per batch, each saved before the next starts
# --n: valid answers per trial with --method sampled; Aher et al. (2023) and Tjuatja et al. (2024)
# sample 50 valid answers per prompt
SAMPLES = 50
MAX_N = 100_000  # the largest --n; more is a typo, not a design
