"""A finished run's manifest is its collection record: a resume keeps it and appends an event.

Re-running `collect` on a finished run folder answers every trial from the cache. Writing that
second pass's manifest over the first lost the original record (collection time 168 s became
0.023 s, prompt tokens became 0, and the report repeated the wrong figures). The first complete
manifest stays as it was; each later pass is appended to `events` with its own time, usage and engine.
A first pass that left failed or short trials is not a finished record: the pass that retries them
writes the manifest (its failures as they are now) and the earlier pass becomes an event.
"""

from __future__ import annotations

import json

RECORD = ("created", "versions", "timings", "counts", "usage", "failures", "short", "engine")


def keep_first_record(previous: dict | None, manifest: dict) -> dict:
    """The manifest to write: `manifest` as is for a first or interrupted collection; for a finished run
    of the same identity, the previous manifest with this pass appended to its `events`."""
    if not isinstance(previous, dict) or previous.get("status") != "complete":
        return manifest
    same = json.dumps(previous.get("identity"), sort_keys=True, default=str) == \
        json.dumps(manifest.get("identity"), sort_keys=True, default=str)
    if not same:
        return manifest
    if previous.get("failures") or previous.get("short"):
        # that pass left trials unanswered and this one asked only for them ("run the same command again to
        # retry only them"): this pass's manifest is the record (failures as they are now); that pass an event
        earlier = {"event": "collect with failed or short trials (retried by the next collect)",
                   **{k: previous[k] for k in RECORD if k in previous}}
        return {**manifest, "events": [*(previous.get("events") or []), earlier]}
    event = {"event": "collect re-run on the finished run (answers read from the cache)",
             **{k: manifest[k] for k in RECORD if k in manifest}}
    out = {k: v for k, v in previous.items() if k != "status"}
    out["events"] = [*(previous.get("events") or []), event]
    return out
