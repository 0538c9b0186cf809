"""Issue 42, the third hostile round: study files, sessions, recorded people and Qualtrics names.

1. A model player's URL credentials (`model: openai:m@http://user:PASSWORD@host/v1`) never reach
   the run folder's copy of the study file, `study check`'s output, or any file of a collection; the
   manifest's sha256 stays that of the file as read (a resume from it is checked as before).
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import pytest

from simsubjects.cli.commands import main
from simsubjects.studyfile.session import load_session
from tests.llama_server import llama_server  # noqa: F401 (fixture; skips cleanly without llama_cpp)
from tests.test_secrets import files_with, log_text

PASSWORD = "pw-hostile3-0a9f1c"  # a unique marker: any hit in a file or an output is a leak
TOKEN = "tok-hostile3-77e2b1"

GAME = """
study: creds
title: A model player behind a server with a password
prompt: {template: "${question}", answer_prefix: "\\nAnswer:"}
design: {subjects: 2, seed: 7}
session:
  paths: 1
  variables: {total: 0}
  players:
    responder:
      model: __MODEL__
      persona: "You are the responder."
      text: "Round ${round}. You are offered ${offer}. Accept or reject?"
      response: {type: choice, style: words, options: [accept, reject]}
  blocks:
    - id: game
      rounds: 1
      moves: {order: [offer, responder]}
      items:
        - id: offer
          text: "Round ${round}. Offer 1 or 5?"
          response: {type: choice, style: words, options: ["1", "5"]}
      payoffs:
        rules:
          payoff: "(0 if responder == 'reject' else 9 if offer == '1' else 5)"
      update: {total: "total + payoff"}
"""


def _creds_file(folder: Path, url: str = "http://127.0.0.1:9/v1", quoted: bool = False) -> Path:
    scheme, rest = url.split("://", 1)
    spec = f"openai:smollm2@{scheme}://alice:{PASSWORD}@{rest}?api_key={TOKEN}"
    folder.mkdir(parents=True, exist_ok=True)
    f = folder / "s.yaml"
    f.write_text(GAME.replace("__MODEL__", f"'{spec}'" if quoted else spec))
    return f


def _leaks(text: str) -> bool:
    return PASSWORD in text or TOKEN in text


def test_check_never_prints_a_model_players_credentials(tmp_path, capsys):
    f = _creds_file(tmp_path / "src")
    assert main(["study", "check", str(f), "--show", "5"]) == 0
    out, err = capsys.readouterr()
    assert "player responder: model (openai:smollm2@http://127.0.0.1:9/v1" in out
    assert not _leaks(out + err)


@pytest.mark.parametrize("quoted", [False, True])
def test_the_runs_copy_leaves_credentials_out_and_keeps_the_hash(tmp_path, quoted):
    from simsubjects.studyfile.runcopy import copy_files

    f = _creds_file(tmp_path / "src", quoted=quoted)
    study = load_session(f)
    assert study.sha256 == hashlib.sha256(f.read_bytes()).hexdigest()  # the manifest's hash: the file as read
    copy_files(study, tmp_path / "run")
    copy = tmp_path / "run" / "study" / "s.yaml"
    assert files_with(tmp_path / "run", PASSWORD) == [] and files_with(tmp_path / "run", TOKEN) == []
    again = load_session(copy)  # the copy is a valid study file: analyze reads it
    assert again.session.players["responder"].model == "openai:smollm2@http://127.0.0.1:9/v1"
    # everything but the model line is the file as written
    assert [ln for ln in copy.read_text().splitlines() if "model:" not in ln] == \
        [ln for ln in f.read_text().splitlines() if "model:" not in ln]


def test_a_file_without_credentials_is_copied_byte_for_byte(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(GAME.replace("__MODEL__", "openai:smollm2@http://127.0.0.1:9/v1"))
    assert load_session(f).raw["s.yaml"] == f.read_bytes()


def test_credentials_under_an_anchor_are_refused_without_printing_them(tmp_path):
    f = _creds_file(tmp_path / "src", quoted=True)
    f.write_text(f.read_text().replace("model: '", "model: &m '").replace('persona: "You are the responder."',
                                                                        "persona: *m"))
    from simsubjects.studyfile.load import StudyFileError

    with pytest.raises(StudyFileError) as e:
        load_session(f)
    assert "session.players.responder.model" in str(e.value) and not _leaks(str(e.value))


@pytest.mark.server
def test_collect_with_a_password_in_a_player_url_writes_it_nowhere(llama_server, tmp_path, capsys, caplog,  # noqa: F811
                                                                   monkeypatch):
    """The session runs against the loopback server (which ignores the basic-auth header); every file of
    the run, everything printed and every log record is scanned for the password and the token."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    caplog.set_level(logging.DEBUG)
    f = _creds_file(tmp_path / "src", url=llama_server)
    run = tmp_path / "run"
    assert main(["collect", str(f), "--model", f"openai:smollm2@{llama_server}", "--out", str(run), "-q"]) == 0
    assert main(["analyze", str(run)]) == 0
    assert main(["collect", str(f), "--model", f"openai:smollm2@{llama_server}", "--out", str(run), "-q"]) == 0
    out, err = capsys.readouterr()
    assert (run / "study" / "s.yaml").is_file()
    assert files_with(run, PASSWORD) == [] and files_with(run, TOKEN) == []
    assert not _leaks(out + err) and not _leaks(log_text(caplog))
