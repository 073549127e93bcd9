"""The report travels with a model release: it names no path of the server, and its rerun
command works as pasted on that server into a fresh shell in the tool's folder (the interpreter
that ran it; an upload by its path under ``$LEAKAGE_LAB_HOME``, a file elsewhere by a variable
the reader sets), giving the same verdicts; it reads the stored runs from the process's one
store."""

import hashlib
import shlex
import shutil
from pathlib import Path

from core import paths
from core.audit import audit
from core.audit.provenance import FileHash, Provenance, interpreter
from core.audit.report import render_report, stored_results
from core.commands import spec_parser
from core.jobs import run_now
from core.models import load_model, save_upload
from reports import rerun_command, rerun_in_a_fresh_shell, rerun_words, zipped


def test_an_uploaded_model_is_rerun_from_the_reports_command_to_the_same_verdicts(
        tmp_path, monkeypatch):
    from core.attacks.membership import mia

    tiny = mia.tiny_config()
    corpus = tmp_path / "elsewhere" / "corpus.txt"   # a file outside the lab home
    corpus.parent.mkdir()
    shutil.copy(tiny.frequency_corpus, corpus)
    with paths.confined():   # as the Models page saves and loads an upload
        for name, folder in (("my-upload", tiny.model), ("my-base", tiny.reference)):
            upload = save_upload(f"{name}.zip", zipped(Path(folder), tmp_path / f"{name}.zip")
                                 .read_bytes())
            load_model(str(upload), name=name, device="cpu")
    config = audit.AuditConfig(model="my-upload", reference="my-base", members=tiny.data,
                               corpus=str(corpus), attacks=("mia",), settings=("mia.bootstrap=0",),
                               device="cpu", out=str(tmp_path / "report.html"))
    result = run_now(audit.SPEC, config)   # as the audit page's job runs it
    text = (tmp_path / "report.html").read_text()
    for private in {tmp_path, tmp_path.resolve(), Path.cwd()}:
        assert str(private) not in text
    assert "Set first: <code>LEAKAGE_LAB_HOME</code>" in text and "<code>CORPUS_FILE</code>" in text
    upload = tmp_path / "my-upload.zip"   # its file and hash under Model files, by its name
    digest = hashlib.sha256(upload.read_bytes()).hexdigest()
    assert f"<td>my-upload.zip</td><td>{upload.stat().st_size:,}</td><td>{digest}</td>" in text

    monkeypatch.setenv("CORPUS_FILE", str(corpus))   # what the reader supplies
    words = rerun_words(text)
    assert words[:4] == [interpreter(), "-m", "core", "audit"]   # the Python that ran it
    parsed = spec_parser(audit.SPEC, "audit").parse_args(words[4:])
    assert Path(parsed.model).is_relative_to(paths.home() / "uploads")
    # issue #45: "python" in a fresh shell, without the venv, had no torch
    rerun = rerun_in_a_fresh_shell(rerun_command(text), tmp_path / "rerun.html",
                                   LEAKAGE_LAB_HOME=str(paths.home()), CORPUS_FILE=str(corpus))
    assert [(e["attack"], e["status"], e["verdict"]) for e in rerun["entries"]] == [
        (e.attack, e.status, e.verdict) for e in result.entries]


def test_paths_in_errors_cards_and_file_tables_are_named_without_the_server(lab_home, tmp_path):
    home, outside = paths.home(), tmp_path / "private"
    model, adapter = home / "uploads" / "0f" / "lora.zip", outside / "lora"
    config = audit.AuditConfig(model=str(model), reference=str(adapter) + "@" + str(outside / "b"),
                               corpus=str(outside / "train.txt"), attacks=("extraction",))
    error = (f"FileNotFoundError: [Errno 2] No such file or directory: "
             f"'{home}/models/zips/0f/config.json' (from {outside}/lora/adapter_config.json)")
    entry = audit.AuditEntry("extraction", "Extraction", None, "failed", f"Failed: {error}", 0.1,
                             config={"model": str(model), "corpus": str(outside / "train.txt")},
                             error=error)
    provenance = Provenance(
        models={str(model): [FileHash(str(model), 10, "ab")]},
        cards={str(model): {"adapter": str(adapter), "base": str(outside / "b")}},
        data={str(outside / "train.txt"): FileHash(str(outside / "train.txt"), 5, "cd")})
    text = render_report(audit.AuditResult(config, [entry], provenance, 1.0), {})
    assert str(tmp_path) not in text and str(home) not in text
    assert "$LEAKAGE_LAB_HOME/models/zips/0f/config.json" in text   # the load error
    assert "…/adapter_config.json" in text
    command = rerun_command(text)
    assert ('--model "$LEAKAGE_LAB_HOME"/uploads/0f/lora.zip --reference '
            '"$REFERENCE_PATH"@"$REFERENCE_BASE_PATH" --corpus "$CORPUS_FILE"') in command
    assert all(f"<code>{name}</code>" in text for name in ("REFERENCE_BASE_PATH", "CORPUS_FILE"))


def test_the_report_reads_the_runs_from_the_processs_one_store(monkeypatch):
    from core.jobs import get_store, store

    get_store()   # the app's pages have opened it
    opened, init = [], store.Store.__init__

    def counted(self, *args, **kwargs):
        opened.append(args)
        init(self, *args, **kwargs)

    monkeypatch.setattr(store.Store, "__init__", counted)
    config = audit.AuditConfig(model="m", attacks=("extraction",))
    entry = audit.AuditEntry("extraction", "Extraction", 12345, "done", "", 0.1)
    assert stored_results(audit.AuditResult(config, [entry], Provenance(), 1.0)) == {}
    assert opened == []


def test_the_rerun_command_keeps_the_training_runs_delta_and_the_device():
    config = audit.AuditConfig(model="demo:updated", attacks=("extraction",), sigma=1.0, q=0.01,
                               steps=1000, delta=1e-6, device="cpu")
    text = render_report(audit.AuditResult(config, [], Provenance(), 1.0), {})
    words = shlex.split(rerun_command(text))
    args = spec_parser(audit.SPEC, "audit").parse_args(words[4:])
    assert (args.model, args.delta, args.device, args.sigma) == ("demo:updated", 1e-6, "cpu", 1.0)
