"""The replication corpora of `simsubjects bench` (Many Labs 1 and 2, HumanStudy-Bench): raw files and readers."""
