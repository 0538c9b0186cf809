"""`collect ... --engine ray`: the local-model backends on a pool of Ray actors.

Each actor loads the model once (`load_model`, the same hf backend as a local run: packing,
key/value reuse and the float64 log-softmax carry over) and answers whole shards. The engine is a
`LanguageModel` itself, so the run's collection code, cache, resume and progress bar are the local
run's: the collection asks it for `actors` batches at a time (the chunk is batch_size x actors),
it cuts them back into shards of --batch-size trials, the forward composition of a local run (the
run's numeric identity, pipeline.numeric_identity), sends them to the free actors and returns when
all are back; the batch is then committed to the run's cache as in a local run. Ray places the
actors (one GPU each where there are GPUs, else `threads` CPUs each).

An actor that dies (its process killed, its node lost) has its shard sent to another live actor;
the run fails with one line only when every actor is gone. API models are not run under Ray: their
concurrency is the server's (docs/scaling.md).
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Sequence
import atexit
import shutil
import tempfile

from ..errors import UserError
from .defaults import BATCH_SIZE
from ..redact import redact

log = logging.getLogger(__name__)


class ModelActor:
    """One model in one Ray worker process (wrapped by ray.remote in RayEngine)."""

    def __init__(self, spec, options: dict, threads: int):
        import torch  # lazy: imports torch, numpy

        torch.set_num_threads(max(1, int(threads)))
        from .models import load_model  # lazy: looked up per call (tests replace load_model)

        self.model = load_model(spec, **options)

    def describe(self) -> dict:
        import socket  # lazy: imports array, select

        info = self.model.info
        return {"fingerprint": self.model.fingerprint(), "spec": info.spec, "backend": info.backend,
                "name": info.name, "revision": info.revision, "details": dict(info.details),
                "pid": os.getpid(), "node": socket.gethostname()}

    def choose(self, requests, method):
        return self._counted(lambda: self.model.choose(requests, method=method))

    def complete(self, requests):
        return self._counted(lambda: self.model.complete(requests))

    def _counted(self, ask):
        """The answers and the usage they took (a dead actor's shard is counted where it is redone)."""
        before = self.model.usage() if hasattr(self.model, "usage") else {}
        answers = ask()
        after = self.model.usage() if hasattr(self.model, "usage") else {}
        return answers, {k: v - before.get(k, 0) for k, v in after.items()}


def _ray():
    try:
        import ray  # lazy: optional (ray, wcwidth)
    except ImportError:
        raise UserError("--engine ray needs Ray: pip install 'simsubjects[ray]' (or pip install ray)") from None
    return ray


def check_engine(engine: str, spec, actors: int | None, threads: int, address: str | None) -> None:
    """Before anything loads: a local model (`spec`, a parsed ModelSpec), Ray importable, sane counts."""
    if engine == "local":
        if address is not None or actors is not None:
            raise UserError("--ray-address and --ray-actors apply to --engine ray")
        return
    if spec.server:
        raise UserError(f"--engine ray runs local models (smollm2, hf:...); an API model's concurrency is its "
                        f"server's: give several URLs in --model instead")
    check_address(address)
    if actors is not None and actors < 1:
        raise UserError(f"--ray-actors {actors}: at least 1")
    if threads < 1:
        raise UserError(f"--ray-threads {threads}: at least 1")
    _ray()


# what ray.init(address=...) takes: auto (the running cluster), local, or a head's HOST:PORT, with ray://
# for Ray Client; anything else (an http:// URL, a path) is not a Ray address (issue 42: exit 70 before)
RAY_ADDRESS = re.compile(r"(auto|local|(ray://)?(\[[0-9A-Fa-f:]+\]|[A-Za-z0-9.-]+):[0-9]{1,5})")


def check_address(address: str | None) -> None:
    if address is None:
        return

    if not RAY_ADDRESS.fullmatch(address) or (address[-1].isdigit() and int(address.rsplit(":", 1)[1]) > 65535):
        raise UserError(f"--ray-address {redact(address)[:80]}: not a Ray address; give auto, HOST:PORT of a Ray "
                        "head node (ray start --head prints it), or ray://HOST:PORT")


def private_ray_dir() -> str:
    """The session folder of a cluster started here: a new 0700 folder, removed when the process ends
    (after Ray's own shutdown), so its logs do not outlive the run outside --out (issue 42: they were
    left in /tmp/ray). Ray's token for such a cluster is kept in it too (mode 0600, read through
    RAY_AUTH_TOKEN_PATH) unless the user set one: Ray would otherwise write ~/.ray/auth_token 0644."""
    import secrets  # lazy: imports base64, hashlib

    # mode 0700; short: Ray's unix sockets live 70 bytes below it, within sockaddr_un's 107
    base = tempfile.gettempdir()
    d = tempfile.mkdtemp(prefix="simsubjects-ray-", dir=base if len(base) <= 16 else "/tmp")  # Ray makes it 0777
    def remove() -> None:  # Ray stopped first (its own exit hook, registered at import, would run later)
        import ray  # lazy: imports ray, wcwidth

        ray.shutdown()
        shutil.rmtree(d, ignore_errors=True)

    atexit.register(remove)
    if not (os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH")):
        token = os.path.join(d, "auth_token")
        fd = os.open(token, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
        os.environ["RAY_AUTH_TOKEN_PATH"] = token  # the driver and the workers it starts read it
    return d


class RayEngine:
    """A pool of ModelActors behind the LanguageModel interface."""

    def __init__(self, spec, options: dict, *, address: str | None = None, actors: int | None = None,
                 threads: int = 1, batch_size: int = BATCH_SIZE):
        from .models import model_spec  # lazy: imports numpy

        spec = model_spec(spec)  # the command line's ModelSpec, or a script's text (the Python API's edge)
        ray = _ray()
        self.ray = ray
        self.batch_size = int(batch_size)
        self.address = address
        if not ray.is_initialized():
            here = str(Path(__file__).resolve().parents[2])  # workers import this copy of simsubjects
            env = {"PYTHONPATH": os.pathsep.join([here, *filter(None, [os.environ.get("PYTHONPATH")])])}
            try:
                # a cluster started here listens on loopback only
                local = ({"_node_ip_address": "127.0.0.1", "include_dashboard": False, "_temp_dir": private_ray_dir()}
                         if address is None else {})
                ray.init(address=address, runtime_env={"env_vars": env}, log_to_driver=False,
                         configure_logging=False, **local)
            except Exception as e:  # noqa: BLE001 - Ray raises ConnectionError, RuntimeError, ValueError or
                # gRPC errors depending on what (if anything) answers at the address: each means no cluster there
                if address is None:
                    raise
                from ..redact import redact  # lazy: optional (redact)

                raise UserError(f"--ray-address {redact(str(address))[:80]}: no Ray cluster there "
                                f"({type(e).__name__}: {redact(str(e))[:160]}); start one with `ray start --head` "
                                "or leave --ray-address out") from None
        gpus = int(ray.cluster_resources().get("GPU", 0))
        use_gpu = gpus > 0 and options.get("device", "auto") != "cpu"
        n = actors or (gpus if use_gpu else 2)
        resources = {"num_gpus": 1, "num_cpus": threads} if use_gpu else {"num_cpus": threads}
        cpus = ray.cluster_resources().get("CPU", 0)
        if not use_gpu and n * threads > cpus:
            raise UserError(f"--ray-actors {n} x --ray-threads {threads}: the cluster has {cpus:g} CPUs")
        actor_cls = ray.remote(max_restarts=0, **resources)(ModelActor)
        self.threads = threads
        self.actors = [actor_cls.remote(spec, options, threads) for _ in range(n)]
        self.described = ray.get([a.describe.remote() for a in self.actors])
        first = self.described[0]
        if any(d["fingerprint"] != first["fingerprint"] for d in self.described):
            raise UserError("--engine ray: the actors loaded different models (a node holds another copy of the model)")
        self.fp = first["fingerprint"]
        self.shards_retried = 0
        self.use_gpu = use_gpu
        self.totals: dict = {}  # usage of the shards answered, summed over the actors

    # -- the LanguageModel interface --------------------------------------------------------------
    @property
    def info(self):
        from .models.base import ModelInfo  # lazy: imports numpy

        d = self.described[0]
        return ModelInfo(spec=d["spec"], backend=d["backend"], name=d["name"], revision=d["revision"],
                         details={**d["details"], "engine": self.engine_record()})

    def engine_record(self) -> dict:
        ray = self.ray
        import torch  # lazy: imports torch, numpy
        import transformers  # lazy: imports transformers, numpy

        nodes = [n for n in ray.nodes() if n.get("Alive")]
        return {"name": "ray", "address": self.address or "local", "nodes": len(nodes),
                "actors": len(self.described), "actors_lost": getattr(self, "dead_actors", 0), "actor_threads": self.threads, "gpus_per_actor": int(self.use_gpu),
                "shard_trials": self.batch_size, "shards_retried": self.shards_retried,
                "versions": {"ray": ray.__version__, "torch": torch.__version__,
                             "transformers": transformers.__version__}}

    def fingerprint(self) -> dict:
        return self.fp

    def choose(self, requests: Sequence, method: str = "exact") -> list:
        return self._map("choose", list(requests), method)

    def complete(self, requests: Sequence) -> list:
        return self._map("complete", list(requests))

    def usage(self) -> dict:
        return dict(self.totals)

    def close(self) -> None:
        for a in self.actors:
            self.ray.kill(a)
        self.actors = []

    # -- shards on actors, a dead actor's shard on another ---------------------------------------
    def _map(self, op: str, requests: list, *args) -> list:
        ray = self.ray
        shards = [list(range(i, min(i + self.batch_size, len(requests)))) for i in range(0, len(requests), self.batch_size)]
        todo = list(range(len(shards)))
        results: list = [None] * len(requests)
        free = list(self.actors)
        running: dict = {}  # ObjectRef -> (shard index, actor)
        while todo or running:
            while todo and free:
                s, actor = todo.pop(0), free.pop(0)
                ref = getattr(actor, op).remote([requests[i] for i in shards[s]], *args)
                running[ref] = (s, actor)
            if not running:
                raise UserError("--engine ray: every Ray actor died; the batches answered so far are kept in the "
                                "run's cache: run the same command again to resume")
            (ref,), _ = ray.wait(list(running), num_returns=1)
            s, actor = running.pop(ref)
            try:
                answers, used = ray.get(ref)
            except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as e:
                log.warning("ray: an actor died (%s); its shard goes to another", type(e).__name__)
                self._drop(actor)
                self.shards_retried += 1
                todo.insert(0, s)
                continue
            for i, a in zip(shards[s], answers):
                results[i] = a
            for k, v in used.items():
                self.totals[k] = self.totals.get(k, 0) + v
            free.append(actor)
        return results

    def _drop(self, actor) -> None:
        self.actors.remove(actor)
        self.dead_actors = getattr(self, "dead_actors", 0) + 1

    @property
    def parallel(self) -> int:
        """Shards the collection hands over at once: one per live actor."""
        return max(1, len(self.actors))
